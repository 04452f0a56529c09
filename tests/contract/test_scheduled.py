"""Delayed tasks (#18): ``not_before``/``delay_s`` make a task wait as ``scheduled``; it joins
the queue at its time with its normal priority, aging from then; cancel, bump, counts and
listings know the state."""

from __future__ import annotations

import pytest

from core.errors import SpecError
from core.store import TaskState
from core.store.base import PROMOTE_BATCH, Store
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import iso, spec

MANY = {"max_tasks_per_shop": 100}


def drain(store: Store, owner: str = "w") -> list[int]:
    order = []
    while (t := store.claim(owner)) is not None:
        order.append(t.id)
        store.ack(t.id, owner)
    return order


def test_a_delayed_task_waits_as_scheduled_and_joins_the_queue_at_its_time(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue=MANY)
    at = clock.now() + 600
    tid = store.submit(spec("reply_customer", not_before=iso(at)))
    rec = store.task(tid)
    assert rec.state is TaskState.SCHEDULED
    assert rec.not_before == pytest.approx(at)
    assert "not before" in rec.state_reason
    assert store.counts()["scheduled"] == 1
    assert [t.id for t in store.tasks(state="scheduled")] == [tid]
    assert store.claim("w") is None
    clock.advance(599)
    assert store.claim("w") is None
    assert store.task(tid).state is TaskState.SCHEDULED
    clock.advance(1)
    c = store.claim("w")
    assert c is not None and c.id == tid
    states = [e.to_state for e in store.events(tid)]
    assert states == ["scheduled", "queued", "running"]


def test_delay_s_counts_from_the_submission(store_factory: StoreFactory,
                                            clock: FakeClock) -> None:
    store = store_factory()
    tid = store.submit(spec(delay_s=90))
    assert store.task(tid).state is TaskState.SCHEDULED
    assert store.task(tid).not_before == pytest.approx(clock.now() + 90)
    clock.advance(89.5)
    assert store.claim("w") is None
    clock.advance(0.5)
    assert store.claim("w") is not None


def test_a_time_already_past_is_queued_at_once(store_factory: StoreFactory,
                                               clock: FakeClock) -> None:
    store = store_factory()
    tid = store.submit(spec(not_before=iso(clock.now() - 3600)))
    assert store.task(tid).state is TaskState.QUEUED
    assert store.claim("w") is not None


def test_a_due_task_competes_by_priority_and_ages_from_its_time(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    """A reply (base 10) delayed by an hour must not come back with an hour of aging on top:
    it ranks as if submitted at its time. Aging 1 point a minute: a collect (base 3)
    submitted now has 60 points of aging when the reply becomes due; a reply fresh from its
    delay has 10, so the collect goes first, and the reply before a collect submitted later."""
    store = store_factory(queue=MANY, priority={"aging_per_min": 1.0, "hard_aging_min": 1000})
    early = store.submit(spec("collect_data", "pdd-1"))
    reply = store.submit(spec("reply_customer", "pdd-2", delay_s=3600))
    clock.advance(3600)
    late = store.submit(spec("collect_data", "temu-1"))
    assert drain(store) == [early, reply, late]


def test_hard_aging_counts_from_the_time_it_joined(store_factory: StoreFactory,
                                                   clock: FakeClock) -> None:
    store = store_factory(queue=MANY, priority={"hard_aging_min": 30})
    tid = store.submit(spec(delay_s=3600))
    clock.advance(3600 + 60)
    store.apply_thresholds()
    assert store.task(tid).hard_aged is False
    clock.advance(30 * 60)
    store.apply_thresholds()
    assert store.task(tid).hard_aged is True


def test_scheduled_tasks_can_be_cancelled_and_bumped(store_factory: StoreFactory,
                                                     clock: FakeClock) -> None:
    store = store_factory(queue=MANY)
    a = store.submit(spec(delay_s=60))
    b = store.submit(spec(delay_s=60, shop="pdd-2"))
    assert store.cancel(a) is TaskState.SCHEDULED
    assert store.task(a).state is TaskState.CANCELLED
    store.bump(b, by=50)
    assert store.task(b).state is TaskState.SCHEDULED
    c = store.submit(spec("reply_customer", "temu-1", delay_s=60))
    clock.advance(60)
    assert drain(store) == [b, c]
    assert store.counts()["scheduled"] == 0


def test_scheduled_tasks_count_against_the_backlog(store_factory: StoreFactory) -> None:
    from core.errors import BacklogFull

    store = store_factory(queue={"max_backlog": 2, "urgent_reserve": 0.0})
    store.submit(spec(delay_s=60))
    store.submit(spec(delay_s=60, shop="pdd-2"))
    with pytest.raises(BacklogFull):
        store.submit(spec(shop="temu-1"))


def test_many_due_at_once_join_in_batches_oldest_first(store_factory: StoreFactory,
                                                       clock: FakeClock) -> None:
    store = store_factory(queue={"max_tasks_per_shop": 100000, "max_backlog": 100000},
                          priority={"aging_per_min": 0})
    n = PROMOTE_BATCH + 5
    ids = store.submit_many([spec(delay_s=10 + i % 7) for i in range(n)])
    clock.advance(20)
    first = store.claim("w")
    assert first is not None
    # one round promoted a batch: the rest wait for the next round, none is lost
    assert store.counts()["scheduled"] == 5
    got = [first.id] + [c.id for c in store.claim_many("w", n)]
    assert sorted(got) == sorted(ids)
    assert store.counts()["scheduled"] == 0


def test_a_task_with_both_times_is_refused() -> None:
    from core.specs import validate_spec

    with pytest.raises(SpecError) as err:
        validate_spec({"type": "collect_data", "shop": "pdd-1", "flow": "collect_data",
                       "delay_s": 5, "not_before": "2030-01-01T00:00:00Z"})
    assert "not both" in str(err.value)


@pytest.mark.parametrize(("field", "value", "why"), [
    ("not_before", "2030-01-01T00:00:00", "time zone"),
    ("not_before", "tomorrow", "ISO-8601"),
    ("delay_s", -1, "greater than or equal"),
    ("delay_s", 10 ** 9, "less than or equal"),
])
def test_bad_times_name_the_field(field: str, value: object, why: str) -> None:
    from core.specs import validate_spec

    with pytest.raises(SpecError) as err:
        validate_spec({"type": "collect_data", "shop": "pdd-1", "flow": "collect_data",
                       field: value})
    assert err.value.field == field
    assert why in str(err.value)


def test_not_before_more_than_a_year_ahead_is_refused(store_factory: StoreFactory,
                                                      clock: FakeClock) -> None:
    store = store_factory()
    with pytest.raises(SpecError) as err:
        store.submit_many([spec(), spec(not_before=iso(clock.now() + 400 * 86400))])
    assert err.value.field == "tasks[1].not_before"
    assert store.counts()["queued"] == 0
