"""The engine acks a finished task and claims the next one for its slot in one store
transaction (#20), claiming exactly what its dispatcher would: the same exclusions, one task
per shop on every worker, nothing started once it stops, the ack alone while a breaker probes."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from core.engine import BreakerState
from core.events import TaskStateChanged
from core.store import SqliteStore, TaskState
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.helpers import make_engine, run_with, spec, wait_until


class OpCounter:
    """Counts the store's write ops the engine hands to the writer: each op is one
    transaction (the writer runs it inside its own savepoint or transaction)."""

    def __init__(self, store: SqliteStore) -> None:
        self.calls: dict[str, int] = {"ack_op": 0, "ack_and_claim_op": 0, "claim_many_op": 0}
        self.claimed_by_round: list[int] = []
        self.claimed_with_ack: list[int | None] = []
        for name in self.calls:
            setattr(store, name, self._wrap(name, getattr(store, name)))

    def _wrap(self, name: str, make_op: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*a: Any, **kw: Any) -> Any:
            self.calls[name] += 1
            op = make_op(*a, **kw)

            def run(conn: Any) -> Any:
                got = op(conn)
                if name == "claim_many_op":
                    self.claimed_by_round += [t.id for t in got]
                elif name == "ack_and_claim_op":
                    self.claimed_with_ack.append(got.id if got is not None else None)
                return got
            return run
        return counted


def test_a_finished_task_is_acked_with_its_slots_next_claim_in_one_op(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    ids = store.submit_many([spec("collect_data", "pdd-1"), spec("upload_product", "pdd-2"),
                             spec("reply_customer", "temu-1"), spec("collect_data", "pdd-1"),
                             spec("campaign_signup", "tiktok-1")])
    ops = OpCounter(store)
    engine, ex, seen = make_engine(store, clock, slots=1)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()

    asyncio.run(go())
    assert store.counts()["done"] == len(ids)
    by_priority = [ids[2], ids[4], ids[1], ids[0], ids[3]]
    assert ex.started == by_priority                  # the order a claim round gives
    assert ops.calls["ack_op"] == 0                   # no ack went alone
    assert ops.calls["ack_and_claim_op"] == len(ids)  # one op (transaction) a finished task
    assert ops.claimed_by_round == by_priority[:1]    # the dispatcher claimed only the first
    assert ops.claimed_with_ack == [*by_priority[1:], None]
    states = [(e.task_id, e.state) for e in seen if isinstance(e, TaskStateChanged)]
    expected: list[tuple[int, str]] = [(by_priority[0], "running")]
    for done, nxt in itertools.pairwise(by_priority):
        expected += [(done, "done"), (nxt, "running")]
    assert states == [*expected, (by_priority[-1], "done")]
    for tid in ids:
        assert [(e.from_state, e.to_state) for e in store.events(tid)] == [
            (None, "queued"), ("queued", "running"), ("running", "done")]


def test_the_claim_with_the_ack_keeps_out_what_the_dispatcher_keeps_out(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """A shop whose proxy is down (its breaker open) and a shop running on another worker
    get no task through the finishing path, however urgent their tasks are; other shops'
    tasks run in order."""
    store = make_store()
    elsewhere = store.submit(spec("reply_customer", "temu-1"))
    on_temu = store.claim("other-worker")  # temu-1's one task runs on another worker
    assert on_temu is not None and on_temu.id == elsewhere
    first = store.submit(spec("collect_data", "pdd-1"))
    proxy_down = store.submit(spec("reply_customer", "pdd-2"))
    busy_shop = store.submit(spec("reply_customer", "temu-1"))
    after = [store.submit(spec("collect_data", "pdd-1")),
             store.submit(spec("collect_data", "tiktok-1"))]
    ops = OpCounter(store)
    engine, ex, _ = make_engine(store, clock, slots=1)

    async def go() -> None:
        async with engine:
            await engine.set_breaker("proxy:pdd-2", "open")
            await engine.run_until_idle()

    asyncio.run(go())
    assert ex.started == [first, *after]
    assert ops.calls["ack_and_claim_op"] == 3 and ops.calls["ack_op"] == 0
    assert ops.claimed_with_ack == [*after, None]
    assert store.task(proxy_down).state is TaskState.QUEUED
    assert store.task(busy_shop).state is TaskState.QUEUED
    assert max(ex.max_by_shop.values()) == 1


def stop_during(engine: Any, method: str) -> None:
    """Run ``engine`` until idle with ``engine.astore.<method>`` starting ``stop()`` right
    after the store answered: the call was in flight when stopping began."""
    real = getattr(engine.astore, method)
    stopping: list[asyncio.Task[None]] = []

    async def stop_meanwhile(*a: Any, **kw: Any) -> Any:
        got = await real(*a, **kw)
        stopping.append(asyncio.create_task(engine.stop()))
        await asyncio.sleep(0)  # stop() has begun: the engine is stopping
        return got

    setattr(engine.astore, method, stop_meanwhile)

    async def go() -> None:
        await engine.start()
        await engine.run_until_idle()
        await asyncio.gather(*stopping)

    asyncio.run(go())
    assert stopping  # the call did happen while the engine ran


def assert_given_back(store: Any, tid: int) -> None:
    """Queued again as it was: no attempt spent, its log running -> queued."""
    back = store.task(tid)
    assert back.state is TaskState.QUEUED and back.attempts == 0, back
    assert [(e.from_state, e.to_state) for e in store.events(tid)] == [
        (None, "queued"), ("queued", "running"), ("running", "queued")]


def test_a_task_claimed_with_the_ack_while_the_engine_stops_is_given_back(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    first, second = store.submit(spec(shop="pdd-1")), store.submit(spec(shop="pdd-2"))
    engine, ex, _ = make_engine(store, clock, slots=1)
    stop_during(engine, "ack_and_claim")
    assert ex.started == [first]
    assert store.task(first).state is TaskState.DONE
    assert_given_back(store, second)
    assert store.counts()["running"] == 0


def test_tasks_a_round_claimed_while_the_engine_stops_are_given_back(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """The dispatcher's claim is in flight when stop() begins: shutdown asks only the
    attempts it sees to yield, so the round's tasks must not start after it — they go back
    to the queue as they were, their attempts not spent."""
    store = make_store()
    ids = store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2")])
    engine, ex, _ = make_engine(store, clock, slots=2)
    stop_during(engine, "claim_many")
    assert ex.started == []
    for tid in ids:
        assert_given_back(store, tid)
    assert store.counts()["running"] == 0


def test_while_a_breaker_probes_the_ack_goes_alone(make_store: StoreFactory,
                                                   clock: FakeClock) -> None:
    """A half-open breaker's single probe is claimed by the dispatcher only."""
    store = make_store(breakers={"failures": 1, "backoff_s": 10})
    ids = store.submit_many([spec("collect_data", "pdd-1"), spec("collect_data", "pdd-2")])
    ops = OpCounter(store)
    engine, ex, _ = make_engine(store, clock, slots=1)

    async def go() -> None:
        async with engine:
            breaker = engine.breakers.get("temu.shopfleet.test")
            breaker.record_failure()
            clock.advance(11)
            assert breaker.state is BreakerState.HALF_OPEN
            await engine.run_until_idle()

    asyncio.run(go())
    assert ex.started == ids
    assert ops.calls["ack_and_claim_op"] == 0 and ops.calls["ack_op"] == len(ids)
    assert ops.claimed_by_round == ids


def test_a_success_that_closes_a_breaker_acks_alone_so_the_next_claim_sees_it_closed(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """A task that ran through its domain's breaker opening finishes while the half-open
    probe is in flight: its success closes the breaker, so the dispatcher's next claim may
    take the domain's urgent task (a claim made with the ack would still have kept the
    domain out, and run a less urgent task in its place)."""
    store = make_store(breakers={"failures": 1, "backoff_s": 10})
    slow = {"until_released": True, "step_s": 0.02}
    first = store.submit(spec("collect_data", "pdd-2", params=slow))
    engine, ex, _ = make_engine(store, clock, slots=2)
    order: list[int] = []

    async def scenario() -> None:
        await wait_until(lambda: ex.started == [first])
        breaker = engine.breakers.get("pdd.shopfleet.test")
        breaker.record_failure()
        clock.advance(11)
        assert breaker.state is BreakerState.HALF_OPEN
        probe = (await engine.submit([spec("collect_data", "pdd-1", params=slow)]))[0]
        await wait_until(lambda: ex.started == [first, probe])
        urgent = store.submit(spec("reply_customer", "pdd-2"))
        other = store.submit(spec("collect_data", "tiktok-1"))
        ex.release(first)
        await wait_until(lambda: len(ex.started) >= 3)
        order.extend([urgent, other])
        ex.release(probe)
        await wait_until(lambda: store.counts()["done"] == 4)

    run_with(engine, scenario)
    assert ex.started[2] == order[0]


def test_with_slots_free_the_ack_goes_alone_and_the_round_claims(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """Free slots besides the finishing one: the dispatcher's round claims for all of them
    at once (one read of the busy shops a round, not one a task)."""
    store = make_store()
    ids = store.submit_many([spec("collect_data", "pdd-1"), spec("collect_data", "pdd-2"),
                             spec("collect_data", "pdd-1")])
    ops = OpCounter(store)
    engine, ex, _ = make_engine(store, clock, slots=3)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()

    asyncio.run(go())
    assert sorted(ex.started) == ids and store.counts()["done"] == 3
    assert ops.calls["ack_and_claim_op"] == 0 and ops.calls["ack_op"] == 3


def test_a_task_claimed_with_an_ack_whose_slot_was_taken_meanwhile_goes_back(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """The ack was retried through a store outage; meanwhile its slot was freed (the lease
    check found the finished task gone and ended its runner) and the dispatcher filled it.
    The task the ack claimed is not started one over the slots: it goes back as it was."""
    store = make_store()
    first, second, third = (store.submit(spec(shop="pdd-1")), store.submit(spec(shop="pdd-2")),
                            store.submit(spec(shop="temu-1")))
    engine, ex, _ = make_engine(store, clock, slots=1)
    real = engine.astore.ack_and_claim
    filled: list[int] = []

    async def slot_taken_meanwhile(task_id: int, owner: str, **kw: Any) -> Any:
        got = await real(task_id, owner, **kw)
        if not filled:
            engine._running.pop(task_id)                 # its runner ended meanwhile
            [t] = await engine.astore.claim_many(owner, 1)  # and the dispatcher filled it
            filled.append(t.id)
            engine._start_attempt(t)
        return got

    engine.astore.ack_and_claim = slot_taken_meanwhile

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()

    asyncio.run(go())
    assert filled == [third] and ex.max_live == 1      # never one over the slots
    assert ex.started == [first, third, second]         # second ran later, once
    assert [(e.from_state, e.to_state) for e in store.events(second)] == [
        (None, "queued"), ("queued", "running"), ("running", "queued"), ("queued", "running"),
        ("running", "done")]
    assert store.task(second).attempts == 1             # its give-back spent no attempt
