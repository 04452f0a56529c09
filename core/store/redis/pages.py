"""The console's page reads (:mod:`core.queries`) on a :class:`RedisStore`.

Same functions, same results and the same keyset cursors as the SQL versions, read from the
documented key layout (:mod:`core.store.redis.keys`) with pipelines; no call loads a whole
table. Where each page comes from:

================================ =========================================================
view, sort (filter)              read
================================ =========================================================
pending, score                   ``P:q:ready`` by rank (score = band and key, member = id)
pending, score (shop)            ``P:q:shop:<id>`` by rank
suspended, score                 ``P:q:suspended`` by rank
any state, id                    ``P:state:<state>`` by score (= id) range
any state, id (shop)             the smaller of ``P:state:<state>`` and ``P:shop_tasks:<id>``
history, state                   ``P:state:<state>`` by id (one value within a state)
any other sort (every column     the sort index ``P:sort:<state>:<sort>``
  of the console's tables;       (:mod:`core.store.redis.sorts`), one ``ZRANGEBYLEX`` (or
  history by finish time)        ``ZREVRANGEBYLEX``) after the cursor's encoding
same, shop filter, few tasks     the shop's tasks (``P:shop_tasks:<id>``) read and the best
  in the shop                    ``limit`` after the cursor kept in a heap
                                 (:func:`_sorted_rows`) when that costs less than walking
                                 the index past other shops' rows (:func:`_shop_is_smaller`)
in flight, any sort but id       every running task read, the best ``limit`` kept
                                 (:func:`_sorted_rows`): no index on purpose, there are at
                                 most as many as the fleet's slots (``sorts.UNINDEXED``)
================================ =========================================================

A cursor ``(band, prio_key, id)`` inside a queue set is found in O(log n): the cursor's own
member when it is still there (``ZRANK``), otherwise a binary search over the members with the
cursor's score (``ZCOUNT`` bounds it), so a page is O(log n + page) however deep it is. In a
sort index the cursor's encoding is the range's exclusive bound: O(log n + page) too. The
first round trip of a page reads ``limit`` ids and their hashes; later ones (rows filtered
out) :data:`BATCH`.

Filters other than the shop (platform, type, text) are checked here on the task hashes, read in
batches of :data:`BATCH` ids per pipeline, until the page is full: a filter that matches little
walks much of its state, ``rows / BATCH`` round trips (SQLite walks the same rows, in
process). ``count_tasks`` with such a filter stops at ``cap + 1`` matches.

Text matching is case-insensitive like SQL ``LIKE`` (which folds ASCII only; here every
letter folds). All functions block: call them off any event loop.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ...priority import score_from_key
from ..pages import (
    Cursor,
    ShopRow,
    TaskFilter,
    TaskPage,
    TaskRow,
    after_cursor_key,
    merge_page,
    order_of,
    sort_values,
)
from . import sorts
from .holds import HOLD_FIELDS, live_hold
from .keys import Keys, score

if TYPE_CHECKING:
    from ...clock import Clock
    from ...config import Settings
    from ..records import ShopRecord

BATCH = 500
"""Task ids read per pipeline round trip when walking a set."""

_FIELDS = ("key", "type", "shop_id", "state", "state_reason", "prio_key", "band",
           "preemptible", "created_at", "updated_at", "not_before", "deadline", "attempts",
           "max_attempts", "started_at", "finished_at", "error_class", "last_error",
           "lease_owner")
_QUEUE_SETS: dict[str, Callable[[Keys], str]] = {
    "queued": lambda k: k.ready, "suspended": lambda k: k.suspended}
"""States whose tasks also sit in a queue-ordered set (its key in :class:`Keys`)."""


# -- the store --------------------------------------------------------------------------


class _RedisStore(Protocol):
    """What these reads need of :class:`core.store.redis.store.RedisStore` (a protocol, so
    this module does not import the store that calls it)."""

    settings: Settings
    clock: Clock
    keys: Keys

    @property
    def client(self) -> Any: ...
    def shops(self) -> list[ShopRecord]: ...
    def paused_domains(self) -> list[str]: ...


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)


def _int(v: Any, default: int = 0) -> int:
    s = _text(v)
    if s is None or s == "":
        return default
    try:
        return int(s)
    except ValueError:
        return int(float(s))


def _float(v: Any) -> float | None:
    s = _text(v)
    return None if s is None or s == "" else float(s)


# -- reading rows --------------------------------------------------------------------------


class _Reader:
    """One query's view of the store: the shops (few) once, task hashes by the batch."""

    def __init__(self, store: _RedisStore) -> None:
        self.store = store
        self.r = store.client
        self.k = store.keys
        self.now = store.clock.now()
        self.aging = store.settings.priority.aging_per_min / 60.0
        self._shops: dict[int, Any] | None = None

    @property
    def shops(self) -> dict[int, Any]:
        if self._shops is None:
            self._shops = {s.id: s for s in self.store.shops()}
        return self._shops

    def rows(self, ids: Sequence[int]) -> list[TaskRow | None]:
        """The tasks' rows in ``ids`` order (``None`` for a task that is gone)."""
        if not ids:
            return []
        pipe = self.r.pipeline(transaction=False)
        for tid in ids:
            pipe.hmget(self.k.task(tid), _FIELDS)
        return [self._row(tid, vals) for tid, vals in zip(ids, pipe.execute(), strict=True)]

    def _row(self, tid: int, vals: Sequence[Any]) -> TaskRow | None:
        f = dict(zip(_FIELDS, vals, strict=True))
        if f["state"] is None:
            return None
        shop = self.shops.get(_int(f["shop_id"], -1))
        prio_key = _int(f["prio_key"])
        return TaskRow(
            id=tid, key=_text(f["key"]), type=_text(f["type"]) or "",
            shop=shop.name if shop else "", platform=shop.platform if shop else "",
            domain=shop.domain if shop else "", state=_text(f["state"]) or "",
            state_reason=_text(f["state_reason"]) or "",
            score=score_from_key(prio_key, self.now, self.aging),
            hard_aged=bool(_int(f["band"])), preemptible=bool(_int(f["preemptible"], 1)),
            created_at=_float(f["created_at"]) or 0.0,
            updated_at=_float(f["updated_at"]) or 0.0,
            not_before=_float(f["not_before"]) or 0.0, deadline=_float(f["deadline"]),
            attempts=_int(f["attempts"]), max_attempts=_int(f["max_attempts"]),
            started_at=_float(f["started_at"]), finished_at=_float(f["finished_at"]),
            error_class=_text(f["error_class"]), last_error=_text(f["last_error"]),
            band=_int(f["band"]), prio_key=prio_key, lease_owner=_text(f["lease_owner"]))

    def shop_id(self, name: str) -> int | None:
        return next((i for i, s in self.shops.items() if s.name == name), None)


def _matcher(rd: _Reader, flt: TaskFilter) -> Callable[[TaskRow], bool]:
    """The SQL filter of :func:`core.store.sqlite.pages._filter_sql` as a predicate on a row."""
    shop_ids: set[int] | None = None
    if flt.shop:
        sid = rd.shop_id(flt.shop)
        shop_ids = {sid} if sid is not None else set()
    if flt.platform:
        plat = {i for i, s in rd.shops.items() if s.platform == flt.platform}
        shop_ids = plat if shop_ids is None else shop_ids & plat
    names = {s.name: i for i, s in rd.shops.items()}
    text = flt.text.strip()
    needle = text.lower()
    digits = text.lstrip("#")
    want_id = int(digits) if digits.isdigit() else None

    def ok(row: TaskRow) -> bool:
        if shop_ids is not None and names.get(row.shop) not in shop_ids:
            return False
        if flt.type and row.type != flt.type:
            return False
        if text:
            hay = (row.type, row.shop, row.state_reason, row.last_error or "", row.key or "")
            if not (any(needle in h.lower() for h in hay) or row.id == want_id):
                return False
        return True
    return ok


# -- ordered sources of task ids ------------------------------------------------------------


def _queue_lower_bound(r: Any, key: str, s: float, m: str) -> tuple[int, bool]:
    """Rank of the first member after ``(s, m)`` in ascending order, and whether ``m`` itself
    is there with score ``s``. O(log n) round trips at worst (a tie group's binary search)."""
    pipe = r.pipeline(transaction=False)
    pipe.zscore(key, m)
    pipe.zrank(key, m)
    have, rank = pipe.execute()
    if have is not None and float(have) == s and rank is not None:
        return int(rank) + 1, True
    pipe = r.pipeline(transaction=False)
    pipe.zcount(key, "-inf", f"({s!r}")
    pipe.zcount(key, "-inf", repr(s))
    lo, hi = (int(x) for x in pipe.execute())
    while lo < hi:  # members with score s sort by bytes: find the first one above m
        mid = (lo + hi) // 2
        got = r.zrange(key, mid, mid)
        if not got or (_text(got[0]) or "") > m:
            hi = mid
        else:
            lo = mid + 1
    return lo, False


def _queue_ids(r: Any, key: str, after: Cursor | None, descending: bool,
               first: int = BATCH) -> Iterator[list[int]]:
    """Ids of a queue-ordered set (best first, or worst first), after a score cursor:
    ``first`` ids, then :data:`BATCH` a round trip."""
    from .keys import member

    if after is None:
        start = 0
        end = int(r.zcard(key)) - 1
    else:
        band, prio_key, tid = (int(v) if isinstance(v, int) else 0 for v in after)
        s, m = score(band, prio_key), member(tid)
        lb, present = _queue_lower_bound(r, key, s, m)
        start = lb
        end = lb - (2 if present else 1)
    n = first
    if not descending:
        while True:
            got = r.zrange(key, start, start + n - 1)
            if not got:
                return
            yield [int(_text(x) or 0) for x in got]
            start += len(got)
            n = BATCH
    else:
        while end >= 0:
            lo = max(0, end - n + 1)
            got = r.zrange(key, lo, end)
            if not got:
                return
            yield [int(_text(x) or 0) for x in reversed(got)]
            end = lo - 1
            n = BATCH


def _id_ids(r: Any, key: str, after: int | None, descending: bool, first: int = BATCH
            ) -> Iterator[list[int]]:
    """Ids of a set scored by task id, ascending or descending, after an id: ``first`` ids,
    then :data:`BATCH` a round trip."""
    n = first
    while True:
        if descending:
            top = f"({after}" if after is not None else "+inf"
            got = r.zrevrangebyscore(key, top, "-inf", start=0, num=n, withscores=True)
        else:
            low = f"({after}" if after is not None else "-inf"
            got = r.zrangebyscore(key, low, "+inf", start=0, num=n, withscores=True)
        if not got:
            return
        ids = [int(sc) for _, sc in got]
        yield ids
        after = ids[-1]
        n = BATCH


def _id_source(rd: _Reader, state: str, sid: int | None, after: int | None,
               descending: bool, first: int = BATCH) -> Iterator[list[int]]:
    """The state's ids by id; with a shop, from the smaller of the state's and the shop's
    sets (rows of other states are dropped by the caller)."""
    r, k = rd.r, rd.k
    key = k.state(state)
    if sid is not None:  # walk the smaller of the state's and the shop's sets
        pipe = r.pipeline(transaction=False)
        pipe.zcard(key)
        pipe.zcard(k.shop_tasks(sid))
        n_state, n_shop = pipe.execute()
        if int(n_shop) < int(n_state):
            key = k.shop_tasks(sid)
    return _id_ids(r, key, after, descending, first)


def _shop_is_smaller(rd: _Reader, state: str, sort: str, sid: int | None, limit: int
                     ) -> bool:
    """With a shop filter, whether sorting the shop's own tasks (O(shop's tasks)) costs less
    than walking the sort index past other shops' rows (about ``limit`` × index / shop's
    tasks when they are spread evenly)."""
    if sid is None:
        return False
    pipe = rd.r.pipeline(transaction=False)
    pipe.zcard(rd.k.shop_tasks(sid))
    pipe.zcard(sorts.key(rd.k.prefix, state, sort))
    n_shop, n_index = (int(x) for x in pipe.execute())
    return n_shop * n_shop <= limit * n_index


def _sorted_rows(rd: _Reader, state: str, order: tuple[tuple[str, bool], ...],
                 ok: Callable[[TaskRow], bool], sid: int | None, after: Cursor | None,
                 limit: int) -> list[TaskRow]:
    """The first ``limit`` matching rows of ``state`` after the cursor, by reading them all:
    the state's (or, with a shop, the smaller of the state's and the shop's) rows batch by
    batch, the best ``limit`` kept in a heap.

    O(rows read) per page, in :data:`BATCH`-sized pipelines, memory O(limit): only for the
    running tasks (at most the fleet's slots, :data:`core.store.redis.sorts.UNINDEXED`) and a
    shop filter whose shop has few tasks (:func:`_shop_is_smaller`); every other sort a view
    offers has an index (``tests/unit/test_redis_sorts.py`` checks).
    """
    start = after_cursor_key(after, order) if after is not None else None

    def rows() -> Iterator[tuple[tuple[Any, ...], TaskRow]]:
        for ids in _id_source(rd, state, sid, None, False):
            for row in rd.rows(ids):
                if row is None or row.state != state or not ok(row):
                    continue
                key = after_cursor_key(sort_values(row, order), order)
                if start is None or key > start:
                    yield key, row

    return [row for _, row in heapq.nsmallest(limit, rows(), key=lambda kr: kr[0])]


def _index_ids(r: Any, key: str, sort: str, after: Cursor | None, descending: bool,
               first: int) -> Iterator[list[int]]:
    """Ids of a sort index (:mod:`core.store.redis.sorts`) in order after the cursor: one
    ``ZRANGEBYLEX`` a batch (``first`` ids, then :data:`BATCH`), O(log n + batch) each."""
    bound = "(" + sorts.encode(sort, after) if after is not None else None
    num = first
    while True:
        if descending:
            got = r.zrevrangebylex(key, bound or "+", "-", start=0, num=num)
        else:
            got = r.zrangebylex(key, bound or "-", "+", start=0, num=num)
        if not got:
            return
        yield [sorts.id_of(sort, m) for m in got]
        if len(got) < num:
            return
        bound, num = "(" + _text(got[-1]), BATCH  # type: ignore[operator]


def _state_ids(rd: _Reader, state: str, sid: int | None, after: Cursor | None,
               descending: bool, first: int) -> Iterator[list[int]]:
    """History by state: one state's ids by id, after a ``(state, id)`` cursor (a state
    before the cursor's in this direction has nothing after it, one after it everything)."""
    last: int | None = None
    if after is not None:
        cstate, cid = after
        assert isinstance(cstate, str) and isinstance(cid, int)
        if state == cstate:
            last = cid
        elif (state < cstate) != descending:
            return iter(())
    return _id_source(rd, state, sid, last, descending, first)


def _source(rd: _Reader, state: str, sort: str, descending: bool, flt: TaskFilter,
            after: Cursor | None, first: int) -> Iterator[list[int]]:
    """The ids of ``state`` in a set's order (score in a queue set, or id), after the
    cursor, from the cheapest set."""
    r, k = rd.r, rd.k
    sid = rd.shop_id(flt.shop) if flt.shop else None
    if sort == "score":
        if state == "queued" and sid is not None:
            return _queue_ids(r, k.shop_queue(sid), after, descending, first)
        return _queue_ids(r, _QUEUE_SETS[state](k), after, descending, first)
    last = after[0] if after is not None else None
    assert last is None or isinstance(last, int)
    return _id_source(rd, state, sid, last, descending, first)


def _walk(rd: _Reader, state: str, sort: str, order: tuple[tuple[str, bool], ...],
          descending: bool, flt: TaskFilter, after: Cursor | None, limit: int
          ) -> Iterator[TaskRow]:
    """The matching rows of ``state`` in order after the cursor (at least ``limit`` of
    them when there are that many)."""
    ok = _matcher(rd, flt)
    sid = rd.shop_id(flt.shop) if flt.shop else None
    if flt.shop and sid is None:
        return
    source: Iterator[list[int]]
    if sort == "id" or (sort == "score" and state in _QUEUE_SETS):
        source = _source(rd, state, sort, descending, flt, after, limit)
    elif sort == "state":
        source = _state_ids(rd, state, sid, after, descending, limit)
    elif sort in sorts.INDEXED.get(state, ()) and not _shop_is_smaller(rd, state, sort, sid,
                                                                        limit):
        source = _index_ids(rd.r, sorts.key(rd.k.prefix, state, sort), sort, after,
                            descending, limit)
    else:
        yield from _sorted_rows(rd, state, order, ok, sid, after, limit)
        return
    start = after_cursor_key(after, order) if after is not None else None
    for ids in source:
        for row in rd.rows(ids):
            # The state check also drops a row that moved between two reads; the cursor
            # check drops one that a concurrent change shifted back before the cursor.
            if row is None or row.state != state or not ok(row):
                continue
            if start is not None and after_cursor_key(sort_values(row, order),
                                                        order) <= start:
                continue
            yield row


# -- the Store protocol's page reads ----------------------------------------------------------


def task_page(store: _RedisStore, states: tuple[str, ...], *, sort: str, descending: bool,
              order: tuple[tuple[str, bool], ...], flt: TaskFilter, after: Cursor | None,
              limit: int) -> TaskPage:
    """:func:`core.queries.task_page` (arguments checked there)."""
    rd = _Reader(store)
    per_state: list[list[TaskRow]] = []
    for state in states:
        got: list[TaskRow] = []
        for row in _walk(rd, state, sort, order, descending, flt, after, limit):
            got.append(row)
            if len(got) >= limit:
                break
        per_state.append(got)
    return merge_page(per_state, order, limit)


def count_filtered(store: _RedisStore, states: tuple[str, ...], flt: TaskFilter, cap: int
                ) -> tuple[int, bool]:
    """:func:`core.queries.count_tasks` with a filter (unfiltered counts come from the
    store's counters there): matches counted up to ``cap + 1`` (only a shop filter on the
    queue: the shop's queue size, O(1))."""
    rd = _Reader(store)
    n = 0
    only_shop = not (flt.platform or flt.type or flt.text.strip())
    order = order_of("id", False)
    for state in states:
        if only_shop and state == "queued":
            sid = rd.shop_id(flt.shop)
            n += int(rd.r.zcard(rd.k.shop_queue(sid))) if sid is not None else 0
        else:
            for _ in _walk(rd, state, "id", order, False, flt, None, cap + 1):
                n += 1
                if n > cap:
                    break
        if n > cap:
            return cap, False
    return n, True


def task_rows(store: _RedisStore, ids: Sequence[int]) -> dict[int, TaskRow]:
    """:func:`core.queries.task_rows`."""
    rd = _Reader(store)
    out: dict[int, TaskRow] = {}
    ids = list(ids)
    for i in range(0, len(ids), BATCH):
        for row in rd.rows(ids[i:i + BATCH]):
            if row is not None:
                out[row.id] = row
    return out


def shop_rows(store: _RedisStore) -> list[ShopRow]:
    """:func:`core.queries.shop_rows`: queued from each shop's queue set and its live hold
    (#15) from its hash, in one pipeline; running from ``P:shop_running``, waiting for a
    person from the (small) ``waiting_human`` set."""
    rd = _Reader(store)
    shops = sorted(rd.shops.values(), key=lambda s: s.name)
    paused_domains = set(store.paused_domains())
    pipe = rd.r.pipeline(transaction=False)
    for s in shops:
        pipe.zcard(rd.k.shop_queue(s.id))
        pipe.hmget(rd.k.shop(s.id), *HOLD_FIELDS)
    pipe.hgetall(rd.k.shop_running)
    got = pipe.execute()
    queued, holds, running_raw = got[:-1:2], got[1:-1:2], got[-1]
    running = {_int(k): _int(v) for k, v in (running_raw or {}).items()}
    waiting: dict[int, int] = {}
    for ids in _id_ids(rd.r, rd.k.state("waiting_human"), None, False):
        pipe = rd.r.pipeline(transaction=False)
        for tid in ids:
            pipe.hget(rd.k.task(tid), "shop_id")
        for sid in pipe.execute():
            if sid is not None:
                waiting[_int(sid)] = waiting.get(_int(sid), 0) + 1
    return [ShopRow(name=s.name, platform=s.platform, domain=s.domain, base_url=s.base_url,
                    paused=bool(s.paused), domain_paused=s.domain in paused_domains,
                    queued=int(q), running=max(0, running.get(s.id, 0)),
                    waiting=waiting.get(s.id, 0), tags=s.tags,
                    hold=live_hold(s.name, h, rd.now))
            for s, q, h in zip(shops, queued, holds, strict=True)]
