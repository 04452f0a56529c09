"""The durable priority queue, with a fake clock and real SQLite files."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from core.errors import BacklogFull, InvalidInput, LeaseLost, Refused, SpecError
from core.store import AsyncStore, TaskState
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.helpers import spec


def drain(store, owner: str = "w") -> list[int]:  # type: ignore[no-untyped-def]
    order = []
    while (t := store.claim(owner)) is not None:
        order.append(t.id)
        store.ack(t.id, owner)
    return order


def test_claims_follow_base_priority_then_submission_order(make_store: StoreFactory) -> None:
    store = make_store(queue={"max_tasks_per_shop": 100})
    ids = store.submit_many([spec("collect_data"), spec("reply_customer"),
                             spec("upload_product"), spec("reply_customer")])
    assert drain(store) == [ids[1], ids[3], ids[2], ids[0]]


def test_aging_lets_an_old_low_task_overtake_a_new_high_one(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(priority={"aging_per_min": 1.0}, queue={"max_tasks_per_shop": 100})
    old = store.submit(spec("collect_data"))          # base 3
    clock.advance(8 * 60)                              # +8 points of aging
    new = store.submit(spec("reply_customer"))        # base 10
    assert drain(store) == [old, new]


def test_one_task_per_shop_at_a_time(make_store: StoreFactory) -> None:
    store = make_store()
    a1, a2 = store.submit_many([spec("reply_customer", "pdd-1"), spec("reply_customer", "pdd-1")])
    b = store.submit(spec("collect_data", "pdd-2"))
    first = store.claim("w")
    second = store.claim("w")
    assert (first.id, second.id) == (a1, b)   # a2 waits: pdd-1 is busy
    assert store.claim("w") is None
    store.ack(first.id, "w")
    assert store.claim("w").id == a2


def test_hard_aging_jumps_ahead_and_is_not_preemptible(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(priority={"aging_per_min": 0.01, "hard_aging_min": 30},
                       queue={"max_tasks_per_shop": 100})
    low = store.submit(spec("collect_data"))
    clock.advance(31 * 60)
    high = store.submit(spec("reply_customer", priority=500))
    t = store.claim("w")
    assert t.id == low and not t.preemptible
    assert store.task(low).hard_aged
    assert store.claim("w").id == high


def test_bump_to_and_by_then_keeps_aging(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(priority={"aging_per_min": 1.0}, queue={"max_tasks_per_shop": 100})
    a = store.submit(spec("collect_data"))
    b = store.submit(spec("reply_customer"))
    assert store.bump(a, to=20.0) == pytest.approx(20.0)
    clock.advance(120)
    assert store.task(a).score == pytest.approx(22.0, abs=0.002)
    assert store.bump(b, by=15.0) == pytest.approx(10 + 2 + 15, abs=0.002)
    assert drain(store) == [b, a]
    events = [e.reason for e in store.events(a)]
    assert any(r.startswith("bumped") for r in events)


def test_bump_needs_exactly_one_of_to_and_by(make_store: StoreFactory) -> None:
    store = make_store()
    t = store.submit(spec())
    with pytest.raises(InvalidInput):
        store.bump(t)
    store.cancel(t)
    with pytest.raises(Refused):
        store.bump(t, by=1)


def test_idempotent_key_returns_the_same_task(make_store: StoreFactory) -> None:
    store = make_store()
    first = store.submit(spec(key="reply-1"))
    again = store.submit(spec(key="reply-1"))
    assert first == again
    assert store.counts()["queued"] == 1
    with pytest.raises(SpecError) as err:
        store.submit(spec("upload_product", key="reply-1"))
    assert err.value.field == "key"


def test_batch_is_all_or_nothing(make_store: StoreFactory) -> None:
    store = make_store()
    with pytest.raises(SpecError) as err:
        store.submit_many([spec(), spec(shop="no-such-shop"), spec()])
    assert err.value.field == "tasks[1].shop"
    with pytest.raises(SpecError) as err:
        store.submit_many([spec(), spec("mystery_type")])
    assert err.value.field == "tasks[1].type"
    assert store.counts()["queued"] == 0
    assert store.tasks() == []


def test_async_submit_waits_for_room(make_store: StoreFactory,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(queue={"max_backlog": 2, "max_tasks_per_shop": 10})
    store.submit_many([spec(), spec()])
    aio = AsyncStore(store)
    waiting = threading.Event()
    wait_for_room = store.wait_for_room

    def spy(timeout: float) -> Any:
        waiting.set()                      # the submit found the backlog full
        return wait_for_room(timeout)

    monkeypatch.setattr(store, "wait_for_room", spy)

    async def scenario() -> int:
        waiter = asyncio.create_task(aio.submit(spec()))
        assert await asyncio.to_thread(waiting.wait, 30)
        assert not waiter.done()           # backpressure: it waits, it is not refused
        t = await aio.claim("w")
        await aio.ack(t.id, "w")
        return await asyncio.wait_for(waiter, 60)

    new_id = asyncio.run(scenario())
    assert store.task(new_id).state is TaskState.QUEUED
    with pytest.raises(BacklogFull):
        asyncio.run(aio.submit(spec(), wait=False))


def test_fail_requeues_with_backoff_and_bonus_then_fails(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(queue={"max_attempts": 2, "retry_backoff_s": 10},
                       priority={"retry_bonus": 1.0, "aging_per_min": 0})
    t = store.submit(spec())
    c = store.claim("w")
    assert store.fail(c.id, "w", error_class="site_failed", message="503") is TaskState.QUEUED
    rec = store.task(t)
    assert rec.not_before == pytest.approx(clock.now() + 10)
    assert rec.score == pytest.approx(3 + 1.0)
    assert store.claim("w") is None          # not before its back-off
    clock.advance(10)
    c = store.claim("w")
    assert c.attempts == 2
    assert store.fail(c.id, "w", error_class="site_failed", message="503") is TaskState.FAILED
    assert store.task(t).error_class == "site_failed"


def test_expired_lease_is_recovered_and_old_owner_cannot_ack(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(queue={"lease_s": 60})
    t = store.submit(spec())
    store.claim("w1")
    clock.advance(30)
    assert store.recover_expired() == []
    clock.advance(31)
    assert store.recover_expired() == [t]
    assert store.task(t).state is TaskState.QUEUED
    with pytest.raises(LeaseLost):
        store.ack(t, "w1")
    c = store.claim("w2")
    store.ack(c.id, "w2")
    assert store.task(t).state is TaskState.DONE


def test_renewed_lease_is_not_recovered(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(queue={"lease_s": 60})
    t = store.submit(spec())
    store.claim("w1")
    clock.advance(50)
    store.renew_lease(t, "w1")
    clock.advance(50)
    assert store.recover_expired() == []


def test_paused_shop_and_domain_are_not_claimed(make_store: StoreFactory) -> None:
    store = make_store()
    a = store.submit(spec(shop="pdd-1"))
    b = store.submit(spec(shop="temu-1"))
    store.set_shop_paused("pdd-1", True)
    store.set_domain_paused("temu.shopfleet.test", True)
    assert store.claim("w") is None
    assert store.claim("w", exclude_domains=()) is None
    store.set_domain_paused("temu.shopfleet.test", False)
    assert store.claim("w").id == b
    store.set_shop_paused("pdd-1", False)
    assert store.claim("w", exclude_domains={"pdd.shopfleet.test"}) is None
    assert store.claim("w").id == a


def test_urgency_from_deadline_raises_score_at_thresholds(
        make_store: StoreFactory, clock: FakeClock) -> None:
    from datetime import UTC, datetime, timedelta

    store = make_store(priority={"aging_per_min": 0}, queue={"max_tasks_per_shop": 100})
    deadline = (datetime.fromtimestamp(clock.now(), UTC) + timedelta(hours=2)).isoformat()
    reply = store.submit(spec("reply_customer", deadline=deadline))   # pdd: 2 points (<3h)
    upload = store.submit(spec("upload_product", priority=14.5))
    assert store.task(reply).score == pytest.approx(12)
    clock.advance(65 * 60)  # under an hour left: +5
    store.apply_thresholds()
    assert store.task(reply).score == pytest.approx(15)
    assert drain(store) == [reply, upload]


def test_cancel_running_task_loses_its_lease(make_store: StoreFactory) -> None:
    store = make_store()
    t = store.submit(spec())
    store.claim("w")
    assert store.cancel(t) is TaskState.RUNNING
    with pytest.raises(LeaseLost):
        store.ack(t, "w")
    with pytest.raises(Refused):
        store.cancel(t)


def test_every_state_change_is_in_the_event_log(make_store: StoreFactory) -> None:
    store = make_store()
    t = store.submit(spec())
    c = store.claim("w")
    store.fail(c.id, "w", error_class="site_failed", message="x", retry=False)
    path = [(e.from_state, e.to_state) for e in store.events(t)]
    assert path == [(None, "queued"), ("queued", "running"), ("running", "failed")]


def test_status_reports_backlog_oldest_wait_and_busy_shops(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2")])
    clock.advance(90)
    store.claim("w")
    st = store.status()
    assert st.queued == 1 and st.counts["running"] == 1
    assert st.oldest_wait_s == pytest.approx(90)
    assert sum(st.busy_shops.values()) == 1


def test_checkpoint_and_results_are_kept(make_store: StoreFactory) -> None:
    store = make_store()
    t = store.submit(spec())
    store.claim("w")
    store.save_checkpoint(t, "w", {"next_step": 2, "results": {"rows": [1]}})
    store.release(t, "w", reason="engine stopping")
    rec = store.task(t)
    assert rec.state is TaskState.QUEUED and rec.attempts == 0
    c = store.claim("w")
    assert c.checkpoint == {"next_step": 2, "results": {"rows": [1]}}
    store.ack(t, "w", results={"rows": [1, 2]})
    assert store.task(t).results == {"rows": [1, 2]}


def test_changed_aging_rate_rekeys_the_queue(tmp_path, clock: FakeClock) -> None:  # type: ignore[no-untyped-def]
    from core.config import Settings
    from core.store import SqliteStore

    s1 = SqliteStore(tmp_path / "a.db", settings=Settings(), clock=clock)
    s1.add_shop("pdd-1", platform="pdd", base_url="http://pdd.shopfleet.test/s")
    t = s1.submit(spec())
    s1.close()
    clock.advance(600)
    s2 = SqliteStore(tmp_path / "a.db",
                     settings=Settings().with_changes(priority={"aging_per_min": 1.0}),
                     clock=clock)
    assert s2.task(t).score == pytest.approx(3 + 10, abs=0.002)
    s2.close()


def test_a_busy_shop_holding_the_top_of_the_queue_does_not_hide_other_shops(
        make_store: StoreFactory) -> None:
    """More ineligible tasks at the top than the fast path looks at: the per-shop search."""
    from core.store.base import FAST_PATH_ROWS

    store = make_store()
    busy = store.submit_many([spec("reply_customer", "pdd-1") for _ in range(FAST_PATH_ROWS + 5)])
    low = store.submit(spec("collect_data", "pdd-2"))
    lower = store.submit(spec("collect_data", "temu-1", priority=1))
    assert store.claim("w").id == busy[0]
    assert store.claim("w").id == low
    assert store.claim("w").id == lower
    assert store.claim("w") is None
