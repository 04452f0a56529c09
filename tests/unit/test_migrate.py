"""``shopfleet migrate``: a desktop's SQLite store moved to Redis loses nothing, and the fleet
carries on from it as the desktop would have (same records, same claim order, fresh ids)."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from core.cli import Cli
from core.cli import migrate as migrate_cli
from core.cli.args import common_options
from core.config import Settings
from core.errors import Refused
from core.profiles import ShopProfile
from core.store import SqliteStore, TaskState
from core.store.redis import from_sqlite as mig
from core.store.redis.keys import Keys
from core.testing import FakeClock
from core.tickets import RuleAction, Signature, TicketState, normalise_error
from tests.conftest import StoreFactory
from tests.helpers import spec
from tests.store_checks import redis_real_counts

ERROR = "locator #submit-btn matched nothing after 3 tries"
SIG = Signature("pdd", "upload_product", "submit", "page_changed", normalise_error(ERROR))
CAPTCHA = Signature("temu", "reply_customer", "login", "needs_human", normalise_error("captcha"))
SETTINGS = Settings()


@pytest.fixture
def redis_store(redis_url: str, clock: FakeClock) -> Iterator[Callable[..., Any]]:
    """Open RedisStores on the test's Redis (closed afterwards)."""
    from core.store.redis.store import RedisStore

    opened: list[Any] = []

    def open_(prefix: str = "shopfleet", settings: Settings = SETTINGS) -> Any:
        store = RedisStore(redis_url, settings=settings, clock=clock, prefix=prefix)
        opened.append(store)
        return store

    yield open_
    for s in opened:
        s.close()


PROFILE = ShopProfile(proxy="http://u@127.0.0.1:8899", locale="en-US", timezone="Asia/Tokyo",
                      viewport=(1280, 720), headers=(("X-Shop", "t"),))

def raw(redis_url: str) -> Any:
    return redis.Redis.from_url(redis_url, decode_responses=True)


def run_to(store: SqliteStore, task_id: int, owner: str = "desk") -> None:
    c = store.claim(owner)
    assert c is not None and c.id == task_id, "the scenario claims the task it just made"


def desktop(store: SqliteStore, clock: FakeClock) -> dict[str, int]:
    """A desktop's store with tasks in every state, tickets, answers, rules and metrics."""
    t: dict[str, int] = {}
    book = store.ticket_book()
    store.update_shop("pdd-1", username="seller-7", password_enc=b"\x00fernet-token\xff")
    store.set_shop_origins("pdd-1", ["https://cdn.example.com"])  # copied as it is
    store.set_shop_profile("temu-1", PROFILE, proxy_password_enc=b"\x01proxy-token\xfe")  # #17
    store.set_domain_paused("tiktok.shopfleet.test", True, reason="429 storm")
    store.set_shop_paused("pdd-2", True)

    t["done"] = store.submit(spec("collect_data", "pdd-1", params={"page": 1}))
    run_to(store, t["done"])
    store.save_checkpoint(t["done"], "desk", {"next_step": 2, "results": {"n": 3}})
    clock.advance(2)
    store.ack(t["done"], "desk", results={"orders": 3, "names": ["a", "ü"]})

    t["failed"] = store.submit(spec("upload_product", "temu-1"))
    run_to(store, t["failed"])
    store.fail(t["failed"], "desk", error_class="page_changed", message="gone", retry=False,
               evidence={"dom": "/e/2.html"})

    t["quarantined"] = store.submit(spec("reply_customer", "pdd-1"))
    run_to(store, t["quarantined"])
    store.record_crash(t["quarantined"], "desk", error_class="browser_crashed",
                       message="renderer died", quarantine=True, evidence=None)

    t["answered"] = store.submit(spec("upload_product", "pdd-1"))
    run_to(store, t["answered"])
    t["answered_ticket"] = store.open_ticket(
        t["answered"], "desk", signature=SIG, step=2, error=ERROR,
        evidence={"screenshot": "/e/4.png"})

    t["waiting"] = store.submit(spec("reply_customer", "temu-1", key="reply-77"))
    run_to(store, t["waiting"])
    store.save_checkpoint(t["waiting"], "desk", {"next_step": 1, "writes_done": [0]})
    t["open_ticket"] = store.open_ticket(
        t["waiting"], "desk", signature=CAPTCHA, step=1, error="CAPTCHA shown",
        evidence={"screenshot": "/e/5.png", "log": "/e/5.txt"}, kind="failure")

    rule = book.add_rule(CAPTCHA, RuleAction.RETRY_LATER, delay_s=600, note="wait it out")
    t["by_rule"] = store.submit(spec("reply_customer", "temu-1"))
    run_to(store, t["by_rule"])
    store.apply_rule(t["by_rule"], "desk", rule, signature=CAPTCHA, error_class="needs_human",
                     error="CAPTCHA shown", step=1, step_name="login", evidence=None)
    book.set_rule_enabled(rule.id, False)
    t["rule"] = rule.id

    t["backoff"] = store.submit(spec("collect_data", "pdd-1", params={"page": 2}))
    run_to(store, t["backoff"])
    store.fail(t["backoff"], "desk", error_class="site_failed", message="503")

    t["suspended"] = store.submit(spec("upload_product", "pdd-1", params={"sku": "S"}))
    run_to(store, t["suspended"])
    store.release(t["suspended"], "desk", suspend=True, reason="preempted for #urgent",
                  checkpoint={"next_step": 3, "results": {}, "writes_done": [1, 2]})

    clock.advance(5)
    answered = book.answer(t["answered_ticket"], "resume", note="fixed the locator",
                           make_rule=RuleAction.SKIP, rule_delay_s=0)
    assert answered.state is TicketState.ANSWERED

    ids = store.submit_many([
        spec("collect_data", "temu-1", params={"page": 9}),
        spec("reply_customer", "pdd-1", key="order-1001"),
        spec("upload_product", "tiktok-1"),                     # its domain is paused
        spec("upload_product", "pdd-2"),                        # its shop is paused
        spec("collect_data", "pdd-1", priority=42.5),
        spec("reply_customer", "temu-1", urgency=3.25),
    ])
    t["first_queued"], t["last_queued"] = ids[0], ids[-1]
    clock.advance(30)
    t["cancelled"] = store.submit(spec("collect_data", "temu-1"))
    store.cancel(t["cancelled"], reason="not needed")
    store.bump(ids[0], by=2.5)
    store.log_event(ids[1], "operator looked at it")

    for minute in (29_000_000, 29_000_001, 29_000_002):
        store.record_minute(minute, {"done": minute % 7, "note": "ü"},
                            snapshot={"engine": "desk"})
    store.set_meta("console_layout", '{"columns": [1, 2]}')
    store.heartbeat("desk-host/1/abc", {"host": "desk-host", "pid": 1, "slots": 2})
    store.worker_gone("desk-host/1/abc")
    return t


def read(store: SqliteStore, sql: str) -> list[tuple[Any, ...]]:
    """Rows of the store's file, read beside the store (the test's own connection)."""
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def all_ids(store: SqliteStore) -> list[int]:
    return [int(r[0]) for r in read(store, "SELECT id FROM tasks ORDER BY id")]


def drain_both(a: Any, b: Any, clock: FakeClock) -> tuple[list[int], list[int]]:
    """Claim and finish everything claimable from both stores in lockstep (the same instants),
    now and after the back-offs and rule delays have passed."""
    order_a: list[int] = []
    order_b: list[int] = []
    for _ in range(2):
        while True:
            ca, cb = a.claim("fleet"), b.claim("fleet")
            for store, c, order in ((a, ca, order_a), (b, cb, order_b)):
                if c is not None:
                    order.append(c.id)
                    store.ack(c.id, "fleet")
            if ca is None and cb is None:
                break
            clock.advance(1)
        clock.advance(3600)
    return order_a, order_b


# -- the whole store moves -----------------------------------------------------------------------

def test_everything_is_copied_with_ids_and_indexes(make_store: StoreFactory, clock: FakeClock,
                                                  redis_url: str, redis_store: Any) -> None:
    src = make_store()
    t = desktop(src, clock)
    steps: list[tuple[str, int, int]] = []
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock, batch=3,
                         progress=lambda s, d, n: steps.append((s, d, n)))

    assert report.ok and not report.dry_run and report.recovered == []
    ids = all_ids(src)
    assert report.copied["tasks"] == len(ids) and report.copied["idempotency_keys"] == 2
    assert report.copied["tickets"] == 2 and report.copied["kb_answers"] == 1
    assert report.copied["rules"] == 2 and report.copied["metrics_minutes"] == 3
    assert report.copied["shops"] == 4 and report.copied["paused_domains"] == 1
    assert report.verification is not None and report.verification.sampled == len(ids)
    assert {s for s, n in report.tasks_by_state.items() if n} == {
        "queued", "suspended", "waiting_human", "quarantined", "done", "failed", "cancelled"}
    assert ("tasks", len(ids), len(ids)) in steps and ("tasks", 3, len(ids)) in steps

    dst = redis_store()
    assert dst.meta(mig.MARKER) == mig.DONE
    for tid in ids:
        assert dst.task(tid) == src.task(tid), tid
        assert dst.events(tid) == src.events(tid), tid
    for state in [None, *TaskState]:
        assert dst.tasks(state=state, limit=100) == src.tasks(state=state, limit=100), state
    assert dst.tasks(state="queued", shop="temu-1") == src.tasks(state="queued", shop="temu-1")
    assert dst.counts() == src.counts()
    assert dst.status() == src.status()
    assert dst.queue_bands(urgent_at=8, low_below=3) == src.queue_bands(urgent_at=8,
                                                                        low_below=3)
    assert dst.shops() == src.shops()
    assert dst.shop("pdd-1").allowed_origins == ("https://cdn.example.com:443",)
    assert dst.shop_password_enc("pdd-1") == b"\x00fernet-token\xff"
    assert dst.shop("temu-1").profile == PROFILE                                    # #17
    assert dst.shop_proxy_password_enc("temu-1") == b"\x01proxy-token\xfe"
    assert dst.shop_proxy_password_enc("pdd-1") is None
    assert dst.paused_domains() == src.paused_domains() == ["tiktok.shopfleet.test"]
    assert dst.metrics_history(limit=10) == src.metrics_history(limit=10)
    assert dst.meta("console_layout") == '{"columns": [1, 2]}'
    assert dst.meta("aging_per_min") == src.meta("aging_per_min")
    assert dst.meta("engine_snapshot") is None and dst.workers() == []

    sb, db = src.ticket_book(), dst.ticket_book()
    assert db.tickets(state=None) == sb.tickets(state=None)
    assert db.tickets() == sb.tickets()                              # the open one
    assert db.open_count() == sb.open_count() == 1
    assert db.knowledge_base() == sb.knowledge_base()
    assert db.earlier_answers(SIG.key) == sb.earlier_answers(SIG.key)
    assert db.rules() == sb.rules()
    disabled = next(r for r in db.rules() if r.id == t["rule"])
    assert (disabled.hits, disabled.enabled) == (1, False)
    assert db.matching_rule(SIG) == sb.matching_rule(SIG) is not None
    assert db.matching_rule(CAPTCHA) is None                         # disabled stays off
    assert db.quarantined() == sb.quarantined()
    assert redis_real_counts(dst) == src.counts()


def test_the_migrated_queue_claims_in_the_same_order(make_store: StoreFactory, clock: FakeClock,
                                                     redis_url: str, redis_store: Any) -> None:
    src = make_store()
    desktop(src, clock)
    mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock)
    dst = redis_store()
    on_redis, on_sqlite = drain_both(dst, src, clock)
    assert on_redis == on_sqlite
    assert len(on_redis) >= 8      # the queued ones, the suspended, the answered, the delayed


def test_the_fleet_carries_on_with_fresh_ids(make_store: StoreFactory, clock: FakeClock,
                                             redis_url: str, redis_store: Any) -> None:
    src = make_store()
    t = desktop(src, clock)
    max_event = int(read(src, "SELECT max(id) FROM task_events")[0][0])
    mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock)
    dst = redis_store()
    book = dst.ticket_book()

    got = book.answer(t["open_ticket"], "retry", note="solved the CAPTCHA by hand",
                      make_rule="human")
    assert got.state is TicketState.ANSWERED and got.action == "retry"
    task = dst.task(t["waiting"])
    assert task.state is TaskState.QUEUED and task.attempts == 0
    assert task.checkpoint == {"next_step": 0, "results": {}, "writes_done": [0],
                               "write_in_flight": None}
    kb = book.knowledge_base()
    assert kb[0].ticket_id == t["open_ticket"] and kb[0].id == 2          # after the copied one
    assert max(r.id for r in book.rules()) == 3
    assert dst.events(t["waiting"])[-1].id == max_event + 1

    new = dst.submit(spec("collect_data", "temu-1"))
    assert new == max(all_ids(src)) + 1
    again = dst.submit(spec("reply_customer", "pdd-1", key="order-1001"))
    assert again == src.submit(spec("reply_customer", "pdd-1", key="order-1001"))  # idempotent
    clock.advance(3600)
    c = dst.claim("fleet")
    assert c is not None
    ticket = dst.open_ticket(c.id, "fleet", signature=SIG, step=0, error=ERROR, evidence=None)
    assert ticket == 3
    shop = dst.add_shop("shein-1", platform="shein", base_url="https://shein.example/s/1")
    assert shop.id == 5


# -- running tasks ---------------------------------------------------------------------------------

def test_running_tasks_are_refused_and_nothing_is_written(
        make_store: StoreFactory, redis_url: str) -> None:
    src = make_store()
    tid = src.submit(spec())
    src.claim("desk")
    with pytest.raises(Refused, match=rf"1 task is running on the desktop \(#{tid}\).*--force"):
        mig.migrate(src.path, redis_url, settings=SETTINGS)
    assert raw(redis_url).keys("*") == []


def test_force_moves_running_tasks_back_to_the_queue_like_a_recovery(
        make_store: StoreFactory, clock: FakeClock, redis_url: str, redis_store: Any) -> None:
    src = make_store()
    a = src.submit(spec("upload_product", "pdd-1"))
    b = src.submit(spec("collect_data", "temu-1", max_attempts=1))
    assert src.claim("desk").id == a                                     # type: ignore[union-attr]
    src.save_checkpoint(a, "desk", {"next_step": 2, "writes_done": [1]})
    src.request_preempt(a, "console asked")
    assert src.claim("desk").id == b                                     # type: ignore[union-attr]
    clock.advance(7)
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock, force=True)
    assert report.ok and report.recovered == [a, b]
    assert report.tasks_by_state["running"] == 2                         # as the desktop had it

    dst = redis_store()
    ta = dst.task(a)
    assert ta.state is TaskState.QUEUED and ta.lease_owner is None and ta.lease_until is None
    assert ta.checkpoint == {"next_step": 2, "writes_done": [1]}
    assert ta.attempts == 1 and ta.not_before == clock.now()            # the attempt is spent
    assert ta.state_reason == f"recovered: {mig.FORCED_WHY}"
    assert [(e.from_state, e.to_state) for e in dst.events(a)][-2:] == [
        ("queued", "running"), ("running", "queued")]
    tb = dst.task(b)                                                     # no attempts left
    assert tb.state is TaskState.WAITING_HUMAN
    assert dst.ticket_book().tickets()[0].task_id == b
    assert dst.counts()["running"] == 0 and dst.status().busy_shops == {}
    r = raw(redis_url)
    k = Keys("shopfleet")
    assert r.zcard(k.running) == 0 and r.hgetall(k.shop_running) == {}
    assert r.smembers(k.owners) == set() and r.exists(k.owner("desk")) == 0
    assert src.task(a).state is TaskState.RUNNING                       # the source is untouched
    c = dst.claim("fleet")
    assert c is not None and c.id == a and c.checkpoint == {"next_step": 2, "writes_done": [1]}


# -- the destination -------------------------------------------------------------------------------

def test_a_destination_holding_data_is_refused(make_store: StoreFactory, clock: FakeClock,
                                               redis_url: str, redis_store: Any) -> None:
    src = make_store()
    src.submit(spec())
    other = redis_store()                        # a fleet already runs under the default prefix
    other.add_shop("x", platform="pdd", base_url="https://x.example")
    with pytest.raises(Refused, match=r"prefix 'shopfleet' already holds data.*redis_prefix"):
        mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock)
    assert redis_store().shops() == [other.shop("x")]                    # untouched
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock, prefix="fleet2")
    assert report.ok and report.prefix == "fleet2"
    with pytest.raises(Refused, match="already holds a finished migration"):
        mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock, prefix="fleet2",
                    force=True)


def test_an_interrupted_migration_is_reported_and_force_starts_over(
        make_store: StoreFactory, clock: FakeClock, redis_url: str, redis_store: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    src = make_store()
    t = desktop(src, clock)

    def crash(self: Any, totals: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(mig._Migration, "copy_tickets", crash)
        with pytest.raises(KeyboardInterrupt):
            mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock)
    r = raw(redis_url)
    assert r.hget("shopfleet:meta", mig.MARKER) == mig.IN_PROGRESS
    with pytest.raises(Refused, match=r"earlier migration that did not finish.*--force"):
        mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock)
    r.set("shopfleet2:unrelated", "kept")         # another prefix is none of our business
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock, force=True)
    assert report.ok and report.wiped_keys > 10
    assert r.get("shopfleet2:unrelated") == "kept"
    dst = redis_store()
    assert dst.counts() == src.counts()
    assert dst.ticket_book().ticket(t["open_ticket"]) == src.ticket_book().ticket(
        t["open_ticket"])


def test_a_failed_verification_is_reported_not_marked_done(
        make_store: StoreFactory, clock: FakeClock, redis_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    src = make_store()
    desktop(src, clock)
    real = mig._event_line
    monkeypatch.setattr(mig, "_event_line", lambda row: real(row) if row["id"] != 3
                        else '["lost"]')
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock)
    assert not report.ok and report.verification is not None
    assert report.verification.mismatched == [int(read(
        src, "SELECT task_id FROM task_events WHERE id = 3")[0][0])]
    assert raw(redis_url).hget("shopfleet:meta", mig.MARKER) == mig.NOT_VERIFIED
    assert any("VERIFICATION FAILED" in line for line in report.lines())


def test_a_sample_is_compared_when_there_are_many_tasks(
        make_store: StoreFactory, clock: FakeClock, redis_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mig, "SAMPLE", 4)
    src = make_store()
    src.submit_many([spec(shop=s) for s in ("pdd-1", "temu-1") for _ in range(15)])
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock, batch=7)
    assert report.ok and report.verification is not None
    assert report.verification.sampled == 4 and report.copied["tasks"] == 30


def test_dry_run_counts_and_writes_nothing(make_store: StoreFactory, clock: FakeClock,
                                           redis_url: str) -> None:
    src = make_store()
    desktop(src, clock)
    src.heartbeat("desk-host/2/def", {"host": "desk-host", "pid": 2, "slots": 2})
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock, dry_run=True)
    assert report.ok and report.dry_run and report.verification is None
    assert any("desk-host/2/def on this database was alive" in w for w in report.warnings)
    assert any("evidence files of 3 tasks" in w for w in report.warnings)
    assert report.copied["tasks"] == len(all_ids(src)) and report.copied["kb_answers"] == 1
    assert raw(redis_url).keys("*") == []


def test_a_missing_source_file_is_refused(tmp_path: Path, redis_url: str) -> None:
    from core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="does not exist"):
        mig.migrate(f"sqlite:{tmp_path / 'nope.db'}", redis_url, settings=SETTINGS)
    assert not (tmp_path / "nope.db").exists()


# -- the command -----------------------------------------------------------------------------------

def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="shopfleet")
    sub = parser.add_subparsers(dest="command", required=True)
    migrate_cli.register(sub, common_options())
    args = parser.parse_args(argv)
    cli = Cli(args)
    try:
        code = int(args.handler(args, cli))
    finally:
        cli.close()
    return code, capsys.readouterr().out


def test_the_command_migrates_a_file_and_prints_the_report(
        make_store: StoreFactory, clock: FakeClock, redis_url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    src = make_store()
    desktop(src, clock)
    n = len(all_ids(src))
    path = src.path
    src.close()
    code, out = run_cli(["migrate", "--from", f"sqlite:{path}", "--to", redis_url,
                         "--dry-run", "--json"], capsys)
    assert code == 0 and json.loads(out)["copied"]["tasks"] == n
    code, out = run_cli(["migrate", "--from", f"sqlite:{path}", "--to", redis_url], capsys)
    assert code == 0
    assert f"{n} tasks" in out and f"{n} task hashes and histories equal" in out
    assert "vault key" in out
    code, out = run_cli(["migrate", "--from", str(path), "--to", redis_url, "--prefix", "b",
                         "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["verification"]["sampled"] == n
    assert report["prefix"] == "b" and report["destination"] == redis_url


def test_the_source_file_is_read_never_changed(make_store: StoreFactory, clock: FakeClock,
                                               redis_url: str) -> None:
    src = make_store()
    desktop(src, clock)
    src.close()                                   # the desktop stopped, as the command asks
    path = src.path
    path.chmod(0o644)                             # even its mode is left as it was found
    before = path.read_bytes()
    report = mig.migrate(path, redis_url, settings=SETTINGS, clock=clock)
    assert report.ok and report.copied["tasks"] > 0
    assert path.read_bytes() == before
    assert path.stat().st_mode & 0o777 == 0o644
    wal = Path(f"{path}-wal")   # a read-only reader of a WAL file may leave it, but empty
    assert not wal.exists() or wal.stat().st_size == 0


def test_schedules_tags_and_delayed_tasks_move_to_redis(make_store: StoreFactory,
                                                        clock: FakeClock, redis_url: str,
                                                        redis_store: Any) -> None:
    """#18: a schedule (definition, mark, paused, last error), a shop's tags and a delayed
    task arrive as they were, and the delayed task still waits for its time on Redis."""
    src = make_store()
    src.retag_shop("pdd-1", add=["north", "华北"])
    src.add_schedule("daily", {"name": "daily", "cron": "0 8 * * *"}, mark=123.5)
    src.set_schedule_state("daily", paused=True, last_error="flow gone")
    tid = src.submit(spec(delay_s=600))
    report = mig.migrate(src.path, redis_url, settings=SETTINGS, clock=clock)
    assert report.verification is not None and report.verification.ok
    assert report.copied["schedules"] == 1
    dst = redis_store()
    rec = dst.schedule_record("daily")
    assert (rec.definition, rec.mark, rec.paused, rec.last_error) == (
        {"name": "daily", "cron": "0 8 * * *"}, 123.5, True, "flow gone")
    assert dst.shop("pdd-1").tags == ("north", "华北")
    assert dst.task(tid).state is TaskState.SCHEDULED
    assert dst.claim("w") is None
    clock.advance(600)
    c = dst.claim("w")
    assert c is not None and c.id == tid
