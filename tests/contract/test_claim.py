"""Claiming: best first, ties in submission order, back-off, hard aging, bumps, retry bonus,
one task per shop, pauses, excluded and probed domains, rounds of claims."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.errors import InvalidInput, Refused, UnknownTask
from core.store import TaskState
from core.store.base import Store
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec

MANY = {"max_tasks_per_shop": 100}


def drain(store: Store, owner: str = "w") -> list[int]:
    order = []
    while (t := store.claim(owner)) is not None:
        order.append(t.id)
        store.ack(t.id, owner)
    return order


def test_claims_follow_base_priority_then_submission_order(store_factory: StoreFactory) -> None:
    store = store_factory(queue=MANY)
    ids = store.submit_many([spec("collect_data"), spec("reply_customer"),
                             spec("upload_product"), spec("reply_customer")])
    assert drain(store) == [ids[1], ids[3], ids[2], ids[0]]


def test_equal_scores_are_served_in_submission_order(store_factory: StoreFactory) -> None:
    store = store_factory(queue=MANY, priority={"aging_per_min": 0})
    shops = ["temu-1", "pdd-2", "tiktok-1", "pdd-1"]
    ids = [store.submit(spec(shop=shops[i % 4])) for i in range(12)]
    assert drain(store) == ids


def test_a_claim_hands_out_what_the_worker_needs(store_factory: StoreFactory,
                                                 clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 90})
    tid = store.submit(spec("upload_product", "tiktok-1", params={"sku": "A-1"}))
    c = store.claim("worker-a")
    assert c is not None
    assert (c.id, c.type, c.shop, c.platform, c.domain) == (
        tid, "upload_product", "tiktok-1", "tiktok", "tiktok.shopfleet.test")
    assert c.base_url == "http://tiktok.shopfleet.test/shop/tiktok-1"
    assert c.shop_id == store.shop("tiktok-1").id
    assert c.lease_owner == "worker-a"
    assert c.lease_until == pytest.approx(clock.now() + 90, abs=1e-3)
    assert (c.attempts, c.max_attempts) == (1, 3)
    assert c.flow == "upload_product" and c.params == {"sku": "A-1"}
    assert c.checkpoint is None and not c.resumed and c.preemptible
    assert c.score == pytest.approx(5.0)
    assert c.created_at == store.task(tid).created_at
    rec = store.task(tid)
    assert rec.state is TaskState.RUNNING and rec.lease_owner == "worker-a"
    assert rec.started_at == clock.now() and rec.attempts == 1
    assert store.claim("worker-b") is None


def test_an_empty_queue_gives_nothing(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.claim("w") is None
    assert store.claim_many("w", 5) == []


def test_aging_lets_an_old_low_task_overtake_a_new_high_one(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 1.0}, queue=MANY)
    old = store.submit(spec("collect_data"))          # base 3
    clock.advance(8 * 60)                              # +8 points of aging
    new = store.submit(spec("reply_customer"))        # base 10
    assert store.task(old).score == pytest.approx(11.0, abs=0.002)
    assert drain(store) == [old, new]


def test_a_task_is_not_claimed_before_its_back_off(store_factory: StoreFactory,
                                                    clock: FakeClock) -> None:
    store = store_factory(queue={"retry_backoff_s": 30, **MANY}, priority={"aging_per_min": 0})
    a = store.submit(spec("reply_customer"))
    b = store.submit(spec("collect_data"))
    c = store.claim("w")
    assert c is not None and c.id == a
    store.fail(a, "w", error_class="site_failed", message="HTTP 503")
    assert drain(store) == [b]                 # a waits for its back-off
    clock.advance(29)
    assert store.claim("w") is None
    clock.advance(1)
    assert drain(store) == [a]


def test_hard_aging_jumps_ahead_and_is_not_preemptible(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 0.01, "hard_aging_min": 30}, queue=MANY)
    low = store.submit(spec("collect_data"))
    clock.advance(29 * 60)
    assert store.apply_thresholds() == (0, 0)
    assert not store.task(low).hard_aged and store.task(low).preemptible
    clock.advance(2 * 60)
    high = store.submit(spec("reply_customer", priority=500))
    assert store.apply_thresholds() == (1, 0)
    rec = store.task(low)
    assert rec.hard_aged and not rec.preemptible
    assert store.status().hard_aged == 1
    assert store.apply_thresholds() == (0, 0)          # once
    t = store.claim("w")
    assert t is not None and t.id == low and not t.preemptible
    c2 = store.claim("w")
    assert c2 is not None and c2.id == high


def test_a_claim_applies_hard_aging_itself(store_factory: StoreFactory,
                                           clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 0.01, "hard_aging_min": 30}, queue=MANY)
    low = store.submit(spec("collect_data"))
    clock.advance(31 * 60)
    store.submit(spec("reply_customer", priority=500))
    c = store.claim("w")
    assert c is not None and c.id == low and not c.preemptible


def test_urgency_from_a_deadline_rises_at_its_thresholds(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 0, "hard_aging_min": 600}, queue=MANY)
    deadline = (datetime.fromtimestamp(clock.now(), UTC) + timedelta(hours=2)).isoformat()
    reply = store.submit(spec("reply_customer", deadline=deadline))   # pdd: 2 points (<3h)
    upload = store.submit(spec("upload_product", priority=14.5))
    assert store.task(reply).score == pytest.approx(12)
    assert store.task(reply).deadline == pytest.approx(clock.now() + 7200, abs=1e-3)
    clock.advance(65 * 60)  # under an hour left: +5
    hard, due = store.apply_thresholds()
    assert hard == 0 and due >= 1
    assert store.task(reply).score == pytest.approx(15)
    assert drain(store) == [reply, upload]


def test_bump_to_and_by_then_keeps_aging(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 1.0}, queue=MANY)
    a = store.submit(spec("collect_data"))
    b = store.submit(spec("reply_customer"))
    assert store.bump(a, to=20.0) == pytest.approx(20.0)
    assert store.task(a).score == pytest.approx(20.0, abs=0.002)
    clock.advance(120)
    assert store.task(a).score == pytest.approx(22.0, abs=0.002)
    assert store.bump(b, by=15.0) == pytest.approx(10 + 2 + 15, abs=0.002)
    assert store.task(b).score == pytest.approx(27.0, abs=0.002)
    assert drain(store) == [b, a]
    reasons = [e.reason for e in store.events(a)]
    assert any(r.startswith("bumped") for r in reasons)


def test_bump_down_sends_a_task_behind(store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0}, queue=MANY)
    a, b = store.submit_many([spec("reply_customer"), spec("collect_data")])
    assert store.bump(a, by=-8) == pytest.approx(2.0)
    assert drain(store) == [b, a]


def test_bump_refusals(store_factory: StoreFactory) -> None:
    store = store_factory()
    t = store.submit(spec())
    with pytest.raises(InvalidInput):
        store.bump(t)
    with pytest.raises(InvalidInput):
        store.bump(t, to=1.0, by=1.0)
    with pytest.raises(UnknownTask):
        store.bump(t + 1000, by=1.0)
    store.cancel(t)
    with pytest.raises(Refused):
        store.bump(t, by=1)


def test_a_retried_task_gets_its_retry_bonus(store_factory: StoreFactory,
                                             clock: FakeClock) -> None:
    store = store_factory(queue={"retry_backoff_s": 0, **MANY},
                          priority={"aging_per_min": 0, "retry_bonus": 0.5})
    a = store.submit(spec("collect_data"))
    b = store.submit(spec("collect_data"))
    c = store.claim("w")
    assert c is not None and c.id == a
    store.fail(a, "w", error_class="site_failed", message="HTTP 503")
    assert store.task(a).score == pytest.approx(3.5)
    c = store.claim("w")
    assert c is not None and c.id == a              # 3.5 beats b's 3.0
    store.fail(a, "w", error_class="site_failed", message="HTTP 503")
    assert store.task(a).score == pytest.approx(4.0)
    assert store.task(b).score == pytest.approx(3.0)


def test_one_task_per_shop_across_several_owners(store_factory: StoreFactory) -> None:
    store = store_factory()
    a1, a2 = store.submit_many([spec("reply_customer", "pdd-1"),
                                spec("reply_customer", "pdd-1")])
    b = store.submit(spec("collect_data", "pdd-2"))
    first = store.claim("w1")
    second = store.claim("w2")
    assert first is not None and second is not None
    assert (first.id, second.id) == (a1, b)   # a2 waits: pdd-1 is busy
    assert store.claim("w3") is None
    assert store.claim_many("w3", 4) == []
    store.ack(first.id, "w1")
    third = store.claim("w3")
    assert third is not None and third.id == a2
    assert store.status().busy_shops == {"pdd-1": 1, "pdd-2": 1}


def test_max_tasks_per_shop_allows_that_many(store_factory: StoreFactory) -> None:
    store = store_factory(queue={"max_tasks_per_shop": 2})
    ids = store.submit_many([spec(shop="pdd-1") for _ in range(3)])
    got = [store.claim(f"w{i}") for i in range(3)]
    assert [g.id if g else None for g in got] == [ids[0], ids[1], None]
    assert [t.id for t in store.claim_many("w", 5)] == []
    store.fail(ids[0], "w0", error_class="x", message="x", retry=False)
    assert [t.id for t in store.claim_many("w", 5)] == [ids[2]]


def test_paused_shop_and_domain_are_not_claimed(store_factory: StoreFactory) -> None:
    store = store_factory()
    a = store.submit(spec(shop="pdd-1"))
    b = store.submit(spec(shop="temu-1"))
    assert store.set_shop_paused("pdd-1", True).paused
    store.set_domain_paused("TEMU.shopfleet.test", True, reason="maintenance")
    assert store.paused_domains() == ["temu.shopfleet.test"]
    assert store.shop("pdd-1").paused
    assert store.claim("w") is None
    assert store.claim_many("w", 4) == []
    store.set_domain_paused("temu.shopfleet.test", False)
    assert store.paused_domains() == []
    c = store.claim("w")
    assert c is not None and c.id == b
    assert not store.set_shop_paused("pdd-1", False).paused
    assert store.claim("w", exclude_domains={"pdd.shopfleet.test"}) is None
    c = store.claim("w")
    assert c is not None and c.id == a


def test_a_paused_domain_holds_every_shop_on_it(store_factory: StoreFactory) -> None:
    store = store_factory(queue=MANY)
    store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2")])
    t = store.submit(spec(shop="tiktok-1", priority=0))
    store.set_domain_paused("pdd.shopfleet.test", True)
    store.set_domain_paused("pdd.shopfleet.test", True)    # twice is once
    assert store.paused_domains() == ["pdd.shopfleet.test"]
    assert drain(store) == [t]


def test_excluded_domains_are_skipped_not_blocked(store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0})
    p = store.submit(spec("reply_customer", "pdd-1"))
    t = store.submit(spec("collect_data", "temu-1"))
    c = store.claim("w", exclude_domains=["pdd.shopfleet.test"])
    assert c is not None and c.id == t
    assert store.task(p).state is TaskState.QUEUED
    c = store.claim("w")
    assert c is not None and c.id == p


def test_claim_with_its_own_lease(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 120})
    store.submit(spec())
    c = store.claim("w", lease_s=15)
    assert c is not None and c.lease_until == pytest.approx(clock.now() + 15, abs=1e-3)
    assert store.task(c.id).lease_until == pytest.approx(clock.now() + 15, abs=1e-3)


def test_claim_many_takes_the_best_one_per_shop(store_factory: StoreFactory,
                                                clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 0}, queue={"lease_s": 60})
    p1a = store.submit(spec("reply_customer", "pdd-1"))
    p1b = store.submit(spec("reply_customer", "pdd-1"))
    p2 = store.submit(spec("upload_product", "pdd-2"))
    tk = store.submit(spec("collect_data", "tiktok-1"))
    te = store.submit(spec("campaign_signup", "temu-1"))
    got = store.claim_many("w", 3)
    assert [t.id for t in got] == [p1a, te, p2]
    assert all(t.lease_owner == "w" and t.lease_until == pytest.approx(clock.now() + 60, abs=1e-3)
               for t in got)
    assert all(store.task(t.id).state is TaskState.RUNNING for t in got)
    rest = store.claim_many("w2", 10)
    assert [t.id for t in rest] == [tk]
    assert store.task(p1b).state is TaskState.QUEUED
    assert store.claim_many("w", 0) == []


def test_claim_many_skips_excluded_and_probes_one_per_domain(
        store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0})
    p1 = store.submit(spec("reply_customer", "pdd-1"))
    p2 = store.submit(spec("reply_customer", "pdd-2"))
    te = store.submit(spec("collect_data", "temu-1"))
    tk = store.submit(spec("upload_product", "tiktok-1"))
    got = store.claim_many("w", 10, exclude_domains=["tiktok.shopfleet.test"],
                           probe_domains=["pdd.shopfleet.test"])
    assert [t.id for t in got] == [p1, te]          # one probe on pdd, nothing on tiktok
    assert store.task(p2).state is TaskState.QUEUED
    assert store.task(tk).state is TaskState.QUEUED
    # The next round may probe again.
    got = store.claim_many("w", 10, probe_domains=["pdd.shopfleet.test"])
    assert [t.id for t in got] == [p2, tk]


def test_claim_many_resumes_suspended_work(store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0})
    a = store.submit(spec("reply_customer", "pdd-1"))
    c = store.claim("w")
    assert c is not None
    store.release(a, "w", reason="preempted", checkpoint={"next_step": 3}, suspend=True)
    got = store.claim_many("w2", 5)
    assert [t.id for t in got] == [a]
    assert got[0].resumed and got[0].checkpoint == {"next_step": 3}


def test_bumping_a_running_task_starts_from_the_score_it_shows(
        store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0.0, "retry_bonus": 0.5})
    t = store.submit(spec("collect_data"))           # base 3
    claimed = store.claim("w")
    assert claimed is not None and claimed.id == t
    shown = store.task(t).score
    assert shown == pytest.approx(3.0)                # no bonus for the attempt in flight
    assert store.bump(t, by=0) == pytest.approx(shown)
    assert store.bump(t, to=7.0) == pytest.approx(7.0)
    assert store.task(t).score == pytest.approx(7.0)
    store.release(t, "w")                             # the attempt is given back
    assert store.task(t).score == pytest.approx(7.0)
