"""#18 on both stores: shop tags, stored schedules, and a firing's tasks with its mark in one
transaction (compare-and-set on the mark: a second firing of the same mark writes nothing)."""

from __future__ import annotations

import pytest

from core.errors import BacklogFull, InvalidInput, Refused, SpecError
from core.store import TaskState
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec


def test_tags_are_added_removed_normalised_and_listed(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.shop("pdd-1").tags == ()
    rec = store.retag_shop("pdd-1", add=["North", "华北", "vip"])
    assert rec.tags == ("north", "vip", "华北")
    rec = store.retag_shop("pdd-1", add=["east"], remove=["VIP"])
    assert rec.tags == ("east", "north", "华北")
    assert {s.name: s.tags for s in store.shops()}["pdd-1"] == ("east", "north", "华北")
    assert store.shop("pdd-2").tags == ()


def test_a_bad_tag_names_the_field_and_writes_nothing(store_factory: StoreFactory) -> None:
    store = store_factory()
    with pytest.raises(SpecError) as err:
        store.retag_shop("pdd-1", add=["ok", "not ok"])
    assert err.value.field.startswith("TAG")
    assert store.shop("pdd-1").tags == ()
    with pytest.raises(InvalidInput):
        store.retag_shop("nope", add=["x"])


def test_schedules_are_stored_paused_resumed_and_deleted(store_factory: StoreFactory,
                                                         clock: FakeClock) -> None:
    store = store_factory()
    d = {"name": "daily", "cron": "0 8 * * *", "tz": "UTC", "shops": "*",
         "task": {"type": "collect_data", "flow": "collect_data"}, "paused": False}
    rec = store.add_schedule("daily", d, mark=clock.now())
    assert (rec.name, rec.definition, rec.mark, rec.paused, rec.last_error) == (
        "daily", d, clock.now(), False, "")
    with pytest.raises(Refused):
        store.add_schedule("daily", d, mark=0.0)
    store.set_schedule_state("daily", paused=True, last_error="flow gone")
    rec = store.schedule_record("daily")
    assert (rec.paused, rec.last_error, rec.mark) == (True, "flow gone", clock.now())
    store.set_schedule_state("daily", paused=False, last_error="", mark=clock.now() + 5)
    rec = store.schedule_record("daily")
    assert (rec.paused, rec.last_error, rec.mark) == (False, "", clock.now() + 5)
    assert [r.name for r in store.schedules()] == ["daily"]
    store.delete_schedule("daily")
    assert store.schedules() == []
    with pytest.raises(InvalidInput):
        store.schedule_record("daily")
    with pytest.raises(InvalidInput):
        store.delete_schedule("daily")


def test_a_firing_submits_and_moves_the_mark_once(store_factory: StoreFactory,
                                                  clock: FakeClock) -> None:
    store = store_factory(queue={"max_tasks_per_shop": 10})
    store.add_schedule("s", {"name": "s"}, mark=100.0)
    specs = [spec(shop=s, key=f"sched:s:1970-01-01T00:03:20Z:{s}") for s in ("pdd-1", "pdd-2")]
    ids = store.fire_schedule("s", expected_mark=100.0, mark=200.0, specs=specs)
    assert ids is not None and len(ids) == 2
    assert store.schedule_record("s").mark == 200.0
    # a second worker that planned from the old mark: nothing written
    assert store.fire_schedule("s", expected_mark=100.0, mark=200.0, specs=specs) is None
    assert store.counts()["queued"] == 2
    # the same keys again (a replay after a crash between plan and fire): no new tasks
    assert store.fire_schedule("s", expected_mark=200.0, mark=300.0, specs=specs) == ids
    assert store.counts()["queued"] == 2
    # a firing with no tasks (skipped by the catch-up policy) only moves the mark
    assert store.fire_schedule("s", expected_mark=300.0, mark=400.0, specs=[]) == []
    assert store.schedule_record("s").mark == 400.0


def test_a_firing_that_cannot_submit_leaves_the_mark(store_factory: StoreFactory) -> None:
    store = store_factory(queue={"max_backlog": 1, "urgent_reserve": 0.0})
    store.add_schedule("s", {"name": "s"}, mark=100.0)
    specs = [spec(shop="pdd-1", key="sched:s:a:pdd-1"), spec(shop="pdd-2", key="sched:s:a:pdd-2")]
    with pytest.raises(BacklogFull):
        store.fire_schedule("s", expected_mark=100.0, mark=200.0, specs=specs)
    assert store.schedule_record("s").mark == 100.0
    assert store.counts()["queued"] == 0


def test_a_firing_with_delayed_tasks(store_factory: StoreFactory, clock: FakeClock) -> None:
    from datetime import UTC, datetime
    store = store_factory()
    store.add_schedule("s", {"name": "s"}, mark=0.0)
    nb = datetime.fromtimestamp(clock.now() + 120, UTC).isoformat()
    ids = store.fire_schedule("s", expected_mark=0.0, mark=1.0,
                              specs=[spec(key="sched:s:x:pdd-1", not_before=nb)])
    assert ids is not None
    assert store.task(ids[0]).state is TaskState.SCHEDULED
