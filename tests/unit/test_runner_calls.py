"""The runner's driver round trips per step, pinned (each costs 10-100 ms on a loaded machine).

A step's own action, then ONE ``evaluate`` for every after-step check (the window record and,
after a step that talked to the site, the human markers); the page's and frames' URLs come
with the driver's events and cost nothing. A separate call added back (a marker asked on its
own, a second read) fails these tests.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from core.browser.fake import FakeLauncher
from core.browser.pool import BrowserPool
from core.config import BrowserSettings, PoolSettings
from core.errors import NeedsHuman, OriginBlocked
from core.flows import Checkpoint, ShopInfo, StepEvent, parse_flow, run_flow
from core.flows.fakepage import CountingPage, FakeAction, FakeElement, FakeScreen, FakeSite
from core.flows.guards import WINDOW_RECORD_JS

BASE = "https://seller.test"
SHOP = ShopInfo(name="pdd-1", platform="pdd", base_url=BASE, username="alice", password="pw")


def site() -> FakeSite:
    return FakeSite({
        f"{BASE}/stats": FakeScreen(
            elements={"table#stats": FakeElement(),
                      "td.sku": [FakeElement(text="A-1"), FakeElement(text="A-2")],
                      "#q": FakeElement(type="text"),
                      "#more": FakeElement(text="More"),
                      "#login-btn": FakeElement(visible=False)},
            clicks={"#more": FakeAction()}),
        f"{BASE}/captcha": FakeScreen(elements={"#captcha": FakeElement(text="Slide")}),
    })


FLOW = parse_flow({"name": "t", "start_url": f"{BASE}/stats", "steps": [
    {"action": "navigate", "url": "{shop.base_url}/stats"},
    {"action": "type_text", "locator": "#q", "text": "x", "if_visible": "#login-btn"},
    {"action": "wait_element", "locator": "table#stats"},
    {"action": "extract", "locator": "td.sku", "into": "skus", "all": True},
    {"action": "type_text", "locator": "#q", "text": "shoes"},
    {"action": "click", "locator": "#more"},
]})


def run(fake: FakeSite, tmp_path: Path, flow: Any = FLOW,
        **kw: Any) -> tuple[list[str], list[list[str]], CountingPage]:
    """The calls before the first step, each step's calls (from its start to its end), and
    the page; a TaskError propagates."""
    page = CountingPage(fake.new_page())
    per_step: list[list[str]] = []
    before: list[str] = []
    mark = [0]

    def on_step(ev: StepEvent) -> None:
        if ev.status == "started":
            if not per_step and not before:
                before.extend(page.calls)
            mark[0] = len(page.calls)
        else:
            per_step.append(page.calls[mark[0]:])

    async def save(_cp: Checkpoint) -> None:
        return None

    asyncio.run(run_flow(page, flow, params={}, shop=SHOP, checkpoint=None,
                         save_checkpoint=save, evidence_dir=tmp_path / "evidence",
                         step_timeout_s=5.0, on_step=on_step, **kw))
    return before, per_step, page


def test_each_step_costs_its_action_and_one_read_of_every_check(tmp_path: Path) -> None:
    before, per_step, _ = run(site(), tmp_path)
    assert before == ["add_init_script"]  # the window record, once a run
    assert per_step == [
        ["goto", "evaluate"],                                   # markers read in that evaluate
        ["locator.is_visible"],                                 # if_visible: skipped
        ["locator.wait_for", "evaluate"],
        ["locator.all_inner_texts", "evaluate"],
        ["locator.fill", "evaluate"],
        ["locator.click", "wait_for_load_state", "evaluate"],   # gated: settles, then one read
    ]


def test_a_marker_the_probe_cannot_answer_is_asked_on_its_own(tmp_path: Path) -> None:
    # A Playwright-only selector (text engine): one is_visible call, after the one read.
    _, per_step, _ = run(site(), tmp_path,
                         human_markers=("#captcha", "text=Verify you are human"))
    assert per_step[0] == ["goto", "evaluate", "locator.is_visible"]


def test_the_marker_read_in_the_same_round_trip_still_stops_the_run(tmp_path: Path) -> None:
    flow = parse_flow({"name": "t", "start_url": f"{BASE}/stats", "steps": [
        {"action": "navigate", "url": "{shop.base_url}/stats"},
        {"action": "navigate", "url": "{shop.base_url}/captcha"},
        {"action": "extract", "locator": "td.sku", "into": "skus"}]})
    fake = site()
    with pytest.raises(NeedsHuman) as info:
        run(fake, tmp_path, flow)
    assert info.value.step == 1 and "'#captcha'" in str(info.value)
    assert fake.log == [f"goto {BASE}/stats", f"goto {BASE}/captcha"]  # the extract never ran


def test_a_context_made_ahead_carries_the_window_record(tmp_path: Path) -> None:
    """The pool adds the record to a spare before its page exists: the task adds nothing
    before its first step, and the record still stops a foreign window that no ``popup``
    event reports."""
    fake = site()
    fake.pages[f"{BASE}/stats"].clicks["#more"] = FakeAction(popup="https://evil.test/x",
                                                              popup_event="never")
    launcher = FakeLauncher(page_factory=lambda _ctx: fake.new_page())
    before: list[str] = []
    calls: list[str] = []

    async def main() -> None:
        async with BrowserPool(PoolSettings(max_browsers=1, warm=0, close_timeout_s=0.05),
                               BrowserSettings(), launcher=launcher,
                               prewarm_contexts=True) as pool:
            pool.context_init_script = WINDOW_RECORD_JS
            async with pool.task_context("shop-a") as first:
                assert first.init_script is None  # made for the task: the runner adds it
            for _ in range(600):  # loop turns, no clock: the spare is made in the background
                if pool.stats().contexts_alive == 1:
                    break
                await asyncio.sleep(0)
            else:
                raise AssertionError("the spare context was never made")
            async with pool.task_context("shop-b") as tc:
                assert tc.init_script == WINDOW_RECORD_JS
                page = CountingPage(tc.page, calls)

                def on_step(ev: StepEvent) -> None:
                    if ev.status == "started" and not before:
                        before.append(",".join(calls) or "-")

                async def save(_cp: Checkpoint) -> None:
                    return None

                await run_flow(page, FLOW, params={}, shop=SHOP, checkpoint=None,
                               save_checkpoint=save, evidence_dir=tmp_path / "evidence",
                               step_timeout_s=5.0, on_step=on_step,
                               window_record_installed=True)

    with pytest.raises(OriginBlocked) as info:
        asyncio.run(main())
    assert before == ["-"]  # no add_init_script before the first step
    assert info.value.step == 5 and "evil.test" in str(info.value)
