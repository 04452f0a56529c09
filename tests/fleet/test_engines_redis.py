"""Two engines (two machines' workers) and a console handle on one real Redis, in-process.

Real clock (the shared gates use Redis time), fake executor. Shows: work is split between
the engines with one task per shop across both; a console preempts a task running on the
other engine through Redis (cooperatively: it checkpoints, suspends, resumes and finishes);
a worker that stops heartbeating is marked lost and its task is finished by the other.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from core.build import build_engine, open_store
from core.config import Settings
from core.engine import Engine
from core.store import TaskState
from core.store.base import Store
from core.testing import FakeExecutor
from tests.conftest import SHOPS, add_demo_shops
from tests.helpers import assert_one_task_per_shop, spec

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _settings(**queue: float) -> Settings:
    return Settings().with_changes(
        queue={"heartbeat_s": 0.2, "recover_every_s": 0.2, "worker_lost_after_s": 1.5,
               **queue},
        gates={"global": {"rate_per_s": 1000, "burst": 1000},
               "default_domain": {"rate_per_s": 1000, "burst": 1000}})


def _store(url: str, settings: Settings, *, shops: bool = False) -> Store:
    store = open_store(settings, url=url, validate=False)
    if shops:
        add_demo_shops(store)
    return store


async def _until(cond: object, timeout_s: float = 30.0) -> None:
    end = time.monotonic() + timeout_s
    while not await asyncio.to_thread(cond):  # type: ignore[arg-type]
        assert time.monotonic() < end, "condition not reached in time"
        await asyncio.sleep(0.05)


def test_two_engines_share_the_queue_and_a_console_preempts_across_them(
        redis_url: str) -> None:
    settings = _settings(worker_lost_after_s=60)  # both live: neither may be taken for lost
    console = _store(redis_url, settings, shops=True)
    stores = [_store(redis_url, settings) for _ in range(2)]
    execs = [FakeExecutor(), FakeExecutor()]
    # Two slots each, fewer than the shops: while one engine is full, the other must claim
    # (with more, the engine that acks first re-claims at once and may do all the work).
    engines: list[Engine] = [build_engine(settings, s, executor=e, slots=2)
                             for s, e in zip(stores, execs, strict=True)]
    assert engines[0].gates.__class__.__name__ == "RedisRateGates"

    async def go() -> None:
        ids = console.submit_many([spec(shop=name, params={"steps": 6, "step_s": 0.05})
                                   for name, _ in SHOPS for _ in range(5)])
        long_id = console.submit(spec(shop="tiktok-1", type_="upload_product",
                                      params={"steps": 40, "step_s": 0.05,
                                              "until_preempted": True}))
        async with engines[0], engines[1]:
            runners = [asyncio.create_task(e.run()) for e in engines]
            # The long task runs on one of the engines; preempt it from the console.
            await _until(lambda: console.task(long_id).state is TaskState.RUNNING)
            holder = console.task(long_id).lease_owner
            assert holder in {e.owner for e in engines}
            # It has made progress (a checkpoint past step 0) and runs until preempted.
            await _until(lambda: (console.task(long_id).checkpoint or {}).get(
                "next_step", 0) > 0)
            await asyncio.to_thread(console.request_preempt, long_id, "by operator")
            await _until(lambda: any(e.to_state == "suspended"
                                     for e in console.events(long_id)))
            await _until(lambda: console.counts()["done"] == len(ids) + 1, 60)
            for e in engines:
                await e.stop()
            await asyncio.gather(*runners)
        # Every task finished once, on one engine or the other; never two tasks of one shop
        # at once anywhere: the executions of both engines, ordered on one sequence, never
        # overlap for a shop.
        finished = execs[0].finished + execs[1].finished
        assert sorted(finished) == sorted([*ids, long_id])
        assert all(e.finished for e in execs), [len(e.finished) for e in execs]
        assert_one_task_per_shop(execs[0].spans + execs[1].spans)
        # The long task resumed from its checkpoint rather than from the start.
        resumed = [step for e in execs for tid, step in e.resumed_from if tid == long_id]
        assert resumed and resumed[0] > 0
        reasons = [ev.reason for ev in console.events(long_id)]
        assert any("preempted by operator" in r for r in reasons), reasons

    try:
        asyncio.run(go())
    finally:
        for s in (console, *stores):
            s.close()


def test_a_silent_worker_is_marked_lost_and_its_task_finished_by_another(
        redis_url: str) -> None:
    settings = _settings(lease_s=600)  # recovery must come from the silence, not the lease
    console = _store(redis_url, settings, shops=True)
    store = _store(redis_url, settings)
    tid = console.submit(spec(shop="pdd-1", params={"steps": 2, "step_s": 0.05}))
    # A worker on another machine claimed it, then died (no goodbye, no more heartbeats).
    console.heartbeat("ghost@far-away:1", {"host": "far-away", "pid": 1, "slots": 4,
                                             "running": 1})
    claimed = console.claim_many("ghost@far-away:1", 1)
    assert [t.id for t in claimed] == [tid]
    ex = FakeExecutor()
    engine = build_engine(settings, store, executor=ex, slots=2)

    async def go() -> None:
        async with engine:
            runner = asyncio.create_task(engine.run())
            await _until(lambda: console.task(tid).state is TaskState.DONE, 30)
            await engine.stop()
            await runner

    try:
        asyncio.run(go())
        states = {w.owner: w.state for w in console.workers()}
        assert states["ghost@far-away:1"] == "lost"
        assert states[engine.owner] == "stopped"
        assert ex.finished == [tid]
        assert any("stopped heartbeating" in e.reason for e in console.events(tid))
    finally:
        console.close()
        store.close()
