"""#15: ``worker --until-idle`` with a domain's breaker open (a DNS failure, an outage) waits
for the breaker's next probe only when it is within its reach; beyond it, the run ends with
the work left and why — it does not poll forever. Fake executor, fake clock."""

from __future__ import annotations

import asyncio
import time

from core.events import TicketOpened
from core.store import TaskState
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.unit.test_rescue import Flaky, engine_for, task
from tests.unit.test_rescue_outage import Outage


def test_an_outage_whose_probe_is_beyond_the_reach_ends_the_run_and_says_why(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(queue={"max_attempts": 2, "retry_backoff_s": 1},
                       breakers={"failures": 100, "backoff_s": 300, "backoff_max_s": 600})
    # Four on two shops: two run into the outage, two were never claimed (due now, held
    # only by the breaker).
    down = store.submit_many([task(f"pdd-{1 + i % 2}", fake="network_down", requests=0)
                              for i in range(4)])
    fine = store.submit(task("temu-1"))
    engine, _ex, seen = engine_for(store, clock, Flaky(fails=10))

    async def go() -> tuple[float | None, object]:
        async with engine:
            await engine.run_until_idle()              # the outage opens pdd's breaker
            wait = await engine._held_back_for()
            assert wait is not None and wait > 60, wait     # the probe, not a poll interval
            # What is left is held until the probe, 300 s away: beyond a 60 s reach, the
            # run ends at once (the engine's own wait, no clock stepping here).
            left = await engine.run_until_idle(reach_s=60)
            return wait, left

    _wait, left = asyncio.run(go())
    assert store.task(fine).state is TaskState.DONE
    assert all((store.task(t).state, store.task(t).attempts) == (TaskState.QUEUED, 0)
               or store.task(t).attempts <= 1 for t in down)
    assert left.waiting == 4 and not left.empty     # type: ignore[attr-defined]
    reasons = " ".join(left.reasons)                  # type: ignore[attr-defined]
    assert "breaker pdd.shopfleet.test is open; its next probe in" in reasons, reasons
    assert not [e for e in seen if isinstance(e, TicketOpened)]
    assert "beyond the 60s this worker waits (opened by network_down:" in reasons, reasons


def test_an_outage_whose_probe_is_within_the_reach_is_waited_for_and_the_work_finishes(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """The same outage, its probe within the reach: the run waits for exactly the probe (the
    engine's own sleep on the fake clock, not a poll), the fault has cleared, the probe
    succeeds and every held task runs at that moment: nothing left, no ticket, no attempt
    spent on the outage."""
    store = make_store(queue={"max_attempts": 2, "retry_backoff_s": 1},
                       breakers={"failures": 100, "backoff_s": 30, "backoff_max_s": 600})
    down = store.submit_many([task(f"pdd-{1 + i % 2}", fake="network_down", requests=0)
                              for i in range(4)])
    ex = Outage()
    engine, _ex, seen = engine_for(store, clock, ex)

    async def go() -> object:
        async with engine:
            await engine.run_until_idle()                # the outage opens pdd's breaker
            probe_at = engine.breakers.get("pdd.shopfleet.test").view().next_probe_at
            assert probe_at is not None and probe_at - clock.now() == 30
            run = asyncio.ensure_future(engine.run_until_idle(reach_s=60))
            # Wait for the event "the engine sleeps until the probe" (a fake-clock sleeper
            # due exactly then), then let the fake clock reach it.
            sleeps_until_probe = False
            end = time.monotonic() + 90                  # a backstop against a hang only
            while time.monotonic() < end:
                assert not run.done(), run.result()      # it waits: the probe is in reach
                if any(abs(when - probe_at) < 1e-6 and not f.done()
                       for when, f in clock._sleepers):
                    sleeps_until_probe = True
                    break
                await asyncio.sleep(0.005)
            assert sleeps_until_probe
            ex.down = False                              # the fault has cleared meanwhile
            clock.set(probe_at)
            left = await asyncio.wait_for(run, 60)
            assert clock.now() == probe_at               # all ran at the probe time
            return left

    left = asyncio.run(go())
    assert left.empty, left.reasons                    # type: ignore[attr-defined]
    for t in down:
        assert (store.task(t).state, store.task(t).attempts) == (TaskState.DONE, 1)
    assert sorted(ex.finished) == sorted(down)
    assert not [e for e in seen if isinstance(e, TicketOpened)]
