"""#15: ``worker --until-idle`` with a domain's breaker open (a DNS failure, an outage) waits
for the breaker's next probe only when it is within its reach; beyond it, the run ends with
the work left and why — it does not poll forever. Fake executor, fake clock."""

from __future__ import annotations

import asyncio

from core.events import TicketOpened
from core.store import TaskState
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.unit.test_rescue import Flaky, engine_for, task


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
