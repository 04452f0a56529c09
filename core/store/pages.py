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

from ..errors import InvalidInput

Order = tuple[tuple[str, bool], ...]
"""Sort columns and whether each is descending; every order ends with the task id."""

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
    tags: tuple[str, ...] = ()
    """#18: the shop's tags."""


_ORDERS: dict[str, tuple[tuple[str, bool], ...]] = {
    # (column, descending); every order ends with the id, so it is total.
    "score": (("band", True), ("prio_key", True), ("id", False)),
    "id": (("id", False),),
}


def order_of(sort: str, descending: bool) -> tuple[tuple[str, bool], ...]:
    """The sort's columns; ``descending`` reverses the sort's natural direction."""
    try:
        base = _ORDERS[sort]
    except KeyError:
        raise InvalidInput("sort", f"unknown sort {sort!r} ({', '.join(_ORDERS)})") from None
    # The natural direction of "score" is best first; of "id", oldest first.
    return tuple((c, d != descending) for c, d in base)


def sort_values(row: TaskRow, order: tuple[tuple[str, bool], ...]) -> Cursor:
    return tuple(int(getattr(row, c)) for c, _ in order)


def after_cursor_key(values: Cursor, order: tuple[tuple[str, bool], ...]) -> tuple[int, ...]:
    """Sort values as a key that ascends in the order (descending columns negated)."""
    return tuple(-v if d else v for v, (_, d) in zip(values, order, strict=True))


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
