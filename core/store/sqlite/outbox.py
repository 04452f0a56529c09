"""The SQLite store's notification outbox (#19): :class:`core.notify.Outbox` on two tables.

``outbox`` holds one row per (target, event): unclaimed (``batch_id`` NULL), claimed into a
batch (``batch_id`` set, ``next_at`` = when it may be tried), sent (``sent_at``) or given up.
Sent and given-up rows stay :data:`KEEP_DAYS` days so a late duplicate of the same event is
still refused by ``UNIQUE (target, event_id)``, then are pruned. ``outbox_targets`` holds each
target's health for the console (failing since, last error, given up, last sent).

Every change runs on the store's writer thread, one transaction each. :meth:`due_batch`
claims atomically: a batch taken from the oldest unclaimed events gets ``next_at = now +
claim_s`` — a lease: another dispatcher (another process on the same file) sees it as not
due until the lease ends, so two dispatchers never send the same batch at the same time; if
the one holding it dies between send and mark, the batch goes again with the same id once the
lease has passed (at-least-once; the id lets the receiver drop the duplicate).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from ...notify.messages import NotifyEvent, message_id
from ...notify.outbox import Batch, Pending, TargetHealth


class _Store(Protocol):
    """What the outbox needs of :class:`~core.store.sqlite.store.SqliteStore`."""

    def submit_op(self, op: Callable[[sqlite3.Connection], Any]) -> Future[Any]: ...
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]: ...

KEEP_DAYS = 7.0
CLAIM_S = 120.0

OUTBOX_TABLES = """
CREATE TABLE outbox (
    id            INTEGER PRIMARY KEY,
    target        TEXT NOT NULL,
    event_id      TEXT NOT NULL,
    event         TEXT NOT NULL,
    enqueued_at   REAL NOT NULL,
    batch_id      TEXT,
    next_at       REAL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT NOT NULL DEFAULT '',
    failing_since REAL,
    given_up      INTEGER NOT NULL DEFAULT 0,
    sent_at       REAL,
    UNIQUE (target, event_id)
);
CREATE INDEX outbox_waiting ON outbox (target, batch_id, enqueued_at, id)
    WHERE sent_at IS NULL AND given_up = 0;
CREATE INDEX outbox_batch ON outbox (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX outbox_done ON outbox (coalesce(sent_at, next_at))
    WHERE sent_at IS NOT NULL OR given_up = 1;
CREATE TABLE outbox_targets (
    target        TEXT PRIMARY KEY,
    failing_since REAL,
    last_error    TEXT NOT NULL DEFAULT '',
    given_up      INTEGER NOT NULL DEFAULT 0,
    last_sent_at  REAL
);
"""

_ENQUEUE = ("INSERT INTO outbox (target, event_id, event, enqueued_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (target, event_id) DO NOTHING")
_PENDING = """
SELECT target, min(CASE WHEN batch_id IS NULL THEN enqueued_at END),
       max(CASE WHEN batch_id IS NOT NULL THEN next_at END)
FROM outbox WHERE sent_at IS NULL AND given_up = 0 GROUP BY target"""
_CLAIMED = ("SELECT batch_id, next_at, attempts FROM outbox WHERE target = ? AND "
            "batch_id IS NOT NULL AND sent_at IS NULL AND given_up = 0 LIMIT 1")
_BATCH_EVENTS = ("SELECT event FROM outbox WHERE batch_id = ? AND sent_at IS NULL AND "
                 "given_up = 0 ORDER BY enqueued_at, id")
_OLDEST = ("SELECT id, event FROM outbox WHERE target = ? AND batch_id IS NULL AND "
           "sent_at IS NULL AND given_up = 0 ORDER BY enqueued_at, id LIMIT ?")
_HEALTH = """
SELECT t.target, coalesce(w.n, 0), h.failing_since, coalesce(h.last_error, ''),
       coalesce(h.given_up, 0), h.last_sent_at
FROM (SELECT target FROM outbox_targets UNION SELECT DISTINCT target FROM outbox
      WHERE sent_at IS NULL AND given_up = 0) t
LEFT JOIN outbox_targets h ON h.target = t.target
LEFT JOIN (SELECT target, count(*) AS n FROM outbox WHERE sent_at IS NULL AND given_up = 0
           GROUP BY target) w ON w.target = t.target
ORDER BY t.target"""
_TARGET_ROW = "INSERT INTO outbox_targets (target) VALUES (?) ON CONFLICT (target) DO NOTHING"


def event_json(event: NotifyEvent) -> str:
    return json.dumps(event.as_json(), ensure_ascii=False, sort_keys=True)


def event_of(text: str) -> NotifyEvent:
    d: dict[str, Any] = json.loads(text)
    return NotifyEvent(id=str(d["id"]), kind=str(d["kind"]), at=float(d["at"]),
                       headline=str(d.get("headline", "")), shop=str(d.get("shop", "")),
                       platform=str(d.get("platform", "")), detail=dict(d.get("detail") or {}))


def enqueue_op(conn: sqlite3.Connection, target: str, event: NotifyEvent, now: float) -> bool:
    """Add an event inside the caller's transaction (a ticket's, a quarantine's)."""
    cur = conn.execute(_ENQUEUE, (target, event.id, event_json(event), now))
    return cur.rowcount == 1


class SqliteOutbox:
    """:class:`core.notify.Outbox` on a :class:`SqliteStore` (its writer thread, its readers).

    Args:
        claim_s: how long a claimed batch is held before another dispatcher may take it.
        keep_days: how long sent and given-up rows stay (duplicate refusal), then pruned.
    """

    def __init__(self, store: _Store, *, claim_s: float = CLAIM_S,
                 keep_days: float = KEEP_DAYS) -> None:
        self._store = store
        self.claim_s = claim_s
        self.keep_s = keep_days * 86400.0

    def enqueue(self, target: str, event: NotifyEvent, *, now: float) -> bool:
        ok: bool = self._store.submit_op(
            lambda conn: enqueue_op(conn, target, event, now)).result()
        return ok

    def pending(self, *, now: float) -> dict[str, Pending]:
        rows = self._store._read(_PENDING)
        return {str(r[0]): Pending(r[1], r[2]) for r in rows}

    def due_batch(self, target: str, *, now: float, limit: int) -> Batch | None:
        claim_s = self.claim_s

        def op(conn: sqlite3.Connection) -> Batch | None:
            claimed = conn.execute(_CLAIMED, (target,)).fetchone()
            if claimed is not None:
                batch_id, next_at, attempts = claimed
                if next_at is not None and next_at > now:
                    return None
                conn.execute("UPDATE outbox SET next_at = ? WHERE batch_id = ? AND "
                             "sent_at IS NULL AND given_up = 0", (now + claim_s, batch_id))
                events = tuple(event_of(r[0]) for r in conn.execute(_BATCH_EVENTS,
                                                                     (batch_id,)))
                return Batch(str(batch_id), target, events, int(attempts))
            rows = conn.execute(_OLDEST, (target, int(limit))).fetchall()
            if not rows:
                return None
            events = tuple(event_of(r[1]) for r in rows)
            batch_id = message_id(events)
            conn.executemany("UPDATE outbox SET batch_id = ?, next_at = ? WHERE id = ?",
                             [(batch_id, now + claim_s, r[0]) for r in rows])
            return Batch(batch_id, target, events, 0)

        batch: Batch | None = self._store.submit_op(op).result()
        return batch

    def mark_sent(self, batch_id: str, *, now: float) -> None:
        keep_s = self.keep_s

        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT target FROM outbox WHERE batch_id = ? AND "
                               "sent_at IS NULL AND given_up = 0 LIMIT 1",
                               (batch_id,)).fetchone()
            if row is None:
                return  # already marked (a second dispatcher, or a repeat)
            conn.execute("UPDATE outbox SET sent_at = ?, next_at = NULL WHERE batch_id = ? "
                         "AND sent_at IS NULL AND given_up = 0", (now, batch_id))
            conn.execute(_TARGET_ROW, (row[0],))
            conn.execute("UPDATE outbox_targets SET failing_since = NULL, last_error = '', "
                         "last_sent_at = ? WHERE target = ?", (now, row[0]))
            conn.execute("DELETE FROM outbox WHERE (sent_at IS NOT NULL OR given_up = 1) "
                         "AND coalesce(sent_at, next_at) < ?", (now - keep_s,))

        self._store.submit_op(op).result()

    def mark_failed(self, batch_id: str, *, now: float, error: str,
                    next_at: float | None) -> None:
        error = error[:500]

        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT target, count(*) FROM outbox WHERE batch_id = ? AND "
                               "sent_at IS NULL AND given_up = 0 GROUP BY target",
                               (batch_id,)).fetchone()
            if row is None:
                return
            target, n = row
            if next_at is None:  # given up: next_at keeps when, for pruning
                conn.execute("UPDATE outbox SET given_up = 1, next_at = ?, last_error = ?, "
                             "attempts = attempts + 1, failing_since = coalesce("
                             "failing_since, ?) WHERE batch_id = ? AND sent_at IS NULL AND "
                             "given_up = 0", (now, error, now, batch_id))
            else:
                conn.execute("UPDATE outbox SET next_at = ?, last_error = ?, "
                             "attempts = attempts + 1, failing_since = coalesce("
                             "failing_since, ?) WHERE batch_id = ? AND sent_at IS NULL AND "
                             "given_up = 0", (next_at, error, now, batch_id))
            conn.execute(_TARGET_ROW, (target,))
            conn.execute("UPDATE outbox_targets SET failing_since = coalesce(failing_since, ?),"
                         " last_error = ?, given_up = given_up + ? WHERE target = ?",
                         (now, error, n if next_at is None else 0, target))

        self._store.submit_op(op).result()

    def health(self) -> list[TargetHealth]:
        return [TargetHealth(str(r[0]), int(r[1]), r[2], str(r[3]), int(r[4]), r[5])
                for r in self._store._read(_HEALTH)]
