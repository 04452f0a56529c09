"""Copy a desktop's SQLite store into Redis (what ``shopfleet migrate`` runs; its command
line is :mod:`core.cli.migrate`).

Everything is copied with its id: shops (passwords still encrypted), paused domains, every
task in every state with all its columns, each task's event history, idempotency keys,
tickets, the knowledge base, rules (hits and enabled kept), metrics minutes and the settings
kept in the store (``meta``, except the engine snapshot and desktop worker entries). The id
counters (``P:seq``) are set past the highest ids, so new tasks, tickets and answers never
reuse one.

**Shop passwords stay encrypted with the desktop's vault key**, which is not in the database:
every machine of the fleet needs the same key (the data folder's ``vault.key``, or the
keychain's ``ShopFleet``/``vault-key`` entry) to log in to shops. Evidence files (screenshots,
DOM) stay where they are; tasks and tickets keep their paths.

How it goes:

1. The destination prefix must be empty: a merge would collide ids. One holding the marker of
   an earlier migration that did not finish (``P:meta`` ``migration`` ≠ ``done``) is reported as
   such; ``force`` wipes the prefix and starts over — only then.
2. Running tasks are refused: a worker on the desktop holds them. With ``force`` they are
   copied as running and then recovered in Redis by the store's own recovery script (back to
   the queue with their checkpoint, the lease dropped; to a person when their attempts are
   spent), exactly like a worker lost by the fleet.
3. The source is read in one snapshot (one read transaction) page by page (``batch`` rows), and
   written with non-transactional pipelines. The marker says ``in progress`` first and ``done``
   last, so a crash mid-way is seen by the next run.
4. The queue indexes are built by the store's own Lua (:data:`WRITE_TASKS` runs the store's
   ``enter`` on each task and keeps its counts and sets like its submit script), so a migrated
   queue claims in the same order as the SQLite one.
5. Verification: tasks per state, queue sizes, tickets, answers, rules, shops and keys counted
   on both sides, and a sample (all, below :data:`SAMPLE`) of task hashes and histories read
   back and compared with the source rows.

Over 600 lines on purpose: one run (``_Migration``) in the order above, its report and its two
indexing scripts; every stage reads the same snapshot and writes the same counters, so the
stages stay together.

Why one module over 600 lines: it is one run over one SQLite snapshot (marker, paged copy,
verification, report), each stage feeding the next.
"""

from __future__ import annotations

import base64
import json
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...clock import SYSTEM_CLOCK, Clock
from ...config import Settings
from ...errors import EnvironmentProblem, InvalidInput, Refused
from ...urls import public_url, with_env_password
from ..sqlite import sql
from ..sqlite.source import SqliteSource
from . import sorts
from .keys import TASK_STATES, TICKET_STATES, Keys, glob_escape

MIN_ID = -(2 ** 63)
"""Below every SQLite integer key: where keyset paging starts."""
Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called after each batch of a stage."""

SAMPLE = 10_000
"""Task hashes and histories compared after the copy (all of them when there are fewer)."""
MARKER = "migration"
"""``P:meta`` entry: ``in progress`` while copying, ``done`` when verified (``migrated_from``
and ``migrated_at`` say from where and when)."""
IN_PROGRESS = "in progress"
DONE = "done"
NOT_VERIFIED = "verification failed"
COPIED = ("shops", "paused_domains", "tasks", "events", "idempotency_keys", "tickets",
          "kb_answers", "rules", "metrics_minutes", "meta", "schedules")
"""What the report counts, in its order."""
SKIPPED_META = ("engine_snapshot",)
"""Meta entries of the desktop's own engine (and ``worker:*``): not the fleet's."""
FORCED_WHY = "moved to Redis by shopfleet migrate --force; the desktop worker lost its lease"

WRITE_TASKS = r"""
-- ARGV[5]: JSON list of task hashes (field -> text, as the store keeps them); each is
-- written, then indexed as the store's own scripts do it
local tasks = cjson.decode(ARGV[5])
for _, t in ipairs(tasks) do
  local id = t.id
  local flat = {}
  for name, v in pairs(t) do
    flat[#flat + 1] = name
    flat[#flat + 1] = v
  end
  redis.call('HSET', k('task:' .. id), unpack(flat))
  enter(id, t)
  resort({}, sort_members(id, t))
  redis.call('HINCRBY', k('counts'), t.state, 1)
  redis.call('ZADD', k('state:' .. t.state), id, id)
  redis.call('ZADD', k('tasks'), id, id)
  redis.call('ZADD', k('shop_tasks:' .. t.shop_id), id, id)
  if t.key then redis.call('HSET', k('idem'), t.key, id) end
end
return #tasks
"""

WRITE_EVENTS = r"""
-- ARGV[5]: JSON list of [task id, history line, event id, at, from, to, reason] (text); the
-- line goes to the task's history and the event to the fleet's stream, as log() does
local events = cjson.decode(ARGV[5])
for _, e in ipairs(events) do
  redis.call('RPUSH', k('task:' .. e[1] .. ':events'), e[2])
  redis.call('XADD', k('events'), 'MAXLEN', '~', ARGV[6], '*', 'id', e[3], 'task', e[1],
             'at', e[4], 'from', e[5], 'to', e[6], 'reason', e[7])
end
return #events
"""
# The one place migrate builds the store's indexes. Both scripts run after
# core.store.redis.lua.PRELUDE: ``enter`` (the queue indexes of a state) is the store's own;
# what the store keeps besides when a task appears (counts, state and shop sets, idempotency
# keys) is its SUBMIT script's, for any state. Writing in Lua also spares redis-py encoding
# every field as a command argument (two thirds of the time otherwise).


@dataclass(frozen=True)
class Verification:
    """What was compared after the copy, source against destination."""

    ok: bool
    counts: dict[str, tuple[int, int]]
    """What was counted → (source, destination): tasks per state, queues, tickets, …"""
    sampled: int
    """Task hashes (and their histories) read back and compared."""
    mismatched: list[int] = field(default_factory=list)
    """Ids of sampled tasks whose hash or history differs (at most 20 listed)."""

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "sampled": self.sampled, "mismatched": self.mismatched,
                "counts": {k: {"source": s, "destination": d}
                           for k, (s, d) in self.counts.items()}}


@dataclass(frozen=True)
class MigrationReport:
    """What a migration copied (or, dry, would copy) and how its verification went."""

    source: str
    destination: str
    """The Redis URL without a password."""
    prefix: str
    dry_run: bool
    copied: dict[str, int]
    """shops, paused_domains, tasks, events, idempotency_keys, tickets, kb_answers, rules,
    metrics_minutes, meta → how many."""
    tasks_by_state: dict[str, int]
    recovered: list[int]
    """Running tasks moved with ``force`` (recovered in Redis)."""
    wiped_keys: int
    """Keys of an unfinished earlier migration removed first (``force``)."""
    verification: Verification | None
    warnings: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return self.dry_run or (self.verification is not None and self.verification.ok)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "source": self.source, "destination": self.destination,
                "prefix": self.prefix, "dry_run": self.dry_run, "copied": self.copied,
                "tasks_by_state": self.tasks_by_state, "recovered": self.recovered,
                "wiped_keys": self.wiped_keys,
                "verification": self.verification.to_json() if self.verification else None,
                "warnings": self.warnings, "seconds": round(self.seconds, 3),
                "vault_key": VAULT_NOTE}

    def lines(self) -> list[str]:
        """The report for a person."""
        verb = "would copy" if self.dry_run else "copied"
        out = [f"{'dry run: ' if self.dry_run else ''}{self.source} → {self.destination} "
               f"(prefix {self.prefix!r}), {self.seconds:.1f} s"]
        if self.wiped_keys:
            out.append(f"  wiped {self.wiped_keys} keys of an unfinished earlier migration")
        out.append(f"  {verb}: " + ", ".join(f"{n} {k.replace('_', ' ')}"
                                            for k, n in self.copied.items()))
        out.append("  tasks: " + ", ".join(f"{n} {s}" for s, n in self.tasks_by_state.items()
                                          if n) if any(self.tasks_by_state.values())
                   else "  tasks: none")
        if self.recovered:
            out.append("  running, moved back to the queue (--force: their worker counts as "
                       f"lost): {', '.join(map(str, self.recovered[:20]))}"
                       f"{' …' if len(self.recovered) > 20 else ''}")
        v = self.verification
        if v is not None:
            bad = [k for k, (s, d) in v.counts.items() if s != d]
            if v.ok:
                out.append(f"  verified: {len(v.counts)} counts equal; {v.sampled} task "
                           "hashes and histories equal to the source rows")
            else:
                out.append("  VERIFICATION FAILED: " + "; ".join(
                    [f"{k} {v.counts[k][0]} in SQLite but {v.counts[k][1]} in Redis"
                     for k in bad]
                    + ([f"tasks differ: {', '.join(map(str, v.mismatched))}"]
                       if v.mismatched else [])))
        out += [f"  warning: {w}" for w in self.warnings]
        out.append(f"  note: {VAULT_NOTE}")
        return out


VAULT_NOTE = ("shop passwords are copied encrypted: every worker of the fleet needs this "
              "desktop's vault key (vault.key in its data folder, or the keychain entry "
              "ShopFleet/vault-key) to log in to shops")


# -- the entry point ----------------------------------------------------------------------------

def migrate(src: str | Path, dst_url: str, *, settings: Settings,
            clock: Clock = SYSTEM_CLOCK, batch: int = 1000, dry_run: bool = False,
            force: bool = False, prefix: str | None = None,
            progress: Progress | None = None) -> MigrationReport:
    """Copy an SQLite store into an empty Redis prefix and verify the copy.

    Args:
        src: the desktop's database file (``sqlite:PATH`` or a path).
        dst_url: ``redis://[:password@]host[:port][/db]`` (``SHOPFLEET_REDIS_PASSWORD`` when
            the URL has none).
        settings: the configuration (the prefix and the priority rules the store uses).
        clock: time of the marker and of recovered tasks.
        batch: rows read, and written per script or pipeline, at a time (a script holds
            Redis for a few milliseconds per thousand tasks).
        dry_run: check and count everything; write nothing.
        force: move running tasks (recovered in Redis), and wipe an unfinished earlier
            migration's keys first.
        prefix: the key prefix (default ``[store] redis_prefix``).
        progress: called after each batch.

    Raises:
        Refused: the destination holds data, or tasks are running (without ``force``).
        InvalidInput: the source or destination is not usable as given.
        EnvironmentProblem: Redis cannot be reached.
    """
    if batch < 1:
        raise InvalidInput("batch", "must be at least 1")
    started = time.monotonic()
    store = _open_source(src, settings, clock)
    try:
        keys = Keys(prefix or settings.store.redis_prefix)
        r = _connect(dst_url)
        try:
            return _Migration(store, r, keys, dst_url, settings=settings, clock=clock,
                              batch=batch, dry_run=dry_run, force=force,
                              progress=progress or _quiet, started=started).run()
        finally:
            r.close()
    finally:
        store.close()


def _quiet(stage: str, done: int, total: int) -> None:
    pass


def _open_source(src: str | Path, settings: Settings, clock: Clock) -> SqliteSource:
    path = Path(str(src).removeprefix("sqlite:")).expanduser()
    if not path.is_file():
        raise InvalidInput("--from", f"{path} does not exist (give sqlite:PATH of the "
                           "desktop's database)")
    # read-only: the desktop's file is copied, never changed (nor migrated, nor put in WAL)
    return SqliteSource(path, settings=settings, clock=clock, field="--from")


def _connect(url: str) -> Any:
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise InvalidInput("--to", f"{public_url(url)!r} is not a Redis URL (redis://host:6379/0)")
    try:
        import redis
    except ImportError as exc:
        raise EnvironmentProblem(f"migrating to Redis needs the 'redis' package ({exc}); "
                                 "install shopfleet[redis]") from None
    client = redis.Redis.from_url(with_env_password(url), decode_responses=True)
    try:
        client.ping()
    except redis.RedisError as exc:
        from .connection import connect_error

        client.close()
        raise connect_error(exc, public_url(url), field="--to") from None
    return client


# -- text as the Redis store keeps it -----------------------------------------------------------

def _text(v: Any) -> str:
    """A column value as hash text: integers plain, floats exact (``repr``)."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _dict(row: sqlite3.Row) -> dict[str, Any]:
    # a Row iterates over its values; its column names come from keys()
    return dict(zip(row.keys(), row, strict=True))


def _fields(row: Mapping[str, Any], *, skip: Sequence[str] = ()) -> dict[str, str]:
    """A row as a hash: every non-NULL column (a missing field is SQL ``NULL``)."""
    return {k: _text(v) for k, v in row.items() if v is not None and k not in skip}


def _event_line(row: sqlite3.Row) -> str:
    # The same JSON the store's log() writes: [event_id, at, from_state|null, to_state, reason]
    return json.dumps([row["id"], _text(row["at"]), row["from_state"], row["to_state"],
                       row["reason"]], ensure_ascii=False, separators=(",", ":"))


def _script_args(keys: Keys, settings: Settings, now: float) -> list[str]:
    """The first four ARGV of every store script: prefix, now, aging per second, bonus."""
    p = settings.priority
    return [keys.prefix, repr(float(now)), repr(p.aging_per_min / 60.0),
            repr(float(p.retry_bonus))]


# -- one run ------------------------------------------------------------------------------------

class _Migration:
    def __init__(self, store: SqliteSource, r: Any, keys: Keys, url: str, *,
                 settings: Settings, clock: Clock, batch: int, dry_run: bool, force: bool,
                 progress: Progress, started: float) -> None:
        self.src = store
        self.r = r
        self.k = keys
        self.url = url
        self.settings = settings
        self.clock = clock
        self.batch = batch
        self.dry_run = dry_run
        self.force = force
        self.progress = progress
        self.started = started
        self.copied: dict[str, int] = {}
        self.warnings: list[str] = []
        self.sample: dict[int, dict[str, Any]] = {}
        self.sample_ids: list[int] = []
        self.sample_seen = 0
        self.rng = random.Random()
        self.running: list[tuple[int, str]] = []

    # reading the source ---------------------------------------------------------------------

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self.src.read(sql, params)

    def count(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self.read(sql, params)[0][0] or 0)

    def pages(self, table: str, key: str, start: Any) -> Iterator[list[sqlite3.Row]]:
        """A table in ``key`` order, ``batch`` rows at a time (keyset paging: no OFFSET)."""
        last = start
        while True:
            rows = self.read(f"SELECT * FROM {table} WHERE {key} > ? ORDER BY {key} LIMIT ?",
                             (last, self.batch))
            if not rows:
                return
            yield rows
            last = rows[-1][key]
            if len(rows) < self.batch:
                return


    # the run --------------------------------------------------------------------------------

    def run(self) -> MigrationReport:
        wiped = self.check_destination()
        with self.src.snapshot():
            by_state = {s: 0 for s in TASK_STATES}
            for row in self.read(sql.TASKS_PER_STATE):
                by_state[str(row[0])] = int(row[1])
            running = self.read(sql.FIRST_RUNNING_IDS)
            if by_state["running"] and not self.force:
                ids = ", ".join(str(r[0]) for r in running)
                raise Refused(
                    f"{_n(by_state['running'], 'task')} running on the desktop (#{ids}"
                    f"{' …' if by_state['running'] > 20 else ''}): stop its worker so they "
                    "finish or go back to the queue, then migrate again; or pass --force to "
                    "move them to the queue as if their worker were lost (a desktop worker "
                    "still running them would then do them twice)")
            self.warn_live_workers()
            self.warn_evidence()
            totals = self.totals()
            if self.dry_run:
                self.copied = totals
                return self.report(by_state, [], wiped, None)
            if not self.r.hsetnx(self.k.meta, MARKER, IN_PROGRESS):
                raise Refused(f"another migration into the prefix {self.k.prefix!r} started "
                              "at the same time; let it finish")
            # the tasks are written with their sort indexes (WRITE_TASKS): none to rebuild
            self.r.hset(self.k.meta, mapping={"migrated_from": self.src.url,
                                              "migrated_at": repr(self.clock.now()),
                                              sorts.META: sorts.VERSION})
            self.copy_shops(totals)
            self.copy_tasks(totals)
            self.copy_events(totals)
            self.copy_tickets(totals)
            self.copy_kb(totals)
            self.copy_rules(totals)
            self.copy_metrics(totals)
            self.copy_meta(totals)
            self.copy_schedules(totals)
            self.set_counters()
            verification = self.verify(by_state)
        recovered = self.recover_running() if verification.ok else []
        self.r.hset(self.k.meta, MARKER, DONE if verification.ok else NOT_VERIFIED)
        return self.report(by_state, recovered, wiped, verification)

    def report(self, by_state: dict[str, int], recovered: list[int], wiped: int,
               verification: Verification | None) -> MigrationReport:
        copied = {k: self.copied.get(k, 0) for k in COPIED}
        return MigrationReport(
            source=self.src.url, destination=public_url(self.url), prefix=self.k.prefix,
            dry_run=self.dry_run, copied=copied, tasks_by_state=by_state,
            recovered=recovered, wiped_keys=wiped, verification=verification,
            warnings=self.warnings, seconds=time.monotonic() - self.started)

    # the destination ------------------------------------------------------------------------

    def prefix_keys(self) -> Iterator[list[str]]:
        """The destination's keys under the prefix, in SCAN batches."""
        pattern = glob_escape(self.k.prefix) + ":*"
        cursor = 0
        while True:
            cursor, got = self.r.scan(cursor=cursor, match=pattern, count=1000)
            if got:
                yield list(got)
            if int(cursor) == 0:
                return

    def check_destination(self) -> int:
        """Refuse a prefix that holds anything; wipe an unfinished migration with force."""
        if next(self.prefix_keys(), None) is None:
            return 0
        p = self.k.prefix
        where = f"{public_url(self.url)} under the prefix {p!r}"
        marker = self.r.hget(self.k.meta, MARKER)
        if marker is None:
            raise Refused(
                f"{where} already holds data: a migration never merges into a store (ids "
                "would collide). Choose another prefix ([store] redis_prefix, or --prefix) "
                "or another Redis database")
        if marker == DONE:
            raise Refused(f"{where} already holds a finished migration (from "
                          f"{self.r.hget(self.k.meta, 'migrated_from') or 'unknown'}); "
                          "choose another prefix ([store] redis_prefix, or --prefix)")
        if not self.force:
            raise Refused(
                f"{where} holds an earlier migration that did not finish ({marker}): run "
                "again with --force to wipe that prefix and start over")
        if self.dry_run:
            self.warnings.append(f"--force would wipe the unfinished migration under {p!r}")
            return 0
        wiped = 0
        for got in self.prefix_keys():
            self.r.unlink(*got)
            wiped += len(got)
        return wiped

    def warn_live_workers(self) -> None:
        now = self.clock.now()
        lost_after = self.settings.queue.worker_lost_after_s
        for row in self.read(sql.WORKER_ENTRIES):
            try:
                w = json.loads(row[0])
            except ValueError:
                continue
            age = now - float(w.get("heartbeat_at", 0) or 0)
            if w.get("state") == "alive" and age < lost_after:
                self.warnings.append(
                    f"worker {w.get('owner', '?')} on this database was alive {age:.0f} s "
                    "ago: what it changes after this snapshot stays in SQLite; stop it first")

    def warn_evidence(self) -> None:
        n = self.count(sql.COUNT_TASKS_WITH_EVIDENCE)
        if n:
            self.warnings.append(
                f"the evidence files of {n} tasks stay in this desktop's data folder (tasks "
                "and tickets keep their paths): put them in the fleet's shared folder under "
                "the same paths for consoles on other machines to show them")

    # counting and copying -------------------------------------------------------------------

    def totals(self) -> dict[str, int]:
        c = self.count
        meta = c("SELECT count(*) FROM meta WHERE name NOT LIKE 'worker:%' AND name NOT IN "
                 f"({','.join('?' * len(SKIPPED_META))})", SKIPPED_META)
        totals = {
            "shops": c(sql.COUNT_SHOPS),
            "paused_domains": c(sql.COUNT_PAUSED_DOMAINS),
            "tasks": c(sql.COUNT_TASKS),
            "events": c(sql.COUNT_TASK_EVENTS),
            "idempotency_keys": c(sql.COUNT_IDEMPOTENCY_KEYS),
            "tickets": c(sql.COUNT_TICKETS),
            "kb_answers": c(sql.COUNT_KB_ANSWERS),
            "rules": c(sql.COUNT_RULES),
            "metrics_minutes": c(sql.COUNT_METRICS_MINUTES),
            "meta": meta,
            "schedules": c("SELECT count(*) FROM schedules"),  # #18
        }
        return totals

    def pipe(self) -> Any:
        return self.r.pipeline(transaction=False)

    def copy_shops(self, totals: dict[str, int]) -> None:
        n = 0
        for rows in self.pages("shops", "id", MIN_ID):
            pipe = self.pipe()
            for row in rows:
                secrets = ("password_enc", "proxy_password_enc")  # --- #17: the proxy's too
                f = _fields(_dict(row), skip=secrets)
                for col in secrets:
                    if row[col] is not None:
                        f[col] = base64.b64encode(bytes(row[col])).decode()
                pipe.hset(self.k.shop(row["id"]), mapping=f)
                pipe.hset(self.k.shops, row["name"], str(row["id"]))
            pipe.execute()
            n += len(rows)
            self.progress("shops", n, totals["shops"])
        self.copied["shops"] = n
        n = 0
        for rows in self.pages("paused_domains", "domain", ""):
            self.r.hset(self.k.paused_domains, mapping={
                row["domain"]: json.dumps({"since": row["since"], "reason": row["reason"]},
                                          ensure_ascii=False) for row in rows})
            n += len(rows)
        self.copied["paused_domains"] = n

    def copy_tasks(self, totals: dict[str, int]) -> None:
        write = self.r.register_script(_prelude() + WRITE_TASKS)
        args = _script_args(self.k, self.settings, self.clock.now())
        n = keyed = 0
        for rows in self.pages("tasks", "id", MIN_ID):
            hashes = []
            for row in rows:
                task = _dict(row)
                if task["state"] == "running":
                    # enter() files a running task under its lease owner (SQLite always has one)
                    task["lease_owner"] = task["lease_owner"] or "desktop"
                    self.running.append((int(task["id"]), str(task["lease_owner"])))
                hashes.append(_fields(task))
                self.keep_sample(int(task["id"]), task)
                keyed += task["key"] is not None
            write(keys=[], args=[*args, json.dumps(hashes, ensure_ascii=False)])
            n += len(rows)
            self.progress("tasks", n, totals["tasks"])
        self.copied["tasks"] = n
        self.copied["idempotency_keys"] = keyed

    def keep_sample(self, task_id: int, fields: dict[str, Any]) -> None:
        """Reservoir sampling: every task has the same chance to be compared afterwards."""
        self.sample_seen += 1
        if len(self.sample_ids) < SAMPLE:
            self.sample_ids.append(task_id)
            self.sample[task_id] = fields
            return
        j = self.rng.randrange(self.sample_seen)
        if j < SAMPLE:
            del self.sample[self.sample_ids[j]]
            self.sample_ids[j] = task_id
            self.sample[task_id] = fields

    def copy_events(self, totals: dict[str, int]) -> None:
        from .connection import STREAM_MAXLEN

        write = self.r.register_script(_prelude() + WRITE_EVENTS)
        args = _script_args(self.k, self.settings, self.clock.now())
        n = 0
        for rows in self.pages("task_events", "id", MIN_ID):
            events = [[str(row["task_id"]), _event_line(row), str(row["id"]), _text(row["at"]),
                       row["from_state"] or "", row["to_state"], row["reason"]]
                      for row in rows]
            write(keys=[], args=[*args, json.dumps(events, ensure_ascii=False),
                                 str(STREAM_MAXLEN)])
            n += len(rows)
            self.progress("events", n, totals["events"])
        self.copied["events"] = n

    def copy_tickets(self, totals: dict[str, int]) -> None:
        n = 0
        for rows in self.pages("tickets", "id", MIN_ID):
            pipe = self.pipe()
            for row in rows:
                tid = int(row["id"])
                pipe.hset(self.k.ticket(tid), mapping=_fields(_dict(row)))
                pipe.zadd(self.k.tickets, {str(tid): tid})
                pipe.zadd(self.k.tickets_in(row["state"]), {str(tid): tid})
                pipe.zadd(self.k.task_tickets(row["task_id"]), {str(tid): tid})
            pipe.execute()
            n += len(rows)
            self.progress("tickets", n, totals["tickets"])
        self.copied["tickets"] = n

    def copy_kb(self, totals: dict[str, int]) -> None:
        n = 0
        for rows in self.pages("kb_answers", "id", MIN_ID):
            pipe = self.pipe()
            for row in rows:
                aid = int(row["id"])
                pipe.hset(self.k.kb_answer(aid), mapping=_fields(_dict(row)))
                pipe.zadd(self.k.kb, {str(aid): aid})
                pipe.zadd(self.k.kb_sig(row["signature"]), {str(aid): aid})
            pipe.execute()
            n += len(rows)
            self.progress("kb_answers", n, totals["kb_answers"])
        self.copied["kb_answers"] = n

    def copy_rules(self, totals: dict[str, int]) -> None:
        n = 0
        for rows in self.pages("rules", "id", MIN_ID):
            pipe = self.pipe()
            for row in rows:
                rid = int(row["id"])
                pipe.hset(self.k.rule(rid), mapping=_fields(_dict(row)))
                pipe.zadd(self.k.rules, {str(rid): rid})
                pipe.zadd(self.k.rules_sig(row["signature"]), {str(rid): rid})
            pipe.execute()
            n += len(rows)
        self.copied["rules"] = n

    def copy_metrics(self, totals: dict[str, int]) -> None:
        n = 0
        for rows in self.pages("metrics_minutes", "minute", MIN_ID):
            pipe = self.pipe()
            pipe.zadd(self.k.metrics, {str(row["minute"]): int(row["minute"]) for row in rows})
            pipe.hset(self.k.metrics_data, mapping={str(row["minute"]): row["data"]
                                                    for row in rows})
            pipe.execute()
            n += len(rows)
            self.progress("metrics_minutes", n, totals["metrics_minutes"])
        self.copied["metrics_minutes"] = n

    def copy_meta(self, totals: dict[str, int]) -> None:
        n = 0
        for rows in self.pages("meta", "name", ""):
            keep = {row["name"]: row["value"] for row in rows
                    if row["name"] not in SKIPPED_META and not row["name"].startswith("worker:")
                    and row["name"] != MARKER}
            if keep:
                self.r.hset(self.k.meta, mapping=keep)
            n += len(keep)
        self.copied["meta"] = n

    def copy_schedules(self, totals: dict[str, int]) -> None:
        """#18: each schedule's hash (definition, mark, paused, last error) and its name."""
        n = 0
        for rows in self.pages("schedules", "name", ""):
            pipe = self.pipe()
            for row in rows:
                pipe.hset(f"{self.k.prefix}:schedule:{row['name']}", mapping={
                    "definition": row["definition"], "mark": repr(float(row["mark"])),
                    "paused": "1" if row["paused"] else "0", "last_error": row["last_error"],
                    "created_at": repr(float(row["created_at"])),
                    "updated_at": repr(float(row["updated_at"]))})
                pipe.zadd(f"{self.k.prefix}:schedules", {row["name"]: 0})
            pipe.execute()
            n += len(rows)
            self.progress("schedules", n, totals["schedules"])
        self.copied["schedules"] = n

    def set_counters(self) -> None:
        """``P:seq`` at the highest id of each kind: the next one is new."""
        seq = {}
        for name, table in (("task", "tasks"), ("shop", "shops"), ("event", "task_events"),
                            ("ticket", "tickets"), ("kb", "kb_answers"), ("rule", "rules")):
            seq[name] = str(self.count(f"SELECT max(id) FROM {table}"))
        self.r.hset(self.k.seq, mapping=seq)

    # after the copy -------------------------------------------------------------------------

    def verify(self, by_state: dict[str, int]) -> Verification:
        """Count on both sides, and compare the sampled tasks with their source rows."""
        k, c = self.k, self.count
        src: dict[str, int] = {}
        pipe = self.pipe()
        pipe.hgetall(k.counts)
        for s in TASK_STATES:
            src[f"tasks {s} (set)"] = by_state[s]
            pipe.zcard(k.state(s))
        checks: list[tuple[str, int, str, str]] = [
            ("queue ready", by_state["queued"], "zcard", k.ready),
            ("queue suspended", by_state["suspended"], "zcard", k.suspended),
            ("queue scheduled", by_state["scheduled"], "zcard", k.scheduled),
            ("leases", by_state["running"], "zcard", k.running),
            ("tasks", sum(by_state.values()), "zcard", k.tasks),
            *((f"history {s} by finish time", by_state[s], "zcard",
               sorts.key(k.prefix, s, "finished")) for s in ("done", "failed", "cancelled")),
            ("tickets", c(sql.COUNT_TICKETS), "zcard", k.tickets),
            *((f"tickets {s}", c(sql.COUNT_TICKETS_IN_STATE, (s,)),
               "zcard", k.tickets_in(s)) for s in TICKET_STATES),
            ("kb answers", c(sql.COUNT_KB_ANSWERS), "zcard", k.kb),
            ("rules", c(sql.COUNT_RULES), "zcard", k.rules),
            ("shops", c(sql.COUNT_SHOPS), "hlen", k.shops),
            ("idempotency keys", c(sql.COUNT_IDEMPOTENCY_KEYS),
             "hlen", k.idem),
            ("metrics minutes", c(sql.COUNT_METRICS_MINUTES), "zcard",
             k.metrics),
            ("paused domains", c(sql.COUNT_PAUSED_DOMAINS), "hlen",
             k.paused_domains),
            ("schedules", c("SELECT count(*) FROM schedules"), "zcard",
             f"{k.prefix}:schedules"),
        ]
        for _, _, op, key in checks:
            getattr(pipe, op)(key)
        got = pipe.execute()
        in_hash = {s: int(v) for s, v in (got[0] or {}).items()}
        counts = {f"tasks {s}": (by_state[s], in_hash.get(s, 0)) for s in TASK_STATES}
        for (name, n), z in zip(src.items(), got[1:1 + len(TASK_STATES)], strict=True):
            counts[name] = (n, int(z))
        for (name, n, _, _), z in zip(checks, got[1 + len(TASK_STATES):], strict=True):
            counts[name] = (n, int(z))
        mismatched = self.compare_sample()
        ok = not mismatched and all(a == b for a, b in counts.values())
        self.progress("verified", len(self.sample), len(self.sample))
        return Verification(ok=ok, counts=counts, sampled=len(self.sample),
                            mismatched=mismatched[:20])

    def compare_sample(self) -> list[int]:
        """Ids of sampled tasks whose hash or history differs from the source rows (read
        back and decoded, so a fault in how they were written shows)."""
        bad: list[int] = []
        ids = sorted(self.sample)
        for i in range(0, len(ids), self.batch):
            chunk = ids[i:i + self.batch]
            history: dict[int, list[tuple[Any, ...]]] = {t: [] for t in chunk}
            for j in range(0, len(chunk), 500):
                part = chunk[j:j + 500]
                for row in self.read(
                        "SELECT id, task_id, at, from_state, to_state, reason FROM task_events "
                        f"WHERE task_id IN ({','.join('?' * len(part))}) ORDER BY id", part):
                    history[int(row["task_id"])].append(
                        (row["id"], row["at"], row["from_state"], row["to_state"],
                         row["reason"]))
            pipe = self.pipe()
            for tid in chunk:
                pipe.hgetall(self.k.task(tid))
                pipe.lrange(self.k.task_events(tid), 0, -1)
            got = pipe.execute()
            for n, tid in enumerate(chunk):
                if not (_same_row(self.sample[tid], got[2 * n])
                        and _same_history(history[tid], got[2 * n + 1])):
                    bad.append(tid)
        return bad

    def recover_running(self) -> list[int]:
        """Running tasks (``force``): recovered by the store's own recovery script."""
        if not self.running:
            return []
        from .lua import RECOVER

        recover = self.r.register_script(_prelude() + RECOVER)
        args = _script_args(self.k, self.settings, self.clock.now())
        out: list[int] = []
        for i in range(0, len(self.running), self.batch):
            triples = [x for tid, owner in self.running[i:i + self.batch]
                       for x in (str(tid), owner, FORCED_WHY)]
            out += [int(x) for x in recover(keys=[], args=[*args, *triples])]
        return out


def _same_row(row: dict[str, Any], h: dict[str, str]) -> bool:
    """Whether a task hash read back holds exactly the source row's values."""
    if set(h) != {k for k, v in row.items() if v is not None}:
        return False
    for k, v in row.items():
        if v is None:
            continue
        try:
            back: Any = (int(h[k]) if isinstance(v, int) else
                         float(h[k]) if isinstance(v, float) else h[k])
        except ValueError:
            return False
        if back != v:
            return False
    return True


def _same_history(rows: list[tuple[Any, ...]], lines: list[str]) -> bool:
    """Whether a task's history read back holds exactly the source's events, in order."""
    try:
        back = [(int(e[0]), float(e[1]), e[2], e[3], e[4])
                for e in (json.loads(line) for line in lines)]
    except (ValueError, IndexError, TypeError):
        return False
    return back == rows


def _prelude() -> str:
    from .lua import PRELUDE

    return PRELUDE


def _n(n: int, thing: str) -> str:
    """``1 task is``, ``2 tasks are``."""
    return f"{n} {thing} is" if n == 1 else f"{n} {thing}s are"

