"""The SQLite store: the single source of truth for tasks, shops and their event log.

Writes go through one writer thread (:mod:`core.store.sqlite.writer`) that commits groups of
operations in ``BEGIN IMMEDIATE`` transactions; reads use a connection per calling thread.
Every public method here blocks its caller until the change is committed, so call them from
threads or the CLI; async code uses :class:`core.store.AsyncStore`, which never blocks its loop.

The hot path (claim, ack, fail) is plain SQL on the writer's connection; schema work and
operator queries use the same connections through sqlite-utils where that reads better.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ...clock import SYSTEM_CLOCK, Clock
from ...config import Settings
from ...errors import (
    BacklogFull,
    EnvironmentProblem,
    InvalidInput,
    LeaseLost,
    Refused,
    SpecError,
    UnknownTask,
)
from ...origins import normalise_origins
from ...paths import private_dir
from ...priority import (
    KEY_EPOCH,
    KEY_SCALE,
    check_bump,
    index_key,
    score_at,
    score_from_key,
    static_points,
)
from ...specs import TaskSpec
from ...urgency import estimator_for
from ..base import FAST_PATH_ROWS, WorkerInfo, worker_info
from ..owners import owner_is_dead_local
from ..pages import Cursor, Order, ShopRow, TaskFilter, TaskPage, TaskRow
from ..prepare import Validator, prepare_specs
from ..records import (
    ClaimedTask,
    QueueStatus,
    ShopRecord,
    TaskEvent,
    TaskRecord,
    TaskState,
    domain_of,
)
from . import pages as sqlite_pages
from .schema import SCHEMA_VERSION, migrate
from .writer import Checkpointer, Writer, disk_full, is_disk_full

if TYPE_CHECKING:
    from ...tickets import Rule, Signature
    from .tickets import SqliteTicketBook

MIN_SQLITE = (3, 35, 0)  # RETURNING
WAL_BACKSTOP_PAGES = 10_000
"""WAL size (pages) at which the writer checkpoints itself if the checkpointer falls behind."""

# Queries on the queue name their index (INDEXED BY): without ANALYZE statistics SQLite may
# prefer the (state, id) index and sort a million rows per claim; a named index cannot be
# second-guessed, and a query whose index went missing fails loudly instead of crawling.



def check_sqlite_version(version: str = sqlite3.sqlite_version) -> None:
    """Refuse to run on an SQLite older than 3.35 (no ``RETURNING``), saying what to do."""
    parts = tuple(int(p) for p in version.split(".")[:3])
    if parts < MIN_SQLITE:
        raise EnvironmentProblem(
            f"SQLite {version} is too old: ShopFleet needs {'.'.join(map(str, MIN_SQLITE))} or "
            "newer (for UPDATE … RETURNING). Use a Python built with a newer SQLite "
            "(python.org builds and Python 3.12+ from most distributions have one).")


SHOPFLEET_TABLES = ("meta", "shops", "tasks", "task_events")
"""Tables every ShopFleet database has had since schema version 1."""


def inspect_database(path: Path, *, field: str = "database") -> int | None:
    """What is at ``path``: None when nothing (or an empty file) is there, else the schema
    version of the ShopFleet database there. Opens it read-only and changes nothing.

    Raises:
        InvalidInput: ``path`` is a folder, not an SQLite file, or an SQLite file of some other
            program (ShopFleet never adds its tables to a foreign database).
    """
    if path.is_dir():
        raise InvalidInput(field, f"{path} is a folder, not a database file")
    if not path.exists():
        if path.is_symlink():
            raise InvalidInput(field, f"{path} is a link to a file that does not exist")
        return None
    if path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InvalidInput(field, f"cannot open {path}: {exc}") from None
    try:
        names = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
            raise InvalidInput(field, f"{path} is not a database (not an SQLite file); "
                               "nothing was written") from None
        raise InvalidInput(field, f"cannot read {path}: {exc}") from None
    finally:
        conn.close()
    if not names:
        return None  # an SQLite file with nothing in it yet
    if not set(SHOPFLEET_TABLES) <= names or version < 1:
        raise InvalidInput(field, f"{path} is an SQLite database of another program, not "
                           "ShopFleet's; it was left untouched (give --db a ShopFleet database "
                           "or a new file name)")
    return version


def private_file(path: Path) -> None:
    """Make sure the database file exists owner-only before SQLite opens it: SQLite gives its
    -wal and -shm files the database file's mode, so they are private too."""
    if os.name != "posix":
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077 and path.stat().st_uid == os.getuid():
            os.chmod(path, 0o600)  # an older ShopFleet made it 0644: close it now
            for side in ("-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.chmod(f"{path}{side}", 0o600)
        return
    os.fchmod(fd, 0o600)
    os.close(fd)


_TASK_COLUMNS = """t.id, t.key, t.type, s.name AS shop, s.platform, s.domain, t.state,
    t.state_reason, t.prio_key, t.band, t.preemptible, t.created_at, t.updated_at,
    t.not_before, t.deadline, t.attempts, t.max_attempts, t.lease_owner, t.lease_until,
    t.started_at, t.finished_at, t.spec, t.checkpoint, t.results, t.error_class, t.last_error,
    t.evidence"""


class SqliteStore:
    """Durable priority queue, shops and event log in one SQLite file (WAL mode).

    Args:
        path: the database file (created with its folder if missing, owner-only).
        readonly: open for reading only (the CLI's read-only commands): a missing file is an
            error, nothing is created, migrated or written, and every write is refused.
        settings: the validated configuration.
        clock: time source for every timestamp (a fake one in tests).
        validator: extra per-task checks at submission (flows and placeholders), raising
            :class:`SpecError`; runs before anything is written.
    """

    def __init__(self, path: str | Path, *, settings: Settings | None = None,
                 clock: Clock = SYSTEM_CLOCK, validator: Validator | None = None,
                 readonly: bool = False, field: str = "database") -> None:
        check_sqlite_version()
        self.path = Path(path)
        version = inspect_database(self.path, field=field)
        if readonly and version is None:
            raise InvalidInput(field, f"no database at {self.path}")
        # An older schema still needs its migration, which only a writing open does.
        self.readonly = readonly and version is not None and version >= SCHEMA_VERSION
        if not self.readonly:
            private_dir(self.path.parent)
            private_file(self.path)
        self.url = f"sqlite:{self.path}"
        self.settings = settings or Settings()
        self.clock = clock
        self.validator = validator
        self._q = self.settings.queue
        self._p = self.settings.priority
        self._aging_per_s = self._p.aging_per_min / 60.0
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._room = threading.Condition()
        self._closed = False
        self._writer: Writer | None = None
        self._checkpointer: Checkpointer | None = None
        if self.readonly:
            return
        self._writer = Writer(self._connect_writer, group_max=self.settings.store.group_commit_max,
                              where=str(self.path))
        self._checkpointer = Checkpointer(self._connect)
        self._call(self._op_init)

    # -- connections --------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        target: str | Path = self.path
        if self.readonly:
            target = f"{self.path.resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False,
                               timeout=self.settings.store.busy_timeout_s,
                               uri=self.readonly)
        conn.execute(f"PRAGMA busy_timeout = {int(self.settings.store.busy_timeout_s * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _connect_writer(self) -> sqlite3.Connection:
        conn = self._connect()
        # Migrate before switching to WAL: a migration that fails leaves the file exactly as
        # it was (its transaction rolls back; the journal mode would not).
        try:
            migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            if is_disk_full(exc):
                raise disk_full(str(self.path)) from None
            raise EnvironmentProblem(
                f"cannot bring {self.path} to schema version {SCHEMA_VERSION}: {exc}; the file "
                "was left unchanged") from None
        except BaseException:
            conn.close()
            raise
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise EnvironmentProblem(f"cannot put {self.path} in WAL mode (got {mode}); "
                                     "is it on a network drive?")
        conn.execute(f"PRAGMA synchronous = {self.settings.store.synchronous}")
        # The checkpointer thread copies the WAL back off the commit path; this is only the
        # backstop (about 40 MB of WAL) should it fall behind.
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_BACKSTOP_PAGES}")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = 1")
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _call(self, op: Callable[[sqlite3.Connection], Any]) -> Any:
        return self._writer_or_refuse().submit(op).result()

    def submit_op(self, op: Callable[[sqlite3.Connection], Any]) -> Any:
        """Queue a write operation; returns its ``concurrent.futures.Future``."""
        return self._writer_or_refuse().submit(op)

    def _writer_or_refuse(self) -> Writer:
        if self._writer is None:
            raise Refused(f"{self.path} is open read-only")
        return self._writer

    def close(self) -> None:
        """Commit what is pending, stop the writer and close every connection."""
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            self._writer.close()
        if self._checkpointer is not None:
            self._checkpointer.close()
        with self._readers_lock:
            for conn in self._readers:
                try:
                    conn.close()
                except sqlite3.ProgrammingError:
                    pass  # created in another thread that already closed it
            self._readers.clear()
        with self._room:
            self._room.notify_all()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def group_commit_stats(self) -> tuple[int, int]:
        """(commits, operations) so far: operations per commit shows group commit working."""
        w = self._writer_or_refuse()
        return w.commits, w.ops

    # -- settings that keys depend on ------------------------------------------------------

    def _op_init(self, conn: sqlite3.Connection) -> None:
        """Rewrite queued keys if the aging rate changed since they were computed."""
        row = conn.execute("SELECT value FROM meta WHERE name = 'aging_per_min'").fetchone()
        current = repr(self._p.aging_per_min)
        if row is None or row[0] != current:
            if row is not None:
                self._rekey(conn, "state = 'queued'")
            conn.execute("INSERT INTO meta (name, value) VALUES ('aging_per_min', ?) "
                         "ON CONFLICT (name) DO UPDATE SET value = excluded.value", (current,))

    def _rekey(self, conn: sqlite3.Connection, where: str, params: Sequence[Any] = ()) -> int:
        rows = conn.execute(
            f"SELECT id, base, urgency, attempts, bump, created_at FROM tasks WHERE {where}",
            params).fetchall()
        for tid, base, urg, attempts, bump, created in rows:
            conn.execute("UPDATE tasks SET prio_key = ? WHERE id = ?",
                         (self._key(base, urg, attempts, bump, created), tid))
        return len(rows)

    def _static(self, base: float, urgency: float, attempts: int, bump: float) -> float:
        return static_points(base=base, urgency=urgency, attempts=attempts, bump=bump,
                             retry_bonus=self._p.retry_bonus)

    def _key(self, base: float, urgency: float, attempts: int, bump: float,
             created: float) -> int:
        return index_key(self._static(base, urgency, attempts, bump), created, self._aging_per_s)

    def priority_key(self, base: float, urgency: float, attempts: int, bump: float,
                     created: float) -> int:
        """A task's queue-order key from its priority parts (for the ticket book's requeue)."""
        return self._key(base, urgency, attempts, bump, created)

    # -- shops ------------------------------------------------------------------------------

    def add_shop(self, name: str, *, platform: str, base_url: str,
                 username: str = "") -> ShopRecord:
        """Register a shop. Its domain (for gates and breakers) comes from ``base_url``."""
        if not name.strip():
            raise InvalidInput("name", "must not be empty")
        if not platform.strip():
            raise InvalidInput("platform", "must not be empty")
        scheme = urlsplit(base_url).scheme
        if scheme not in ("http", "https"):
            raise InvalidInput("base_url", f"{base_url!r} must start with http:// or https://")
        domain = domain_of(base_url)
        now = self.clock.now()

        def op(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO shops (name, platform, base_url, domain, username, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (name, platform, base_url.rstrip("/"), domain, username, now))
            except sqlite3.IntegrityError:
                raise InvalidInput("name", f"a shop named {name!r} exists already") from None

        self._call(op)
        return self.shop(name)

    def update_shop(self, name: str, *, username: str | None = None,
                    password_enc: bytes | None = None) -> ShopRecord:
        """Change a shop's login name or its (already encrypted) password."""
        self.shop(name)
        sets: list[str] = []
        vals: list[str | bytes] = []
        if username is not None:
            sets.append("username = ?")
            vals.append(username)
        if password_enc is not None:
            sets.append("password_enc = ?")
            vals.append(password_enc)
        if sets:
            self._call(lambda c: c.execute(
                f"UPDATE shops SET {', '.join(sets)} WHERE name = ?", (*vals, name)))
        return self.shop(name)

    def shop_password_enc(self, name: str) -> bytes | None:
        row = self._reader().execute(
            "SELECT password_enc FROM shops WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise InvalidInput("shop", f"no shop named {name!r}")
        return bytes(row[0]) if row[0] is not None else None

    def shops(self) -> list[ShopRecord]:
        rows = self._reader().execute("SELECT * FROM shops ORDER BY name").fetchall()
        return [self._shop_record(r) for r in rows]

    def shop(self, name: str) -> ShopRecord:
        row = self._reader().execute("SELECT * FROM shops WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise InvalidInput("shop", f"no shop named {name!r} (add it with 'shopfleet shop add')")
        return self._shop_record(row)

    @staticmethod
    def _shop_record(r: sqlite3.Row) -> ShopRecord:
        return ShopRecord(id=r["id"], name=r["name"], platform=r["platform"],
                          base_url=r["base_url"], domain=r["domain"], username=r["username"],
                          has_password=r["password_enc"] is not None, paused=bool(r["paused"]),
                          allowed_origins=tuple(json.loads(r["allowed_origins"] or "[]")))

    def set_shop_origins(self, name: str, origins: Sequence[str]) -> ShopRecord:
        """Set the origins a shop's tasks may load besides its own (replaces the list)."""
        self.shop(name)
        text = json.dumps(normalise_origins(origins))
        self._call(lambda c: c.execute("UPDATE shops SET allowed_origins = ? WHERE name = ?",
                                       (text, name)))
        return self.shop(name)

    def set_shop_paused(self, name: str, paused: bool) -> ShopRecord:
        self.shop(name)
        self._call(lambda c: c.execute("UPDATE shops SET paused = ? WHERE name = ?",
                                       (int(paused), name)))
        return self.shop(name)

    def set_domain_paused(self, domain: str, paused: bool, *, reason: str = "") -> None:
        domain = domain.lower()
        now = self.clock.now()
        if paused:
            self._call(lambda c: c.execute(
                "INSERT INTO paused_domains (domain, since, reason) VALUES (?, ?, ?) "
                "ON CONFLICT (domain) DO UPDATE SET reason = excluded.reason",
                (domain, now, reason)))
        else:
            self._call(lambda c: c.execute("DELETE FROM paused_domains WHERE domain = ?",
                                           (domain,)))

    def paused_domains(self) -> list[str]:
        return [r[0] for r in self._reader().execute(
            "SELECT domain FROM paused_domains ORDER BY domain")]

    # -- submission -------------------------------------------------------------------------

    def submit(self, spec: TaskSpec) -> int:
        """Submit one task; returns its id (the existing one for a known idempotency key)."""
        return self.submit_many([spec])[0]

    def submit_many(self, specs: Sequence[TaskSpec]) -> list[int]:
        """Submit a batch, all or nothing; returns the task ids in order.

        Raises:
            SpecError: a task is invalid (unknown shop or type, bad flow); nothing written.
            BacklogFull: the queue is full for this batch; nothing written.
        """
        prepared = self._prepare(specs)
        return list(self._call(lambda conn: self._op_submit(conn, prepared)))

    def _prepare(self, specs: Sequence[TaskSpec]) -> list[dict[str, Any]]:
        now = self.clock.now()
        prepared: list[dict[str, Any]] = []
        for p in prepare_specs(specs, {s.name: s for s in self.shops()}, self._p,
                               self.validator, now):
            spec, shop, base, urgency = p.spec, p.shop, p.base, p.urgency
            fixed, next_at = p.urgency_fixed, p.urgency_next_at
            payload = json.dumps(spec.payload(), ensure_ascii=False, separators=(",", ":"))
            static = self._static(base, urgency, 0, 0.0)
            prepared.append({
                "key": spec.key, "type": spec.type, "shop_id": shop.id, "base": base,
                "urgency": urgency, "urgency_fixed": fixed, "urgency_next_at": next_at,
                "deadline": spec.deadline_ts, "spec": payload,
                "max_attempts": spec.max_attempts or self._q.max_attempts,
                "urgent": static >= self._p.preempt_threshold,
            })
        return prepared

    def _op_submit(self, conn: sqlite3.Connection, prepared: list[dict[str, Any]]) -> list[int]:
        now = self.clock.now()
        ids: list[int | None] = [None] * len(prepared)
        fresh: list[int] = []
        for i, t in enumerate(prepared):
            if t["key"] is not None:
                row = conn.execute("SELECT id, type, shop_id, spec FROM tasks WHERE key = ?",
                                   (t["key"],)).fetchone()
                if row is not None:
                    if (row[1], row[2], row[3]) != (t["type"], t["shop_id"], t["spec"]):
                        raise SpecError("key", f"{t['key']!r} was already used for a different "
                                        f"task (#{row[0]}); use a new key")
                    ids[i] = row[0]
                    continue
            fresh.append(i)
        if fresh:
            queued = self._queued_count(conn)
            routine = sum(1 for i in fresh if not prepared[i]["urgent"])
            limit = self._q.max_backlog
            reserve_limit = limit + int(limit * self._q.urgent_reserve)
            if routine and queued + routine > limit:
                raise BacklogFull(queued, limit)
            if queued + len(fresh) > reserve_limit:
                raise BacklogFull(queued, reserve_limit, urgent=True)
        for i in fresh:
            t = prepared[i]
            key = self._key(t["base"], t["urgency"], 0, 0.0, now)
            cur = conn.execute(
                "INSERT INTO tasks (key, type, shop_id, state, state_reason, base, urgency, "
                "urgency_fixed, urgency_next_at, prio_key, created_at, updated_at, not_before, "
                "deadline, max_attempts, spec) VALUES (?, ?, ?, 'queued', 'submitted', ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?)",
                (t["key"], t["type"], t["shop_id"], t["base"], t["urgency"],
                 t["urgency_fixed"], t["urgency_next_at"], key, now, now, now, t["deadline"],
                 t["max_attempts"], t["spec"]))
            ids[i] = cur.lastrowid
        return [int(x) for x in ids if x is not None]

    def submit_rows_bulk(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert already-validated task rows in one transaction (migrations, demo, benchmarks).

        Each row needs ``type``, ``shop_id``, ``base``, ``spec`` (JSON text); the rest defaults.
        Skips the backlog limit: it is for moving existing work, not for new submissions.
        """
        now = self.clock.now()

        def op(conn: sqlite3.Connection) -> int:
            n = 0
            batch = []
            for r in rows:
                created = r.get("created_at", now)
                key = self._key(r["base"], r.get("urgency", 0.0), 0, 0.0, created)
                batch.append((r.get("key"), r["type"], r["shop_id"], r["base"],
                              r.get("urgency", 0.0), key, created, now, now,
                              r.get("max_attempts", self._q.max_attempts), r["spec"]))
                if len(batch) >= 10_000:
                    n += self._insert_bulk(conn, batch)
                    batch = []
            if batch:
                n += self._insert_bulk(conn, batch)
            return n

        return int(self._call(op))

    @staticmethod
    def _insert_bulk(conn: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> int:
        conn.executemany(
            "INSERT INTO tasks (key, type, shop_id, state, state_reason, base, urgency, "
            "urgency_fixed, prio_key, created_at, updated_at, not_before, max_attempts, spec) "
            "VALUES (?, ?, ?, 'queued', 'submitted', ?, ?, 1, ?, ?, ?, ?, ?, ?)", batch)
        return len(batch)

    def wait_for_room(self, timeout: float) -> bool:
        """Block until a task leaves the queue in this process, or ``timeout`` passes."""
        with self._room:
            return self._room.wait(timeout)

    def _room_freed(self) -> None:
        with self._room:
            self._room.notify_all()

    @staticmethod
    def _queued_count(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT sum(n) FROM state_counts WHERE state IN "
                           "('queued', 'suspended')").fetchone()
        return int(row[0]) if row and row[0] else 0

    # -- priority maintenance (threshold events) --------------------------------------------

    def _op_thresholds(self, conn: sqlite3.Connection, now: float) -> tuple[int, int]:
        """Apply the events that change keys: hard aging reached, urgency thresholds crossed.

        Both use partial indexes on the event time, so with nothing due this is two index
        probes, not a scan of the queue.
        """
        hard = conn.execute(
            "UPDATE tasks INDEXED BY tasks_hard_aging SET band = 1, preemptible = 0, "
            "updated_at = ? WHERE state = 'queued' AND band = 0 AND created_at <= ?",
            (now, now - self._p.hard_aging_min * 60.0)).rowcount
        hard += conn.execute(
            "UPDATE tasks INDEXED BY tasks_suspended SET band = 1, preemptible = 0, "
            "updated_at = ? WHERE state = 'suspended' AND band = 0 AND created_at <= ?",
            (now, now - self._p.hard_aging_min * 60.0)).rowcount
        due = conn.execute(
            "SELECT t.id, t.type, t.deadline, t.base, t.attempts, t.bump, t.created_at, "
            "s.platform FROM tasks t INDEXED BY tasks_urgency_due JOIN shops s "
            "ON s.id = t.shop_id WHERE t.state = 'queued' AND t.urgency_next_at IS NOT NULL "
            "AND t.urgency_next_at <= ?", (now,)).fetchall()
        for tid, ttype, deadline, base, attempts, bump, created, platform in due:
            est = estimator_for(platform).estimate(task_type=ttype, deadline=deadline, now=now)
            conn.execute(
                "UPDATE tasks SET urgency = ?, urgency_next_at = ?, prio_key = ?, updated_at = ? "
                "WHERE id = ?",
                (est.points, est.next_change_at,
                 self._key(base, est.points, attempts, bump, created), now, tid))
        return hard, len(due)

    def apply_thresholds(self) -> tuple[int, int]:
        """Run the threshold events now; returns (newly hard-aged, urgency re-estimated)."""
        now = self.clock.now()
        hard, due = self._call(lambda c: self._op_thresholds(c, now))
        return int(hard), int(due)

    # -- claim / ack / fail / release --------------------------------------------------------

    def claim(self, owner: str, *, exclude_domains: Iterable[str] = (),
              lease_s: float | None = None) -> ClaimedTask | None:
        """Claim the best eligible task under a lease, or ``None`` when nothing is eligible.

        Eligible: queued, its ``not_before`` has passed, its shop runs fewer than
        ``max_tasks_per_shop`` tasks, neither its shop nor its domain is paused, and its domain
        is not in ``exclude_domains`` (open circuit breakers).
        """
        return self._writer_or_refuse().submit(
            lambda c: self._op_claim(c, owner, frozenset(exclude_domains), lease_s)).result()

    def claim_op(self, owner: str, *, exclude_domains: Iterable[str] = (),
                 lease_s: float | None = None) -> Callable[[sqlite3.Connection], Any]:
        ex = frozenset(exclude_domains)
        return lambda c: self._op_claim(c, owner, ex, lease_s)

    def _op_claim(self, conn: sqlite3.Connection, owner: str, exclude: frozenset[str],
                  lease_s: float | None, *, blocked: set[int] | None = None,
                  now: float | None = None) -> ClaimedTask | None:
        """Claim one task. A round of claims (``claim_many_op``) applies the threshold events
        and reads the blocked shops once and passes them in (``blocked`` is updated)."""
        if now is None:
            now = self.clock.now()
            self._op_thresholds(conn, now)
        if blocked is None:
            blocked = self._blocked_shops(conn, exclude)
        picked = self._pick(conn, now, blocked)
        if picked is None:
            return None
        picked_id, was = picked
        until = now + (lease_s if lease_s is not None else self._q.lease_s)
        reason = f"resumed by {owner}" if was == "suspended" else f"claimed by {owner}"
        row = conn.execute(
            "UPDATE tasks SET state = 'running', state_reason = ?, lease_owner = ?, "
            "lease_until = ?, attempts = attempts + 1, started_at = ?, updated_at = ? "
            "WHERE id = ? AND state IN ('queued', 'suspended') RETURNING id, type, shop_id, "
            "attempts, max_attempts, prio_key, preemptible, spec, checkpoint, created_at",
            (reason, owner, until, now, now, picked_id)).fetchone()
        shop = conn.execute("SELECT name, platform, base_url, domain FROM shops WHERE id = ?",
                            (row[2],)).fetchone()
        spec = json.loads(row[7])
        return ClaimedTask(
            id=row[0], type=row[1], shop=shop[0], shop_id=row[2], platform=shop[1],
            base_url=shop[2], domain=shop[3], lease_owner=owner, lease_until=until,
            attempts=row[3], max_attempts=row[4],
            score=score_from_key(row[5], now, self._aging_per_s), preemptible=bool(row[6]),
            flow=spec.get("flow"), params=spec.get("params", {}), steps=spec.get("steps"),
            checkpoint=json.loads(row[8]) if row[8] else None, resumed=was == "suspended",
            created_at=row[9])

    def claim_many_op(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                      probe_domains: Iterable[str] = (), lease_s: float | None = None
                      ) -> Callable[[sqlite3.Connection], list[ClaimedTask]]:
        """Claim up to ``limit`` tasks in one transaction (one commit for a whole round).

        A domain in ``probe_domains`` (a half-open breaker) gives at most one task.
        """
        ex = set(exclude_domains)
        probes = set(probe_domains)

        def op(conn: sqlite3.Connection) -> list[ClaimedTask]:
            out: list[ClaimedTask] = []
            if limit <= 0:
                return out
            now = self.clock.now()
            self._op_thresholds(conn, now)
            blocked = self._blocked_shops(conn, frozenset(ex))
            running: dict[int, int] = {}
            for _ in range(limit):
                t = self._op_claim(conn, owner, frozenset(ex), lease_s, blocked=blocked,
                                   now=now)
                if t is None:
                    break
                out.append(t)
                running[t.shop_id] = running.get(t.shop_id, 0) + 1
                if running[t.shop_id] + self._running_of(conn, t.shop_id, out) >= \
                        self._q.max_tasks_per_shop:
                    blocked.add(t.shop_id)
                if t.domain in probes:
                    ex.add(t.domain)
                    blocked.update(int(r[0]) for r in conn.execute(
                        "SELECT id FROM shops WHERE domain = ?", (t.domain,)))
            return out
        return op

    def _running_of(self, conn: sqlite3.Connection, shop_id: int,
                    claimed: list[ClaimedTask]) -> int:
        """Tasks of ``shop_id`` running before this round (one task per shop: usually 0)."""
        if self._q.max_tasks_per_shop == 1:
            return 0  # it was eligible, so none were running; the one just claimed counts
        n = conn.execute("SELECT count(*) FROM tasks INDEXED BY tasks_leases "
                         "WHERE state = 'running' AND shop_id = ?", (shop_id,)).fetchone()[0]
        return int(n) - sum(1 for t in claimed if t.shop_id == shop_id)

    def claim_many(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                   probe_domains: Iterable[str] = ()) -> list[ClaimedTask]:
        """Claim up to ``limit`` tasks in one transaction (see :meth:`claim_many_op`)."""
        out: list[ClaimedTask] = self._call(self.claim_many_op(
            owner, limit, exclude_domains=exclude_domains, probe_domains=probe_domains))
        return out

    def renew_leases(self, owner: str, task_ids: Sequence[int]) -> list[int]:
        """Extend the leases of ``task_ids``; returns the ids ``owner`` no longer holds."""
        return list(self._call(self.renew_leases_op(owner, task_ids)))

    def renew_leases_op(self, owner: str, task_ids: Sequence[int], *,
                        lease_s: float | None = None) -> Callable[[sqlite3.Connection], list[int]]:
        """Extend the leases of ``task_ids``; the op returns the ids this owner lost."""
        ids = list(task_ids)

        def op(conn: sqlite3.Connection) -> list[int]:
            until = self.clock.now() + (lease_s if lease_s is not None else self._q.lease_s)
            lost = []
            for tid in ids:
                cur = conn.execute("UPDATE tasks SET lease_until = ? WHERE id = ? AND "
                                   "state = 'running' AND lease_owner = ?", (until, tid, owner))
                if cur.rowcount == 0:
                    lost.append(tid)
            return lost
        return op

    def _pick(self, conn: sqlite3.Connection, now: float, blocked: set[int]
              ) -> tuple[int, str] | None:
        """The id (and state) of the best eligible waiting task.

        Suspended tasks (few: preempted ones) are looked at in full through their own index.
        Queued ones, fast path: walk the global index from the top and take the first
        eligible row; the ineligible ones are tasks of busy or paused shops, normally few. If
        the first ``FAST_PATH_ROWS`` are all ineligible (one busy shop holds the top of the
        queue), ask each eligible shop for its best task through the per-shop index and take
        the best of those: O(shops · log n), never a scan of the queue.
        """
        best: tuple[int, int, int] | None = None  # (band, key, -id)
        best_pick: tuple[int, str] | None = None
        for tid, shop_id, not_before, band, key in conn.execute(
                "SELECT id, shop_id, not_before, band, prio_key FROM tasks INDEXED BY "
                "tasks_suspended WHERE state = 'suspended' ORDER BY band DESC, prio_key DESC, id"):
            if shop_id not in blocked and not_before <= now:
                best, best_pick = (band, key, -tid), (int(tid), "suspended")
                break
        cur = conn.execute(
            "SELECT id, shop_id, not_before, band, prio_key FROM tasks INDEXED BY tasks_ready "
            "WHERE state = 'queued' "
            "ORDER BY band DESC, prio_key DESC, id LIMIT ?", (FAST_PATH_ROWS,))
        seen = 0
        for tid, shop_id, not_before, band, key in cur:
            seen += 1
            if shop_id not in blocked and not_before <= now:
                cur.close()
                if best is None or (band, key, -tid) > best:
                    return int(tid), "queued"
                return best_pick
        if seen < FAST_PATH_ROWS:
            return best_pick
        for (shop_id,) in conn.execute("SELECT id FROM shops").fetchall():
            if shop_id in blocked:
                continue
            r = conn.execute(
                "SELECT id, band, prio_key FROM tasks INDEXED BY tasks_shop_ready "
                "WHERE state = 'queued' AND shop_id = ? "
                "AND not_before <= ? ORDER BY band DESC, prio_key DESC, id LIMIT 1",
                (shop_id, now)).fetchone()
            if r is not None and (best is None or (r[1], r[2], -r[0]) > best):
                best, best_pick = (r[1], r[2], -r[0]), (int(r[0]), "queued")
        return best_pick

    def _blocked_shops(self, conn: sqlite3.Connection, exclude: frozenset[str]) -> set[int]:
        blocked = {int(r[0]) for r in conn.execute(
            "SELECT shop_id FROM tasks INDEXED BY tasks_leases WHERE state = 'running' "
            "GROUP BY shop_id "
            "HAVING count(*) >= ?", (self._q.max_tasks_per_shop,))}
        blocked.update(int(r[0]) for r in conn.execute(
            "SELECT id FROM shops WHERE paused = 1 OR domain IN "
            "(SELECT domain FROM paused_domains)"))
        if exclude:
            marks = ",".join("?" * len(exclude))
            blocked.update(int(r[0]) for r in conn.execute(
                f"SELECT id FROM shops WHERE domain IN ({marks})", tuple(exclude)))
        return blocked

    def _finish_running(self, conn: sqlite3.Connection, task_id: int, owner: str, sets: str,
                        params: Sequence[Any]) -> None:
        cur = conn.execute(
            f"UPDATE tasks SET {sets}, lease_owner = NULL, lease_until = NULL "
            "WHERE id = ? AND state = 'running' AND lease_owner = ?", (*params, task_id, owner))
        if cur.rowcount == 0:
            raise LeaseLost(f"task {task_id} is no longer held by {owner} "
                            "(its lease expired and it was recovered, or it was cancelled)")

    def ack(self, task_id: int, owner: str, *, results: dict[str, Any] | None = None) -> None:
        """Mark a claimed task done (with its extracted results)."""
        self._call(self.ack_op(task_id, owner, results=results))
        self._room_freed()

    def ack_op(self, task_id: int, owner: str, *,
               results: dict[str, Any] | None = None) -> Callable[[sqlite3.Connection], None]:
        res = json.dumps(results, ensure_ascii=False) if results is not None else None

        def op(conn: sqlite3.Connection) -> None:
            now = self.clock.now()
            self._finish_running(
                conn, task_id, owner,
                "state = 'done', state_reason = 'finished', finished_at = ?, updated_at = ?, "
                "results = coalesce(?, results)", (now, now, res))
            # Finished after an answer: its answered ticket(s) close with it.
            conn.execute("UPDATE tickets SET state = 'closed', closed_at = ? WHERE task_id = ? "
                         "AND state = 'answered'", (now, task_id))
        return op

    def fail(self, task_id: int, owner: str, *, error_class: str, message: str,
             retry: bool = True, retry_after_s: float | None = None,
             evidence: dict[str, str] | None = None) -> TaskState:
        """Record a failed attempt: requeue with back-off and retry bonus, or fail for good.

        Returns the task's new state (``queued`` or ``failed``).
        """
        state: TaskState = self._call(self.fail_op(
            task_id, owner, error_class=error_class, message=message, retry=retry,
            retry_after_s=retry_after_s, evidence=evidence))
        return state

    def fail_op(self, task_id: int, owner: str, *, error_class: str, message: str,
                retry: bool = True, retry_after_s: float | None = None,
                evidence: dict[str, str] | None = None
                ) -> Callable[[sqlite3.Connection], TaskState]:
        ev = json.dumps(evidence, ensure_ascii=False) if evidence else None

        def op(conn: sqlite3.Connection) -> TaskState:
            now = self.clock.now()
            row = conn.execute(
                "SELECT attempts, max_attempts, base, urgency, bump, created_at FROM tasks "
                "WHERE id = ? AND state = 'running' AND lease_owner = ?",
                (task_id, owner)).fetchone()
            if row is None:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            attempts, max_attempts, base, urg, bump, created = row
            msg = message[:2000]
            if not retry or attempts >= max_attempts:
                why = "no retry for this error" if not retry else f"{attempts} attempts spent"
                self._finish_running(
                    conn, task_id, owner,
                    "state = 'failed', state_reason = ?, finished_at = ?, updated_at = ?, "
                    "error_class = ?, last_error = ?, evidence = coalesce(?, evidence)",
                    (f"{error_class}: {why}", now, now, error_class, msg, ev))
                return TaskState.FAILED
            delay = min(self._q.retry_backoff_s * 2 ** (attempts - 1), self._q.retry_backoff_max_s)
            if retry_after_s is not None:
                delay = max(delay, retry_after_s)
            self._finish_running(
                conn, task_id, owner,
                "state = 'queued', state_reason = ?, not_before = ?, prio_key = ?, "
                "updated_at = ?, error_class = ?, last_error = ?, "
                "evidence = coalesce(?, evidence)",
                (f"{error_class}: retry {attempts + 1}/{max_attempts} in {delay:.0f}s",
                 now + delay, self._key(base, urg, attempts, bump, created), now,
                 error_class, msg, ev))
            return TaskState.QUEUED
        return op

    def release(self, task_id: int, owner: str, *, reason: str = "released",
                checkpoint: dict[str, Any] | None = None, suspend: bool = False) -> None:
        """Give a claimed task back without counting the attempt (a safe stop); ``suspend``
        marks it preempted (it keeps its place by score and resumes from its checkpoint)."""
        self._call(self.release_op(task_id, owner, reason=reason, checkpoint=checkpoint,
                                   suspend=suspend))

    def release_op(self, task_id: int, owner: str, *, reason: str = "released",
                   checkpoint: dict[str, Any] | None = None, suspend: bool = False
                   ) -> Callable[[sqlite3.Connection], None]:
        cp = json.dumps(checkpoint, ensure_ascii=False) if checkpoint is not None else None
        state = "suspended" if suspend else "queued"

        def op(conn: sqlite3.Connection) -> None:
            now = self.clock.now()
            self._finish_running(
                conn, task_id, owner,
                f"state = '{state}', state_reason = ?, attempts = max(0, attempts - 1), "
                "updated_at = ?, checkpoint = coalesce(?, checkpoint), "
                "preempt_requested = NULL", (reason, now, cp))
        return op

    def save_checkpoint(self, task_id: int, owner: str, checkpoint: dict[str, Any]) -> None:
        """Durably record a running task's progress (acknowledged = on disk)."""
        self._call(self.checkpoint_op(task_id, owner, checkpoint))

    def checkpoint_op(self, task_id: int, owner: str,
                      checkpoint: dict[str, Any]) -> Callable[[sqlite3.Connection], None]:
        cp = json.dumps(checkpoint, ensure_ascii=False)

        def op(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE tasks SET checkpoint = ?, updated_at = ? WHERE id = ? "
                "AND state = 'running' AND lease_owner = ?",
                (cp, self.clock.now(), task_id, owner))
            if cur.rowcount == 0:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
        return op

    def renew_lease(self, task_id: int, owner: str, *, lease_s: float | None = None) -> float:
        """Extend a running task's lease; returns the new expiry."""
        def op(conn: sqlite3.Connection) -> float:
            until = self.clock.now() + (lease_s if lease_s is not None else self._q.lease_s)
            cur = conn.execute("UPDATE tasks SET lease_until = ? WHERE id = ? AND "
                               "state = 'running' AND lease_owner = ?", (until, task_id, owner))
            if cur.rowcount == 0:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            return until
        return float(self._call(op))

    def recover_expired(self, *, dead_local_owners: bool = True) -> list[int]:
        """Requeue running tasks whose lease expired (or whose owner process on this host died).

        A recovered attempt counts as spent. Its checkpoint stays, so it resumes where it was
        (a write that was in flight is verified or handed to a person, never replayed blindly).
        A task with no attempts left is not failed silently: it gets an exception ticket.
        """
        def which(owner: str | None, until: float | None) -> str | None:
            if until is not None and until < self.clock.now():
                return "lease expired"
            if dead_local_owners and owner and owner_is_dead_local(owner):
                return f"owner {owner} died"
            return None
        return self._recover_where(which)

    def _recover(self, match: Callable[[str | None, float | None], bool], why: str
                 ) -> list[int]:
        return self._recover_where(lambda o, u: why if match(o, u) else None)

    def _recover_where(self, why_of: Callable[[str | None, float | None], str | None]
                       ) -> list[int]:
        def op(conn: sqlite3.Connection) -> list[int]:
            now = self.clock.now()
            rows = conn.execute(
                "SELECT id, lease_owner, lease_until, attempts, max_attempts, base, urgency, "
                "bump, created_at FROM tasks WHERE state = 'running'").fetchall()
            out = []
            for tid, owner, until, attempts, max_attempts, base, urg, bump, created in rows:
                why = why_of(owner, until)
                if why is None:
                    continue
                if attempts >= max_attempts:
                    self._ticket_lost_worker(conn, tid, why, attempts, now)
                else:
                    conn.execute(
                        "UPDATE tasks SET state = 'queued', state_reason = ?, updated_at = ?, "
                        "lease_owner = NULL, lease_until = NULL, not_before = ?, prio_key = ? "
                        "WHERE id = ?",
                        (f"recovered: {why}", now, now,
                         self._key(base, urg, attempts, bump, created), tid))
                out.append(int(tid))
            return out
        return list(self._call(op))

    @staticmethod
    def _ticket_lost_worker(conn: sqlite3.Connection, task_id: int, why: str, attempts: int,
                            now: float) -> None:
        from ...tickets import Signature, normalise_error

        row = conn.execute(
            "SELECT t.type, s.name, s.platform, s.domain FROM tasks t JOIN shops s "
            "ON s.id = t.shop_id WHERE t.id = ?", (task_id,)).fetchone()
        error = f"its worker was lost {attempts} times ({why})"
        sig = Signature(row[2], row[0], "", "lease_lost", normalise_error("worker lost"))
        cur = conn.execute(
            "INSERT INTO tickets (task_id, state, kind, opened_at, shop, platform, domain, "
            "task_type, step, step_name, error_class, error, signature, evidence) VALUES "
            "(?, 'open', 'failure', ?, ?, ?, ?, ?, NULL, '', 'lease_lost', ?, ?, '{}')",
            (task_id, now, row[1], row[2], row[3], row[0], error, sig.key))
        conn.execute(
            "UPDATE tasks SET state = 'waiting_human', state_reason = ?, updated_at = ?, "
            "lease_owner = NULL, lease_until = NULL, error_class = 'lease_lost', "
            "last_error = ? WHERE id = ?",
            (f"ticket #{cur.lastrowid}: {error}", now, error, task_id))

    # -- crashes, tickets and rules (one transaction with the task's state change) -----------

    def record_crash(self, task_id: int, owner: str, *, error_class: str, message: str,
                     quarantine: bool, evidence: dict[str, str] | None) -> str:
        """Count a browser crash; quarantine the task (a poison pill) or requeue it with its
        checkpoint on a fresh browser. Returns the new state."""
        return str(self._call(self.record_crash_op(
            task_id, owner, error_class=error_class, message=message, quarantine=quarantine,
            evidence=evidence)))

    def record_crash_op(self, task_id: int, owner: str, *, error_class: str, message: str,
                        quarantine: bool, evidence: dict[str, str] | None
                        ) -> Callable[[sqlite3.Connection], str]:
        ev = json.dumps(evidence, ensure_ascii=False) if evidence else None

        def op(conn: sqlite3.Connection) -> str:
            now = self.clock.now()
            sets = ("crashes = crashes + 1, lease_owner = NULL, lease_until = NULL, "
                    "updated_at = ?, error_class = ?, last_error = ?, "
                    "evidence = coalesce(?, evidence)")
            if quarantine:
                cur = conn.execute(
                    f"UPDATE tasks SET state = 'quarantined', state_reason = ?, {sets} "
                    "WHERE id = ? AND state = 'running' AND lease_owner = ?",
                    (f"quarantined: {error_class} again (poison pill)", now, error_class,
                     message[:2000], ev, task_id, owner))
                state = "quarantined"
            else:
                row = conn.execute("SELECT base, urgency, attempts, bump, created_at FROM "
                                   "tasks WHERE id = ?", (task_id,)).fetchone()
                key = self._key(row[0], row[1], row[2], row[3], row[4]) if row else 0
                cur = conn.execute(
                    f"UPDATE tasks SET state = 'queued', state_reason = ?, not_before = ?, "
                    f"prio_key = ?, {sets} WHERE id = ? AND state = 'running' "
                    "AND lease_owner = ?",
                    (f"{error_class}: retry on a fresh browser", now, key, now, error_class,
                     message[:2000], ev, task_id, owner))
                state = "queued"
            if cur.rowcount == 0:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            return state
        return op

    def crashes(self, task_id: int) -> int:
        row = self._reader().execute("SELECT crashes FROM tasks WHERE id = ?",
                                     (task_id,)).fetchone()
        return int(row[0]) if row else 0

    def open_ticket(self, task_id: int, owner: str, *, signature: Signature,
                    step: int | None, error: str, evidence: dict[str, str] | None,
                    kind: str = "failure", reason: str = "") -> int:
        """Move a running task to ``waiting_human`` and open its ticket (one transaction)."""
        return int(self._call(self.ticket_book().open_op(
            task_id, owner, signature=signature, step=step, error=error, evidence=evidence,
            kind=kind, reason=reason)))

    def apply_rule(self, task_id: int, owner: str, rule: Rule, *, signature: Signature,
                   error_class: str, error: str, step: int | None, step_name: str,
                   evidence: dict[str, str] | None) -> str:
        """Resolve a failure by a rule, logging which rule did it. Returns the new state."""
        return str(self._call(self.ticket_book().rule_op(
            task_id, owner, rule, signature=signature, error_class=error_class, error=error,
            step=step, step_name=step_name, evidence=evidence)))

    def ticket_book(self) -> SqliteTicketBook:
        from .tickets import SqliteTicketBook

        return SqliteTicketBook(self)

    # -- workers (one desktop has one, but the console shows it like a fleet's) -------------

    def heartbeat(self, owner: str, info: dict[str, Any]) -> None:
        now = self.clock.now()
        started = info.get("started_at")
        if started is None:  # keep the first one (engines always say; read only otherwise)
            old = self.meta(f"worker:{owner}")
            started = json.loads(old).get("started_at", now) if old else now
        rec = {**info, "owner": owner, "heartbeat_at": now, "state": "alive",
               "started_at": started}
        self.set_meta(f"worker:{owner}", json.dumps(rec, default=str))

    def worker_gone(self, owner: str) -> None:
        old = self.meta(f"worker:{owner}")
        if old:
            rec = {**json.loads(old), "state": "stopped", "running": 0}
            self.set_meta(f"worker:{owner}", json.dumps(rec, default=str))

    def workers(self) -> list[WorkerInfo]:
        rows = self._reader().execute("SELECT value FROM meta WHERE name LIKE 'worker:%' "
                                      "ORDER BY name").fetchall()
        return [worker_info(json.loads(r[0])) for r in rows]

    def recover_lost_workers(self, lost_after_s: float) -> list[int]:
        """Mark workers silent for ``lost_after_s`` lost; requeue their tasks now."""
        now = self.clock.now()
        lost = [w for w in self.workers()
                if w.state == "alive" and now - w.heartbeat_at > lost_after_s]
        out: list[int] = []
        for w in lost:
            self.set_meta(f"worker:{w.owner}",
                          json.dumps({**w.to_json(), "state": "lost", "running": 0},
                                     default=str))
            gone = w.owner

            def match(owner: str | None, until: float | None, gone: str = gone) -> bool:
                return owner == gone
            out += self._recover(match, f"worker {w.owner} on {w.host} stopped heartbeating")
        return out

    # -- operator commands ------------------------------------------------------------------

    def bump(self, task_id: int, *, to: float | None = None, by: float | None = None) -> float:
        """Change a task's priority now: to a score, or by a delta. It keeps aging from there.

        Returns the new score.
        """
        if (to is None) == (by is None):
            raise InvalidInput("bump", "give exactly one of --to or --by")
        check_bump(to, by)

        def op(conn: sqlite3.Connection) -> float:
            now = self.clock.now()
            row = conn.execute(
                "SELECT state, base, urgency, attempts, bump, created_at FROM tasks WHERE id = ?",
                (task_id,)).fetchone()
            if row is None:
                raise UnknownTask(task_id)
            state, base, urg, attempts, bump, created = row
            if TaskState(state).is_final:
                raise Refused(f"task {task_id} is {state}; only unfinished tasks can be bumped")
            if state == "running":  # the attempt in flight has earned no retry bonus yet
                attempts -= 1
            current = score_at(self._static(base, urg, attempts, bump), created, now,
                               self._aging_per_s)
            delta = (to - current) if to is not None else float(by or 0.0)
            new_bump = bump + delta
            conn.execute(
                "UPDATE tasks SET bump = ?, prio_key = ?, updated_at = ? WHERE id = ?",
                (new_bump, self._key(base, urg, attempts, new_bump, created), now, task_id))
            conn.execute(
                "INSERT INTO task_events (task_id, at, from_state, to_state, reason) "
                "VALUES (?, ?, ?, ?, ?)",
                (task_id, now, state, state, f"bumped {delta:+.3f} to {current + delta:.3f}"))
            return current + delta
        return float(self._call(op))

    def cancel(self, task_id: int, *, reason: str = "cancelled by operator") -> TaskState:
        """Cancel a task that has not finished. A running one loses its lease at once; its
        worker finds out at its next checkpoint and stops."""
        def op(conn: sqlite3.Connection) -> TaskState:
            now = self.clock.now()
            row = conn.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if row is None:
                raise UnknownTask(task_id)
            if TaskState(row[0]).is_final:
                raise Refused(f"task {task_id} is already {row[0]}")
            conn.execute(
                "UPDATE tasks SET state = 'cancelled', state_reason = ?, finished_at = ?, "
                "updated_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ?",
                (reason, now, now, task_id))
            # Its open or answered tickets end with it.
            conn.execute("UPDATE tickets SET state = 'cancelled', closed_at = ? WHERE "
                         "task_id = ? AND state IN ('open', 'answered')", (now, task_id))
            return TaskState(row[0])
        previous: TaskState = self._call(op)
        self._room_freed()
        return previous

    # -- reading ----------------------------------------------------------------------------

    def task(self, task_id: int) -> TaskRecord:
        row = self._reader().execute(
            f"SELECT {_TASK_COLUMNS} FROM tasks t JOIN shops s ON s.id = t.shop_id "
            "WHERE t.id = ?", (task_id,)).fetchone()
        if row is None:
            raise UnknownTask(task_id)
        return self._task_record(row, self.clock.now())

    def tasks(self, *, state: str | None = None, shop: str | None = None, limit: int = 50,
              offset: int = 0) -> list[TaskRecord]:
        """Tasks, best first for queued ones, newest first otherwise."""
        if state is not None and state not in {s.value for s in TaskState}:
            raise InvalidInput("--state", f"{state!r} is not a task state "
                               f"({', '.join(s.value for s in TaskState)})")
        if limit < 1:
            raise InvalidInput("--limit", "must be at least 1")
        where, params = [], []
        if state == "queued":
            where.append("t.state = 'queued'")  # a literal: the partial index serves it
        elif state is not None:
            where.append("t.state = ?")
            params.append(state)
        if shop is not None:
            self.shop(shop)
            where.append("s.name = ?")
            params.append(shop)
        order = ("t.band DESC, t.prio_key DESC, t.id" if state == "queued" else "t.id DESC")
        hint = " INDEXED BY tasks_ready" if state == "queued" and shop is None else ""
        sql = (f"SELECT {_TASK_COLUMNS} FROM tasks t{hint} JOIN shops s ON s.id = t.shop_id "
               f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY {order} "
               "LIMIT ? OFFSET ?")
        now = self.clock.now()
        rows = self._reader().execute(sql, (*params, limit, offset)).fetchall()
        return [self._task_record(r, now) for r in rows]

    def events(self, task_id: int) -> list[TaskEvent]:
        rows = self._reader().execute(
            "SELECT id, task_id, at, from_state, to_state, reason FROM task_events "
            "WHERE task_id = ? ORDER BY id", (task_id,)).fetchall()
        return [TaskEvent(*tuple(r)) for r in rows]

    def _task_record(self, r: sqlite3.Row, now: float) -> TaskRecord:
        spec = json.loads(r["spec"])
        return TaskRecord(
            id=r["id"], key=r["key"], type=r["type"], shop=r["shop"], platform=r["platform"],
            domain=r["domain"], state=TaskState(r["state"]), state_reason=r["state_reason"],
            score=score_from_key(r["prio_key"], now, self._aging_per_s),
            hard_aged=bool(r["band"]), preemptible=bool(r["preemptible"]),
            created_at=r["created_at"], updated_at=r["updated_at"], not_before=r["not_before"],
            deadline=r["deadline"], attempts=r["attempts"], max_attempts=r["max_attempts"],
            lease_owner=r["lease_owner"], lease_until=r["lease_until"],
            started_at=r["started_at"], finished_at=r["finished_at"], flow=spec.get("flow"),
            params=spec.get("params", {}), steps=spec.get("steps"),
            checkpoint=json.loads(r["checkpoint"]) if r["checkpoint"] else None,
            results=json.loads(r["results"]) if r["results"] else None,
            error_class=r["error_class"], last_error=r["last_error"],
            evidence=json.loads(r["evidence"]) if r["evidence"] else None)

    def counts(self) -> dict[str, int]:
        rows = self._reader().execute("SELECT state, n FROM state_counts").fetchall()
        counts = {s.value: 0 for s in TaskState}
        counts.update({r[0]: int(r[1]) for r in rows})
        return counts

    def status(self) -> QueueStatus:
        """Counts per state, backlog, oldest wait and busy shops, from indexes only."""
        conn = self._reader()
        now = self.clock.now()
        counts = self.counts()
        conn.execute("BEGIN")
        try:
            oldest = conn.execute(
                "SELECT min(m) FROM (SELECT min(created_at) AS m FROM tasks "
                "INDEXED BY tasks_hard_aging WHERE state = 'queued' AND band = 0 UNION ALL "
                "SELECT min(created_at) FROM tasks INDEXED BY tasks_ready "
                "WHERE state = 'queued' AND band = 1)").fetchone()[0]
            hard = conn.execute("SELECT count(*) FROM tasks INDEXED BY tasks_ready "
                                "WHERE state = 'queued' AND band = 1").fetchone()[0]
            busy = {r[0]: int(r[1]) for r in conn.execute(
                "SELECT s.name, count(*) FROM tasks t JOIN shops s ON s.id = t.shop_id "
                "WHERE t.state = 'running' GROUP BY s.name")}
            top = conn.execute("SELECT prio_key FROM tasks INDEXED BY tasks_ready "
                               "WHERE state = 'queued' "
                               "ORDER BY band DESC, prio_key DESC, id LIMIT 1").fetchone()
            bottom = conn.execute("SELECT prio_key FROM tasks INDEXED BY tasks_ready "
                                  "WHERE state = 'queued' "
                                  "ORDER BY band, prio_key, id DESC LIMIT 1").fetchone()
        finally:
            conn.execute("COMMIT")
        return QueueStatus(
            at=now, counts=counts, queued=counts.get("queued", 0),
            max_backlog=self._q.max_backlog,
            oldest_wait_s=max(0.0, now - oldest) if oldest is not None else 0.0,
            hard_aged=int(hard), busy_shops=busy,
            top_score=score_from_key(top[0], now, self._aging_per_s) if top else None,
            bottom_score=score_from_key(bottom[0], now, self._aging_per_s) if bottom else None)

    def queue_bands(self, *, urgent_at: float, low_below: float) -> dict[str, int]:
        """Queued tasks by priority band now: hard-aged, urgent (score ≥ ``urgent_at``),
        normal, low (score < ``low_below``). Counts index ranges; run it off the loop."""
        now = self.clock.now()
        shift = round((now - KEY_EPOCH) * self._aging_per_s * KEY_SCALE)
        hi = round(urgent_at * KEY_SCALE) - shift
        lo = round(low_below * KEY_SCALE) - shift
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            q = ("SELECT count(*) FROM tasks INDEXED BY tasks_ready "
                 "WHERE state = 'queued' AND band = ?")
            hard = conn.execute(q, (1,)).fetchone()[0]
            urgent = conn.execute(q + " AND prio_key >= ?", (0, hi)).fetchone()[0]
            low = conn.execute(q + " AND prio_key < ?", (0, lo)).fetchone()[0]
            total0 = conn.execute(q, (0,)).fetchone()[0]
        finally:
            conn.execute("COMMIT")
        return {"hard_aged": int(hard), "urgent": int(urgent), "low": int(low),
                "normal": int(total0 - urgent - low)}

    def record_minute(self, minute: int, data: dict[str, Any], *, keep_days: float = 14.0,
                      snapshot: dict[str, Any] | None = None) -> None:
        """Keep one row of metrics per minute (older than ``keep_days`` are dropped)."""
        text = json.dumps(data, ensure_ascii=False, default=str)
        snap = json.dumps(snapshot, ensure_ascii=False, default=str) if snapshot else None

        def op(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO metrics_minutes (minute, data) VALUES (?, ?) "
                         "ON CONFLICT (minute) DO UPDATE SET data = excluded.data",
                         (minute, text))
            conn.execute("DELETE FROM metrics_minutes WHERE minute < ?",
                         (minute - int(keep_days * 1440),))
            if snap is not None:
                self._set_meta(conn, "engine_snapshot", snap)
        self._call(op)

    def metrics_history(self, *, since_minute: int = 0, limit: int = 1440
                        ) -> list[tuple[int, dict[str, Any]]]:
        rows = self._reader().execute(
            "SELECT minute, data FROM metrics_minutes WHERE minute >= ? ORDER BY minute DESC "
            "LIMIT ?", (since_minute, limit)).fetchall()
        return [(int(m), json.loads(d)) for m, d in reversed(rows)]

    def set_meta(self, name: str, value: str) -> None:
        self._call(lambda c: self._set_meta(c, name, value))

    @staticmethod
    def _set_meta(conn: sqlite3.Connection, name: str, value: str) -> None:
        conn.execute("INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) "
                     "DO UPDATE SET value = excluded.value", (name, value))

    def meta(self, name: str) -> str | None:
        row = self._reader().execute("SELECT value FROM meta WHERE name = ?",
                                     (name,)).fetchone()
        return str(row[0]) if row else None

    def urgent_waiting(self, threshold: float, *, limit: int = 8) -> list[tuple[int, int, float]]:
        """Waiting tasks (queued or suspended) scoring at least ``threshold`` now, best first:
        (id, shop_id, score). An index range, not a scan."""
        now = self.clock.now()
        shift = round((now - KEY_EPOCH) * self._aging_per_s * KEY_SCALE)
        lo = round(threshold * KEY_SCALE) - shift
        out: list[tuple[int, int, float]] = []
        for index, state in (("tasks_ready", "queued"), ("tasks_suspended", "suspended")):
            rows = self._reader().execute(
                f"SELECT id, shop_id, prio_key, not_before FROM tasks INDEXED BY {index} "
                f"WHERE state = '{state}' AND band = 0 AND prio_key >= ? "
                "ORDER BY band DESC, prio_key DESC, id LIMIT ?", (lo, limit)).fetchall()
            out += [(int(r[0]), int(r[1]), score_from_key(r[2], now, self._aging_per_s))
                    for r in rows if r[3] <= now]
        return sorted(out, key=lambda t: -t[2])[:limit]

    def log_event(self, task_id: int, reason: str) -> None:
        """Add a line to a task's history without changing its state (a decision about it)."""
        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if row is not None:
                conn.execute("INSERT INTO task_events (task_id, at, from_state, to_state, "
                             "reason) VALUES (?, ?, ?, ?, ?)",
                             (task_id, self.clock.now(), row[0], row[0], reason))
        self._call(op)

    def request_preempt(self, task_id: int, reason: str) -> None:
        """Ask whichever engine holds ``task_id`` to suspend it at its next safe step."""
        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if row is None:
                raise UnknownTask(task_id)
            if row[0] != "running":
                raise Refused(f"task {task_id} is {row[0]}; only a running task can be "
                              "preempted")
            conn.execute("UPDATE tasks SET preempt_requested = ? WHERE id = ?",
                         (reason, task_id))
        self._call(op)

    def preempt_requests(self, task_ids: Sequence[int]) -> dict[int, str]:
        """Operator preemption requests (from any process) for these running tasks."""
        if not task_ids:
            return {}
        marks = ",".join("?" * len(task_ids))
        rows = self._reader().execute(
            f"SELECT id, preempt_requested FROM tasks WHERE id IN ({marks}) AND "
            "preempt_requested IS NOT NULL", tuple(task_ids)).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read-only query on this thread's reader connection (blocking: call it off
        any event loop). Internal to this package (ticket book, pages, :class:`SqliteSource`);
        writes are refused by SQLite."""
        return self._reader().execute(sql, params).fetchall()

    # -- capabilities and page reads of the Store protocol (core.store.base) -------------------

    shared_url: str | None = None
    """``None``: one machine's file; its gates and breakers stay in the process."""
    transient_errors: tuple[type[BaseException], ...] = ()

    def durability_warning(self) -> str | None:
        """``None``: every commit is on disk before it returns (``synchronous`` FULL) or the
        operator chose NORMAL knowingly in the settings."""
        return None

    def op_writer(self) -> SqliteStore:
        """This store: its writer thread takes ops (see :class:`core.store.base.OpWriter`)."""
        return self

    def room_freed(self) -> None:
        self._room_freed()

    def ack_many(self, items: Sequence[tuple[int, str, dict[str, Any] | None]]
                 ) -> list[BaseException | None]:
        out: list[BaseException | None] = []
        for task_id, owner, results in items:
            try:
                self.ack(task_id, owner, results=results)
                out.append(None)
            except Exception as exc:  # handed back per item, as the Redis store does
                out.append(exc)
        return out

    def task_page(self, states: tuple[str, ...], *, sort: str, descending: bool, order: Order,
                  flt: TaskFilter, after: Cursor | None, limit: int) -> TaskPage:
        return sqlite_pages.task_page(self, states, sort=sort, order=order, flt=flt,
                                      after=after, limit=limit)

    def count_filtered(self, states: tuple[str, ...], flt: TaskFilter, cap: int
                       ) -> tuple[int, bool]:
        return sqlite_pages.count_filtered(self, states, flt, cap)

    def task_rows(self, ids: Sequence[int]) -> dict[int, TaskRow]:
        return sqlite_pages.task_rows(self, ids)

    def shop_rows(self) -> list[ShopRow]:
        return sqlite_pages.shop_rows(self)

    def integrity_check(self) -> str:
        return str(self._reader().execute("PRAGMA integrity_check").fetchone()[0])
