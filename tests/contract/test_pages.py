"""#15: every column of the console's task tables sorts in the store query, in keyset pages.

For every view and every sort it offers, in both directions, paging to the end with small pages
yields every row of the view exactly once, in the order the column promises — checked against
an order computed here from the rows (not with the store's own key code): text by code point,
NULL after every value (last ascending, first descending), ties by id. Rows inserted, moved out
of the view or changed between two pages never show twice unless their own sort value moved
them, and a row that stayed put is never skipped. History defaults to finish time, newest
first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.errors import InvalidInput
from core.queries import SORTS, VIEWS, task_page, task_rows
from core.store.base import Store
from core.store.pages import TaskRow
from core.testing import FakeClock
from core.tickets import Signature
from tests.conftest import SHOPS
from tests.contract.conftest import StoreFactory
from tests.helpers import spec

TYPES = ("reply_customer", "campaign_signup", "upload_product", "collect_data")
FAST = {"synchronous": "NORMAL"}
"""These tests are about order, not durability: no fsync per write on a busy machine."""


def _took(r: TaskRow) -> float | None:
    if r.finished_at is None:
        return None
    return r.finished_at - (r.started_at if r.started_at is not None else r.created_at)


# What each sort means, written out independently of core.store.pages: (value, descending)
# in the natural direction (the header's ascending arrow); the id breaks ties.
MEANING: dict[str, tuple[list[tuple[Callable[[TaskRow], Any], bool]], bool]] = {
    "score": ([(lambda r: r.band, True), (lambda r: r.prio_key, True)], False),
    "id": ([], False),
    "type": ([(lambda r: r.type, False)], False),
    "shop": ([(lambda r: r.shop, False)], False),
    "platform": ([(lambda r: r.platform, False)], False),
    "state": ([(lambda r: r.state, False)], False),
    "reason": ([(lambda r: r.state_reason, False)], False),
    "error_class": ([(lambda r: r.error_class, False)], False),
    "error": ([(lambda r: r.last_error, False)], False),
    "waited": ([(lambda r: r.created_at, True)], False),      # shortest wait first
    "since": ([(lambda r: r.updated_at, True)], False),
    "deadline": ([(lambda r: r.deadline, False)], False),      # soonest first, none last
    "joins": ([(lambda r: r.not_before, False)], False),
    "attempts": ([(lambda r: r.attempts, False)], False),
    "hard": ([(lambda r: r.band, True)], False),
    "finished": ([(lambda r: r.finished_at, True)], True),     # newest first, ties newest id
    "took": ([(_took, False)], False),
}


def expected(rows: list[TaskRow], sort: str, descending: bool) -> list[int]:
    """The rows' ids in the sort's order (stable sorts, least significant key first)."""
    cols, id_desc = MEANING[sort]
    out = sorted(rows, key=lambda r: r.id, reverse=id_desc != descending)
    for get, desc in reversed(cols):
        # (is NULL, value): NULL after every value ascending; reversed, before every value
        out.sort(key=lambda r, g=get: (g(r) is None, g(r) if g(r) is not None else 0),  # type: ignore[misc]
                 reverse=desc != descending)
    return [r.id for r in out]


def _page_all(store: Store, view: str, sort: str, descending: bool, limit: int
              ) -> list[list[TaskRow]]:
    pages: list[list[TaskRow]] = []
    after = None
    for _ in range(500):
        page = task_page(store, view, sort=sort, descending=descending, after=after,
                         limit=limit)
        pages.append(list(page.rows))
        if page.cursor is None:
            return pages
        assert page.rows, "a page with a cursor has rows"
        after = page.cursor
    raise AssertionError("paging did not end")


def _view_rows(store: Store, view: str, n_ids: int) -> list[TaskRow]:
    rows = task_rows(store, range(1, n_ids + 1))
    return [r for r in rows.values() if r.state in VIEWS[view]]


def _fill(store: Store, clock: FakeClock) -> int:
    """Tasks in every state with ties in every column (same clock, type, shop, error) and
    NULLs (no deadline, no error, never started). Returns the number of task ids used."""
    n = 0

    def submit(k: int, **kw: Any) -> int:
        nonlocal n
        extra: dict[str, Any] = {}
        if k % 3 == 0:  # a third have a deadline, two of them the same one
            extra["deadline"] = f"2031-01-0{1 + (k % 2)}T10:00:00+00:00"
        s = spec(TYPES[k % 4], SHOPS[(k // 2) % 4][0], **extra, **kw)
        tid = store.submit(s)
        n = max(n, tid)
        return tid

    for k in range(40):
        submit(k)
        if k % 4 == 3:
            clock.advance(5)                 # four at a time share created_at
    clock.advance(31 * 60)
    submit(100)
    store.apply_thresholds()                 # the first ones are hard-aged now
    for k in range(3):
        submit(7, delay_s=600 + 300 * (k // 2))   # scheduled, two with the same start

    def claim() -> int:
        c = store.claim("w1")
        assert c is not None
        return c.id

    sig = Signature("pdd", "upload_product", "submit", "page_changed", "no #submit")
    settle: list[Callable[[int], Any]] = [
        lambda t: store.ack(t, "w1"),
        lambda t: store.ack(t, "w1"),
        lambda t: store.fail(t, "w1", error_class="site_failed", message="500 Zürich",
                             retry=False),
        lambda t: store.fail(t, "w1", error_class="site_failed", message="500 Zürich",
                             retry=False),
        lambda t: store.fail(t, "w1", error_class="layout_changed", message="no #a",
                             retry=False),
        lambda t: store.record_crash(t, "w1", error_class="browser_crashed",
                                     message="crash", quarantine=True, evidence=None),
        lambda t: store.record_crash(t, "w1", error_class="browser_crashed",
                                     message="crash 2", quarantine=True, evidence=None),
        lambda t: store.open_ticket(t, "w1", signature=sig, step=1, error="no #submit",
                                    evidence=None),
        lambda t: store.open_ticket(t, "w1", signature=sig, step=1, error="captcha",
                                    evidence=None),
        lambda t: store.fail(t, "w1", error_class="site_failed", message="503",
                             retry=True),    # back in the queue with an attempt and an error
    ]
    for i, op in enumerate(settle):
        t = claim()
        if i % 3 != 1:
            clock.advance(2)                 # some finish at the same second
        op(t)
    for i in range(3):
        clock.advance(1)
        t = claim()
        clock.advance(1 + i % 2)
        store.ack(t, "w1")
    never_ran = [r.id for r in _view_rows(store, "pending", n) if r.started_at is None]
    for tid in never_ran[-2:]:
        store.cancel(tid)                    # cancelled before it ever ran: no start
    running = [claim(), claim()]
    clock.advance(1)
    parked = [claim(), claim()]  # both claimed first: a claim resumes suspended work first
    for tid in parked:
        store.release(tid, "w1", reason="preempted", suspend=True, checkpoint={"next_step": 1})
    assert running
    clock.advance(30)
    return n + 5


def test_every_sort_of_every_view_pages_every_row_once_in_order(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(store=FAST)
    n_ids = _fill(store, clock)
    checked: set[tuple[str, str]] = set()
    for view, sorts in SORTS.items():
        rows = _view_rows(store, view, n_ids)
        assert len(rows) >= 2, (view, "the fill puts several tasks in every view")
        for sort in sorts:
            for descending in (False, True):
                want = expected(rows, sort, descending)
                for limit in (1, 2, 5, 500):
                    pages = _page_all(store, view, sort, descending, limit)
                    got = [r.id for p in pages for r in p]
                    assert got == want, (view, sort, descending, limit)
                    assert all(len(p) <= limit for p in pages)
                # A sort's order is not the id's by accident: at least one differs.
                checked.add((sort, "differs" if want != sorted(want) else "same"))
    # Each sort was seen ordering rows differently from plain ids somewhere (the fill is rich
    # enough for the check to mean something).
    assert {s for s, how in checked if how == "differs"} == {s for s, _ in checked}


def test_history_is_newest_finished_first_by_default(store_factory: StoreFactory,
                                                       clock: FakeClock) -> None:
    store = store_factory()
    first = store.submit(spec("collect_data", "pdd-1"))
    second = store.submit(spec("collect_data", "pdd-2"))
    a = store.claim("w1")
    b = store.claim("w1")
    assert a is not None and b is not None and {a.id, b.id} == {first, second}
    clock.advance(5)
    store.ack(second, "w1")          # the newer task finishes first…
    clock.advance(5)
    store.ack(first, "w1")           # …the older one last: it heads the history
    page = task_page(store, "history")
    assert [r.id for r in page.rows] == [first, second]
    assert SORTS["history"][0] == "finished"


def test_a_sort_the_view_does_not_offer_is_refused(store_factory: StoreFactory) -> None:
    store = store_factory()
    with pytest.raises(InvalidInput, match="sort"):
        task_page(store, "pending", sort="finished")
    with pytest.raises(InvalidInput, match="sort"):
        task_page(store, "history", sort="no_such_column")


@pytest.mark.parametrize("view", ["pending", "history"])
def test_changes_between_pages_neither_repeat_nor_skip_a_row(
        store_factory: StoreFactory, clock: FakeClock, view: str) -> None:
    """Between every two pages: a new task, a bumped task, one claimed and finished (it leaves
    the queue, joins the history). A row shows twice only when its own sort value moved it
    past the cursor; one that stayed in the view unchanged shows exactly once."""
    store = store_factory(store=FAST)
    n_ids = _fill(store, clock)
    k = 0

    def change() -> None:
        nonlocal k, n_ids
        k += 1
        n_ids = max(n_ids, store.submit(spec(TYPES[k % 4], SHOPS[k % 4][0])))
        queued = task_page(store, "pending", sort="id", limit=20).rows
        if queued:
            store.bump(queued[k % len(queued)].id, by=1.0)
        clock.advance(1)
        c = store.claim("w1")
        if c is not None:
            clock.advance(1)
            store.ack(c.id, "w1")

    for sort in SORTS[view]:
        for descending in (False, True):
            before = {r.id: r for r in _view_rows(store, view, n_ids)}
            seen: dict[int, tuple[Any, ...]] = {}
            after = None
            pages = 0
            while True:
                page = task_page(store, view, sort=sort, descending=descending, after=after,
                                 limit=3)
                for r in page.rows:
                    values = tuple(g(r) for g, _ in MEANING[sort][0])
                    if r.id in seen:
                        assert seen[r.id] != values, ("unchanged row shown twice", sort, r.id)
                    seen[r.id] = values
                # each page is in order
                ids = [r.id for r in page.rows]
                assert ids == expected(list(page.rows), sort, descending), (sort, ids)
                if page.cursor is None:
                    break
                after = page.cursor
                pages += 1
                if pages <= 6:  # changes between the first pages (enough to move things)
                    change()
            now = {r.id: r for r in _view_rows(store, view, n_ids)}
            for tid, r in before.items():
                if tid in now and (tuple(g(now[tid]) for g, _ in MEANING[sort][0])
                                   == tuple(g(r) for g, _ in MEANING[sort][0])):
                    assert tid in seen, ("a row that stayed put was skipped", sort,
                                         descending, tid)
