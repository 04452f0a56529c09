"""Preemption on real Chromium against the demo site: urgent work takes a shop's browser at a
safe step; the holder resumes with its results; a write is never interrupted or repeated."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import DemoSite, Settings, TaskSpec, build_engine, demo_settings, open_store
from core.demo import register_demo_shops
from core.demosite import demo_login_steps
from core.events import Event, TaskPreempted, TaskProgress
from core.store import SqliteStore, TaskState
from core.vault import Vault
from tests.helpers import run_with, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSite]:
    with DemoSite() as s:
        yield s


@pytest.fixture
def env(site: DemoSite, tmp_path: Path) -> Iterator[tuple[SqliteStore, Settings, Path]]:
    site.reset()
    settings = demo_settings(Settings()).with_changes(
        pool={"max_browsers": 2, "warm": 2, "step_timeout_s": 30},
        security={"inline_credentials": True})  # long_collect logs in with inline steps
    store = open_store(settings, tmp_path / "p.db")
    register_demo_shops(store, site, Vault.open(tmp_path))
    yield store, settings, tmp_path
    store.close()


def long_collect(shop: str, pages: int) -> TaskSpec:
    steps: list[dict[str, Any]] = [
        {"action": "navigate", "url": "{shop.base_url}/stats?page=1"},
        *demo_login_steps(),
    ]
    for p in range(1, pages + 1):
        steps += [{"name": f"page {p}", "action": "navigate",
                   "url": f"{{shop.base_url}}/stats?page={p}"},
                  {"action": "extract", "locator": "td.sku", "all": True, "into": f"skus_{p}"}]
    return TaskSpec.model_validate({"type": "collect_data", "shop": shop, "steps": steps})


def reply(shop: str, text: str) -> TaskSpec:
    return TaskSpec.model_validate({"type": "reply_customer", "shop": shop,
                                    "flow": "reply_customer", "priority": 20,
                                    "params": {"message_id": 3, "reply": text}})




def test_urgent_reply_takes_the_shop_and_the_collector_resumes_with_all_results(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    store, settings, home = env
    site.set_fault("slow", platform="pdd", delay_ms=150)
    holder = store.submit(long_collect("pdd-1", 12))
    engine = build_engine(settings, store, home=home)
    seen: list[Event] = []
    engine.bus.subscribe(seen.append)

    async def scenario() -> None:
        await wait_until(lambda: (store.task(holder).checkpoint or {}).get("next_step", 0) >= 8)
        [urgent] = await engine.submit([reply("pdd-1", "Sorry for the delay!")])
        await wait_until(lambda: store.task(urgent).state is TaskState.DONE)
        await wait_until(lambda: store.task(holder).state is TaskState.DONE)
        starts = [e.at for e in seen if isinstance(e, TaskProgress) and e.task_id == urgent]
        asked = [e.at for e in seen if isinstance(e, TaskPreempted) and e.task_id == holder]
        assert asked and starts and starts[0] >= asked[0]

    run_with(engine, scenario)
    rec = store.task(holder)
    assert rec.results is not None
    assert set(rec.results) == {f"skus_{p}" for p in range(1, 13)}
    assert all(rec.results[f"skus_{p}"] for p in range(1, 13))     # nothing lost
    history = [e.to_state for e in store.events(holder)]
    assert "suspended" in history
    assert [r["text"] for r in site.records(kind="reply")] == ["Sorry for the delay!"]


def test_a_write_in_progress_finishes_first_and_is_not_repeated_on_resume(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    store, settings, home = env
    site.set_fault("slow", platform="temu", delay_ms=1200)
    holder = store.submit(TaskSpec.model_validate({
        "type": "upload_product", "shop": "temu-1", "flow": "upload_product",
        "params": {"title": "Preempted lamp", "price": "19.90", "category": "home",
                   "image": "product.png"}}))
    engine = build_engine(settings, store, home=home)
    seen: list[Event] = []
    engine.bus.subscribe(seen.append)

    async def scenario() -> None:
        await wait_until(lambda: (store.task(holder).checkpoint or {}).get("write_in_flight")
                         is not None)
        [urgent] = await engine.submit([reply("temu-1", "Right away")])
        await wait_until(lambda: store.task(urgent).state is TaskState.DONE, 120)
        await wait_until(lambda: store.task(holder).state is TaskState.DONE, 120)

    run_with(engine, scenario)
    uploads = site.records(kind="upload")
    assert [u["title"] for u in uploads] == ["Preempted lamp"]          # exactly once
    replies = site.records(kind="reply")
    assert uploads[0]["at"] <= replies[0]["at"]    # the submit was not cut short
    history = [e.to_state for e in store.events(holder)]
    assert "suspended" in history                  # it did yield, after its write
    cp = store.task(holder).checkpoint or {}
    assert cp.get("writes_done")


def test_hard_aged_holder_is_not_preempted(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path],
        caplog: pytest.LogCaptureFixture) -> None:
    store, settings, home = env
    caplog.set_level(logging.DEBUG, logger="core.engine")
    path = store.path
    store.close()

    class Past:
        def now(self) -> float:
            return time.time() - 31 * 60

        async def sleep(self, s: float) -> None:
            await asyncio.sleep(s)

    from core.store import SqliteStore as Store

    old = Store(path, settings=settings, clock=Past())
    holder = old.submit(long_collect("tiktok-1", 6))
    old.close()
    store2 = open_store(settings, path)
    engine = build_engine(settings, store2, home=home)

    def refused(u: int) -> bool:   # considered with the holder in its shop's slot, not taken
        return any(r.getMessage().startswith(f"preemption for task {u} not taken: no "
                                             "preemptible holder of its shop's slot")
                   for r in caplog.records)

    urgent: list[int] = []

    async def scenario() -> None:
        # tiktok's pages are slow until the preemption has been considered and refused: the
        # holder cannot finish first, however fast or slow the machine is.
        site.set_fault("slow", platform="tiktok", delay_ms=1000)
        await wait_until(lambda: store2.task(holder).state is TaskState.RUNNING)
        urgent.extend(await engine.submit([reply("tiktok-1", "hard-aged test")]))
        await wait_until(lambda: refused(urgent[0]), 120)
        assert store2.task(holder).state is TaskState.RUNNING
        site.clear_faults()
        await wait_until(lambda: store2.task(urgent[0]).state is TaskState.DONE, 120)

    try:
        run_with(engine, scenario)
        assert store2.task(holder).hard_aged
        assert store2.task(holder).state is TaskState.DONE
        assert "suspended" not in [e.to_state for e in store2.events(holder)]
        # The holder ran to its end before the urgent task started.
        holder_done = next(e.at for e in store2.events(holder) if e.to_state == "done")
        urgent_ran = next(e.at for e in store2.events(urgent[0]) if e.to_state == "running")
        assert holder_done <= urgent_ran
    finally:
        store2.close()
