"""A page of the console's task tables, as every store reads it (no SQL, no Redis here).

The row types and the keyset order of :mod:`core.queries`: a page is the rows after a cursor
(the last row's sort values) in a total order; a multi-state view merges its states' pages.
Each store reads pages in its own module (:mod:`core.store.sqlite.pages`,
:mod:`core.store.redis.pages`) behind the :class:`core.store.base.Store` methods
``task_page``, ``count_filtered``, ``task_rows`` and ``shop_rows``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from .records import ShopHold

Order = tuple[tuple[str, bool], ...]
"""Sort columns and whether each is descending; every order ends with the task id."""

Value = int | float | str | None
"""One sort column's value in a cursor (``None``: the column is NULL)."""

Cursor = tuple[Value, ...]
"""The last row's values in the order's columns: the next page starts after it."""


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
    lease_owner: str | None = None
    """#15: the worker holding a running task (``host/pid/nonce``): whose task it is."""


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
    tags: tuple[str, ...] = ()
    """#18: the shop's tags."""
    hold: ShopHold | None = None
    """#15: the live hold on the shop (a person's takeover), read with the row; ``None`` when
    none, or when it ran out."""


_ORDERS: dict[str, tuple[tuple[str, bool], ...]] = {
    # sort → (column, descending) in its natural direction (the header's "ascending" arrow);
    # every order ends with the id, so it is total. Columns are TaskRow attributes, plus
    # "took" (finish minus start, see sort_value). Only an order's first column may be NULL.
    "score": (("band", True), ("prio_key", True), ("id", False)),
    "id": (("id", False),),
    "type": (("type", False), ("id", False)),
    "shop": (("shop", False), ("id", False)),
    "platform": (("platform", False), ("id", False)),
    "state": (("state", False), ("id", False)),
    "reason": (("state_reason", False), ("id", False)),
    "error_class": (("error_class", False), ("id", False)),
    "error": (("last_error", False), ("id", False)),
    # waited / since: the shortest first (newest created / changed), as the columns read
    "waited": (("created_at", True), ("id", False)),
    "since": (("updated_at", True), ("id", False)),
    "deadline": (("deadline", False), ("id", False)),
    "joins": (("not_before", False), ("id", False)),
    "attempts": (("attempts", False), ("id", False)),
    "hard": (("band", True), ("id", False)),
    # finished: newest first (history's default), ties newest id first
    "finished": (("finished_at", True), ("id", True)),
    "took": (("took", False), ("id", False)),
}

NULLABLE = frozenset({"deadline", "error_class", "last_error", "finished_at", "took"})
"""Sort columns that may be NULL (``None``). NULL sorts after every value (last in an
ascending order, first in a descending one), in every store."""

TEXT = frozenset({"type", "shop", "platform", "state", "state_reason", "error_class",
                  "last_error"})
"""Sort columns holding text: compared by code point (SQLite's BINARY collation on UTF-8
orders the same way)."""

assert all(c not in NULLABLE for o in _ORDERS.values() for c, _ in o[1:]), \
    "only the first column of an order may be NULL (the keyset ranges rely on it)"


def order_of(sort: str, descending: bool) -> tuple[tuple[str, bool], ...]:
    """The sort's columns; ``descending`` reverses the sort's natural direction."""
    try:
        base = _ORDERS[sort]
    except KeyError:
        raise InvalidInput("sort", f"unknown sort {sort!r} ({', '.join(_ORDERS)})") from None
    # The natural direction of "score" is best first; of "id", oldest first.
    return tuple((c, d != descending) for c, d in base)


def sort_value(row: TaskRow, column: str) -> Value:
    """A row's value in one sort column (``None`` for NULL)."""
    if column == "took":
        if row.finished_at is None:
            return None
        return row.finished_at - (row.started_at if row.started_at is not None
                                  else row.created_at)
    v = getattr(row, column)
    if isinstance(v, bool):
        return int(v)
    return v  # type: ignore[no-any-return]


def sort_values(row: TaskRow, order: tuple[tuple[str, bool], ...]) -> Cursor:
    """The row's cursor in this order: its values in the order's columns."""
    return tuple(sort_value(row, c) for c, _ in order)


class _Reversed:
    """A sort key element that compares the other way round (a descending column)."""

    __slots__ = ("v",)

    def __init__(self, v: tuple[Any, ...]) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.v == other.v

    def __lt__(self, other: _Reversed) -> bool:
        return other.v < self.v

    def __gt__(self, other: _Reversed) -> bool:
        return self.v < other.v

    def __le__(self, other: _Reversed) -> bool:
        return not self.v < other.v

    def __ge__(self, other: _Reversed) -> bool:
        return not other.v < self.v

    __hash__ = None  # type: ignore[assignment]


def after_cursor_key(values: Cursor, order: tuple[tuple[str, bool], ...]) -> tuple[Any, ...]:
    """Sort values as a key that ascends in the order: NULL after every value, descending
    columns compared the other way round."""
    out: list[Any] = []
    for v, (_, d) in zip(values, order, strict=True):
        k = (1,) if v is None else (0, v)
        out.append(_Reversed(k) if d else k)
    return tuple(out)


def merge_page(per_state: list[list[TaskRow]], order: tuple[tuple[str, bool], ...],
               limit: int) -> TaskPage:
    """One page from each state's rows (each already in ``order``, at most ``limit``):
    merged in order, with the cursor for the next page (any store)."""
    if len(per_state) == 1:
        merged = per_state[0]
    else:
        merged = list(heapq.merge(
            *per_state, key=lambda row: after_cursor_key(sort_values(row, order), order)))
    page = merged[:limit]
    more = len(merged) > limit or any(len(p) >= limit for p in per_state)
    cursor = sort_values(page[-1], order) if page and more else None
    return TaskPage(tuple(page), cursor)
