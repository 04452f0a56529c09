"""The SQLite store: the single source of truth for one desktop's tasks, shops and log.

:class:`SqliteStore` is the :class:`core.store.base.Store` on one SQLite file. Its methods come
in three layers, one module each: connections and the writer thread
(:mod:`core.store.sqlite.connection`), a task's life cycle (:mod:`core.store.sqlite.queue`),
and here shops, operator commands, reads, metrics and workers. Every statement is named in
:mod:`core.store.sqlite.sql`. Every public method blocks its caller until the change is
committed, so call them from threads or the CLI; async code uses
:class:`core.store.AsyncStore`, which never blocks its loop.

All of it is plain SQL through the standard library's ``sqlite3`` (no ORM); sqlite-utils only
writes and queries the text-search indexes (#19, :mod:`core.search`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from ...errors import BacklogFull, InvalidInput, Refused, SpecError, UnknownTask
from ...origins import normalise_origins
from ...priority import check_bump, index_key, score_at
from ...profiles import ShopProfile
from ...specs import TaskSpec
from ..pages import Cursor, Order, ShopRow, TaskFilter, TaskPage, TaskRow
from ..prepare import prepare_specs
from ..records import ShopRecord, TaskState, domain_of
from . import pages as sqlite_pages
from . import sql
from .groups import SqliteGroups
from .holds import SqliteHolds
from .queue import SqliteQueue
from .reads import SqliteReads

if TYPE_CHECKING:
    from ...tickets import Rule, Signature
    from .outbox import SqliteOutbox
    from .tickets import SqliteTicketBook

class SqliteStore(SqliteGroups, SqliteHolds, SqliteQueue, SqliteReads):
    """Durable priority queue, shops, tickets and event log in one SQLite file (WAL mode).

    Args:
        path: the database file (created with its folder if missing, owner-only).
        readonly: open for reading only (the CLI's read-only commands): a missing file is an
            error, nothing is created, migrated or written, and every write is refused.
        settings: the validated configuration.
        clock: time source for every timestamp (a fake one in tests).
        validator: extra per-task checks at submission (flows and placeholders), raising
            :class:`SpecError`; runs before anything is written.
        field: the option named when the file is refused (``--db``, ``--from``).
    """
    # -- shops ---------------------------------------------------------------------------

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
                    sql.INSERT_SHOP,
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

    def set_shop_origins(self, name: str, origins: Sequence[str]) -> ShopRecord:
        """Set the origins a shop's tasks may load besides its own (replaces the list)."""
        self.shop(name)
        text = json.dumps(normalise_origins(origins))
        self._call(lambda c: c.execute(sql.SET_SHOP_ORIGINS,
                                       (text, name)))
        return self.shop(name)

    def set_shop_profile(self, name: str, profile: ShopProfile, *,
                         proxy_password_enc: bytes | None) -> ShopRecord:
        """Replace a shop's profile and its proxy's (already encrypted) password (None: none;
        a profile without a proxy never keeps one)."""
        self.shop(name)
        text = profile.to_json()
        pw = proxy_password_enc if profile.proxy else None
        self._call(lambda c: c.execute(sql.SET_SHOP_PROFILE, (text, pw, name)))
        return self.shop(name)

    def set_shop_paused(self, name: str, paused: bool) -> ShopRecord:
        self.shop(name)
        self._call(lambda c: c.execute(sql.SET_SHOP_PAUSED,
                                       (int(paused), name)))
        return self.shop(name)

    def set_domain_paused(self, domain: str, paused: bool, *, reason: str = "") -> None:
        domain = domain.lower()
        now = self.clock.now()
        if paused:
            self._call(lambda c: c.execute(
                sql.PAUSE_DOMAIN,
                (domain, now, reason)))
        else:
            self._call(lambda c: c.execute(sql.UNPAUSE_DOMAIN,
                                           (domain,)))

    # -- submission ----------------------------------------------------------------------

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

    def _prepare(self, specs: Sequence[TaskSpec]) -> list[Submission]:
        now = self.clock.now()
        encode = _PAYLOAD_JSON.encode
        threshold = self._p.preempt_threshold
        default_attempts = self._q.max_attempts
        out: list[Submission] = []
        for p in prepare_specs(specs, {s.name: s for s in self.shops()}, self._p,
                               self.validator, now):
            spec = p.spec
            static = self._static(p.base, p.urgency, 0, 0.0)
            out.append(Submission(
                spec.key, spec.type, p.shop.id, p.base, p.urgency, p.urgency_fixed,
                p.urgency_next_at, spec.deadline_ts, encode(spec.payload()),
                spec.max_attempts or default_attempts, static, static >= threshold,
                p.start_at))
        return out

    def _op_submit(self, conn: sqlite3.Connection, prepared: list[Submission]) -> list[int]:
        """Insert a checked batch: one read for the idempotency keys it names (none when it
        names none), one for the backlog, then one ``executemany`` — the statements raw SQL
        on this schema would run, no read per task."""
        now = self.clock.now()
        ids: list[int | None] = [None] * len(prepared)
        known: dict[str, tuple[int, str, int, str]] = {}
        keys = [t.key for t in prepared if t.key is not None]
        if keys:
            known = {r[0]: (int(r[1]), r[2], int(r[3]), r[4]) for r in conn.execute(
                sql.TASKS_BY_KEYS, (json.dumps(keys, ensure_ascii=False),))}
        fresh: list[int] = []
        for i, t in enumerate(prepared):
            old = known.get(t.key) if t.key is not None else None
            if old is not None:
                if old[1:] != (t.type, t.shop_id, t.spec):
                    raise SpecError("key", f"{t.key!r} was already used for a different "
                                    f"task (#{old[0]}); use a new key")
                ids[i] = old[0]
                continue
            fresh.append(i)
        if not fresh:
            return [int(x) for x in ids if x is not None]
        queued = self._queued_count(conn)
        routine = sum(1 for i in fresh if not prepared[i].urgent)
        limit = self._q.max_backlog
        reserve_limit = limit + int(limit * self._q.urgent_reserve)
        if routine and queued + routine > limit:
            raise BacklogFull(queued, limit)
        if queued + len(fresh) > reserve_limit:
            raise BacklogFull(queued, reserve_limit, urgent=True)
        aging = self._aging_per_s
        rows = []
        for i in fresh:
            t = prepared[i]
            # A delayed task joins the queue at its time: its aging counts from then.
            if t.start_at > now:
                start, state, why = t.start_at, "scheduled", f"submitted, not before " \
                    f"{_iso(t.start_at)}"
            else:
                start, state, why = now, "queued", "submitted"
            rows.append((t.key, t.type, t.shop_id, state, why, t.base, t.urgency,
                         t.urgency_fixed, t.urgency_next_at, index_key(t.static, start, aging),
                         now, now, start, t.deadline, t.max_attempts, t.spec, start))
        before = conn.execute(sql.MAX_TASK_ID).fetchone()[0] or 0
        conn.executemany(sql.INSERT_TASK, rows)
        last = conn.execute(sql.LAST_ROWID).fetchone()[0]
        if last != before + len(rows):  # pragma: no cover - rowids past 2**63 - 1 only
            raise RuntimeError(f"task ids of a batch are not consecutive ({before}, {last})")
        for n, i in enumerate(fresh):
            ids[i] = before + 1 + n
        return [int(x) for x in ids if x is not None]

    @staticmethod
    def _queued_count(conn: sqlite3.Connection) -> int:
        row = conn.execute(sql.WAITING_COUNT).fetchone()
        return int(row[0]) if row and row[0] else 0

    # -- tickets and rules (one transaction with the task's state change) ----------------

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

    # -- workers (one desktop has one, but the console shows it like a fleet's) ----------

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

    def recover_lost_workers(self, lost_after_s: float, *, alive: str | None = None
                             ) -> list[int]:
        """Mark workers silent for ``lost_after_s`` lost; requeue their tasks now. ``alive``:
        the worker asking, never lost (it is running this check)."""
        now = self.clock.now()
        lost = [w for w in self.workers()
                if w.state == "alive" and now - w.heartbeat_at > lost_after_s
                and w.owner != alive]
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

    # -- operator commands ---------------------------------------------------------------

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
                sql.TASK_STATE_AND_PRIORITY,
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
                sql.SET_BUMP,
                (new_bump, self._key(base, urg, attempts, new_bump, created), now, task_id))
            conn.execute(
                sql.LOG_EVENT,
                (task_id, now, state, state, f"bumped {delta:+.3f} to {current + delta:.3f}"))
            return current + delta
        return float(self._call(op))

    def cancel(self, task_id: int, *, reason: str = "cancelled by operator") -> TaskState:
        """Cancel a task that has not finished. A running one loses its lease at once; its
        worker finds out at its next checkpoint and stops."""
        def op(conn: sqlite3.Connection) -> TaskState:
            now = self.clock.now()
            row = conn.execute(sql.TASK_STATE, (task_id,)).fetchone()
            if row is None:
                raise UnknownTask(task_id)
            if TaskState(row[0]).is_final:
                raise Refused(f"task {task_id} is already {row[0]}")
            conn.execute(
                sql.CANCEL_TASK,
                (reason, now, now, task_id))
            # Its open or answered tickets end with it.
            conn.execute(sql.CANCEL_TASK_TICKETS, (now, task_id))
            return TaskState(row[0])
        previous: TaskState = self._call(op)
        self._room_freed()
        return previous

    def log_event(self, task_id: int, reason: str) -> None:
        """Add a line to a task's history without changing its state (a decision about it)."""
        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute(sql.TASK_STATE, (task_id,)).fetchone()
            if row is not None:
                conn.execute(sql.LOG_EVENT,
                             (task_id, self.clock.now(), row[0], row[0], reason))
        self._call(op)

    def request_preempt(self, task_id: int, reason: str) -> None:
        """Ask whichever engine holds ``task_id`` to suspend it at its next safe step."""
        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute(sql.TASK_STATE, (task_id,)).fetchone()
            if row is None:
                raise UnknownTask(task_id)
            if row[0] != "running":
                raise Refused(f"task {task_id} is {row[0]}; only a running task can be "
                              "preempted")
            conn.execute(sql.REQUEST_PREEMPT,
                         (reason, task_id))
        self._call(op)

    # -- metrics and settings kept in the store ------------------------------------------

    def record_minute(self, minute: int, data: dict[str, Any], *, keep_days: float = 14.0,
                      snapshot: dict[str, Any] | None = None) -> None:
        """Keep one row of metrics per minute (older than ``keep_days`` are dropped)."""
        text = json.dumps(data, ensure_ascii=False, default=str)
        snap = json.dumps(snapshot, ensure_ascii=False, default=str) if snapshot else None

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(sql.SET_METRICS_MINUTE,
                         (minute, text))
            conn.execute(sql.DROP_METRICS_BEFORE,
                         (minute - int(keep_days * 1440),))
            if snap is not None:
                self._set_meta(conn, "engine_snapshot", snap)
        self._call(op)

    def set_meta(self, name: str, value: str) -> None:
        self._call(lambda c: self._set_meta(c, name, value))

    @staticmethod
    def _set_meta(conn: sqlite3.Connection, name: str, value: str) -> None:
        conn.execute(sql.SET_META, (name, value))

    # -- capabilities and page reads of the Store protocol (core.store.base) -------------

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

    # --- #19 notifications ----------------------------------------------------------------

    def outbox(self) -> SqliteOutbox:
        """The notification outbox on this file (:class:`core.notify.Outbox`)."""
        from .outbox import SqliteOutbox

        return SqliteOutbox(self)

class Submission(NamedTuple):
    """A checked task of a batch, ready to insert (what ``_op_submit`` needs of it)."""

    key: str | None
    type: str
    shop_id: int
    base: float
    urgency: float
    urgency_fixed: int
    urgency_next_at: float | None
    deadline: float | None
    spec: str
    """The payload as stored (JSON)."""
    max_attempts: int
    static: float
    """Priority points that do not age (base, urgency, bonus)."""
    urgent: bool
    """Past the preemption threshold: may use the backlog's urgent reserve."""
    start_at: float


_PAYLOAD_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""One encoder for every payload (``json.dumps`` with options builds one per call)."""


def _iso(ts: float) -> str:
    """A moment for a task's history line (UTC, seconds)."""
    from datetime import UTC, datetime
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
