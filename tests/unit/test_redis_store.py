"""What only the Redis store has to prove: atomic claims across processes' clients, lost
workers, the event stream, and counts and indexes that stay true (the shared behaviour is in
``tests/contract``)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.config import Settings
from core.errors import LeaseLost, Refused
from core.store import TaskState
from core.store.redis.keys import Keys
from core.store.redis.store import RedisStore, public_url
from core.testing import FakeClock
from core.tickets import Signature
from tests.conftest import SHOPS, add_demo_shops
from tests.helpers import spec
from tests.store_checks import redis_real_counts

Factory = Callable[..., RedisStore]


@pytest.fixture
def open_store(redis_url: str, clock: FakeClock) -> Iterator[Factory]:
    opened: list[RedisStore] = []

    def make(*, prefix: str = "t", shops: bool = True, clock: FakeClock = clock,
             **sections: dict[str, Any]) -> RedisStore:
        settings = Settings().with_changes(**sections) if sections else Settings()
        store = RedisStore(redis_url, settings=settings, clock=clock, prefix=prefix)
        opened.append(store)
        if shops:
            add_demo_shops(store)
        return store

    yield make
    for s in opened:
        s.close()


def check_indexes(store: RedisStore) -> None:
    """Counts equal the tasks per state, and every index holds exactly its state's tasks."""
    r, k = store.client, store.keys
    real = redis_real_counts(store)
    assert store.counts() == real
    for state, n in real.items():
        assert r.zcard(k.state(state)) == n, state
    assert r.zcard(k.ready) == real["queued"]
    assert r.zcard(k.suspended) == real["suspended"]
    assert r.zcard(k.running) == real["running"]
    per_shop = sum(int(v) for v in r.hvals(k.shop_running))
    assert per_shop == real["running"]
    assert sum(r.zcard(k.shop_queue(s.id)) for s in store.shops()) == real["queued"]
    owned = sum(r.scard(k.owner(o)) for o in r.smembers(k.owners))
    assert owned == real["running"]


# -- atomic claims ---------------------------------------------------------------------------


@pytest.mark.parametrize("per_shop", [1, 2])
def test_concurrent_claims_keep_shop_exclusivity_and_never_claim_twice(
        open_store: Factory, redis_url: str, clock: FakeClock, per_shop: int) -> None:
    first = open_store(queue={"max_tasks_per_shop": per_shop, "max_backlog": 10_000})
    shops = [s.name for s in first.shops()]
    n_tasks = 400
    first.submit_many([spec("collect_data", shops[i % len(shops)], params={"i": i})
                       for i in range(n_tasks)])
    lock = threading.Lock()
    running: dict[str, int] = {}
    peak: dict[str, int] = {}
    claimed: list[int] = []
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        store = open_store(shops=False, queue={"max_tasks_per_shop": per_shop})
        owner = f"w{n}"
        rnd = random.Random(n)
        def ack(batch: list[Any]) -> None:
            for t in batch:
                # The model counts a task from after its claim to before its ack: inside the
                # time the store holds it, so it never over-counts.
                with lock:
                    running[t.shop] -= 1
                store.ack(t.id, owner)

        held: list[Any] = []
        try:
            while True:
                got = store.claim_many(owner, rnd.randint(1, 3))
                with lock:
                    for t in got:
                        claimed.append(t.id)
                        running[t.shop] = running.get(t.shop, 0) + 1
                        peak[t.shop] = max(peak.get(t.shop, 0), running[t.shop])
                # A batch is acked only after this worker's next claim: the model's intervals
                # are long, and overlap whenever the store let a shop run twice at once.
                ack(held)
                held = got
                if not got and store.counts()["queued"] == 0:
                    return
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors, errors
    assert sorted(claimed) == sorted(set(claimed)), "a task was claimed twice"
    assert len(claimed) == n_tasks
    assert max(peak.values()) <= per_shop
    assert first.counts()["done"] == n_tasks
    check_indexes(first)


def test_a_claim_round_is_one_script_call(open_store: Factory) -> None:
    store = open_store()
    store.submit_many([spec("collect_data", s) for s, _ in SHOPS])
    r = store.client

    def calls() -> int:
        stats = r.info("commandstats")
        return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))

    before = calls()
    assert len(store.claim_many("w1", 4)) == len(SHOPS)
    assert calls() - before == 1


def test_equal_scores_come_out_in_submission_order_past_nine(open_store: Factory) -> None:
    # members are zero-padded: "10" must not sort before "9"
    store = open_store(priority={"aging_per_min": 0}, queue={"max_tasks_per_shop": 100})
    ids = store.submit_many([spec("collect_data", "pdd-1", params={"i": i}) for i in range(25)])
    got = [store.claim("w") for _ in ids]
    assert [t.id for t in got if t] == ids


# -- workers ------------------------------------------------------------------------------------


def test_a_silent_worker_is_lost_and_its_tasks_requeued_at_once(
        open_store: Factory, clock: FakeClock) -> None:
    store = open_store(queue={"lease_s": 3600})
    a = store.submit(spec("collect_data", "pdd-1"))
    b = store.submit(spec("collect_data", "temu-1"))
    store.heartbeat("w1", {"host": "m1", "pid": 11, "slots": 2, "running": 2})
    held = store.claim_many("w1", 2)
    assert {t.id for t in held} == {a, b}
    clock.advance(20)
    store.heartbeat("w2", {"host": "m2", "pid": 22, "slots": 4, "running": 0, "zone": "b"})
    assert store.recover_lost_workers(60) == []
    clock.advance(45)  # w1 silent 65 s, w2 45 s; every lease still has most of an hour
    store.heartbeat("w2", {"host": "m2", "pid": 22, "slots": 4, "running": 0, "zone": "b"})
    assert sorted(store.recover_lost_workers(60)) == sorted([a, b])
    states = {w.owner: w.state for w in store.workers()}
    assert states == {"w1": "lost", "w2": "alive"}
    w2 = next(w for w in store.workers() if w.owner == "w2")
    assert (w2.host, w2.slots, w2.detail) == ("m2", 4, {"zone": "b"})
    assert store.task(a).state == "queued"
    assert "stopped heartbeating" in store.task(a).state_reason
    assert sorted(store.renew_leases("w1", [a, b])) == sorted([a, b])
    with pytest.raises(LeaseLost):
        store.ack(a, "w1")
    assert {t.id for t in store.claim_many("w2", 2)} == {a, b}
    store.worker_gone("w2")
    assert {w.owner: w.state for w in store.workers()}["w2"] == "stopped"
    check_indexes(store)


def test_a_task_whose_workers_keep_dying_goes_to_a_person(
        open_store: Factory, clock: FakeClock) -> None:
    store = open_store(queue={"max_attempts": 2, "lease_s": 30})
    t = store.submit(spec("collect_data", "pdd-1"))
    for _ in range(2):
        assert store.claim("w1") is not None
        clock.advance(31)
        assert store.recover_expired(dead_local_owners=False) == [t]
    rec = store.task(t)
    assert rec.state == "waiting_human"
    tickets = store.ticket_book().tickets()
    assert [tk.task_id for tk in tickets] == [t]
    assert tickets[0].error_class == "lease_lost"
    assert "lost 2 times" in tickets[0].error
    sig = Signature("pdd", "collect_data", "", "lease_lost", "worker lost")
    assert tickets[0].signature == sig.key
    check_indexes(store)


# -- the event log --------------------------------------------------------------------------------


def test_every_state_change_goes_to_the_stream_and_the_history(open_store: Factory) -> None:
    store = open_store()
    t = store.submit(spec("collect_data", "pdd-1"))
    c = store.claim("w1")
    assert c is not None
    store.log_event(t, "gate waited 2 s")
    store.ack(t, "w1")
    entries = store.client.xrange(store.keys.events)
    mine = [f for _, f in entries if f["task"] == str(t)]
    assert [(f["from"], f["to"]) for f in mine] == [
        ("", "queued"), ("queued", "running"), ("running", "running"), ("running", "done")]
    history = store.events(t)
    assert [e.id for e in history] == [int(f["id"]) for f in mine]
    assert [e.reason for e in history][2] == "gate waited 2 s"
    assert history[0].from_state is None


# -- consistency under random operations ----------------------------------------------------------


OPS = st.lists(st.tuples(st.sampled_from(
    ["submit", "claim", "ack", "fail", "suspend", "release", "cancel", "crash", "ticket",
     "answer", "advance", "recover", "bump", "lost", "urgent", "quarantine_release"]),
    st.integers(0, 10_000)), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS)
def test_counts_and_indexes_stay_true_under_random_operations(
        redis_url: str, ops: list[tuple[str, int]]) -> None:
    redis.Redis.from_url(redis_url).flushall()
    clock = FakeClock()
    store = RedisStore(redis_url, clock=clock, prefix="h", settings=Settings().with_changes(
        queue={"max_attempts": 2, "lease_s": 60, "max_tasks_per_shop": 1, "max_backlog": 30},
        priority={"hard_aging_min": 5}))
    try:
        for shop, platform in SHOPS:
            store.add_shop(shop, platform=platform, base_url=f"http://{platform}.test/{shop}")
        book = store.ticket_book()
        held: list[tuple[int, str]] = []
        ids: list[int] = []
        for op, n in ops:
            owner = f"w{n % 2}"
            acted: tuple[int, str] | None = None
            try:
                if op == "submit":
                    ids.append(store.submit(spec("collect_data", SHOPS[n % 4][0],
                                                 priority=n % 13,
                                                 key=f"k{n % 40}" if n % 3 == 0 else None)))
                elif op == "urgent":
                    ids.append(store.submit(spec("reply_customer", SHOPS[n % 4][0],
                                                 priority=30)))
                elif op == "claim":
                    held += [(c.id, owner) for c in store.claim_many(owner, 1 + n % 3)]
                elif op == "advance":
                    clock.advance(n % 200)
                elif op == "recover":
                    store.recover_expired(dead_local_owners=False)
                elif op == "lost":
                    store.heartbeat(owner, {"host": "h", "pid": 1})
                    store.recover_lost_workers(n % 100)
                elif op == "answer":
                    open_ = book.tickets()
                    if open_:
                        book.answer(open_[n % len(open_)].id,
                                    ["retry", "resume", "skip", "done", "cancel"][n % 5])
                elif op == "quarantine_release":
                    q = book.quarantined()
                    if q:
                        book.release(q[0].id)
                elif op == "bump" and ids:
                    store.bump(ids[n % len(ids)], by=1.5)
                elif op == "cancel" and ids:
                    store.cancel(ids[n % len(ids)])
                elif held:
                    tid, who = acted = held.pop(n % len(held))
                    if op == "ack":
                        store.ack(tid, who)
                    elif op == "fail":
                        store.fail(tid, who, error_class="site_failed", message="boom",
                                   retry=n % 2 == 0)
                    elif op == "suspend":
                        store.release(tid, who, suspend=True, checkpoint={"next_step": 1})
                    elif op == "release":
                        store.release(tid, who)
                    elif op == "crash":
                        store.record_crash(tid, who, error_class="browser_crashed",
                                           message="gone", quarantine=n % 2 == 0,
                                           evidence=None)
                    elif op == "ticket":
                        store.open_ticket(tid, who, signature=Signature(
                            "pdd", "collect_data", "s", "page_changed", "x"), step=0,
                            error="x", evidence={"screenshot": "/shared/e/1.png"})
            except LeaseLost:
                # Only a worker's act on a task it held, and only once the task really is no
                # longer its (recovered, cancelled, finished by a rule …).
                assert acted is not None, op
                rec = store.task(acted[0])
                assert not (rec.state is TaskState.RUNNING and rec.lease_owner == acted[1]), (
                    op, rec)
            except Refused as exc:
                assert str(exc), op                 # a refusal says why
            except Exception as exc:  # the only other expected refusals
                if type(exc).__name__ not in ("BacklogFull", "UnknownTask", "SpecError"):
                    raise
            check_indexes(store)
        assert store.status().queued == store.counts()["queued"]
    finally:
        store.close()


# -- small things --------------------------------------------------------------------------------


def test_url_hides_the_password_and_passwords_round_trip(open_store: Factory,
                                                         redis_url: str) -> None:
    assert public_url("redis://:s3cret@10.0.0.5:6379/2") == "redis://10.0.0.5:6379/2"
    assert public_url("redis://fleet:s3cret@host/0") == "redis://fleet@host/0"
    store = open_store()
    assert store.url == redis_url
    store.update_shop("pdd-1", password_enc=b"\x00\xffcipher")
    assert store.shop_password_enc("pdd-1") == b"\x00\xffcipher"
    assert store.shop("pdd-1").has_password
    assert store.shop_password_enc("pdd-2") is None


def test_shop_passwords_are_encrypted_at_rest_in_redis(
        open_store: Factory, redis_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``shop set-password`` on a fleet's Redis: what Redis holds, read raw, has no trace of
    the password, and decrypts to it with the vault key (and only with it)."""
    import base64
    import io

    from core.cli import main
    from core.errors import EnvironmentProblem
    from core.secrets import decrypt_password
    from core.vault import Vault

    secret = "Pl4in-Text-Secret-9931"
    store = open_store(prefix="shopfleet")          # the prefix the command line uses
    monkeypatch.setattr("sys.stdin", io.StringIO(secret + "\n"))
    assert main(["shop", "set-password", "pdd-1", "--stdin", "--store", redis_url]) == 0
    assert secret not in capsys.readouterr().out
    raw = redis.Redis.from_url(redis_url)          # bytes, as stored
    dump = b""
    for key in raw.scan_iter(match=b"shopfleet:*", count=1000):
        kind = raw.type(key)
        if kind == b"hash":
            dump += b"".join(k + b"=" + v for k, v in raw.hgetall(key).items())
        elif kind == b"string":
            dump += raw.get(key) or b""
        elif kind == b"list":
            dump += b"".join(raw.lrange(key, 0, -1))
        elif kind == b"stream":
            dump += repr(raw.xrange(key)).encode()
        elif kind in (b"set", b"zset"):
            dump += repr(raw.smembers(key) if kind == b"set" else raw.zrange(key, 0, -1)
                         ).encode()
    assert dump and secret.encode() not in dump
    assert base64.b64encode(secret.encode()) not in dump
    sid = store.shop("pdd-1").id
    token = base64.b64decode(raw.hget(Keys("shopfleet").shop(sid), "password_enc"))
    assert secret.encode() not in token
    assert decrypt_password(token) == secret                  # with this machine's vault key
    with pytest.raises(EnvironmentProblem):                   # and not with another key
        Vault.open(tmp_path / "another-machine", use_keyring=False).decrypt(token)
    raw.close()


def test_prefixes_keep_fleets_apart(open_store: Factory) -> None:
    a = open_store(prefix="fleet-a")
    b = open_store(prefix="fleet-b")
    a.submit(spec("collect_data", "pdd-1"))
    assert a.counts()["queued"] == 1
    assert b.counts()["queued"] == 0
    assert b.claim("w") is None
    assert all(key.startswith(("fleet-a:", "fleet-b:"))
               for key in a.client.scan_iter("*"))
    assert Keys("fleet-a").task(1) == "fleet-a:task:1"


def test_a_changed_aging_rate_rekeys_the_queue(open_store: Factory, redis_url: str,
                                               clock: FakeClock) -> None:
    store = open_store(prefix="ag", priority={"aging_per_min": 0.2})
    old = store.submit(spec("collect_data", "pdd-1", priority=5))
    clock.advance(600)
    new = store.submit(spec("collect_data", "pdd-2", priority=6))
    # at 0.2/min the old task has aged 2 points: 7 > 6
    assert [t.id for t in store.tasks(state="queued")] == [old, new]
    again = open_store(prefix="ag", shops=False, priority={"aging_per_min": 0.0})
    assert [t.id for t in again.tasks(state="queued")] == [new, old]


def test_durability_warning_follows_the_servers_persistence(redis_url: str) -> None:
    import redis as redis_py

    store = RedisStore(redis_url)
    client = redis_py.Redis.from_url(redis_url, decode_responses=True)
    try:
        client.config_set("appendonly", "no")
        said = store.durability_warning()
        assert said is not None and "appendonly" in said
        client.config_set("appendonly", "yes")
        client.config_set("appendfsync", "everysec")
        said = store.durability_warning()
        assert said is not None and "a second" in said
        client.config_set("appendfsync", "always")
        assert store.durability_warning() is None
    finally:
        client.config_set("appendonly", "no")
        client.close()
        store.close()


def test_ack_many_acks_each_in_one_round_trip_and_reports_each_failure(
        open_store: Factory) -> None:
    store = open_store()
    a, b, c = store.submit_many([spec(shop=s) for s in ("pdd-1", "pdd-2", "temu-1")])
    got = {t.id for t in store.claim_many("w", 3)}
    assert got == {a, b, c}
    errors = store.ack_many([(a, "w", {"n": 1}), (b, "intruder", None), (c, "w", None)])
    assert errors[0] is None and errors[2] is None
    assert isinstance(errors[1], LeaseLost)
    assert store.task(a).state is TaskState.DONE and store.task(a).results == {"n": 1}
    assert store.task(b).state is TaskState.RUNNING
    assert store.task(c).state is TaskState.DONE
    assert isinstance(store.ack_many([(a, "w", None)])[0], LeaseLost)  # a repeat: no effect
    assert store.counts()["done"] == 2


def _lose_replies(store: RedisStore, name: str, *, ran: bool, times: int = 1) -> list[int]:
    """Make the next ``times`` calls of script ``name`` fail as a dropped connection does: after
    Redis ran it (``ran``: the reply was lost) or before it was sent. Returns a call counter."""
    real = store._scripts[name]
    calls = [0]

    def flaky(*a: Any, **kw: Any) -> Any:
        calls[0] += 1
        if calls[0] <= times:
            if ran:
                real(*a, **kw)
            raise redis.ConnectionError("Connection reset by peer (test)")
        return real(*a, **kw)

    store._scripts[name] = flaky
    return calls


@pytest.mark.parametrize("ran", [True, False], ids=["reply-lost", "never-sent"])
def test_ack_and_claim_through_a_dropped_connection_acks_once_and_hands_over_its_claim(
        open_store: Factory, ran: bool) -> None:
    """The worker cannot tell whether the script ran; tried again, it gets the task that run
    claimed (else that task would stay held by a slot that never learnt of it until its lease
    ran out, and its attempt be spent), and nothing is acked or claimed twice."""
    import asyncio

    from core.store.aio import AsyncStore

    store = open_store()
    first, second, third = store.submit_many(
        [spec(shop="pdd-1"), spec(shop="pdd-2"), spec(shop="temu-1")])
    held = store.claim("w")
    assert held is not None and held.id == first
    calls = _lose_replies(store, "ack_and_claim", ran=ran)
    nxt = asyncio.run(AsyncStore(store).ack_and_claim(first, "w", results={"n": 1}))
    assert calls[0] == 2  # the lost call and its repeat
    assert nxt is not None and nxt.id == second and nxt.lease_owner == "w"
    assert nxt.shop == "pdd-2" and nxt.attempts == 1 and not nxt.resumed
    assert store.task(first).state is TaskState.DONE and store.task(first).results == {"n": 1}
    assert store.task(second).state is TaskState.RUNNING
    assert store.task(second).attempts == 1
    assert store.task(third).state is TaskState.QUEUED
    assert [e.to_state for e in store.events(first)].count("done") == 1
    assert [e.to_state for e in store.events(second)].count("running") == 1
    check_indexes(store)
    # What the call claimed is kept for about a lease (its repeat comes within a third of
    # it), then expires: nothing stays on the task.
    assert 0 < store.client.ttl(store.keys.ack_claim(first)) <= store.settings.queue.lease_s
    assert not {"acked_by", "claimed_with_ack"} & set(store.client.hkeys(store.keys.task(first)))
    # The same call once more answers the same (its task still held), and a worker that did
    # not ack the task still hears that it lost it.
    again = store.ack_and_claim(first, "w")
    assert again is not None and again.id == second
    with pytest.raises(LeaseLost):
        store.ack_and_claim(first, "intruder")
    store.ack(second, "w")
    assert store.ack_and_claim(first, "w") is None  # what it claimed is no longer its own
    check_indexes(store)


def test_a_repeated_ack_and_claim_that_claimed_nothing_claims_nothing_later(
        open_store: Factory) -> None:
    store = open_store()
    first = store.submit(spec(shop="pdd-1"))
    assert store.claim("w") is not None
    assert store.ack_and_claim(first, "w") is None  # nothing else queued
    store.submit(spec(shop="pdd-2"))
    assert store.ack_and_claim(first, "w") is None  # a repeat: not a second claim
    assert store.counts()["queued"] == 1 and store.counts()["running"] == 0


def test_a_repeat_never_hands_over_a_task_claimed_again_since(open_store: Factory,
                                                              clock: FakeClock) -> None:
    """The task the first call claimed was recovered (its worker taken for lost during the
    outage) and claimed again by the same worker's dispatcher: that later claim is another
    slot's, and the repeat must not give it to this slot as well (two runs of one task)."""
    store = open_store()
    first, second = store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2")])
    assert store.claim("w") is not None
    got = store.ack_and_claim(first, "w")
    assert got is not None and got.id == second
    store.release(second, "w", reason="recovered: its worker was taken for lost (test)")
    clock.advance(5)
    again = store.claim("w")
    assert again is not None and again.id == second
    assert store.ack_and_claim(first, "w") is None       # the old call's repeat: not this one
    assert store.task(second).state is TaskState.RUNNING
    assert [e.to_state for e in store.events(second)].count("running") == 2


def test_a_repeat_hands_over_a_resumed_task_as_resumed(open_store: Factory) -> None:
    store = open_store()
    first, paused = store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2")])
    assert {t.id for t in store.claim_many("w", 2)} == {first, paused}
    store.release(paused, "w", reason="preempted (test)", checkpoint={"next_step": 3},
                  suspend=True)
    _lose_replies(store, "ack_and_claim", ran=True)
    with pytest.raises(redis.ConnectionError):
        store.ack_and_claim(first, "w")
    nxt = store.ack_and_claim(first, "w")                 # the repeat
    assert nxt is not None and nxt.id == paused
    assert nxt.resumed and nxt.checkpoint == {"next_step": 3}
