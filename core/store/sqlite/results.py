"""The results table: one row per record a finished task collected (#19).

When a task is acked its results are split into records by :func:`core.export.records_of`
in the same transaction that marks it done, so the table never disagrees with ``tasks``.
A row keeps the task's shop, platform, type and flow as they were when it finished, the
record as JSON (field names as ``records_of`` gives them) and its values as one line of
``text`` that the trigram search index (:mod:`core.search`) covers.

Migration 7 creates the table and backfills it from ``tasks.results`` of done tasks; that
is Python (the record rule is), so the migration entry is a function, not SQL text.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from ...export import (
    FIXED_COLUMNS,
    ResultFilter,
    field_column,
    flow_of,
    iso_time,
    record_text,
    records_of,
)

RESULTS_TABLE = """
CREATE TABLE results (
    id          INTEGER PRIMARY KEY,
    task_id     INTEGER NOT NULL REFERENCES tasks(id),
    seq         INTEGER NOT NULL,
    shop        TEXT NOT NULL,
    platform    TEXT NOT NULL,
    type        TEXT NOT NULL,
    flow        TEXT NOT NULL DEFAULT '',
    finished_at REAL NOT NULL,
    record      TEXT NOT NULL,
    text        TEXT NOT NULL DEFAULT '',
    UNIQUE (task_id, seq)
);
CREATE INDEX results_finished ON results (finished_at, id);
CREATE INDEX results_type ON results (type, finished_at);
"""

_TASK = """
SELECT t.id, t.type, s.name AS shop, s.platform, t.spec, t.finished_at, t.results
FROM tasks t JOIN shops s ON s.id = t.shop_id WHERE t.id = ?"""

_INSERT = """
INSERT INTO results (task_id, seq, shop, platform, type, flow, finished_at, record, text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"""


def _spec(text: str | None) -> dict[str, Any]:
    try:
        spec = json.loads(text or "{}")
    except ValueError:
        return {}
    return spec if isinstance(spec, dict) else {}


def write_results(conn: sqlite3.Connection, task_id: int) -> int:
    """Replace a done task's records in the results table; returns how many (the caller's
    transaction)."""
    row = conn.execute(_TASK, (task_id,)).fetchone()
    conn.execute("DELETE FROM results WHERE task_id = ?", (task_id,))
    if row is None or not row[6]:
        return 0
    try:
        results = json.loads(row[6])
    except ValueError:
        return 0
    if not isinstance(results, dict):
        return 0
    flow = flow_of(_spec(row[4]))
    n = 0
    for seq, record in enumerate(records_of(results)):
        conn.execute(_INSERT, (task_id, seq, row[2], row[3], row[1], flow, row[5] or 0.0,
                               json.dumps(record, ensure_ascii=False), record_text(record)))
        n += 1
    return n


def backfill(conn: sqlite3.Connection) -> None:
    """Fill the results table from every done task (migration 7)."""
    ids = [r[0] for r in conn.execute(
        "SELECT id FROM tasks WHERE state = 'done' AND results IS NOT NULL ORDER BY id")]
    for task_id in ids:
        write_results(conn, task_id)


def _where(flt: ResultFilter) -> tuple[str, list[Any]]:
    conds: list[str] = []
    params: list[Any] = []
    if flt.types:
        conds.append(f"type IN ({','.join('?' * len(flt.types))})")
        params.extend(flt.types)
    if flt.shops is not None:
        # a selector's names go in a temp-free way: JSON array, one parameter
        conds.append("shop IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(flt.shops), ensure_ascii=False))
    if flt.since is not None:
        conds.append("finished_at >= ?")
        params.append(flt.since)
    if flt.until is not None:
        conds.append("finished_at < ?")
        params.append(flt.until)
    if flt.flow is not None:
        conds.append("flow = ?")
        params.append(flt.flow)
    return (" WHERE " + " AND ".join(conds)) if conds else "", params


def row_of(r: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    """An export row from a results-table row (task_id, shop, platform, type, flow,
    finished_at, record)."""
    out: dict[str, Any] = dict(zip(FIXED_COLUMNS, (r[0], r[1], r[2], r[3], r[4],
                                                   iso_time(r[5])), strict=True))
    for name, value in json.loads(r[6]).items():
        out[field_column(name)] = value
    return out


def iter_results(conn: sqlite3.Connection, flt: ResultFilter, *,
                 limit: int | None = None) -> Iterator[dict[str, Any]]:
    """Stream export rows oldest first, one cursor (constant memory; blocking)."""
    where, params = _where(flt)
    query = ("SELECT task_id, shop, platform, type, flow, finished_at, record FROM results"
             f"{where} ORDER BY finished_at, id")
    if limit is not None:
        query += " LIMIT ?"
        params.append(int(limit))
    for r in conn.execute(query, params):
        yield row_of(r)


def count_results(conn: sqlite3.Connection, flt: ResultFilter) -> int:
    where, params = _where(flt)
    return int(conn.execute(f"SELECT count(*) FROM results{where}", params).fetchone()[0])
