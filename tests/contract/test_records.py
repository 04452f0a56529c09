"""What the console and the command line read: history, counts, status, bands, task lists,
metrics, meta, shops, workers, and the store's own description."""

from __future__ import annotations

from collections import Counter

import pytest

from core.errors import InvalidInput, LeaseLost, UnknownTask
from core.store import TaskState
from core.store.base import Store
from core.testing import FakeClock
from core.tickets import Signature
from tests.contract.conftest import StoreFactory
from tests.helpers import spec


def test_the_store_says_what_it_is(store_factory: StoreFactory, store_kind: str) -> None:
    store = store_factory()
    assert isinstance(store, Store)
    prefix = {"sqlite": "sqlite:", "redis": "redis://"}[store_kind]
    assert store.url.startswith(prefix)
    assert "@" not in store.url                      # never a password


def test_every_state_change_is_in_the_event_log_in_order(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"retry_backoff_s": 0, "lease_s": 60})
    t = store.submit(spec())
    steps: list[tuple[str | None, str]] = [(None, "queued")]
    store.claim("w")
    steps.append(("queued", "running"))
    store.fail(t, "w", error_class="site_failed", message="503")
    steps.append(("running", "queued"))
    store.claim("w")
    steps.append(("queued", "running"))
    store.release(t, "w", suspend=True, reason="preempted")
    steps.append(("running", "suspended"))
    store.claim("w")
    steps.append(("suspended", "running"))
    clock.advance(61)
    store.recover_expired()
    steps.append(("running", "queued"))
    store.bump(t, by=1)                                 # a line, not a state change
    store.log_event(t, "operator looked at it")
    store.claim("w")
    steps.append(("queued", "running"))
    store.open_ticket(t, "w", signature=Signature("pdd", "collect_data", "", "needs_human",
                                                  "captcha"),
                      step=None, error="CAPTCHA", evidence=None)
    steps.append(("running", "waiting_human"))
    store.ticket_book().answer(store.ticket_book().tickets()[0].id, "resume")
    steps.append(("waiting_human", "queued"))
    store.claim("w")
    steps.append(("queued", "running"))
    store.ack(t, "w")
    steps.append(("running", "done"))
    events = store.events(t)
    changes = [(e.from_state, e.to_state) for e in events if e.from_state != e.to_state]
    assert changes == steps
    assert all(e.task_id == t for e in events)
    assert [e.at for e in events] == sorted(e.at for e in events)
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    lines = [(e.from_state, e.to_state, e.reason) for e in events
             if e.from_state == e.to_state]
    assert len(lines) == 2
    assert lines[0][0] == "queued" and lines[0][2].startswith("bumped")
    assert lines[1] == ("queued", "queued", "operator looked at it")
    assert events[0].reason == "submitted"
    assert events[-1].at == clock.now()


def test_events_of_an_unknown_task_are_empty(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.events(12345) == []
    store.log_event(12345, "nothing")           # no task, nothing logged, no error
    assert store.events(12345) == []


def mixed(store: Store, clock: FakeClock) -> dict[int, TaskState]:
    """A sequence reaching every state; returns the expected state of every task."""
    book = store.ticket_book()
    shops = ["pdd-1", "pdd-2", "temu-1", "tiktok-1"]
    ids = store.submit_many([spec(shop=shops[i % 4]) for i in range(12)])
    expect = dict.fromkeys(ids, TaskState.QUEUED)

    def run(owner: str) -> int:
        c = store.claim(owner)
        assert c is not None
        expect[c.id] = TaskState.RUNNING
        return c.id

    a = run("w")
    store.ack(a, "w")
    expect[a] = TaskState.DONE
    b = run("w")
    store.fail(b, "w", error_class="x", message="x", retry=False)
    expect[b] = TaskState.FAILED
    d = run("w")
    store.record_crash(d, "w", error_class="browser_crashed", message="x", quarantine=True,
                       evidence=None)
    expect[d] = TaskState.QUARANTINED
    e = run("w")
    store.open_ticket(e, "w", signature=Signature("pdd", "collect_data", "", "x", "x"),
                      step=None, error="x", evidence=None)
    expect[e] = TaskState.WAITING_HUMAN
    f = run("w")
    store.fail(f, "w", error_class="x", message="x")
    expect[f] = TaskState.QUEUED
    g = next(t for t, s in expect.items() if s is TaskState.QUEUED)
    store.cancel(g)
    expect[g] = TaskState.CANCELLED
    run("w2")
    h = run("w2")
    store.release(h, "w2", suspend=True)
    expect[h] = TaskState.SUSPENDED
    s = store.submit(spec(shop="temu-1", delay_s=3600))  # #18: a delayed task
    expect[s] = TaskState.SCHEDULED
    assert book.open_count() == 1
    return expect


def test_counts_equal_tasks_per_state_after_a_mixed_sequence(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    expect = mixed(store, clock)
    assert {store.task(t).state for t in expect} == set(TaskState)
    for t, s in expect.items():
        assert store.task(t).state is s, t
    want = {s.value: 0 for s in TaskState} | {
        s.value: n for s, n in Counter(expect.values()).items()}
    assert store.counts() == want
    for s in TaskState:
        listed = store.tasks(state=s.value, limit=100)
        assert sorted(r.id for r in listed) == sorted(t for t, x in expect.items() if x is s)
    assert sorted(r.id for r in store.tasks(limit=100)) == sorted(expect)
    st = store.status()
    assert st.counts == want and st.queued == want["queued"]


def test_tasks_lists_filters_and_pages(store_factory: StoreFactory) -> None:
    store = store_factory(priority={"aging_per_min": 0})
    low = store.submit(spec("collect_data", "pdd-1"))
    high = store.submit(spec("reply_customer", "pdd-2"))
    mid = store.submit(spec("upload_product", "pdd-1"))
    done = store.submit(spec("campaign_signup", "temu-1", priority=1))
    store.bump(done, by=100)
    c = store.claim("w")
    assert c is not None and c.id == done
    store.ack(done, "w")
    assert [r.id for r in store.tasks(state="queued")] == [high, mid, low]   # best first
    assert [r.id for r in store.tasks(state="queued", limit=2)] == [high, mid]
    assert [r.id for r in store.tasks(state="queued", limit=2, offset=2)] == [low]
    assert [r.id for r in store.tasks()] == [done, mid, high, low]          # newest first
    assert [r.id for r in store.tasks(shop="pdd-1")] == [mid, low]
    assert [r.id for r in store.tasks(state="queued", shop="pdd-1")] == [mid, low]
    assert [r.id for r in store.tasks(state="done")] == [done]
    assert store.tasks(shop="tiktok-1") == []
    with pytest.raises(InvalidInput):
        store.tasks(state="sleeping")
    with pytest.raises(InvalidInput):
        store.tasks(limit=0)
    with pytest.raises(InvalidInput):
        store.tasks(shop="no-such-shop")
    with pytest.raises(UnknownTask):
        store.task(done + 1000)


def test_status_reports_backlog_oldest_wait_busy_shops_and_scores(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 0}, queue={"max_backlog": 500})
    empty = store.status()
    assert (empty.queued, empty.oldest_wait_s, empty.hard_aged, empty.busy_shops) == (
        0, 0.0, 0, {})
    assert empty.top_score is None and empty.bottom_score is None
    assert empty.max_backlog == 500
    store.submit_many([spec(shop="pdd-1"), spec("reply_customer", shop="pdd-2")])
    clock.advance(90)
    store.submit(spec(shop="temu-1", priority=1))
    store.claim("w")                                 # the reply (10)
    st = store.status()
    assert st.at == clock.now()
    assert st.queued == 2 and st.counts["running"] == 1
    assert st.oldest_wait_s == pytest.approx(90)
    assert st.busy_shops == {"pdd-2": 1}
    assert st.top_score == pytest.approx(3) and st.bottom_score == pytest.approx(1)
    assert st.hard_aged == 0


def test_queue_bands(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 1.0, "hard_aging_min": 30},
                          queue={"max_tasks_per_shop": 100})
    old = store.submit(spec("collect_data", priority=0))
    clock.advance(31 * 60)
    store.apply_thresholds()                          # old is hard-aged now
    store.submit_many([spec(priority=p) for p in (25, 16, 9, 5, 1.5, 0)])
    store.claim("w")                                  # old: hard-aged goes first
    bands = store.queue_bands(urgent_at=15, low_below=2)
    assert bands == {"hard_aged": 0, "urgent": 2, "normal": 2, "low": 2}
    assert store.task(old).state is TaskState.RUNNING
    store.release(old, "w")
    assert store.queue_bands(urgent_at=15, low_below=2)["hard_aged"] == 1
    clock.advance(60)                                 # +1 point for everyone
    assert store.queue_bands(urgent_at=15, low_below=2) == {
        "hard_aged": 1, "urgent": 2, "normal": 3, "low": 1}


def test_metrics_history_keeps_minutes_in_order_within_retention(
        store_factory: StoreFactory) -> None:
    store = store_factory()
    base = 29_000_000
    for m in range(5):
        store.record_minute(base + m, {"done": m, "by_shop": {"pdd-1": m * 2}})
    store.record_minute(base + 2, {"done": 22})             # a minute written again
    hist = store.metrics_history()
    assert [m for m, _ in hist] == [base + i for i in range(5)]
    assert hist[2] == (base + 2, {"done": 22})
    assert hist[4][1] == {"done": 4, "by_shop": {"pdd-1": 8}}
    assert [m for m, _ in store.metrics_history(since_minute=base + 3)] == [base + 3, base + 4]
    assert [m for m, _ in store.metrics_history(limit=2)] == [base + 3, base + 4]  # newest
    # Retention: a day later, with one day kept, the old minutes are gone.
    store.record_minute(base + 1440 + 2, {"done": 1}, keep_days=1.0)
    assert [m for m, _ in store.metrics_history()] == [base + 2, base + 3, base + 4,
                                                       base + 1442]


def test_a_snapshot_recorded_with_a_minute_is_kept(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.record_minute(100, {"done": 1}, snapshot={"running": 3, "slots": 4})
    import json

    raw = store.meta("engine_snapshot")
    assert raw is not None and json.loads(raw) == {"running": 3, "slots": 4}


def test_meta(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.meta("console_note") is None
    store.set_meta("console_note", "hello")
    store.set_meta("other", "x")
    assert store.meta("console_note") == "hello"
    store.set_meta("console_note", "新的")
    assert store.meta("console_note") == "新的" and store.meta("other") == "x"


def test_shops(store_factory: StoreFactory) -> None:
    store = store_factory(shops=False)
    assert store.shops() == []
    rec = store.add_shop("b-shop", platform="temu", base_url="https://Seller.Example.com/b/",
                         username="ann")
    assert (rec.name, rec.platform, rec.domain, rec.username) == (
        "b-shop", "temu", "seller.example.com", "ann")
    assert rec.base_url.rstrip("/") == "https://Seller.Example.com/b"
    assert not rec.has_password and not rec.paused
    store.add_shop("a-shop", platform="pdd", base_url="http://pdd.test")
    assert [s.name for s in store.shops()] == ["a-shop", "b-shop"]
    assert len({s.id for s in store.shops()}) == 2
    assert store.shop("b-shop") == rec
    with pytest.raises(InvalidInput) as err:
        store.add_shop("a-shop", platform="pdd", base_url="http://pdd.test")
    assert err.value.field == "name"
    with pytest.raises(InvalidInput) as err:
        store.add_shop("c", platform="pdd", base_url="ftp://pdd.test")
    assert err.value.field == "base_url"
    with pytest.raises(InvalidInput) as err:
        store.add_shop(" ", platform="pdd", base_url="http://pdd.test")
    assert err.value.field == "name"
    with pytest.raises(InvalidInput) as err:
        store.add_shop("c", platform="", base_url="http://pdd.test")
    assert err.value.field == "platform"
    with pytest.raises(InvalidInput):
        store.shop("no-such-shop")
    assert [s.name for s in store.shops()] == ["a-shop", "b-shop"]


def test_update_shop_and_its_password(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.shop_password_enc("pdd-1") is None
    rec = store.update_shop("pdd-1", username="bob", password_enc=b"\x00secret\xff")
    assert rec.username == "bob" and rec.has_password
    assert store.shop_password_enc("pdd-1") == b"\x00secret\xff"
    rec = store.update_shop("pdd-1", username="carol")
    assert rec.username == "carol" and rec.has_password
    assert store.shop_password_enc("pdd-1") == b"\x00secret\xff"
    assert store.update_shop("pdd-1") == rec
    with pytest.raises(InvalidInput):
        store.update_shop("no-such-shop", username="x")
    with pytest.raises(InvalidInput):
        store.shop_password_enc("no-such-shop")
    with pytest.raises(InvalidInput):
        store.set_shop_paused("no-such-shop", True)
    assert not store.shop("pdd-2").has_password


def info(slots: int = 4, running: int = 0, **extra: object) -> dict[str, object]:
    return {"host": "box-1", "pid": 4242, "slots": slots, "running": running,
            "started_at": 1_767_225_000.0, **extra}


def test_workers_heartbeat_and_say_goodbye(store_factory: StoreFactory,
                                           clock: FakeClock) -> None:
    store = store_factory()
    assert store.workers() == []
    store.heartbeat("box-1/4242/a", info(running=1, version="1.2"))
    store.heartbeat("box-2/7/b", {**info(slots=8, running=3), "host": "box-2", "pid": 7})
    clock.advance(5)
    store.heartbeat("box-1/4242/a", info(running=2, version="1.2"))
    ws = {w.owner: w for w in store.workers()}
    assert set(ws) == {"box-1/4242/a", "box-2/7/b"}
    w = ws["box-1/4242/a"]
    assert (w.host, w.pid, w.slots, w.running, w.state) == ("box-1", 4242, 4, 2, "alive")
    assert w.started_at == 1_767_225_000.0 and w.heartbeat_at == clock.now()
    assert w.detail.get("version") == "1.2"
    assert ws["box-2/7/b"].heartbeat_at == clock.now() - 5 and ws["box-2/7/b"].slots == 8
    store.worker_gone("box-2/7/b")
    ws = {w.owner: w for w in store.workers()}
    assert ws["box-2/7/b"].state == "stopped" and ws["box-1/4242/a"].state == "alive"
    assert ws["box-2/7/b"].running == 0             # a stopped worker holds nothing
    store.worker_gone("never-seen")                  # no error
    assert "never-seen" not in {w.owner for w in store.workers()}


def test_a_silent_worker_is_lost_and_its_tasks_are_requeued_at_once(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 600})
    a, b, c = store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2"), spec(shop="temu-1")])
    store.heartbeat("dead", info(running=2))
    store.heartbeat("live", info())
    store.heartbeat("gone", info())
    ca = store.claim("dead")
    cb = store.claim("dead")
    cc = store.claim("live")
    assert ca is not None and cb is not None and cc is not None
    store.save_checkpoint(ca.id, "dead", {"next_step": 1})
    store.worker_gone("gone")
    clock.advance(20)
    store.heartbeat("live", info(running=1))
    clock.advance(25)                                 # dead: 45 s silent; live: 25 s
    assert sorted(store.recover_lost_workers(30)) == sorted([a, b])
    states = {w.owner: w.state for w in store.workers()}
    assert states == {"dead": "lost", "live": "alive", "gone": "stopped"}
    running = {w.owner: w.running for w in store.workers()}
    assert running == {"dead": 0, "live": 1, "gone": 0}   # the lost one holds nothing now
    for t in (a, b):
        rec = store.task(t)
        assert rec.state is TaskState.QUEUED and rec.lease_owner is None
        assert rec.not_before <= clock.now()         # now, not after its lease
    assert store.task(a).checkpoint == {"next_step": 1}
    assert store.task(c).state is TaskState.RUNNING and store.task(c).lease_owner == "live"
    assert store.recover_lost_workers(30) == []
    assert store.recover_expired() == []
    with pytest.raises(LeaseLost):
        store.ack(a, "dead")
    got = {t.id for t in store.claim_many("live", 5)}
    assert got == {a, b}


def test_the_worker_asking_is_never_lost_however_old_its_heartbeat(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    """A worker paused between its heartbeat and the check (a laptop asleep, a loaded machine,
    a fake clock stepped in between) must not requeue its own running tasks."""
    store = store_factory(queue={"lease_s": 600})
    t = store.submit(spec(shop="pdd-1"))
    store.heartbeat("me", info(running=1))
    claimed = store.claim("me")
    assert claimed is not None and claimed.id == t
    clock.advance(120)                                # older than lost_after
    assert store.recover_lost_workers(30, alive="me") == []
    assert store.task(t).state is TaskState.RUNNING and store.task(t).lease_owner == "me"
    assert {w.owner: w.state for w in store.workers()} == {"me": "alive"}
    assert store.recover_lost_workers(30) == [t]      # asked by another: it is lost
