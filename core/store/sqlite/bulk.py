"""Loading a million tasks at once, for the benchmarks: not a way to submit work.

:func:`load_rows` skips everything :meth:`SqliteStore.submit_many` checks (the task's fields,
its flow, the backlog limit, idempotency keys), so only the benchmarks in ``bench/`` call it,
with rows they built themselves. :func:`group_commit_stats` tells them how many operations
each commit of the writer thread carried.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from . import sql
from .store import SqliteStore

BATCH = 10_000
"""Rows per ``executemany``."""


def load_rows(store: SqliteStore, rows: Iterable[dict[str, Any]]) -> int:
    """Insert queued task rows in one transaction; returns how many.

    Each row needs ``type``, ``shop_id``, ``base``, ``spec`` (JSON text); ``key``,
    ``urgency``, ``created_at``, ``max_attempts`` and ``not_before`` are optional (a
    ``not_before`` ahead of now makes the row ``scheduled``, aging from then).
    """
    now = store.clock.now()
    max_attempts = store.settings.queue.max_attempts

    def op(conn: sqlite3.Connection) -> int:
        n = 0
        batch: list[tuple[Any, ...]] = []
        for r in rows:
            created = r.get("created_at", now)
            start = r.get("not_before", created)
            key = store._key(r["base"], r.get("urgency", 0.0), 0, 0.0, start)
            batch.append((r.get("key"), r["type"], r["shop_id"],
                          "scheduled" if start > now else "queued", r["base"],
                          r.get("urgency", 0.0), key, created, now, start, start,
                          r.get("max_attempts", max_attempts), r["spec"]))
            if len(batch) >= BATCH:
                conn.executemany(sql.INSERT_TASK_BULK, batch)
                n += len(batch)
                batch = []
        if batch:
            conn.executemany(sql.INSERT_TASK_BULK, batch)
            n += len(batch)
        return n

    return int(store._call(op))


def group_commit_stats(store: SqliteStore) -> tuple[int, int]:
    """(commits, operations) of the store's writer so far: operations per commit shows group
    commit working."""
    w = store._writer_or_refuse()
    return w.commits, w.ops
