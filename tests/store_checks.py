"""Checks tests run on a store's storage itself, beside the store (not through it)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from core.store.redis.keys import TASK_STATES


def sqlite_integrity(path: Path) -> str:
    """SQLite's ``PRAGMA integrity_check`` of the file at ``path`` (``ok`` when sound)."""
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def redis_real_counts(store: Any) -> dict[str, int]:
    """A Redis store's tasks per state recounted from the task hashes themselves (O(tasks)),
    to compare with the counts its scripts keep."""
    r, k = store.client, store.keys
    counts = {s: 0 for s in TASK_STATES}
    ids = r.zrange(k.tasks, 0, -1)
    pipe = r.pipeline(transaction=False)
    for tid in ids:
        pipe.hget(k.task(tid), "state")
    for st in pipe.execute():
        if st is not None:
            counts[st] = counts.get(st, 0) + 1
    return counts
