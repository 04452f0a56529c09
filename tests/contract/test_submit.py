"""Submitting: ids, idempotency keys, all-or-nothing batches, field-naming errors, backlog."""

from __future__ import annotations

import pytest

from core.errors import BacklogFull, SpecError
from core.specs import TaskSpec
from core.store import ShopRecord, TaskState
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec


def test_a_submitted_task_is_queued_with_what_was_submitted(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    tid = store.submit(spec("reply_customer", "temu-1", key="r-1",
                            params={"message_id": "8812", "reply": "Shipped today"}))
    rec = store.task(tid)
    assert rec.id == tid
    assert (rec.key, rec.type, rec.shop, rec.platform, rec.domain) == (
        "r-1", "reply_customer", "temu-1", "temu", "temu.shopfleet.test")
    assert rec.state is TaskState.QUEUED
    assert rec.flow == "reply_customer"
    assert rec.params == {"message_id": "8812", "reply": "Shipped today"}
    assert rec.created_at == clock.now() and rec.not_before <= clock.now()
    assert rec.attempts == 0 and rec.max_attempts == store.settings.queue.max_attempts
    assert rec.lease_owner is None and rec.checkpoint is None and rec.results is None
    assert rec.score == pytest.approx(10.0)


def test_inline_steps_and_max_attempts_are_kept(store_factory: StoreFactory) -> None:
    store = store_factory()
    steps = [{"goto": "/orders"}, {"click": "#export"}]
    tid = store.submit(TaskSpec.model_validate(
        {"type": "collect_data", "shop": "pdd-2", "steps": steps, "max_attempts": 7}))
    rec = store.task(tid)
    assert rec.steps == steps and rec.flow is None
    assert rec.max_attempts == 7


def test_ids_are_distinct_and_in_submission_order(store_factory: StoreFactory) -> None:
    store = store_factory()
    one = store.submit(spec())
    batch = store.submit_many([spec(), spec(shop="pdd-2"), spec(shop="temu-1")])
    assert len({one, *batch}) == 4
    assert one < batch[0] < batch[1] < batch[2]
    assert [store.task(t).shop for t in batch] == ["pdd-1", "pdd-2", "temu-1"]


def test_an_idempotency_key_returns_the_same_task(store_factory: StoreFactory) -> None:
    store = store_factory()
    first = store.submit(spec(key="reply-1"))
    assert store.submit(spec(key="reply-1")) == first
    assert store.submit_many([spec(key="new-1"), spec(key="reply-1")])[1] == first
    assert store.counts()["queued"] == 2
    # The key stays taken after the task finished.
    c = store.claim("w")
    assert c is not None and c.id == first
    store.ack(first, "w")
    assert store.submit(spec(key="reply-1")) == first
    assert store.counts()["queued"] == 1


def test_a_key_used_for_a_different_task_is_refused(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.submit(spec(key="reply-1"))
    for other in (spec("upload_product", key="reply-1"), spec(shop="pdd-2", key="reply-1"),
                  spec(key="reply-1", params={"page": 2})):
        with pytest.raises(SpecError) as err:
            store.submit(other)
        assert err.value.field == "key"
    assert store.counts()["queued"] == 1


def test_a_key_twice_in_one_batch_is_refused(store_factory: StoreFactory) -> None:
    store = store_factory()
    with pytest.raises(SpecError) as err:
        store.submit_many([spec(key="k"), spec(key="k")])
    assert err.value.field == "tasks[1].key"
    assert store.tasks() == []


@pytest.mark.parametrize(("bad", "field"), [
    (spec(shop="no-such-shop"), "shop"),
    (spec("mystery_type"), "type"),
])
def test_a_bad_task_is_refused_naming_its_field(store_factory: StoreFactory, bad: TaskSpec,
                                                field: str) -> None:
    store = store_factory()
    with pytest.raises(SpecError) as err:
        store.submit(bad)
    assert err.value.field == field
    with pytest.raises(SpecError) as err:
        store.submit_many([spec(), spec(shop="pdd-2"), bad, spec()])
    assert err.value.field == f"tasks[2].{field}"
    assert store.tasks() == [] and store.counts()["queued"] == 0


def test_an_unknown_type_with_a_priority_is_accepted(store_factory: StoreFactory) -> None:
    store = store_factory()
    tid = store.submit(spec("mystery_type", priority=4.5))
    assert store.task(tid).score == pytest.approx(4.5)


def test_an_empty_batch_is_refused(store_factory: StoreFactory) -> None:
    store = store_factory()
    with pytest.raises(SpecError):
        store.submit_many([])


def test_the_validator_runs_before_anything_is_written(store_factory: StoreFactory) -> None:
    seen: list[tuple[str, str]] = []

    def validator(s: TaskSpec, shop: ShopRecord) -> None:
        seen.append((s.flow or "", shop.name))
        if s.flow == "no_such_flow":
            raise SpecError("flow", "no flow named 'no_such_flow'")

    store = store_factory(validator=validator)
    with pytest.raises(SpecError) as err:
        store.submit_many([spec(), spec(flow="no_such_flow")])
    assert err.value.field == "tasks[1].flow"
    with pytest.raises(SpecError) as err:
        store.submit(spec(flow="no_such_flow"))
    assert err.value.field == "flow"
    assert store.tasks() == []
    assert ("collect_data", "pdd-1") in seen
    assert store.submit(spec(shop="temu-1")) > 0


def test_backlog_refuses_routine_work_and_keeps_a_reserve_for_urgent(
        store_factory: StoreFactory) -> None:
    store = store_factory(queue={"max_backlog": 10, "urgent_reserve": 0.2},
                          priority={"preempt_threshold": 15})
    store.submit_many([spec() for _ in range(10)])
    with pytest.raises(BacklogFull):
        store.submit(spec())
    with pytest.raises(BacklogFull):  # a batch that would overflow is refused whole
        store.submit_many([spec(priority=20), spec()])
    assert store.counts()["queued"] == 10
    urgent = store.submit_many([spec("reply_customer", priority=20) for _ in range(2)])
    assert len(urgent) == 2
    with pytest.raises(BacklogFull):  # the reserve is 2
        store.submit(spec("reply_customer", priority=20))
    assert store.counts()["queued"] == 12   # nothing dropped, nothing extra
    assert len(store.tasks(state="queued", limit=100)) == 12


def test_backlog_counts_suspended_work_and_frees_room_when_work_leaves(
        store_factory: StoreFactory) -> None:
    store = store_factory(queue={"max_backlog": 2, "urgent_reserve": 0.0,
                                 "max_tasks_per_shop": 10})
    a, b = store.submit_many([spec(), spec()])
    with pytest.raises(BacklogFull):
        store.submit(spec())
    c = store.claim("w")
    assert c is not None and c.id == a
    store.submit(spec())                      # a running task is not backlog
    with pytest.raises(BacklogFull):
        store.submit(spec())
    store.release(a, "w", suspend=True)       # a suspended one is
    assert store.task(a).state is TaskState.SUSPENDED
    store.cancel(b)
    with pytest.raises(BacklogFull):          # one queued + one suspended
        store.submit(spec())
    store.cancel(a)
    store.submit(spec())
    counts = store.counts()
    assert (counts["queued"], counts["suspended"], counts["cancelled"]) == (2, 0, 2)


def test_a_known_key_does_not_need_room(store_factory: StoreFactory) -> None:
    store = store_factory(queue={"max_backlog": 1, "urgent_reserve": 0.0})
    first = store.submit(spec(key="only"))
    assert store.submit(spec(key="only")) == first
