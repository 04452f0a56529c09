"""Urgent work is noticed by event (#20): submitting in this process starts a preemption round
at once, without the poll that remains for other processes' submissions."""

from __future__ import annotations

import asyncio
import functools
import math

from core.engine import Engine
from core.store import TaskState
from core.testing import FakeClock, FakeExecutor
from tests.conftest import StoreFactory
from tests.helpers import spec, wait_until

until = functools.partial(wait_until, poll_s=0.01)


def test_a_submitted_urgent_task_is_noticed_by_event_with_the_poll_switched_off(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    holder = store.submit(spec("collect_data", "pdd-1",
                               params={"steps": 5, "step_s": 0.01, "until_preempted": 1}))
    ex = FakeExecutor()
    settings = store.settings.with_changes(gates={
        "global": {"rate_per_s": 1e6, "burst": 1e6},
        "default_domain": {"rate_per_s": 1e6, "burst": 1e6}})
    engine = Engine(store, settings, executor=ex, slots=4, clock=clock)
    rounds: list[int] = []
    in_round = [False]
    original = engine._preempt_round

    async def counted() -> None:
        in_round[0] = True
        try:
            await original()
        finally:
            in_round[0] = False
            rounds.append(1)

    engine._preempt_round = counted  # type: ignore[method-assign]

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 1)
            # The poll is switched off (its last round is "forever ago" in the future) and a
            # round already under way is let finish: from here on only the submit's signal
            # can start a round.
            engine._last_preempt_check = math.inf
            await until(lambda: not in_round[0])
            before = len(rounds)
            [u] = await engine.submit([spec("reply_customer", "pdd-1", flow="collect_data",
                                            priority=20.0,
                                            params={"steps": 2, "step_s": 0.01})])
            await until(lambda: holder in ex.asked_to_yield)
            assert len(rounds) > before
            await until(lambda: u in ex.finished)
            await asyncio.wait_for(run, 90)

    asyncio.run(go())
    assert store.task(holder).state is TaskState.DONE
    assert ex.started[0] == holder and ex.started[1] != holder and ex.started[2] == holder


class PreparingExecutor(FakeExecutor):
    """Counts the engine's requests to have a context ready (the browser executor's hook)."""

    def __init__(self) -> None:
        super().__init__()
        self.prepared = 0

    def prepare_context(self) -> None:
        self.prepared += 1


def test_a_context_is_prepared_for_the_urgent_task_when_its_victim_is_chosen(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    holder = store.submit(spec("collect_data", "pdd-1",
                               params={"steps": 5, "step_s": 0.01, "until_preempted": 1}))
    ex = PreparingExecutor()
    engine = Engine(store, store.settings, executor=ex, slots=4, clock=clock)

    async def go() -> None:
        async with engine:
            run = asyncio.create_task(engine.run_until_idle())
            await until(lambda: ex.live == 1)
            assert ex.prepared == 0                         # no victim yet: nothing asked
            [u] = await engine.submit([spec("reply_customer", "pdd-1", flow="collect_data",
                                            priority=20.0,
                                            params={"steps": 2, "step_s": 0.01})])
            await until(lambda: u in ex.finished)
            await asyncio.wait_for(run, 90)

    asyncio.run(go())
    assert ex.prepared == 1                                 # once, for the one victim
    assert store.task(holder).state is TaskState.DONE       # the victim resumed and finished
