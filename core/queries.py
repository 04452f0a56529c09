"""Read-only queries for the operator console's tables: sorted, filtered pages of tasks.

The console never loads a whole table. A page is read with *keyset* pagination: the cursor is
the last row's sort values, and the next page is "the rows after this cursor in this order",
which an index serves in O(log n + page) however deep the page is (an ``OFFSET`` would walk
every row before it). With 1,000,000 queued tasks the first page and every later one cost the
same.

Each view names the task states it shows and the sort orders it offers; every order ends with
the task id, so it is total and a cursor is unambiguous. The orders are the ones an index
serves (``tasks_ready`` for score, ``tasks_state`` for id); other orders would sort the whole
table and are not offered. A multi-state view (history) reads each state through its index and
merges the pages.

The same functions serve a :class:`RedisStore` (several machines on one Redis): each public
function reads SQL on a :class:`SqliteStore` and otherwise the Redis key layout through
:mod:`core.store.redis_queries`, with the same rows, order and cursors.

All functions block (they read the database): call them off any event loop.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .config import Settings
from .errors import InvalidInput, SpecError
from .flows import FlowRegistry
from .priority import score_from_key
from .store import SqliteStore, TaskEvent, TaskRecord
from .store.base import Store

VIEWS: dict[str, tuple[str, ...]] = {
    "pending": ("queued",),
    "in_flight": ("running",),
    "suspended": ("suspended",),
    "quarantine": ("quarantined",),
    "waiting_human": ("waiting_human",),
    "history": ("done", "failed", "cancelled"),
}
"""Console views and the task states each shows."""

SortName = Literal["score", "id"]
_ORDERS: dict[str, tuple[tuple[str, bool], ...]] = {
    # (column, descending); every order ends with the id, so it is total.
    "score": (("band", True), ("prio_key", True), ("id", False)),
    "id": (("id", False),),
}
SORTS: dict[str, tuple[SortName, ...]] = {
    "pending": ("score", "id"),
    "in_flight": ("score", "id"),
    "suspended": ("score", "id"),
    "quarantine": ("id", "score"),
    "waiting_human": ("id", "score"),
    "history": ("id",),
}
"""Sort orders each view offers; the first is its default. ``id`` ascending is oldest first."""

DEFAULT_DESCENDING: dict[tuple[str, str], bool] = {("history", "id"): True}
"""Views whose default direction is reversed (history: newest first)."""

Cursor = tuple[int, ...]


@dataclass(frozen=True)
class TaskFilter:
    """What a table shows of its view: exact shop, platform and type; text in id, key, type,
    shop, reason or error. Empty means no condition."""

    shop: str = ""
    platform: str = ""
    type: str = ""
    text: str = ""

    @property
    def empty(self) -> bool:
        return not (self.shop or self.platform or self.type or self.text.strip())


@dataclass(frozen=True)
class TaskRow:
    """One line of a task table: a snapshot, no spec, no checkpoint (see :func:`task_detail`)."""

    id: int
    key: str | None
    type: str
    shop: str
    platform: str
    domain: str
    state: str
    state_reason: str
    score: float
    hard_aged: bool
    preemptible: bool
    created_at: float
    updated_at: float
    not_before: float
    deadline: float | None
    attempts: int
    max_attempts: int
    started_at: float | None
    finished_at: float | None
    error_class: str | None
    last_error: str | None
    band: int = 0
    prio_key: int = 0


@dataclass(frozen=True)
class TaskPage:
    """Rows in order, and the cursor for the next page (``None``: there is no more)."""

    rows: tuple[TaskRow, ...]
    cursor: Cursor | None


@dataclass(frozen=True)
class ShopRow:
    """A shop with its work right now."""

    name: str
    platform: str
    domain: str
    base_url: str
    paused: bool
    domain_paused: bool
    queued: int
    running: int
    waiting: int


@dataclass(frozen=True)
class StepRow:
    """One step of a task's flow and where the task stands on it."""

    index: int
    label: str
    action: str
    write: bool
    interruptible: bool
    status: Literal["done", "current", "todo", "unknown"]


@dataclass(frozen=True)
class TaskDetail:
    """Everything the detail pane shows about one task."""

    record: TaskRecord
    events: list[TaskEvent]
    steps: list[StepRow]
    flow_error: str = ""


@dataclass(frozen=True)
class FilterChoices:
    shops: list[str] = field(default_factory=list)
    platforms: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)


_ROW_COLUMNS = ("t.id, t.key, t.type, s.name AS shop, s.platform, s.domain, t.state, "
                "t.state_reason, t.prio_key, t.band, t.preemptible, t.created_at, t.updated_at, "
                "t.not_before, t.deadline, t.attempts, t.max_attempts, t.started_at, "
                "t.finished_at, t.error_class, t.last_error")


def _check_view(view: str) -> tuple[str, ...]:
    try:
        return VIEWS[view]
    except KeyError:
        raise InvalidInput("view", f"unknown view {view!r} ({', '.join(VIEWS)})") from None


def _order(sort: str, descending: bool) -> tuple[tuple[str, bool], ...]:
    """The sort's columns; ``descending`` reverses the sort's natural direction."""
    try:
        base = _ORDERS[sort]
    except KeyError:
        raise InvalidInput("sort", f"unknown sort {sort!r} ({', '.join(_ORDERS)})") from None
    # The natural direction of "score" is best first; of "id", oldest first.
    return tuple((c, d != descending) for c, d in base)


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


def _after(order: tuple[tuple[str, bool], ...], cursor: Cursor | None
           ) -> Iterator[tuple[str, list[Any]]]:
    """Conditions for "after ``cursor``", split so each one is a single index range.

    Rows after (c1, c2, c3) in lexicographic order are: c1 = v1 and c2 = v2 and c3 beyond v3;
    then c1 = v1 and c2 beyond v2; then c1 beyond v1 — in that order. Reading those ranges
    one after another keeps every read an index seek, which a single ``OR`` would not.
    """
    if cursor is None:
        yield "", []
        return
    for i in range(len(order) - 1, -1, -1):
        parts = [f"t.{c} = ?" for c, _ in order[:i]]
        col, desc = order[i]
        parts.append(f"t.{col} {'<' if desc else '>'} ?")
        yield " AND ".join(parts), list(cursor[: i + 1])


def _row(r: Any, now: float, aging_per_s: float) -> TaskRow:
    return TaskRow(
        id=r["id"], key=r["key"], type=r["type"], shop=r["shop"], platform=r["platform"],
        domain=r["domain"], state=r["state"], state_reason=r["state_reason"],
        score=score_from_key(r["prio_key"], now, aging_per_s), hard_aged=bool(r["band"]),
        preemptible=bool(r["preemptible"]), created_at=r["created_at"],
        updated_at=r["updated_at"], not_before=r["not_before"], deadline=r["deadline"],
        attempts=r["attempts"], max_attempts=r["max_attempts"], started_at=r["started_at"],
        finished_at=r["finished_at"], error_class=r["error_class"],
        last_error=r["last_error"], band=int(r["band"]), prio_key=int(r["prio_key"]))


def _sort_values(row: TaskRow, order: tuple[tuple[str, bool], ...]) -> Cursor:
    return tuple(int(getattr(row, c)) for c, _ in order)


def _after_cursor_key(values: Cursor, order: tuple[tuple[str, bool], ...]) -> tuple[int, ...]:
    """Sort values as a key that ascends in the order (descending columns negated)."""
    return tuple(-v if d else v for v, (_, d) in zip(values, order, strict=True))


def _redis_queries() -> Any:
    from .store import redis_queries

    return redis_queries


def _aging_per_s(store: SqliteStore) -> float:
    return store.settings.priority.aging_per_min / 60.0


def _index_hint(state: str, sort: str, flt: TaskFilter) -> str:
    """The index that serves this order. Without statistics SQLite prefers ``tasks_state``
    for ``state = 'queued'`` and then sorts a million rows; a hint keeps every page a seek."""
    if sort == "id":
        return "INDEXED BY tasks_state"
    if state == "queued":
        return "INDEXED BY tasks_shop_ready" if flt.shop else "INDEXED BY tasks_ready"
    return ""


def task_page(store: Store, view: str, *, flt: TaskFilter | None = None,
              sort: str | None = None, descending: bool | None = None,
              after: Cursor | None = None, limit: int = 200) -> TaskPage:
    """One page of a view's tasks, in the sort's order, after ``after`` (a cursor).

    Args:
        store: the store.
        view: one of :data:`VIEWS`.
        flt: conditions on shop, platform, type and text.
        sort: one of the view's :data:`SORTS` (default: its first).
        descending: reverse the sort's natural direction (best first / oldest first).
        after: the previous page's cursor; ``None`` for the first page.
        limit: rows in the page.

    Raises:
        InvalidInput: an unknown view or sort, or a sort the view does not offer.
    """
    states = _check_view(view)
    sort = sort or SORTS[view][0]
    if sort not in SORTS[view]:
        raise InvalidInput("sort", f"the {view} view cannot be sorted by {sort} "
                           f"(only {', '.join(SORTS[view])})")
    if descending is None:
        descending = DEFAULT_DESCENDING.get((view, sort), False)
    if limit < 1:
        raise InvalidInput("limit", "must be at least 1")
    order = _order(sort, descending)
    if not isinstance(store, SqliteStore):
        redis_page: TaskPage = _redis_queries().task_page(
            store, view, states, sort, descending, order, flt or TaskFilter(), after, limit)
        return redis_page
    order_sql = ", ".join(f"t.{c} {'DESC' if d else 'ASC'}" for c, d in order)
    fwhere, fparams = _filter_sql(flt or TaskFilter())
    now = store.clock.now()
    aging = _aging_per_s(store)
    per_state: list[list[TaskRow]] = []
    conn_rows = store.read  # one reader connection per thread
    for state in states:
        got: list[TaskRow] = []
        hint = _index_hint(state, sort, flt or TaskFilter())
        for cond, cparams in _after(order, after):
            # The state is a literal (from VIEWS, never user input): SQLite can use a partial
            # index only when the query's WHERE names its condition literally.
            where = [f"t.state = '{state}'", *fwhere] + ([cond] if cond else [])
            sql = (f"SELECT {_ROW_COLUMNS} FROM tasks t {hint} JOIN shops s ON "
                   f"s.id = t.shop_id WHERE {' AND '.join(where)} ORDER BY {order_sql} LIMIT ?")
            rows = conn_rows(sql, (*fparams, *cparams, limit - len(got)))
            got += [_row(r, now, aging) for r in rows]
            if len(got) >= limit:
                break
        per_state.append(got)
    return merge_page(per_state, order, limit)


def merge_page(per_state: list[list[TaskRow]], order: tuple[tuple[str, bool], ...],
               limit: int) -> TaskPage:
    """One page from each state's rows (each already in ``order``, at most ``limit``):
    merged in order, with the cursor for the next page (any store)."""
    if len(per_state) == 1:
        merged = per_state[0]
    else:
        merged = list(heapq.merge(
            *per_state, key=lambda row: _after_cursor_key(_sort_values(row, order), order)))
    page = merged[:limit]
    more = len(merged) > limit or any(len(p) >= limit for p in per_state)
    cursor = _sort_values(page[-1], order) if page and more else None
    return TaskPage(tuple(page), cursor)


def count_tasks(store: Store, view: str, *, flt: TaskFilter | None = None,
                cap: int = 10_000) -> tuple[int, bool]:
    """How many tasks a view shows: ``(n, exact)``.

    Without a filter the count comes from the per-state counters (exact, O(1)). With one, at
    most ``cap + 1`` rows are counted, so a filter over a million tasks stays quick; then
    ``exact`` is False and ``n`` is ``cap``.
    """
    states = _check_view(view)
    flt = flt or TaskFilter()
    if flt.empty:
        counts = store.counts()
        return sum(counts.get(s, 0) for s in states), True
    if not isinstance(store, SqliteStore):
        counted: tuple[int, bool] = _redis_queries().count_tasks(store, states, flt, cap)
        return counted
    fwhere, fparams = _filter_sql(flt)
    marks = ",".join("?" * len(states))
    sql = (f"SELECT count(*) FROM (SELECT 1 FROM tasks t JOIN shops s ON s.id = t.shop_id "
           f"WHERE t.state IN ({marks}) {''.join(' AND ' + w for w in fwhere)} LIMIT ?)")
    n = int(store.read(sql, (*states, *fparams, cap + 1))[0][0])
    return (cap, False) if n > cap else (n, True)


def task_rows(store: Store, ids: Sequence[int]) -> dict[int, TaskRow]:
    """Fresh snapshots of these tasks (missing ids are left out)."""
    if not isinstance(store, SqliteStore):
        found: dict[int, TaskRow] = _redis_queries().task_rows(store, ids)
        return found
    out: dict[int, TaskRow] = {}
    now = store.clock.now()
    aging = _aging_per_s(store)
    ids = list(ids)
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for r in store.read(f"SELECT {_ROW_COLUMNS} FROM tasks t JOIN shops s ON "
                            f"s.id = t.shop_id WHERE t.id IN ({marks})", chunk):
            row = _row(r, now, aging)
            out[row.id] = row
    return out


def shop_rows(store: Store) -> list[ShopRow]:
    """Every shop with its queued, running and waiting-for-a-person counts.

    Each count is a range of a per-shop index (no scan of other shops' work).
    """
    if not isinstance(store, SqliteStore):
        shops: list[ShopRow] = _redis_queries().shop_rows(store)
        return shops
    rows = store.read(
        "SELECT s.name, s.platform, s.domain, s.base_url, s.paused, "
        "EXISTS (SELECT 1 FROM paused_domains d WHERE d.domain = s.domain) AS dpaused, "
        "(SELECT count(*) FROM tasks t INDEXED BY tasks_shop_ready WHERE t.state = 'queued' "
        "AND t.shop_id = s.id) AS q, "
        "(SELECT count(*) FROM tasks t INDEXED BY tasks_state WHERE t.state = 'running' "
        "AND t.shop_id = s.id) AS r "
        "FROM shops s ORDER BY s.name")
    waiting = {r[0]: int(r[1]) for r in store.read(
        "SELECT s.name, count(*) FROM tasks t INDEXED BY tasks_state JOIN shops s "
        "ON s.id = t.shop_id WHERE t.state = 'waiting_human' GROUP BY s.name")}
    return [ShopRow(name=r[0], platform=r[1], domain=r[2], base_url=r[3], paused=bool(r[4]),
                    domain_paused=bool(r[5]), queued=int(r[6]), running=int(r[7]),
                    waiting=waiting.get(r[0], 0)) for r in rows]


def filter_choices(store: Store) -> FilterChoices:
    """The values the console's filter boxes offer: shops, platforms, configured task types
    and types seen among queued work, domains."""
    shops = store.shops()
    types = set(store.settings.priority.types)
    return FilterChoices(
        shops=[s.name for s in shops],
        platforms=sorted({s.platform for s in shops}),
        types=sorted(types),
        domains=sorted({s.domain for s in shops}))


_registries: dict[tuple[str, ...], FlowRegistry] = {}


def _registry(settings: Settings) -> FlowRegistry:
    key = tuple(settings.flows.dirs)
    reg = _registries.get(key)
    if reg is None:
        reg = FlowRegistry.load([Path(d) for d in key])
        _registries[key] = reg
    return reg


def task_detail(store: Store, task_id: int, *, current_step: int | None = None
                ) -> TaskDetail:
    """A task with its event history and its flow's steps marked done / current / to do.

    Args:
        current_step: the step a running task is on now (from its progress events); without
            it a running task's current step is its checkpoint's next step.

    Raises:
        UnknownTask: no such task.
    """
    rec = store.task(task_id)
    events = store.events(task_id)
    steps: list[StepRow] = []
    flow_error = ""
    try:
        flow = _registry(store.settings).flow_for(rec.flow, rec.steps)
    except SpecError as exc:
        flow_error = str(exc)
    else:
        cp = rec.checkpoint or {}
        next_step = int(cp.get("next_step", 0) or 0)
        writes_done = {int(w) for w in cp.get("writes_done", []) or []}
        in_flight = cp.get("write_in_flight")
        cur = current_step if current_step is not None else next_step
        for i, step in enumerate(flow.steps):
            status: Literal["done", "current", "todo", "unknown"]
            if rec.state.value == "done" or i < next_step or i in writes_done:
                status = "done"
            elif in_flight == i:
                status = "unknown"
            elif i == cur and rec.state.value in ("running", "waiting_human", "suspended",
                                                  "quarantined", "failed"):
                status = "current"
            else:
                status = "todo"
            steps.append(StepRow(index=i, label=step.name or step.label,
                                 action=getattr(step, "action", "step"), write=step.write,
                                 interruptible=step.interruptible, status=status))
    return TaskDetail(record=rec, events=events, steps=steps, flow_error=flow_error)


def metrics_series(store: Store, *, since_minute: int = 0, limit: int = 1440
                   ) -> list[tuple[int, dict[str, Any]]]:
    """The per-minute history for the dashboard, oldest first."""
    return store.metrics_history(since_minute=since_minute, limit=limit)


def read_text_file(path: str, *, max_bytes: int = 2_000_000) -> str:
    """An evidence text file (DOM, console log), cut at ``max_bytes``; blocking."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read(max_bytes)


def read_json_file(path: str) -> Any:
    """An evidence JSON file (the step log); blocking."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


__all__ = [
    "SORTS",
    "VIEWS",
    "FilterChoices",
    "ShopRow",
    "StepRow",
    "TaskDetail",
    "TaskFilter",
    "TaskPage",
    "TaskRow",
    "count_tasks",
    "filter_choices",
    "flow_names",
    "metrics_series",
    "read_json_file",
    "read_text_file",
    "shop_rows",
    "task_detail",
    "task_page",
    "task_rows",
]


def flow_names(settings: Settings) -> list[str]:
    """Every registered flow's name (reads the flow folders once; blocking)."""
    return _registry(settings).names()
