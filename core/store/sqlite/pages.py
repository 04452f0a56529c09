"""The console's page reads in SQL: the SQLite store's side of
:meth:`core.store.base.Store.task_page` and its siblings (row types and order in
:mod:`core.store.pages`; the arguments are checked by :mod:`core.queries`).

Each read is a keyset range on an index: ``tasks_ready`` for score, ``tasks_state`` for id,
``tasks_finished`` for history's finish time (see :mod:`core.queries` for why). The other
orders (#15: every column of the console's tables) are a top-N sort of the state's rows after
the cursor: measured at 100,000 rows a state (``bench/console_sort.py``), they were not worth
an index each on the queue's write path. All functions block: call them off any event loop.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from ...clock import Clock
from ...config import Settings
from ...priority import score_from_key
from ..pages import (
    NULLABLE,
    Cursor,
    Order,
    ShopRow,
    TaskFilter,
    TaskPage,
    TaskRow,
    merge_page,
)
from . import sql
from .holds import live_hold


class _Reader(Protocol):
    """What these reads need of :class:`core.store.sqlite.store.SqliteStore`."""

    settings: Settings
    clock: Clock

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]: ...


_ROW_COLUMNS = ("t.id, t.key, t.type, s.name AS shop, s.platform, s.domain, t.state, "
                "t.state_reason, t.prio_key, t.band, t.preemptible, t.created_at, t.updated_at, "
                "t.not_before, t.deadline, t.attempts, t.max_attempts, t.started_at, "
                "t.finished_at, t.error_class, t.last_error, t.lease_owner")


def _filter_sql(flt: TaskFilter) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if flt.shop:
        where.append("t.shop_id = (SELECT id FROM shops WHERE name = ?)")
        params.append(flt.shop)
    if flt.platform:
        where.append("t.shop_id IN (SELECT id FROM shops WHERE platform = ?)")
        params.append(flt.platform)
    if flt.type:
        where.append("t.type = ?")
        params.append(flt.type)
    text = flt.text.strip()
    if text:
        like = f"%{text.replace('\\', '\\\\').replace('%', '\\%').replace('_', '\\_')}%"
        cond = ("(t.type LIKE ? ESCAPE '\\' OR s.name LIKE ? ESCAPE '\\' OR "
                "t.state_reason LIKE ? ESCAPE '\\' OR coalesce(t.last_error, '') LIKE ? "
                "ESCAPE '\\' OR coalesce(t.key, '') LIKE ? ESCAPE '\\'")
        params += [like] * 5
        digits = text.lstrip("#")
        if digits.isdigit():
            cond += " OR t.id = ?"
            params.append(int(digits))
        where.append(cond + ")")
    return where, params


_EXPR = {"shop": "s.name", "platform": "s.platform",
         "took": "(t.finished_at - coalesce(t.started_at, t.created_at))"}
"""Sort columns that are not a ``tasks`` column of the same name."""


def _expr(column: str) -> str:
    return _EXPR.get(column, f"t.{column}")


def _ranges(order: Order, cursor: Cursor | None) -> Iterator[tuple[str, list[Any], str]]:
    """The rows after ``cursor`` as index ranges read one after another: ``(condition,
    parameters, ORDER BY)`` each.

    Rows after (c1, c2, c3) in lexicographic order are: c1 = v1 and c2 = v2 and c3 beyond v3;
    then c1 = v1 and c2 beyond v2; then c1 beyond v1 — in that order. Reading those ranges
    one after another keeps every read an index seek (where an index serves the order),
    which a single ``OR`` would not. NULL sorts after every value (:data:`NULLABLE`), so
    "beyond" a value of a nullable column is two ranges: the greater values, then the NULLs
    (ascending); NULLs first, then the values (descending). Only an order's first column may
    be NULL, so within a range the remaining columns sort plainly.
    """
    def order_sql(cols: Order) -> str:
        return ", ".join(f"{_expr(c)} {'DESC' if d else 'ASC'}" for c, d in cols)

    if cursor is None:
        col, desc = order[0]
        if col not in NULLABLE:
            yield "", [], order_sql(order)
            return
        e = _expr(col)
        parts = [f"{e} IS NULL", f"{e} IS NOT NULL"]
        for cond in (parts if desc else parts[::-1]):
            yield cond, [], order_sql(order)
        return
    for i in range(len(order) - 1, -1, -1):
        prefix: list[str] = []
        params: list[Any] = []
        for (c, _), v in zip(order[:i], cursor, strict=False):
            if v is None:
                prefix.append(f"{_expr(c)} IS NULL")
            else:
                prefix.append(f"{_expr(c)} = ?")
                params.append(v)
        col, desc = order[i]
        e, v = _expr(col), cursor[i]
        beyond: list[tuple[str, list[Any]]] = []
        if v is None:
            if desc:
                beyond.append((f"{e} IS NOT NULL", []))
        else:
            beyond.append((f"{e} {'<' if desc else '>'} ?", [v]))
            if col in NULLABLE and not desc:
                beyond.append((f"{e} IS NULL", []))
        for cond, cparams in beyond:
            yield " AND ".join([*prefix, cond]), params + cparams, order_sql(order[i:])


def _row(r: Any, now: float, aging_per_s: float) -> TaskRow:
    return TaskRow(
        id=r["id"], key=r["key"], type=r["type"], shop=r["shop"], platform=r["platform"],
        domain=r["domain"], state=r["state"], state_reason=r["state_reason"],
        score=score_from_key(r["prio_key"], now, aging_per_s), hard_aged=bool(r["band"]),
        preemptible=bool(r["preemptible"]), created_at=r["created_at"],
        updated_at=r["updated_at"], not_before=r["not_before"], deadline=r["deadline"],
        attempts=r["attempts"], max_attempts=r["max_attempts"], started_at=r["started_at"],
        finished_at=r["finished_at"], error_class=r["error_class"],
        last_error=r["last_error"], band=int(r["band"]), prio_key=int(r["prio_key"]),
        lease_owner=r["lease_owner"])


def _index_hint(state: str, sort: str, flt: TaskFilter) -> str:
    """The index that serves this order. Without statistics SQLite prefers ``tasks_state``
    for ``state = 'queued'`` and then sorts a million rows; a hint keeps every page a seek."""
    if sort == "id":
        return "INDEXED BY tasks_state"
    if sort == "finished" and state in ("done", "failed", "cancelled"):
        return "INDEXED BY tasks_finished"  # #15: history's default order, a range
    if sort == "score" and state == "queued":
        return "INDEXED BY tasks_shop_ready" if flt.shop else "INDEXED BY tasks_ready"
    return ""


def task_page(store: _Reader, states: tuple[str, ...], *, sort: str, order: Order,
              flt: TaskFilter, after: Cursor | None, limit: int) -> TaskPage:
    """One page of tasks in these states, in ``order``, after the cursor ``after``."""
    fwhere, fparams = _filter_sql(flt)
    now = store.clock.now()
    aging = store.settings.priority.aging_per_min / 60.0
    per_state: list[list[TaskRow]] = []
    conn_rows = store._read  # one reader connection per thread
    for state in states:
        got: list[TaskRow] = []
        hint = _index_hint(state, sort, flt)
        for cond, cparams, order_sql in _ranges(order, after):
            # The state is a literal (from VIEWS, never user input): SQLite can use a partial
            # index only when the query's WHERE names its condition literally.
            where = [f"t.state = '{state}'", *fwhere] + ([cond] if cond else [])
            query = (f"SELECT {_ROW_COLUMNS} FROM tasks t {hint} JOIN shops s ON "
                     f"s.id = t.shop_id WHERE {' AND '.join(where)} ORDER BY {order_sql} LIMIT ?")
            rows = conn_rows(query, (*fparams, *cparams, limit - len(got)))
            got += [_row(r, now, aging) for r in rows]
            if len(got) >= limit:
                break
        per_state.append(got)
    return merge_page(per_state, order, limit)


def count_filtered(store: _Reader, states: tuple[str, ...], flt: TaskFilter, cap: int
                   ) -> tuple[int, bool]:
    """Tasks in these states matching ``flt``, counted up to ``cap + 1``: ``(n, exact)``."""
    fwhere, fparams = _filter_sql(flt)
    marks = ",".join("?" * len(states))
    query = (f"SELECT count(*) FROM (SELECT 1 FROM tasks t JOIN shops s ON s.id = t.shop_id "
             f"WHERE t.state IN ({marks}) {''.join(' AND ' + w for w in fwhere)} LIMIT ?)")
    n = int(store._read(query, (*states, *fparams, cap + 1))[0][0])
    return (cap, False) if n > cap else (n, True)


def task_rows(store: _Reader, ids: Sequence[int]) -> dict[int, TaskRow]:
    """Fresh snapshots of these tasks (missing ids are left out)."""
    ids = list(ids)
    out: dict[int, TaskRow] = {}
    now = store.clock.now()
    aging = store.settings.priority.aging_per_min / 60.0
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for r in store._read(f"SELECT {_ROW_COLUMNS} FROM tasks t JOIN shops s ON "
                            f"s.id = t.shop_id WHERE t.id IN ({marks})", chunk):
            row = _row(r, now, aging)
            out[row.id] = row
    return out


def shop_rows(store: _Reader) -> list[ShopRow]:
    """Every shop with its queued, running and waiting-for-a-person counts, and its live hold
    (#15 takeover) from the same statement."""
    rows = store._read(
        sql.SHOP_ROWS)
    waiting = {r[0]: int(r[1]) for r in store._read(
        sql.WAITING_HUMAN_PER_SHOP)}
    now = store.clock.now()
    return [ShopRow(name=r[0], platform=r[1], domain=r[2], base_url=r[3], paused=bool(r[4]),
                    domain_paused=bool(r[5]), queued=int(r[6]), running=int(r[7]),
                    waiting=waiting.get(r[0], 0), tags=tuple(json.loads(r[8] or "[]")),
                    hold=live_hold(r[0], r[9], now))
            for r in rows]
