"""#15 on Redis: every column's page is a range of a sort index, not a read of the whole state.

The indexes (:mod:`core.store.redis.sorts`) are kept by the store's Lua scripts; these tests
check, on a real ``redis-server``: that a page of history by finish time (and of every other
sort) reads about a page of task hashes however many tasks the state holds; that every index
holds exactly the members the rows encode to (so the scripts' Lua and the cursors' Python
agree); that an index rebuilt for a store written before the indexes existed equals the kept
one; and that the encoding orders values as :mod:`core.store.pages` does. The order of the
pages themselves, with changes between pages, is the contract suite's (``tests/contract/
test_pages.py``) and ``test_queries_redis.py``'s.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

import pytest

from core.config import Settings
from core.queries import SORTS, VIEWS, task_page, task_rows
from core.store.pages import _ORDERS, NULLABLE, TEXT, after_cursor_key, order_of, sort_values
from core.store.redis import sorts
from core.testing import FakeClock
from tests.conftest import SHOPS, add_demo_shops
from tests.helpers import spec

_TASK_KEY = re.compile(r"^sorttest:task:(\d+)$")


class _Counting:
    """A redis client that records which task hashes are read (directly or in a
    pipeline)."""

    def __init__(self, inner: Any, seen: list[int]) -> None:
        self._inner = inner
        self._seen = seen

    def _note(self, name: str) -> None:
        m = _TASK_KEY.match(str(name))
        if m:
            self._seen.append(int(m.group(1)))

    def pipeline(self, *a: Any, **kw: Any) -> Any:
        return _Counting(self._inner.pipeline(*a, **kw), self._seen)

    def __getattr__(self, attr: str) -> Any:
        got = getattr(self._inner, attr)
        if attr in ("hget", "hmget", "hgetall"):
            def read(name: Any, *a: Any, **kw: Any) -> Any:
                self._note(name)
                return got(name, *a, **kw)
            return read
        return got


@pytest.fixture
def store(redis_url: str, clock: FakeClock) -> Iterator[Any]:
    from core.store.redis.store import RedisStore

    s = RedisStore(redis_url, settings=Settings(), clock=clock, prefix="sorttest")
    add_demo_shops(s)
    yield s
    s.close()


def _fill(store: Any, clock: FakeClock, n: int) -> None:
    """``n`` tasks run and finished (done, failed, cancelled; finish times with ties, some
    never started), and as many queued."""
    for i in range(2 * n):
        store.submit(spec(("collect_data", "reply_customer")[i % 2], SHOPS[i % 4][0],
                          **({"deadline": "2031-01-01T10:00:00+00:00"} if i % 5 == 0
                             else {})))
        if i % 7 == 0:
            clock.advance(1)
    for i in range(n):
        if i % 9 == 0:
            store.cancel(task_page(store, "pending", limit=1).rows[0].id)
            continue
        c = store.claim("w1")
        assert c is not None
        if i % 3:
            clock.advance(1 + i % 4)
        if i % 4 == 1:
            store.fail(c.id, "w1", error_class="site_failed", message=f"500 \x00é #{i % 3}",
                       retry=False)
        else:
            store.ack(c.id, "w1")


def _page(store: Any, view: str, **kw: Any) -> tuple[Any, list[int]]:
    """A page, and the ids of the task hashes read for it."""
    seen: list[int] = []
    real = store._r
    store._r = _Counting(real, seen)
    try:
        return task_page(store, view, **kw), seen
    finally:
        store._r = real


def test_a_page_of_history_by_finish_time_reads_a_page_not_the_state(
        store: Any, clock: FakeClock) -> None:
    _fill(store, clock, 300)
    counts = store.counts()
    assert counts["done"] > 150 and counts["failed"] > 50 and counts["cancelled"] > 20
    limit = 10
    for descending in (False, True):
        after = None
        for _ in range(3):  # the first page and two after it
            page, seen = _page(store, "history", sort="finished", descending=descending,
                               after=after, limit=limit)
            assert len(page.rows) == limit
            # each of the three states gives at most a page: 30 hashes, not 300
            assert len(seen) <= 3 * limit, (descending, len(seen))
            after = page.cursor
    # every sort of history and of the pending view is bounded the same way
    for view in ("history", "pending"):
        for sort in SORTS[view]:
            first, seen = _page(store, view, sort=sort, limit=limit)
            assert len(seen) <= len(VIEWS[view]) * limit, (view, sort, len(seen))
            _, seen = _page(store, view, sort=sort, after=first.cursor, limit=limit)
            assert len(seen) <= len(VIEWS[view]) * limit, (view, sort, len(seen))


def _index_contents(store: Any) -> dict[str, list[str]]:
    r = store.client
    return {k: r.zrange(k, 0, -1) for k in sorted(r.scan_iter(match="sorttest:sort:*"))}


def test_every_index_holds_exactly_its_states_rows_encoded(store: Any,
                                                           clock: FakeClock) -> None:
    """The scripts' Lua encoding equals the Python one the cursors use, for every row."""
    _fill(store, clock, 60)
    c = store.claim("w1")  # one running, one checkpointed later (its 'since' moves)
    assert c is not None
    clock.advance(5)
    store.save_checkpoint(c.id, "w1", {"next_step": 2})
    rows = task_rows(store, range(1, 200)).values()
    have = _index_contents(store)
    for state, indexed in sorts.INDEXED.items():
        for sort in indexed:
            order = order_of(sort, False)
            want = sorted(sorts.encode(sort, sort_values(r, order)) for r in rows
                          if r.state == state)
            assert have.get(sorts.key("sorttest", state, sort), []) == want, (state, sort)


def test_a_store_written_before_the_indexes_gets_them_when_opened(
        store: Any, clock: FakeClock, redis_url: str) -> None:
    from core.store.redis.store import RedisStore

    _fill(store, clock, 40)
    kept = _index_contents(store)
    assert len(kept) >= 20
    r = store.client
    for k in kept:
        r.delete(k)
    r.hdel(store.keys.meta, sorts.META)  # as an earlier version left it
    again = RedisStore(redis_url, settings=Settings(), clock=clock, prefix="sorttest")
    try:
        assert _index_contents(again) == kept
        assert r.hget(store.keys.meta, sorts.META) == sorts.VERSION
    finally:
        again.close()


def test_a_store_with_indexes_of_another_version_gets_them_anew_when_opened(
        store: Any, clock: FakeClock, redis_url: str) -> None:
    """Indexes of another version are dropped whole (a member of the old encoding would sort
    wrong among new ones) and rebuilt; another prefix's keys are left alone."""
    from core.store.redis.store import RedisStore

    _fill(store, clock, 40)
    kept = _index_contents(store)
    r = store.client
    stale = f"{store.keys.prefix}:sort:queued:gone_column"
    r.zadd(stale, {"old-member": 0})
    for k in kept:
        r.zadd(k, {"\x00old-encoding": 0})
    other = "sorttest*x:sort:queued:created"  # a prefix the glob must not take for ours
    r.zadd(other, {"theirs": 0})
    r.hset(store.keys.meta, sorts.META, "0-older")
    again = RedisStore(redis_url, settings=Settings(), clock=clock, prefix="sorttest")
    try:
        assert _index_contents(again) == kept
        assert not r.exists(stale)
        assert r.zrange(other, 0, -1) == ["theirs"]
        assert r.hget(store.keys.meta, sorts.META) == sorts.VERSION
    finally:
        r.delete(other)
        again.close()


def test_the_encoding_orders_as_the_keyset_order() -> None:
    """Byte order of members = :func:`core.store.pages.after_cursor_key` order, for random
    values with ties, NULLs, negatives, -0.0, NULs and non-ASCII text."""
    rng = random.Random(7)
    nums = [None, -1e9, -2.5, -0.0, 0.0, 1e-9, 3.0, 3.0, 1.7e9, 1.7e9 + 0.25, 2 ** 40]
    texts = [None, "", "\x00", "a", "a\x00", "a\x00b", "ab", "Z", "é", "中", "\U0010ffff"]
    for sort in sorted({s for ss in sorts.INDEXED.values() for s in ss}):
        cols = order_of(sort, False)
        for descending in (False, True):
            order = order_of(sort, descending)
            cursors = []
            for _ in range(300):
                vals: list[Any] = []
                for i, (col, _) in enumerate(cols[:-1]):
                    pool = texts if col in TEXT else nums
                    v = rng.choice(pool if i == 0 else pool[1:])  # only the first is NULL
                    if col not in NULLABLE and v is None:
                        v = pool[1]
                    vals.append(v)
                cursors.append((*vals, rng.randrange(1, 50)))
            by_key = sorted(set(cursors), key=lambda c: after_cursor_key(c, order))
            enc = sorted(set(cursors), key=lambda c: sorts.encode(sort, c).encode(),
                         reverse=descending)
            assert enc == by_key, (sort, descending)
            for c in cursors:
                assert sorts.id_of(sort, sorts.encode(sort, c)) == c[-1]


def test_every_sort_a_view_offers_has_its_index_or_set() -> None:
    served = {("queued", "score"), ("suspended", "score")}
    for view, states in VIEWS.items():
        for state in states:
            for sort in SORTS[view]:
                if (sort in ("id", "state") or (state, sort) in served
                        or state in sorts.UNINDEXED):
                    continue
                assert sort in sorts.INDEXED[state], (view, state, sort)
    assert {"running"} == sorts.UNINDEXED, "only the running tasks are bounded by the slots"
    assert all(s in _ORDERS for ss in sorts.INDEXED.values() for s in ss)


def test_the_scripts_encode_numbers_and_text_as_python_does(redis_url: str) -> None:
    """Lua's ``hexnum`` and text escaping against :func:`core.store.redis.sorts.encode`, for
    values the fills above may not reach (negative, -0.0, huge, NUL, non-ASCII)."""
    import redis

    from core.store.redis.lua import PRELUDE

    r = redis.Redis.from_url(redis_url, decode_responses=True)
    nums = [-1e300, -2.5, -1.0, -0.0, 0.0, 5e-324, 1.0, 1735689600.123456, 2 ** 53, 1e300]
    script = r.register_script(PRELUDE + """
local out = {}
for i = 5, #ARGV do
  local x = tonumber(ARGV[i])
  out[#out + 1] = hexnum(x, false)
  out[#out + 1] = hexnum(x, true)
end
out[#out + 1] = 'v' .. string.gsub('a\\0b\\0\\0é中', '%z', '\\0\\1') .. '\\0\\0'
return out
""")
    try:
        got = script(keys=[], args=["sorttest", "1.0", "0.0", "0.0", *map(repr, nums)])
        want = [enc for x in nums for enc in (sorts._num(x, False), sorts._num(x, True))]
        want.append(sorts.encode("type", ("a\x00b\x00\x00é中", 1))[:-12])
        assert got == want
    finally:
        r.close()
