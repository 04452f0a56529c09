"""#18 the scheduler on both stores, on the fake clock: each firing gives exactly one task per
selected shop (keys checked), a second worker planning the same firing writes nothing, a
schedule whose template stops validating is paused loudly, a paused one fires nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.errors import SpecError
from core.events import ScheduleFailed, ScheduleFired
from core.scheduler import fire_due, scheduler_round
from core.schedules import define_schedule
from core.store.base import Store
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory

TEMPLATE = {"type": "collect_data", "flow": "collect_data", "params": {"day": "{fire.date}"}}
START = datetime(2026, 3, 1, 8, 0, 30, tzinfo=UTC).timestamp()


def _add(store: Store, clock: FakeClock, **kw: Any) -> None:
    opts: dict[str, Any] = {"tz": "Asia/Shanghai", "shops": "platform:pdd", "task": TEMPLATE,
                            "every": "1m"}
    opts.update(kw)
    s = define_schedule("m", **opts)
    store.add_schedule(s.name, s.to_dict(), mark=clock.now())


def _keys(store: Store) -> list[str]:
    return sorted(t.key or "" for t in store.tasks(limit=1000))


def test_every_minute_gives_one_task_per_shop_per_firing(store_factory: StoreFactory,
                                                         clock: FakeClock) -> None:
    clock.set(START)
    store = store_factory(queue={"max_tasks_per_shop": 100})
    _add(store, clock)
    fired = []
    for _ in range(3 * 12):  # three minutes in 5-second rounds
        clock.advance(5)
        fired += [e for e in scheduler_round(store, clock.now()) if isinstance(e, ScheduleFired)]
    assert [datetime.fromtimestamp(e.firing, UTC).strftime("%H:%M") for e in fired] == [
        "08:01", "08:02", "08:03"]
    assert _keys(store) == sorted(f"sched:m:2026-03-01T08:0{m}:00Z:{shop}"
                                  for m in (1, 2, 3) for shop in ("pdd-1", "pdd-2"))
    t = store.tasks(limit=1)[0]
    assert t.params == {"day": "2026-03-01"}  # the firing's local date (Asia/Shanghai)


def test_two_workers_planning_the_same_firing_submit_it_once(store_factory: StoreFactory,
                                                             clock: FakeClock) -> None:
    clock.set(START)
    store = store_factory()
    _add(store, clock)
    clock.advance(60)
    rec = store.schedule_record("m")
    first = fire_due(store, rec, clock.now())  # both read the same mark ...
    second = fire_due(store, rec, clock.now())  # ... the second finds it moved
    assert [type(e) for e in first] == [ScheduleFired] and second == []
    assert len(_keys(store)) == 2


def test_a_template_that_stops_validating_pauses_the_schedule(store_factory: StoreFactory,
                                                              clock: FakeClock) -> None:
    renamed: set[str] = set()

    def validator(spec: Any, shop: Any) -> None:
        if spec.flow in renamed:
            raise SpecError("flow", f"no flow named {spec.flow!r}")

    clock.set(START)
    store = store_factory(validator=validator)
    _add(store, clock)
    clock.advance(60)
    assert [type(e) for e in scheduler_round(store, clock.now())] == [ScheduleFired]
    renamed.add("collect_data")
    clock.advance(60)
    events = scheduler_round(store, clock.now())
    assert [type(e) for e in events] == [ScheduleFailed]
    assert isinstance(events[0], ScheduleFailed) and "collect_data" in events[0].error
    rec = store.schedule_record("m")
    assert rec.paused and "no flow named" in rec.last_error
    assert len(_keys(store)) == 2  # nothing of the failed firing was written
    clock.advance(600)
    assert scheduler_round(store, clock.now()) == []  # paused: silent from now on


def test_a_selector_that_picks_no_shop_pauses_the_schedule(store_factory: StoreFactory,
                                                           clock: FakeClock) -> None:
    clock.set(START)
    store = store_factory()
    _add(store, clock, shops="tag:north")
    clock.advance(60)
    events = scheduler_round(store, clock.now())
    assert [type(e) for e in events] == [ScheduleFailed]
    assert "--shops" in store.schedule_record("m").last_error


def test_a_paused_schedule_fires_nothing_and_its_mark_moves(store_factory: StoreFactory,
                                                            clock: FakeClock) -> None:
    clock.set(START)
    store = store_factory()
    _add(store, clock)
    store.set_schedule_state("m", paused=True)
    clock.advance(300)
    assert scheduler_round(store, clock.now()) == []
    assert store.counts()["queued"] == 0
    assert store.schedule_record("m").mark == pytest.approx(START - 30 + 300)


def test_catch_up_once_after_downtime_fires_one_firing(store_factory: StoreFactory,
                                                       clock: FakeClock) -> None:
    clock.set(START)
    store = store_factory()
    _add(store, clock, catch_up="once")
    clock.advance(3600)  # the machine slept an hour
    events = scheduler_round(store, clock.now())
    assert [type(e) for e in events] == [ScheduleFired]
    assert len(_keys(store)) == 2
    assert scheduler_round(store, clock.now()) == []


def test_jitter_delays_each_task_within_bounds(store_factory: StoreFactory,
                                               clock: FakeClock) -> None:
    clock.set(START)
    store = store_factory()
    _add(store, clock, jitter="50s")
    clock.advance(60)
    scheduler_round(store, clock.now())
    firing = datetime(2026, 3, 1, 8, 1, tzinfo=UTC).timestamp()
    tasks = store.tasks(limit=10)
    assert len(tasks) == 2
    assert all(firing <= t.not_before < firing + 50 for t in tasks)
