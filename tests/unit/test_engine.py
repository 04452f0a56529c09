"""The engine with a scripted executor and a fake clock: dispatch, gates, breakers, stop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.engine import BreakerState, Engine
from core.errors import Refused, ShopFleetError
from core.events import BreakerChanged, EngineProblem, Event, TaskStateChanged
from core.store import TaskState
from core.testing import FakeClock, FakeExecutor
from tests.conftest import StoreFactory
from tests.helpers import advance_and_settle, make_engine, spec, wait_until


def task(shop: str = "pdd-1", **params: Any) -> Any:
    return spec("collect_data", shop, params=params)


def test_runs_everything_in_priority_order_one_task_per_shop(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    ids = store.submit_many([task("pdd-1", step_s=0.01, steps=2) for _ in range(3)]
                            + [task("pdd-2", step_s=0.01, steps=2) for _ in range(3)]
                            + [spec("reply_customer", "temu-1", flow="collect_data")])
    engine, ex, seen = make_engine(store, clock)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()

    asyncio.run(go())
    assert store.counts()["done"] == len(ids)
    assert ex.started[0] == ids[-1]                     # the reply first
    assert max(ex.max_by_shop.values()) == 1            # one task per shop at a time
    assert ex.max_live <= 4
    done = [e for e in seen if isinstance(e, TaskStateChanged) and e.state == "done"]
    assert len(done) == len(ids)


def test_failed_attempts_are_retried_then_become_a_ticket(make_store: StoreFactory,
                                                         clock: FakeClock) -> None:
    store = make_store(queue={"max_attempts": 2, "retry_backoff_s": 5},
                       breakers={"failures": 100})
    tid = store.submit(task(fake="site_failed"))
    human = store.submit(task("pdd-2", fake="needs_human"))
    store.submit(task("pdd-2"))  # the domain works for others: tid fails on its own (#15)
    engine, ex, _ = make_engine(store, clock)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            assert store.task(tid).state is TaskState.QUEUED      # waiting out its back-off
            clock.advance(5)
            await engine.run_until_idle()

    asyncio.run(go())
    assert ex.started.count(tid) == 2
    assert store.task(tid).state is TaskState.WAITING_HUMAN     # attempts spent: a person
    assert store.task(human).state is TaskState.WAITING_HUMAN   # straight to a person
    assert ex.started.count(human) == 1
    open_tickets = engine.tickets.tickets()
    assert {t.task_id for t in open_tickets} == {tid, human}


def test_breaker_opens_on_site_failures_other_domains_keep_running_and_probe_closes_it(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(breakers={"failures": 3, "window_s": 60, "backoff_s": 30},
                       queue={"max_attempts": 5, "retry_backoff_s": 0})
    bad = store.submit_many([task("pdd-1", fake="site_failed") for _ in range(3)])
    waiting = store.submit_many([task("pdd-2") for _ in range(4)])
    others = store.submit_many([task("temu-1") for _ in range(3)])
    engine, _ex, seen = make_engine(store, clock, slots=1)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            b = engine.breakers.get("pdd.shopfleet.test")
            assert b.state is BreakerState.OPEN
            assert all(store.task(t).state is TaskState.DONE for t in others)
            # the open domain's tasks wait, and burn no attempts
            pending = [store.task(t) for t in waiting if store.task(t).state
                       is TaskState.QUEUED]
            assert pending and all(t.attempts == 0 for t in pending)
            for t in bad:      # the site recovered
                store.cancel(t)
            clock.advance(30)
            assert b.state is BreakerState.HALF_OPEN
            await engine.run_until_idle()
            assert b.state is BreakerState.CLOSED

    asyncio.run(go())
    assert all(store.task(t).state is TaskState.DONE for t in waiting)
    states = [e.state for e in seen if isinstance(e, BreakerChanged)]
    assert states[:1] == ["open"] and states[-1] == "closed"


def test_retry_after_holds_only_that_domain(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(breakers={"failures": 100}, queue={"retry_backoff_s": 0})
    limited = store.submit(task("pdd-1", fake="rate_limited:120"))
    engine, _ex, _ = make_engine(store, clock, slots=2)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            rec = store.task(limited)
            assert rec.state is TaskState.QUEUED
            assert rec.not_before == pytest.approx(clock.now() + 120)
            level = {g.name: g for g in engine.gates.levels()}["pdd.shopfleet.test"]
            assert level.held_until == pytest.approx(clock.now() + 120)
            other = store.submit(task("temu-1"))
            await engine.run_until_idle()
            assert store.task(other).state is TaskState.DONE   # another domain: not held

    asyncio.run(go())


def test_gate_rate_change_is_persisted_for_the_next_run(make_store: StoreFactory,
                                                        clock: FakeClock) -> None:
    store = make_store()
    engine, _, _ = make_engine(store, clock)

    async def change() -> None:
        async with engine:
            await engine.set_gate_rate("pdd.shopfleet.test", rate_per_s=0.5, burst=2)

    asyncio.run(change())
    engine2, _, _ = make_engine(store, clock)

    async def check() -> None:
        async with engine2:
            level = {g.name: g for g in engine2.gates.levels()}["pdd.shopfleet.test"]
            assert (level.rate_per_s, level.burst) == (0.5, 2)

    asyncio.run(check())


def test_graceful_stop_checkpoints_and_releases_running_work(make_store: StoreFactory,
                                                             clock: FakeClock) -> None:
    store = make_store()
    # They step until asked to yield: only the stop can end them.
    ids = store.submit_many([task("pdd-1", steps=10, step_s=0.005, until_preempted=True),
                             task("pdd-2", steps=10, step_s=0.005, until_preempted=True)])
    engine, ex, _ = make_engine(store, clock)

    def progressed() -> bool:
        return all((store.task(t).checkpoint or {}).get("next_step", 0) > 0 for t in ids)

    async def go() -> None:
        await engine.start()
        runner = asyncio.create_task(engine.run())
        await wait_until(lambda: ex.live == 2)
        while not await asyncio.to_thread(progressed):   # both checkpointed a step
            await asyncio.sleep(0.01)
        await engine.stop(grace_s=10)
        await runner

    asyncio.run(go())
    for tid in ids:
        rec = store.task(tid)
        assert rec.state is TaskState.QUEUED and rec.attempts == 0   # not a failed attempt
        assert rec.checkpoint and rec.checkpoint["next_step"] > 0
    assert ex.finished == []
    assert sorted(ex.yielded) == sorted(ids)


def test_a_dead_background_job_stops_the_engine(make_store: StoreFactory, clock: FakeClock,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(queue={"recover_every_s": 1})
    engine, _, seen = make_engine(store, clock)

    def broken() -> list[int]:
        raise RuntimeError("disk on fire")

    async def go() -> None:
        await engine.start()
        monkeypatch.setattr(store, "recover_expired", broken)
        runner = asyncio.create_task(engine.run())
        while not runner.done():          # time passes until the job's next round kills it
            clock.advance(1)
            await asyncio.sleep(0.01)     # a poll: nothing here depends on how long it takes
        with pytest.raises(ShopFleetError, match="background job died"):
            await runner

    asyncio.run(go())
    assert any(isinstance(e, EngineProblem) and e.job == "lease-recovery" for e in seen)


def test_statistics_snapshot(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(breakers={"failures": 100})
    store.submit_many([task("pdd-1"), task("pdd-2", fake="site_failed"),
                       spec("reply_customer", "temu-1", priority=40, flow="collect_data")])
    engine, _, _ = make_engine(store, clock)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            await engine._refresh_queue_snapshot()

    asyncio.run(go())
    s = engine.statistics()
    assert s.done_per_min == 2 and s.failed_per_min == 1
    assert s.failures_by_class == {"site_failed": 1}
    assert s.failures_by_platform == {"pdd": 1}
    assert s.success_rate == pytest.approx(2 / 3)
    assert s.queued == 1 and sum(s.queued_by_band.values()) == 1
    assert any(g.name == "*" for g in s.gates)
    assert s.to_json()["queued"] == 1


def test_operator_cancel_stops_a_running_task(make_store: StoreFactory,
                                              clock: FakeClock) -> None:
    store = make_store()
    tid = store.submit(task(steps=1000, step_s=0.01))
    engine, ex, _ = make_engine(store, clock)

    async def go() -> None:
        async with engine:
            runner = asyncio.create_task(engine.run_until_idle())
            while ex.live < 1:
                await asyncio.sleep(0.01)
            await engine.cancel(tid)
            await asyncio.wait_for(runner, 60)

    asyncio.run(go())
    assert store.task(tid).state is TaskState.CANCELLED


def test_status_json_shows_the_running_engines_snapshot(
        make_store: StoreFactory, clock: FakeClock, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from core.cli import main

    store = make_store()
    store.submit(task("pdd-1"))
    engine, _, _ = make_engine(store, clock)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            while not await asyncio.to_thread(store.meta, "engine_snapshot"):
                await advance_and_settle(clock, 1)   # the metrics job stores one every 5 s

    asyncio.run(go())
    capsys.readouterr()
    assert main(["status", "--json", "--db", str(store.path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"]["owner"] == engine.owner
    assert out["engine"]["done_per_min"] == 1
    assert "gates" in out["engine"] and "breakers" in out["engine"]


def test_a_worker_back_from_a_long_pause_does_not_find_itself_lost(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """After a pause longer than worker_lost_after_s (but within the lease) the engine's own
    heartbeat comes before its lost-worker check: it keeps its running task."""
    store = make_store(queue={"worker_lost_after_s": 30, "recover_every_s": 15,
                              "heartbeat_s": 5, "lease_s": 600})
    tid = store.submit(task(steps=400, step_s=0.01, until_released=True))
    engine, ex, _ = make_engine(store, clock)

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run())
            while ex.live == 0:
                await asyncio.sleep(0.01)
            for _ in range(3):                   # a laptop asleep, three times
                await advance_and_settle(clock, 60)  # heartbeat and lost-worker check ran
                rec = store.task(tid)
                assert rec.state is TaskState.RUNNING and rec.lease_owner == engine.owner
            assert {w.owner: w.state for w in store.workers()}[engine.owner] == "alive"
            await engine.stop()
            await run

    asyncio.run(go())
    assert ex.started == [tid]                   # never requeued, never started twice


def test_run_returns_only_after_a_concurrent_stop_has_finished(make_store: StoreFactory) -> None:
    """``EngineHost`` closes its loop when ``run()`` returns: were ``run()`` to return while
    a ``stop()`` still closes the executor, that ``stop()`` would never finish."""
    poll_s = 0.123
    parked, closing, may_close = asyncio.Event(), asyncio.Event(), asyncio.Event()

    class Clock(FakeClock):
        async def sleep(self, seconds: float) -> None:
            if seconds == poll_s:  # run() waits for work in its idle wait
                parked.set()
            await super().sleep(seconds)

    store = make_store()
    ex = FakeExecutor()
    engine = Engine(store, executor=ex, clock=Clock(), poll_s=poll_s)
    seen: list[Event] = []
    engine.bus.subscribe(seen.append)
    real_close = ex.close

    async def slow_close() -> None:
        closing.set()
        await may_close.wait()
        await real_close()

    ex.close = slow_close  # type: ignore[method-assign]

    async def go() -> None:
        runner = asyncio.create_task(engine.run())
        await parked.wait()
        stopper = asyncio.create_task(engine.stop())
        await closing.wait()                       # the shutdown is closing the executor
        for _ in range(100):                       # run() wakes and reaches its shutdown
            await asyncio.sleep(0)
        assert not runner.done(), "run() returned while stop() was still shutting down"
        may_close.set()
        await runner
        await stopper
        await engine.stop()                        # a second stop returns at once

    asyncio.run(go())
    assert [type(e).__name__ for e in seen].count("EngineStopped") == 1


def test_retry_runs_a_finished_task_again_and_refuses_an_unfinished_one(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    done_id, queued_id = store.submit_many([task("pdd-1", page=2), task("pdd-2", page=3)])
    store.cancel(done_id)
    engine, _, _ = make_engine(store, clock)

    async def go() -> tuple[Any, Any]:
        changes = await engine.retry(done_id)
        with pytest.raises(Refused, match="only finished tasks"):
            await engine.retry(queued_id)
        return changes, store.counts()

    changes, counts = asyncio.run(go())
    again = store.task(changes.detail["retried_as"])
    assert again.id not in (done_id, queued_id) and again.state is TaskState.QUEUED
    assert (again.shop, again.type, again.params) == ("pdd-1", "collect_data", {"page": 2})
    assert counts["queued"] == 2   # the refused retry submitted nothing


class _HeldExecutor(FakeExecutor):
    """The fake executor; the first task it is given waits until a test lets it finish."""

    def __init__(self) -> None:
        super().__init__()
        self.held: int | None = None
        self.let_go = asyncio.Event()

    async def execute(self, task: Any, ctl: Any) -> Any:
        if self.held is None:
            self.held = task.id
            await self.let_go.wait()
        return await super().execute(task, ctl)


def test_run_until_idle_does_not_stop_when_a_task_ends_while_a_claim_is_in_flight(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """A dispatch round that looks while a shop's task runs finds the shop busy (0 claimed);
    if that task ends before the round returns, the shop's next task is claimable although
    nothing runs. run_until_idle must look again, not report idle (the race behind the
    #17 proxy test's flakes: under load the dispatcher's preemption poll lands there)."""
    store = make_store()
    first, second = store.submit_many([task("pdd-1"), task("pdd-1")])
    ex = _HeldExecutor()
    engine, _, _ = make_engine(store, clock, executor=ex)
    claim = engine.astore.claim_many
    rounds: list[int] = []

    async def claim_while_the_held_task_ends(*a: Any, **kw: Any) -> Any:
        got = await claim(*a, **kw)
        if ex.held is not None and ex.held in engine._running and not ex.let_go.is_set():
            assert got == []  # the shop is busy with the held task
            rounds.append(len(got))
            ex.let_go.set()   # ...which ends now, before this round returns
            await wait_until(lambda: ex.held not in engine._running, 60, poll_s=0.005)
        return got

    engine.astore.claim_many = claim_while_the_held_task_ends  # type: ignore[method-assign]

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()

    asyncio.run(go())
    assert rounds == [0]  # the interleaving happened
    assert store.task(first).state is TaskState.DONE
    assert store.task(second).state is TaskState.DONE
