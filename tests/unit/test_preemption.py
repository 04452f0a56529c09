"""Preemption with the fake executor and a fake clock: who yields, when, and the limits."""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import pytest

from core.engine.preemption import Candidate, Holder, choose_victim
from core.events import PreemptionRefused, TaskPreempted
from core.store import SqliteStore, TaskState
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.helpers import make_engine as make
from tests.helpers import spec, wait_until

LONG = {"steps": 400, "step_s": 0.01}


def long(shop: str, **kw: Any) -> Any:
    return spec("collect_data", shop, params={**LONG, **kw.pop("params", {})}, **kw)


def urgent(shop: str, score: float = 20.0) -> Any:
    return spec("reply_customer", shop, flow="collect_data", priority=score,
                params={"steps": 2, "step_s": 0.01})


async def until_checkpointed(store: SqliteStore, task_id: int) -> None:
    """Until the task has committed a checkpoint past its first step (read off the loop)."""
    while (((await asyncio.to_thread(store.task, task_id)).checkpoint or {})
           .get("next_step", 0) == 0):
        await asyncio.sleep(0.01)


until = functools.partial(wait_until, poll_s=0.01)


def test_urgent_task_takes_its_shops_slot_and_the_holder_resumes_with_its_progress(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    holder = store.submit(long("pdd-1", params={"until_preempted": 1}))
    engine, ex, seen = make(store, clock)

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 1)
            await until_checkpointed(store, holder)         # it has made progress
            [u] = await engine.submit([urgent("pdd-1")])
            await until(lambda: store.task(holder).state is TaskState.SUSPENDED)
            await until(lambda: u in ex.finished)
            await asyncio.wait_for(run, 90)

    asyncio.run(go())
    assert store.task(holder).state is TaskState.DONE
    order = ex.started
    assert order[0] == holder and order[1] != holder and order[2] == holder
    resumed = dict(ex.resumed_from)
    assert resumed[holder] > 0                 # it continued where it stopped
    assert max(ex.max_by_shop.values()) == 1   # never two tasks of a shop at once
    assert any(isinstance(e, TaskPreempted) and e.task_id == holder for e in seen)
    reasons = [e.reason for e in store.events(holder)]
    assert any(r.startswith("suspended: preempted by #") for r in reasons)
    stats = engine.statistics()
    assert stats.preemptions_per_hour == 1 and stats.resume_success_rate == 1.0


def test_full_pool_chooses_the_lowest_scored_preemptible_holder() -> None:
    running = [Holder(1, 10, 3.0, True, False), Holder(2, 11, 5.0, True, False),
               Holder(3, 12, 1.0, False, False)]      # #3 is hard-aged: not preemptible
    victim, why = choose_victim(Candidate(9, 13, 20.0), running, slots=3)
    assert victim is not None and victim.task_id == 1 and "full pool" in why
    assert choose_victim(Candidate(9, 13, 20.0), running, slots=4)[0] is None  # a slot is free
    assert choose_victim(Candidate(9, 13, 2.0), running, slots=3)[0] is None   # not urgent enough
    victim, _ = choose_victim(Candidate(9, 11, 20.0), running, slots=8)
    assert victim is not None and victim.task_id == 2                           # its shop's slot
    # urgent tasks a hair apart (aging) do not take each other's slot
    close = [Holder(1, 10, 15.03, True, False)]
    assert choose_victim(Candidate(9, 10, 15.04), close, slots=2, min_gap=1.0)[0] is None
    assert choose_victim(Candidate(9, 10, 16.03), close, slots=2, min_gap=1.0)[0] is not None


def test_pool_full_engine_preempts_the_lowest_scored(make_store: StoreFactory,
                                                     clock: FakeClock) -> None:
    store = make_store()
    # Both run until the test lets them go (not for a while of real time, which a loaded
    # machine could use up before the urgent task is through).
    low = store.submit(long("pdd-1", priority=2, params={"until_released": True}))
    mid = store.submit(long("pdd-2", priority=6, params={"until_released": True}))
    engine, ex, _ = make(store, clock, slots=2)

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 2)
            [u] = await engine.submit([urgent("temu-1")])
            await until(lambda: u in ex.finished)
            assert store.task(mid).state is TaskState.RUNNING
            ex.release(low)
            ex.release(mid)
            await asyncio.wait_for(run, 90)

    asyncio.run(go())
    assert ex.yielded == [low]


def test_storm_limit_refuses_and_the_urgent_task_waits(make_store: StoreFactory,
                                                       clock: FakeClock) -> None:
    store = make_store(preemption={"storm_limit": 1, "storm_window_s": 60})
    holder = store.submit(long("pdd-1", params={"until_preempted": 2}))
    engine, ex, seen = make(store, clock)
    ids: list[int] = []

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 1)
            [u1] = await engine.submit([urgent("pdd-1")])
            await until(lambda: u1 in ex.finished and holder in ex.started[1:])
            [u2] = await engine.submit([urgent("pdd-1")])
            ids.append(u2)
            await until(lambda: any(isinstance(e, PreemptionRefused) for e in seen))
            assert store.task(holder).state is TaskState.RUNNING   # not preempted again
            assert store.task(u2).state is TaskState.QUEUED
            clock.advance(61)                                      # the window passes
            await until(lambda: u2 in ex.finished)
            await asyncio.wait_for(run, 90)

    asyncio.run(go())
    assert ex.yielded == [holder, holder]
    assert engine.statistics().preemptions_refused_per_hour == 1
    assert any("storm limit" in e.reason for e in store.events(ids[0]))


def test_hard_aged_holder_is_never_preempted(make_store: StoreFactory, clock: FakeClock,
                                             caplog: pytest.LogCaptureFixture) -> None:
    store = make_store(priority={"hard_aging_min": 30})
    holder = store.submit(long("pdd-1", params={"steps": 2, "until_released": True}))
    clock.advance(31 * 60)
    engine, ex, _ = make(store, clock)
    caplog.set_level(logging.DEBUG, logger="core.engine")

    def refused(u: int) -> bool:   # considered with the holder in its shop's slot, not taken
        return any(r.getMessage().startswith(f"preemption for task {u} not taken: no "
                                             "preemptible holder of its shop's slot")
                   for r in caplog.records)

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 1)
            [u] = await engine.submit([urgent("pdd-1", score=500)])
            await until(lambda: refused(u))
            assert store.task(holder).state is TaskState.RUNNING and holder not in (
                ex.asked_to_yield)
            ex.release(holder)                       # now it may finish
            await asyncio.wait_for(run, 90)
            assert u in ex.finished

    asyncio.run(go())
    assert ex.yielded == [] and ex.asked_to_yield == []
    assert ex.started == [holder, ex.started[1]]    # the holder finished first, once


def test_holder_that_does_not_yield_is_cancelled_after_the_grace_period(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(preemption={"grace_s": 30}, breakers={"failures": 100})
    holder = store.submit(long("pdd-1", params={"ignore_yield": True,
                                                "until_released": True}))
    engine, ex, _ = make(store, clock)

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 1)
            [u] = await engine.submit([urgent("pdd-1")])
            await until(lambda: holder in ex.asked_to_yield)      # asked; it does not yield
            assert store.task(holder).state is TaskState.RUNNING   # still in its grace
            clock.advance(31)
            await until(lambda: u in ex.finished)
            ex.release(holder)                                      # its next attempt ends
            await asyncio.wait_for(run, 90)

    asyncio.run(go())
    rec = store.task(holder)
    assert rec.error_class == "browser_crashed"            # handled as a crashed attempt
    assert rec.checkpoint and rec.checkpoint["next_step"] > 0   # its checkpoint still stands


def test_operator_preempts_by_hand_through_the_store(make_store: StoreFactory,
                                                     clock: FakeClock) -> None:
    store = make_store()
    holder = store.submit(long("pdd-1", priority=100))    # not outscored by anything
    engine, ex, _ = make(store, clock)

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 1)
            # as `shopfleet preempt ID` does from another process
            await asyncio.to_thread(store.request_preempt, holder, "by operator (CLI)")
            await until(lambda: store.task(holder).state in (TaskState.SUSPENDED,
                                                             TaskState.RUNNING)
                        and holder in ex.yielded)
            await asyncio.wait_for(run, 90)

    asyncio.run(go())
    history = [(e.from_state, e.to_state, e.reason) for e in store.events(holder)]
    assert ex.yielded == [holder], history
    assert store.task(holder).state is TaskState.DONE, history
    assert store.tasks(state="suspended") == []
