"""Rescue semantics (#15): the site's or the network's state never spends an attempt and never
opens a ticket; a ticket only for what needs a person; ``run_until_idle(reach_s=...)`` waits
for held-back work and says what is left. Fake executor, fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

from core.engine import Engine, Leftover
from core.events import BreakerChanged, Event, GateChanged, TaskStateChanged, TicketOpened
from core.store import SqliteStore, TaskState
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.unit.test_rescue import Flaky, engine_for, run, task


def until_idle(engine: Engine, clock: FakeClock, reach_s: float) -> Leftover:
    """Run until idle; while only held-back work is left (within reach), step the fake clock
    to when it is due (the engine's own wait, made deterministic) and run again."""
    async def go() -> Leftover:
        async with engine:
            while True:
                await engine.run_until_idle()
                wait = await engine._held_back_for()
                if wait is None or wait > reach_s:
                    return await engine.run_until_idle(reach_s=reach_s)
                clock.advance(wait)
    return asyncio.run(go())


def tickets(seen: list[Event]) -> list[Event]:
    return [e for e in seen if isinstance(e, TicketOpened)]


def storm(make_store: StoreFactory, fake: str, n: int = 6, **settings: Any
          ) -> tuple[SqliteStore, list[int]]:
    store = make_store(queue={"max_attempts": 2, "retry_backoff_s": 1}, **settings)
    ids = store.submit_many([task(f"pdd-{1 + i % 2}", fake=fake, requests=0)
                             for i in range(n)])
    return store, ids


def test_a_429_storm_holds_the_gate_spends_no_attempt_opens_no_breaker_no_ticket(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store, ids = storm(make_store, "rate_limited:3", breakers={"failures": 2})
    engine, ex, seen = engine_for(store, clock, Flaky(fails=3))
    left = until_idle(engine, clock, reach_s=600)
    assert left.empty, left.reasons
    assert tickets(seen) == []
    assert not [e for e in seen if isinstance(e, BreakerChanged)]  # a 429 is not a failure
    for t in ids:
        rec = store.task(t)
        assert (rec.state, rec.attempts) == (TaskState.DONE, 1)   # 3 rate limits, 1 attempt
    assert ex.started.count(ids[0]) == 4
    # It kept answering 429: the gate was slowed for a while, then back to its rate.
    slowed = [e for e in seen if isinstance(e, GateChanged)]
    assert slowed and min(e.rate_per_s for e in slowed) < 1e6
    clock.advance(300)
    run(engine)   # a quiet domain: the next dispatcher round restores the configured rate
    assert not engine.rate_limits.slowed


def test_a_5xx_storm_opens_the_breaker_tasks_wait_no_attempts_no_tickets(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store, ids = storm(make_store, "site_failed", breakers={"failures": 3, "backoff_s": 30})
    engine, _ex, seen = engine_for(store, clock, Flaky(fails=3))
    left = until_idle(engine, clock, reach_s=600)
    assert left.empty, left.reasons
    assert tickets(seen) == []
    assert any(e.state == "open" for e in seen if isinstance(e, BreakerChanged))
    for t in ids:
        rec = store.task(t)
        # max_attempts is 2 and each task failed 3 times: the storm spent none of them
        # beyond the first task's own first try.
        assert rec.state is TaskState.DONE and rec.attempts <= 2, (t, rec.attempts)


def test_a_network_outage_pauses_the_domain_with_a_probe_not_tickets(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store, ids = storm(make_store, "network_down", breakers={"failures": 100, "backoff_s": 20})
    engine, ex, seen = engine_for(store, clock, Flaky(fails=2))
    left = until_idle(engine, clock, reach_s=600)
    assert left.empty, left.reasons
    assert tickets(seen) == []
    opened = [e for e in seen if isinstance(e, BreakerChanged) and e.state == "open"]
    assert opened  # one outage opens it at once (failures=100 is never reached)
    assert all(store.task(t).attempts == 1 for t in ids)
    # While it was open nothing of the domain ran: fewer runs than tasks × failures + 1.
    assert len(ex.started) <= len(ids) * 3


def test_a_task_failing_on_its_own_gets_one_ticket_after_its_attempts(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(queue={"max_attempts": 3, "retry_backoff_s": 1})
    bad = store.submit(task(fake="site_failed"))
    fine = store.submit_many([task("pdd-2"), task("temu-1")])
    engine, ex, seen = engine_for(store, clock)
    left = until_idle(engine, clock, reach_s=600)
    assert len(tickets(seen)) == 1 and ex.started.count(bad) == 3
    assert store.task(bad).state is TaskState.WAITING_HUMAN
    assert all(store.task(t).state is TaskState.DONE for t in fine)
    assert left.tickets == 1 and not left.empty
    assert any("wait for a person" in r for r in left.reasons)


def test_rescue_share_at_its_cap_waits_longer_instead_of_escalating(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(rescue={"share": 0.2, "min_attempts_for_share": 5},
                       queue={"max_attempts": 10, "retry_backoff_s": 1})
    bad = store.submit_many([task(f"pdd-{1 + i % 2}", fake="task_error") for i in range(6)])
    engine, _ex, seen = engine_for(store, clock)
    run(engine)
    assert tickets(seen) == []
    states = [store.task(t) for t in bad]
    assert all(r.state is TaskState.QUEUED for r in states)
    waits = sorted(r.not_before - clock.now() for r in states)
    assert waits[-1] >= 8   # at the cap: 8 × the usual back-off, not a ticket
    assert any("at its cap" in e.reason for e in seen if isinstance(e, TaskStateChanged))


def test_until_idle_stops_with_work_left_beyond_its_reach_and_says_why(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(queue={"max_attempts": 2, "retry_backoff_s": 1})
    store.submit_many([task(f"pdd-{i}", fake="rate_limited:900", requests=0)
                       for i in (1, 2)])
    engine, _, seen = engine_for(store, clock, Flaky(fails=1))
    left = until_idle(engine, clock, reach_s=60)
    assert left.waiting == 2 and not left.empty
    assert any("beyond the 60s" in r for r in left.reasons), left.reasons
    assert tickets(seen) == []
    # Within reach, the same work is waited for and finishes.
    engine2, _, _ = engine_for(store, clock, Flaky(fails=0))
    assert until_idle(engine2, clock, reach_s=1000).empty


def test_a_last_attempt_failing_while_nothing_of_the_domain_works_waits_for_the_probe(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """One task alone on a domain that answers 5xx: indistinguishable from its own trouble
    until something of the domain works, so its last attempt opens the breaker, no ticket."""
    store = make_store(queue={"max_attempts": 2, "retry_backoff_s": 1},
                       breakers={"failures": 100, "backoff_s": 30})
    t = store.submit(task("tiktok-1", fake="site_failed", requests=0))
    engine, ex, seen = engine_for(store, clock, Flaky(fails=4))
    left = until_idle(engine, clock, reach_s=600)
    assert left.empty, left.reasons
    assert tickets(seen) == []
    assert any(e.state == "open" for e in seen if isinstance(e, BreakerChanged))
    assert store.task(t).state is TaskState.DONE and ex.started.count(t) == 5
