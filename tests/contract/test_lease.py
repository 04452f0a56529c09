"""A task's life under a lease: ack, fail, release, suspend, checkpoints, renewals, recovery,
crashes, cancellation and preemption requests."""

from __future__ import annotations

import pytest

from core.errors import LeaseLost, Refused, UnknownTask
from core.store import ClaimedTask, TaskState
from core.store.base import Store
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec


def claim(store: Store, owner: str = "w", **kw: object) -> ClaimedTask:
    c = store.claim(owner, **kw)  # type: ignore[arg-type]
    assert c is not None, "expected a task to claim"
    return c


def test_ack_finishes_with_results(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    t = store.submit(spec())
    claim(store)
    clock.advance(5)
    store.ack(t, "w", results={"rows": [1, 2], "note": "完成"})
    rec = store.task(t)
    assert rec.state is TaskState.DONE
    assert rec.results == {"rows": [1, 2], "note": "完成"}
    assert rec.finished_at == clock.now()
    assert rec.lease_owner is None and rec.lease_until is None
    with pytest.raises(LeaseLost):
        store.ack(t, "w")                           # twice is an error, not a no-op


def test_only_the_lease_owner_can_finish_a_task(store_factory: StoreFactory) -> None:
    store = store_factory()
    t = store.submit(spec())
    claim(store, "w1")
    with pytest.raises(LeaseLost):
        store.ack(t, "w2")
    with pytest.raises(LeaseLost):
        store.fail(t, "w2", error_class="site_failed", message="x")
    with pytest.raises(LeaseLost):
        store.release(t, "w2")
    with pytest.raises(LeaseLost):
        store.save_checkpoint(t, "w2", {"next_step": 1})
    with pytest.raises(LeaseLost):
        store.renew_lease(t, "w2")
    with pytest.raises(LeaseLost):
        store.record_crash(t, "w2", error_class="browser_crashed", message="x",
                           quarantine=False, evidence=None)
    rec = store.task(t)
    assert rec.state is TaskState.RUNNING and rec.lease_owner == "w1" and rec.checkpoint is None
    store.ack(t, "w1")
    assert store.task(t).state is TaskState.DONE


def test_a_queued_task_cannot_be_acked(store_factory: StoreFactory) -> None:
    store = store_factory()
    t = store.submit(spec())
    with pytest.raises(LeaseLost):
        store.ack(t, "w")
    assert store.task(t).state is TaskState.QUEUED


def test_fail_requeues_with_backoff_and_bonus_then_fails(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"max_attempts": 2, "retry_backoff_s": 10},
                          priority={"retry_bonus": 1.0, "aging_per_min": 0})
    t = store.submit(spec())
    claim(store)
    assert store.fail(t, "w", error_class="site_failed", message="HTTP 503",
                      evidence={"screenshot": "/e/1.png"}) is TaskState.QUEUED
    rec = store.task(t)
    assert rec.state is TaskState.QUEUED and rec.lease_owner is None
    assert rec.not_before == pytest.approx(clock.now() + 10, abs=1e-3)
    assert rec.score == pytest.approx(3 + 1.0)
    assert rec.attempts == 1
    assert (rec.error_class, rec.last_error) == ("site_failed", "HTTP 503")
    assert rec.evidence == {"screenshot": "/e/1.png"}
    assert rec.state_reason.startswith("site_failed")
    assert store.claim("w") is None          # not before its back-off
    clock.advance(10)
    c = claim(store)
    assert c.attempts == 2
    assert store.fail(t, "w", error_class="site_failed", message="HTTP 502") is TaskState.FAILED
    rec = store.task(t)
    assert rec.state is TaskState.FAILED and rec.finished_at == clock.now()
    assert (rec.error_class, rec.last_error) == ("site_failed", "HTTP 502")
    assert rec.evidence == {"screenshot": "/e/1.png"}     # kept when none is given
    assert store.claim("w") is None


def test_backoff_doubles_up_to_its_cap(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"max_attempts": 10, "retry_backoff_s": 10,
                                 "retry_backoff_max_s": 50})
    t = store.submit(spec())
    waits = []
    for _ in range(5):
        claim(store)
        store.fail(t, "w", error_class="site_failed", message="x")
        waits.append(store.task(t).not_before - clock.now())
        clock.advance(waits[-1])
    assert waits == pytest.approx([10, 20, 40, 50, 50])


def test_no_retry_fails_at_once(store_factory: StoreFactory) -> None:
    store = store_factory()
    t = store.submit(spec())
    claim(store)
    assert store.fail(t, "w", error_class="login_rejected", message="bad password",
                      retry=False) is TaskState.FAILED
    rec = store.task(t)
    assert rec.state is TaskState.FAILED and rec.attempts == 1
    assert rec.error_class == "login_rejected"


def test_retry_after_holds_a_task_longer_than_its_backoff(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"retry_backoff_s": 10})
    t = store.submit(spec())
    claim(store)
    store.fail(t, "w", error_class="rate_limited", message="HTTP 429", retry_after_s=120)
    assert store.task(t).not_before == pytest.approx(clock.now() + 120, abs=1e-3)
    u = store.submit(spec(shop="pdd-2"))
    claim(store, "w")
    store.fail(u, "w", error_class="rate_limited", message="HTTP 429", retry_after_s=1)
    assert store.task(u).not_before == pytest.approx(clock.now() + 10, abs=1e-3)


def test_release_does_not_count_the_attempt_and_keeps_the_checkpoint(
        store_factory: StoreFactory) -> None:
    store = store_factory()
    t = store.submit(spec())
    claim(store)
    store.save_checkpoint(t, "w", {"next_step": 2, "results": {"rows": [1]}})
    assert store.task(t).checkpoint == {"next_step": 2, "results": {"rows": [1]}}
    store.release(t, "w", reason="engine stopping")
    rec = store.task(t)
    assert rec.state is TaskState.QUEUED and rec.attempts == 0
    assert rec.state_reason == "engine stopping" and rec.lease_owner is None
    c = claim(store, "w2")
    assert c.checkpoint == {"next_step": 2, "results": {"rows": [1]}}
    assert c.attempts == 1 and not c.resumed
    store.ack(t, "w2", results={"rows": [1, 2]})
    assert store.task(t).results == {"rows": [1, 2]}


def test_release_with_a_checkpoint_replaces_it(store_factory: StoreFactory) -> None:
    store = store_factory()
    t = store.submit(spec())
    claim(store)
    store.save_checkpoint(t, "w", {"next_step": 1})
    store.save_checkpoint(t, "w", {"next_step": 2})
    store.release(t, "w", checkpoint={"next_step": 3})
    assert store.task(t).checkpoint == {"next_step": 3}


def test_suspend_then_resume_from_the_checkpoint(store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0})
    t = store.submit(spec("collect_data"))
    claim(store)
    score = store.task(t).score
    store.release(t, "w", reason="preempted by #9", checkpoint={"next_step": 4},
                  suspend=True)
    rec = store.task(t)
    assert rec.state is TaskState.SUSPENDED and rec.attempts == 0
    assert rec.state_reason == "preempted by #9" and rec.score == pytest.approx(score)
    assert store.counts()["suspended"] == 1
    c = claim(store, "w2")
    assert c.id == t and c.resumed and c.checkpoint == {"next_step": 4}
    path = [(e.from_state, e.to_state) for e in store.events(t)]
    assert path[-2:] == [("running", "suspended"), ("suspended", "running")]


def test_a_suspended_task_keeps_its_place_by_score(store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0}, queue={"max_tasks_per_shop": 10})
    hi = store.submit(spec("reply_customer"))
    claim(store)
    lo = store.submit(spec("collect_data"))
    higher = store.submit(spec("reply_customer", priority=11))
    store.release(hi, "w", suspend=True)
    assert [claim(store).id for _ in range(3)] == [higher, hi, lo]


def test_renew_lease_extends_it_and_recovery_leaves_it(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 60})
    t = store.submit(spec())
    claim(store, "w1")
    clock.advance(50)
    assert store.renew_lease(t, "w1") == pytest.approx(clock.now() + 60, abs=1e-3)
    assert store.task(t).lease_until == pytest.approx(clock.now() + 60, abs=1e-3)
    clock.advance(50)
    assert store.recover_expired() == []
    assert store.renew_lease(t, "w1", lease_s=300) == pytest.approx(clock.now() + 300, abs=1e-3)
    clock.advance(290)
    assert store.recover_expired() == []
    assert store.task(t).state is TaskState.RUNNING


def test_renew_leases_reports_the_ones_lost(store_factory: StoreFactory,
                                            clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 60})
    a, b, c = store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2"), spec(shop="temu-1")])
    for _ in range(3):
        claim(store, "w1")
    store.cancel(b)
    clock.advance(30)
    lost = store.renew_leases("w1", [a, b, c])
    assert lost == [b]
    assert store.task(a).lease_until == pytest.approx(clock.now() + 60, abs=1e-3)
    assert store.task(c).lease_until == pytest.approx(clock.now() + 60, abs=1e-3)
    assert store.renew_leases("w2", [a, c]) == [a, c]
    assert store.renew_leases("w1", []) == []
    clock.advance(59)
    assert store.recover_expired() == []


def test_expired_lease_is_recovered_and_old_owner_cannot_ack(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 60})
    t = store.submit(spec())
    claim(store, "w1")
    store.save_checkpoint(t, "w1", {"next_step": 1, "writes_done": [0]})
    clock.advance(30)
    assert store.recover_expired() == []
    clock.advance(31)
    assert store.recover_expired() == [t]
    assert store.recover_expired() == []
    rec = store.task(t)
    assert rec.state is TaskState.QUEUED and rec.lease_owner is None
    assert rec.attempts == 1                       # a lost attempt counts
    assert rec.checkpoint == {"next_step": 1, "writes_done": [0]}
    assert "lease expired" in rec.state_reason
    with pytest.raises(LeaseLost):
        store.ack(t, "w1")
    with pytest.raises(LeaseLost):
        store.renew_lease(t, "w1")
    c = claim(store, "w2")
    assert c.checkpoint == {"next_step": 1, "writes_done": [0]} and c.attempts == 2
    store.ack(t, "w2")
    assert store.task(t).state is TaskState.DONE


def test_a_task_whose_worker_is_lost_too_often_goes_to_a_person(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 60, "max_attempts": 2})
    t = store.submit(spec())
    claim(store, "w1")
    clock.advance(61)
    assert store.recover_expired() == [t]
    assert store.task(t).state is TaskState.QUEUED
    claim(store, "w2")
    clock.advance(61)
    assert store.recover_expired() == [t]
    rec = store.task(t)
    assert rec.state is TaskState.WAITING_HUMAN and rec.error_class == "lease_lost"
    assert rec.lease_owner is None
    book = store.ticket_book()
    tickets = book.tickets()
    assert [(tk.task_id, tk.error_class, tk.shop) for tk in tickets] == [
        (t, "lease_lost", "pdd-1")]
    assert book.open_count() == 1
    assert store.claim("w3") is None


def test_a_crash_requeues_or_quarantines(store_factory: StoreFactory,
                                         clock: FakeClock) -> None:
    store = store_factory(queue={"max_attempts": 5})
    t = store.submit(spec())
    claim(store)
    store.save_checkpoint(t, "w", {"next_step": 2})
    assert store.crashes(t) == 0
    assert store.record_crash(t, "w", error_class="browser_crashed",
                              message="the renderer crashed", quarantine=False,
                              evidence={"log": "/e/crash.txt"}) == "queued"
    rec = store.task(t)
    assert rec.state is TaskState.QUEUED and rec.not_before <= clock.now()
    assert rec.checkpoint == {"next_step": 2} and rec.error_class == "browser_crashed"
    assert rec.evidence == {"log": "/e/crash.txt"}
    assert store.crashes(t) == 1
    c = claim(store)
    assert c.checkpoint == {"next_step": 2}
    assert store.record_crash(t, "w", error_class="browser_crashed", message="again",
                              quarantine=True, evidence=None) == "quarantined"
    rec = store.task(t)
    assert rec.state is TaskState.QUARANTINED and rec.lease_owner is None
    assert store.crashes(t) == 2
    assert store.claim("w") is None                    # a poison pill is not handed out
    assert [q.id for q in store.ticket_book().quarantined()] == [t]


def test_release_from_quarantine(store_factory: StoreFactory) -> None:
    store = store_factory(rescue={"reentry_bonus": 10}, priority={"aging_per_min": 0})
    t = store.submit(spec("collect_data"))
    claim(store)
    other = store.submit(spec("reply_customer", "pdd-2"))
    store.save_checkpoint(t, "w", {"next_step": 1})
    store.record_crash(t, "w", error_class="browser_crashed", message="x", quarantine=True,
                       evidence=None)
    book = store.ticket_book()
    with pytest.raises(Refused):
        book.release(other)
    book.release(t)
    rec = store.task(t)
    assert rec.state is TaskState.QUEUED and rec.attempts == 0
    assert rec.checkpoint == {"next_step": 1}
    assert rec.score == pytest.approx(3 + 10)         # re-entry priority, ahead of routine
    assert store.crashes(t) == 0
    assert book.quarantined() == []
    assert claim(store).id == t
    with pytest.raises(Refused):
        book.release(t)


def test_cancel(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    q = store.submit(spec(shop="pdd-1"))
    r = store.submit(spec(shop="pdd-2"))
    claim(store, "w")                                 # q runs
    assert store.cancel(q) is TaskState.RUNNING
    assert store.cancel(r, reason="not needed") is TaskState.QUEUED
    for t in (q, r):
        rec = store.task(t)
        assert rec.state is TaskState.CANCELLED and rec.finished_at == clock.now()
        assert rec.lease_owner is None
    assert store.task(r).state_reason == "not needed"
    with pytest.raises(LeaseLost):
        store.ack(q, "w")
    with pytest.raises(LeaseLost):
        store.save_checkpoint(q, "w", {"next_step": 1})
    with pytest.raises(Refused):
        store.cancel(q)
    with pytest.raises(UnknownTask):
        store.cancel(q + 1000)
    assert store.claim("w") is None
    assert store.counts()["cancelled"] == 2


def test_preempt_requests(store_factory: StoreFactory) -> None:
    store = store_factory()
    a = store.submit(spec(shop="pdd-1"))
    b = store.submit(spec(shop="pdd-2"))
    q = store.submit(spec(shop="pdd-1"))
    claim(store, "w1")
    claim(store, "w2")
    assert store.preempt_requests([a, b]) == {}
    assert store.preempt_requests([]) == {}
    store.request_preempt(a, "urgent #7 needs the slot")
    assert store.preempt_requests([a, b, q]) == {a: "urgent #7 needs the slot"}
    with pytest.raises(Refused):
        store.request_preempt(q, "x")                 # only a running task
    with pytest.raises(UnknownTask):
        store.request_preempt(q + 1000, "x")
    store.release(a, "w1", reason="preempted", suspend=True)
    assert store.preempt_requests([a]) == {}          # answered
    c = claim(store, "w3")
    assert c.id == a
    assert store.preempt_requests([a]) == {}


def test_urgent_waiting(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 0}, queue={"retry_backoff_s": 60})
    store.submit(spec("collect_data", "pdd-1"))        # below every threshold used here
    u1 = store.submit(spec("reply_customer", "pdd-2", priority=20))
    u2 = store.submit(spec("reply_customer", "temu-1", priority=30))
    u3 = store.submit(spec("reply_customer", "tiktok-1", priority=25))
    c = claim(store)
    assert c.id == u2
    store.release(u2, "w", suspend=True)              # suspended still waits
    out = store.urgent_waiting(15.0)
    assert [(i, s) for i, s, _ in out] == [(u2, store.shop("temu-1").id),
                                           (u3, store.shop("tiktok-1").id),
                                           (u1, store.shop("pdd-2").id)]
    assert [sc for _, _, sc in out] == pytest.approx([30, 25, 20])
    assert [i for i, _, _ in store.urgent_waiting(15.0, limit=2)] == [u2, u3]
    # A task in back-off is not waiting yet.
    claim(store)                                       # u2 again
    c3 = claim(store)
    assert c3.id == u3
    store.fail(u3, "w", error_class="site_failed", message="x")
    assert [i for i, _, _ in store.urgent_waiting(15.0)] == [u1]
    clock.advance(60)
    assert [i for i, _, _ in store.urgent_waiting(15.0)] == [u3, u1]
    assert store.urgent_waiting(100.0) == []


# --- #15 rescue semantics: a release that waits (held gate, open breaker, network down) ------

def test_release_with_a_delay_waits_without_spending_the_attempt(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    assert store.next_due() is None                 # nothing waits
    t = store.submit(spec())
    assert store.next_due() is not None and store.next_due() <= clock.now()  # type: ignore[operator]
    claim(store)
    store.release(t, "w", reason="rate limited: waits 30s", delay_s=30)
    rec = store.task(t)
    assert (rec.state, rec.attempts) == (TaskState.QUEUED, 0)
    assert rec.not_before == pytest.approx(clock.now() + 30)
    assert store.next_due() == pytest.approx(clock.now() + 30)
    assert store.claim("w") is None                 # held back
    clock.advance(30)
    assert claim(store).id == t
    store.release(t, "w")                           # no delay: claimable at once
    assert store.claim("w") is not None
