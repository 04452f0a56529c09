"""#15: a task stopped by a network outage (DNS, refused, offline) is requeued to the moment
the engine tries that network path again — its breaker's next probe — not to a back-off of
its own: it spends no attempt, opens no ticket, and once the probe succeeds every task the
outage held is claimable at once. Fake executor, fake clock (no real sleeping)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest

from core.config import Settings
from core.engine import Engine
from core.engine.breakers import BreakerState
from core.events import TicketOpened
from core.store import SqliteStore, TaskState
from core.testing import FakeClock, FakeExecutor
from tests.conftest import StoreFactory, add_demo_shops
from tests.unit.test_rescue import engine_for, task

DOMAIN = "pdd.shopfleet.test"
BACKOFF_S = 20.0


class Outage(FakeExecutor):
    """Every task fails with a DNS error while ``down``; once the fault clears, they work."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True

    async def execute(self, t: Any, ctl: Any) -> Any:
        if not self.down:
            t = type(t)(**{**t.__dict__, "params": {**t.params, "fake": "ok"}})
        return await super().execute(t, ctl)


OUTAGE_SETTINGS: dict[str, Any] = {
    "queue": {"max_attempts": 2, "retry_backoff_s": 1},
    "breakers": {"failures": 100, "backoff_s": BACKOFF_S, "backoff_max_s": 16 * BACKOFF_S}}


@pytest.fixture(params=["sqlite", "redis"])
def any_store(request: pytest.FixtureRequest, make_store: StoreFactory,
              clock: FakeClock) -> Iterator[StoreFactory]:
    """The same rule on both stores (the requeue is the store's ``release(delay_s)``)."""
    if request.param == "sqlite":
        yield make_store
        return
    from core.store.redis.store import RedisStore
    url: str = request.getfixturevalue("redis_url")
    opened: list[Any] = []

    def make(**sections: dict[str, Any]) -> Any:
        store = RedisStore(url, settings=Settings().with_changes(**sections), clock=clock,
                           prefix="outage")
        opened.append(store)
        add_demo_shops(store)
        return store

    yield make
    for st in opened:
        st.close()


def outage_store(make_store: StoreFactory) -> tuple[SqliteStore, list[int]]:
    store = make_store(**OUTAGE_SETTINGS)
    for n in (3, 4):  # four pdd shops: four of its tasks run into the outage together
        store.add_shop(f"pdd-{n}", platform="pdd", base_url=f"http://{DOMAIN}/shop/pdd-{n}")
    # Two tasks a shop: the first four are in flight when the outage hits, the other four
    # were never claimed (their shops were busy).
    ids = store.submit_many([task(f"pdd-{1 + i % 4}", fake="network_down", requests=0)
                             for i in range(8)])
    return store, ids


def held(store: SqliteStore, ids: list[int]) -> list[tuple[TaskState, int]]:
    return [(store.task(t).state, store.task(t).attempts) for t in ids]


def test_tasks_stopped_by_an_outage_are_due_at_the_probe_and_all_run_once_it_succeeds(
        any_store: StoreFactory, clock: FakeClock) -> None:
    store, ids = outage_store(any_store)
    ex = Outage()
    engine, _ex, seen = engine_for(store, clock, ex)
    t0 = clock.now()

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            # Four tasks ran into the outage at once: the breaker opened once, at the
            # first back-off; the others in flight did not push the probe further away.
            v = engine.breakers.get(DOMAIN).view()
            assert v.state is BreakerState.OPEN and v.trips == 1, v
            assert v.next_probe_at == t0 + BACKOFF_S
            assert sorted(ex.started) == sorted(ids[:4])
            assert held(store, ids) == [(TaskState.QUEUED, 0)] * 8   # no attempt spent
            for t in ids[:4]:            # requeued to the probe time, not a back-off
                assert store.task(t).not_before == v.next_probe_at, t
            for t in ids[4:]:            # never claimed: due now, held by the breaker
                assert store.task(t).not_before <= t0

            # The probe time comes and the fault is still there: only the probe ran, it
            # failed, the breaker backs off longer; the probe task is due at the new probe
            # time, the others stay due (held by the breaker, not by a time of their own).
            clock.advance(BACKOFF_S)
            await engine.run_until_idle()
            assert len(ex.started) == 5
            probe = ex.started[-1]
            v = engine.breakers.get(DOMAIN).view()
            assert v.state is BreakerState.OPEN and v.trips == 2, v
            assert v.next_probe_at == t0 + 3 * BACKOFF_S
            assert store.task(probe).not_before == v.next_probe_at
            assert all(store.task(t).not_before <= clock.now() for t in ids if t != probe)

            # The fault clears; at the next probe time one probe runs, succeeds, closes the
            # breaker, and every other task is claimable at once: all finish at that very
            # moment of the fake clock (nothing waits for a back-off of its own).
            ex.down = False
            clock.advance(2 * BACKOFF_S)
            await engine.run_until_idle()
            assert engine.breakers.get(DOMAIN).view().state is BreakerState.CLOSED
            assert clock.now() == t0 + 3 * BACKOFF_S

    asyncio.run(go())
    assert held(store, ids) == [(TaskState.DONE, 1)] * 8     # the outage cost no attempt
    assert not [e for e in seen if isinstance(e, TicketOpened)]


def test_a_fresh_worker_finishes_the_held_tasks_within_one_probe_back_off(
        make_store: StoreFactory, clock: FakeClock) -> None:
    """The next ``worker --until-idle`` (a fresh process: its breakers know nothing) finds
    the tasks due by the first worker's probe time, so waiting one back-off is enough —
    however many tasks were in flight when the outage hit."""
    store, ids = outage_store(make_store)
    first, _ex, seen = engine_for(store, clock, Outage())

    async def outage() -> None:
        async with first:
            await first.run_until_idle()
            left = await first.run_until_idle(reach_s=BACKOFF_S / 4)  # the probe is beyond
            assert left.waiting == 8
            # It says what is left and why: the breaker, its probe, the outage behind it.
            assert any(re.fullmatch(rf"breaker {re.escape(DOMAIN)} is open; its next probe "
                                    r"in \d+s, beyond the 5s this worker waits \(opened by "
                                    r"network_down: .*ERR_NAME_NOT_RESOLVED.*\)", r)
                       for r in left.reasons), left.reasons

    asyncio.run(outage())
    clock.advance(1)  # the next worker starts a little later, the network back
    assert max(store.task(t).not_before for t in ids) - clock.now() <= BACKOFF_S
    ex = Outage()
    ex.down = False
    second = Engine(store, first.settings, executor=ex, slots=4, clock=clock)

    async def after() -> object:
        async with second:
            await second.run_until_idle()
            # Everything is due by the first worker's probe time, within one back-off: the
            # engine's own wait for held-back work (made deterministic: the test moves the
            # fake clock by exactly that wait) is within this worker's reach.
            wait = await second._held_back_for()
            assert wait is not None and 0 < wait <= BACKOFF_S, wait
            clock.advance(wait)
            return await second.run_until_idle(reach_s=BACKOFF_S)

    left = asyncio.run(after())
    assert left.empty, left.reasons   # type: ignore[attr-defined]
    assert held(store, ids) == [(TaskState.DONE, 1)] * 8
    assert not [e for e in seen if isinstance(e, TicketOpened)]
