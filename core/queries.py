"""Read-only queries for the operator console's tables: sorted, filtered pages of tasks.

The console never loads a whole table. A page is read with *keyset* pagination: the cursor is
the last row's sort values, and the next page is "the rows after this cursor in this order",
which an index serves in O(log n + page) however deep the page is (an ``OFFSET`` would walk
every row before it). With 1,000,000 queued tasks the first page and every later one cost the
same.

Each view names the task states it shows and the sort orders it offers; every order ends with
the task id, so it is total and a cursor is unambiguous. Every column of a view's table has
its order (#15). On SQLite, score, id and history's finish time are served by an index
(``tasks_ready``, ``tasks_state``, ``tasks_finished``); the other orders, read only when an
operator clicks a header, are a top-N sort of the view's states after the cursor (SQLite's
sorter keeps ``limit`` rows) — still keyset pages, just not a seek. On Redis every order is a
range of a sorted set (:mod:`core.store.redis.sorts`). A multi-state view (history) reads each
state and merges the pages.

The same functions serve every store: the reads are :class:`core.store.base.Store` methods,
SQL in :mod:`core.store.sqlite.pages` and the Redis key layout in
:mod:`core.store.redis.pages`, with the same rows, order and cursors (row types and order in
:mod:`core.store.pages`).

All functions block (they read the database): call them off any event loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .config import Settings
from .errors import InvalidInput, SpecError
from .flows import FlowRegistry
from .store import TaskEvent, TaskRecord
from .store.base import Store
from .store.pages import (
    Cursor,
    ShopRow,
    TaskFilter,
    TaskPage,
    TaskRow,
    order_of,
)

VIEWS: dict[str, tuple[str, ...]] = {
    "pending": ("queued",),
    "in_flight": ("running",),
    "suspended": ("suspended",),
    "quarantine": ("quarantined",),
    "waiting_human": ("waiting_human",),
    "history": ("done", "failed", "cancelled"),
    "scheduled": ("scheduled",),  # #18 delayed tasks, waiting for their time
}
"""Console views and the task states each shows."""

SortName = Literal["score", "id", "type", "shop", "platform", "state", "reason", "error_class",
                   "error", "waited", "since", "deadline", "joins", "attempts", "hard",
                   "finished", "took"]
_COMMON: tuple[SortName, ...] = ("id", "type", "shop", "platform")
SORTS: dict[str, tuple[SortName, ...]] = {
    "pending": ("score", *_COMMON, "waited", "deadline", "attempts", "hard", "reason"),
    "in_flight": ("score", *_COMMON, "since", "attempts"),
    "suspended": ("score", *_COMMON, "since", "attempts", "error_class", "error"),
    "quarantine": ("id", "score", *_COMMON[1:], "since", "attempts", "error_class", "error"),
    "waiting_human": ("id", "score", *_COMMON[1:], "since", "attempts", "error_class",
                      "error"),
    "history": ("finished", *_COMMON, "state", "took", "attempts", "error_class", "error"),
    "scheduled": ("id", "type", "shop", "platform", "joins", "deadline", "reason"),
}
"""Sort orders each view offers (one per column of its table); the first is its default.
``id`` ascending is oldest first. The orders themselves are in :mod:`core.store.pages`."""

DEFAULT_DESCENDING: dict[tuple[str, str], bool] = {("history", "id"): True}
"""Sorts whose default direction in a view is the reverse of their natural one (history by id:
newest first). History's default sort, finish time, is newest first by nature."""


@dataclass(frozen=True)
class StepRow:
    """One step of a task's flow and where the task stands on it."""

    index: int
    label: str
    action: str
    write: bool
    interruptible: bool
    status: Literal["done", "current", "todo", "unknown"]
    verify: str = ""
    """A write step's ``verify`` in words ("#sent visible, containing 'ok'"); "" when it
    declares none (then nothing can check a write of unknown outcome but a person)."""


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


def _check_view(view: str) -> tuple[str, ...]:
    try:
        return VIEWS[view]
    except KeyError:
        raise InvalidInput("view", f"unknown view {view!r} ({', '.join(VIEWS)})") from None


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
    order = order_of(sort, descending)
    return store.task_page(states, sort=sort, descending=descending, order=order,
                           flt=flt or TaskFilter(), after=after, limit=limit)


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
    return store.count_filtered(states, flt, cap)


def view_counts(store: Store) -> dict[str, int]:
    """Every view's task count from one read of the per-state counters (exact, O(1)), and
    the open tickets under ``"tickets"``.

    The console reads this once per refresh and feeds both the views' titles and the status
    bar from it, so the two never disagree and a hidden view's count is as fresh as a shown one.
    """
    counts = store.counts()
    out = {view: sum(counts.get(s, 0) for s in states) for view, states in VIEWS.items()}
    out["tickets"] = store.ticket_book().open_count()
    return out


def task_rows(store: Store, ids: Sequence[int]) -> dict[int, TaskRow]:
    """Fresh snapshots of these tasks (missing ids are left out)."""
    return store.task_rows(ids)


def shop_rows(store: Store) -> list[ShopRow]:
    """Every shop with its queued, running and waiting-for-a-person counts.

    Each count is a range of a per-shop index (no scan of other shops' work).
    """
    return store.shop_rows()


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
            v = step.verify
            steps.append(StepRow(index=i, label=step.name or step.label,
                                 action=getattr(step, "action", "step"), write=step.write,
                                 interruptible=step.interruptible, status=status,
                                 verify="" if v is None else v.locator + (
                                     f" visible, containing {v.text!r}" if v.text is not None
                                     else " visible")))
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
