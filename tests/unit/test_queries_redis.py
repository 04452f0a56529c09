"""The console's page queries read the same pages from Redis as from SQLite.

Two stores get the same tasks through the same calls, in lockstep on one fake clock; then every
view, sort, direction, filter and page size is paged to the end on both, and the pages (ids in
order, cursors) must be equal — so the desktop's models work unchanged on either store.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core.config import Settings
from core.queries import (
    SORTS,
    VIEWS,
    TaskFilter,
    count_tasks,
    filter_choices,
    shop_rows,
    task_detail,
    task_page,
    task_rows,
)
from core.store import SqliteStore
from core.store.base import Store
from core.testing import FakeClock
from core.tickets import Signature, normalise_error
from tests.conftest import SHOPS, StoreFactory, add_demo_shops
from tests.helpers import spec

TYPES = ("reply_customer", "campaign_signup", "upload_product", "collect_data")
FILTERS = [
    TaskFilter(),
    TaskFilter(shop="pdd-1"),
    TaskFilter(shop="temu-1"),
    TaskFilter(platform="pdd"),
    TaskFilter(type="collect_data"),
    TaskFilter(shop="pdd-2", type="upload_product"),
    TaskFilter(text="order-1"),
    TaskFilter(text="#7"),
    TaskFilter(text="TEMU"),
    TaskFilter(text="crash"),
    TaskFilter(shop="no-such-shop"),
]


class Both:
    """Apply each call to both stores and check they answer alike."""

    def __init__(self, *stores: Store) -> None:
        self.stores = stores

    def __call__(self, fn: Callable[[Store], Any]) -> Any:
        got = [fn(s) for s in self.stores]
        assert got[0] == got[1], got
        return got[0]


def _redis_store(url: str, clock: FakeClock) -> Store:
    from core.store.redis.store import RedisStore

    store: Store = RedisStore(url, settings=Settings(), clock=clock, prefix="qtest")
    add_demo_shops(store)
    return store


def _fill(both: Both, clock: FakeClock) -> None:
    """Old (hard-aged) and new queued work with ties, and one task or more in each state."""
    n = itertools.count(1)

    def submit(count: int) -> None:
        for i in range(count):
            k = next(n)
            # Five tasks at a time share the clock and the type: equal keys, order by id.
            s = spec(TYPES[(k // 5) % 4], SHOPS[k % 4][0],
                     **({"key": f"order-{k}"} if k % 3 == 0 else {}))
            both(lambda st, s=s: st.submit(s))
            if i % 5 == 4:
                clock.advance(7)

    submit(20)
    clock.advance(31 * 60)  # the first twenty pass the hard-aging limit
    submit(40)
    both(lambda st: st.apply_thresholds())
    both(lambda st: st.bump(33, to=50.0))
    both(lambda st: st.bump(41, by=-3.0))
    both(lambda st: st.cancel(45))

    def claim() -> int:
        # One at a time: a shop runs one task at a time, so each is settled before the next.
        c = both(lambda st: getattr(st.claim("w1"), "id", None))
        assert c is not None
        return int(c)

    sig = Signature("pdd", "upload_product", "submit", "page_changed",
                    normalise_error("no #submit"))
    settle: list[Callable[[Store, int], Any]] = [
        lambda st, t: st.ack(t, "w1"),
        lambda st, t: st.ack(t, "w1"),
        lambda st, t: st.ack(t, "w1"),
        lambda st, t: st.fail(t, "w1", error_class="site_failed", message=f"500 on step {t}",
                              retry=False),
        lambda st, t: st.fail(t, "w1", error_class="site_failed", message="502",
                              retry=False),
        lambda st, t: st.record_crash(t, "w1", error_class="browser_crashed",
                                      message="browser crash again", quarantine=True,
                                      evidence=None),
        lambda st, t: st.open_ticket(t, "w1", signature=sig, step=2, error="no #submit",
                                     evidence=None) > 0,
    ]
    for op in settle:
        tid = claim()
        both(lambda st, t=tid, op=op: op(st, t))
        clock.advance(3)
    running = [claim(), claim()]
    # Suspended last (a claim resumes suspended work first); two shops are still free.
    parked = [claim(), claim()]
    for tid in parked:
        both(lambda st, t=tid: st.release(t, "w1", reason="preempted", suspend=True,
                                          checkpoint={"next_step": 1}))
    assert running
    # #18: delayed tasks, waiting as scheduled
    for k in range(3):
        s = spec("collect_data", SHOPS[k][0], delay_s=3600 + k)
        both(lambda st, s=s: st.submit(s))
    clock.advance(30)


@pytest.fixture
def stores(make_store: StoreFactory, redis_url: str, clock: FakeClock
           ) -> Iterator[tuple[SqliteStore, Store]]:
    sq = make_store()
    rd = _redis_store(redis_url, clock)
    _fill(Both(sq, rd), clock)
    yield sq, rd
    rd.close()


def _pages(store: Store, view: str, **kw: Any) -> list[tuple[list[int], Any]]:
    out = []
    after = None
    for _ in range(1000):
        page = task_page(store, view, after=after, **kw)
        out.append(([r.id for r in page.rows], page.cursor))
        if page.cursor is None:
            return out
        after = page.cursor
    raise AssertionError("paging did not end")


def test_every_view_sort_and_filter_pages_alike(stores: tuple[SqliteStore, Store]) -> None:
    sq, rd = stores
    seen_states: set[str] = set()
    for view, flt in itertools.product(VIEWS, FILTERS):
        for sort, descending, limit in itertools.product(SORTS[view], (None, True),
                                                         (1, 4, 500)):
            kw = {"flt": flt, "sort": sort, "descending": descending, "limit": limit}
            want = _pages(sq, view, **kw)
            assert _pages(rd, view, **kw) == want, (view, kw)
            seen_states.update(r.state for r in task_page(sq, view, **kw).rows)
        assert count_tasks(rd, view, flt=flt) == count_tasks(sq, view, flt=flt), (view, flt)
        assert count_tasks(rd, view, flt=flt, cap=2) == count_tasks(sq, view, flt=flt, cap=2)
    # The fill reached every state the views show, so no comparison was of two empty lists.
    assert seen_states == {s for states in VIEWS.values() for s in states}


def test_rows_shops_choices_and_detail_alike(stores: tuple[SqliteStore, Store]) -> None:
    sq, rd = stores
    ids = list(range(1, 67))  # 64..66 do not exist
    assert task_rows(rd, ids) == task_rows(sq, ids)
    assert len(task_rows(sq, ids)) == 63
    assert shop_rows(rd) == shop_rows(sq)
    rows = shop_rows(sq)
    assert (sum(r.waiting for r in rows), sum(r.running for r in rows)) == (1, 2)
    assert filter_choices(rd) == filter_choices(sq)
    a, b = task_detail(rd, 33), task_detail(sq, 33)
    assert (a.record, [e.to_state for e in a.events]) == (b.record,
                                                          [e.to_state for e in b.events])


def test_a_cursor_whose_task_left_the_view_still_pages_alike(
        stores: tuple[SqliteStore, Store]) -> None:
    """Between two pages the cursor's own task is claimed or cancelled (it leaves the queue's
    set): the next page starts right after where it was, on both stores, ties included."""
    sq, rd = stores
    both = Both(sq, rd)
    for descending in (False, True):
        for limit in (2, 3):
            after: Any = None
            while True:
                pages = both(lambda st, a=after, d=descending, n=limit: task_page(
                    st, "pending", sort="score", descending=d, after=a, limit=n))
                if pages.cursor is None:
                    break
                both(lambda st, t=pages.rows[-1].id: st.cancel(t))
                after = pages.cursor
