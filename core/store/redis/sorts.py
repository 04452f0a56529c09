"""The console's sort indexes on Redis (#15): one lexicographic sorted set per state and sort.

Every column of the console's task tables sorts in the store, in keyset pages of
O(log n + page) — history by finish time included. The score and id orders have their own sets
(the queue sets, ``P:state:<state>``); every other order a view offers has, per task state
(:data:`INDEXED`), a sorted set ``P:sort:<state>:<sort>`` whose members all have score 0 and
sort by their bytes: a member is the task's sort values encoded so that byte order is the
order of :mod:`core.store.pages` (its natural direction), then the id. A page is one
``ZRANGEBYLEX`` after the cursor's own encoding (``ZREVRANGEBYLEX`` for the reversed
direction): no tie group, no binary search, and the cursor's task may be gone.

Encoding of one column's value (the same here and in :data:`LUA`, the scripts' side):

* a number (times, attempts, band, priority key, ``took``): ``v`` and the 16 hex digits of its
  IEEE-754 double made order-preserving (sign bit flipped for a positive number, every bit for
  a negative one; ``-0.0`` is ``0.0``), every digit complemented when the column descends;
* text (type, shop, platform, reason, error class, error): ``v``, the UTF-8 bytes with each
  NUL written ``\\x00\\x01``, then ``\\x00\\x00`` — code point order, as SQLite's BINARY
  collation and Python compare; only ascending text occurs (checked at import);
* NULL: ``z`` when the column ascends (after every value), ``a`` when it descends (before);
* the id last: 12 decimal digits, or their nines' complement when the id descends; the member
  ends with it, so :func:`id_of` reads it back.

The row values are those :mod:`core.store.redis.pages` builds from a task hash (a missing
``created_at`` is 0, a missing ``deadline`` NULL, a missing shop "" …), so an index and the
rows read for a page agree. The scripts keep every index in step with the task hash: ``update``
(every state change) and ``patch`` (same state, e.g. a checkpoint's ``updated_at``) compare the
task's members before and after and write only those that changed; the submit script and
``shopfleet migrate`` add a new task's. A store written before the indexes existed (no
``sort_indexes`` entry in ``P:meta``) is indexed when first opened (:data:`REBUILD`, 500 tasks
a script).

Cost: a task sits in at most eight of these sets at a time (those of its state); a state change
removes its members from the old state's sets and adds them to the new one's, at most sixteen
O(log n) writes inside the script that changes it (a claim removes eight, an ack adds eight:
running tasks have none, see :data:`INDEXED`). Memory: about 60 bytes a member plus the
text (an error is at most 2,000 characters), ``bench/console_sort.py`` prints ``used_memory``.
"""

from __future__ import annotations

import struct
from typing import Any

from ..pages import _ORDERS, TEXT, Cursor, order_of

VERSION = "1"
"""``P:meta`` ``sort_indexes``: the encoding and :data:`INDEXED` the store's indexes follow."""
META = "sort_indexes"

_SHARED = ("type", "shop", "platform")
INDEXED: dict[str, tuple[str, ...]] = {
    "queued": (*_SHARED, "waited", "deadline", "attempts", "hard", "reason"),
    "suspended": (*_SHARED, "since", "attempts", "error_class", "error"),
    "quarantined": ("score", *_SHARED, "since", "attempts", "error_class", "error"),
    "waiting_human": ("score", *_SHARED, "since", "attempts", "error_class", "error"),
    "done": ("finished", *_SHARED, "took", "attempts", "error_class", "error"),
    "failed": ("finished", *_SHARED, "took", "attempts", "error_class", "error"),
    "cancelled": ("finished", *_SHARED, "took", "attempts", "error_class", "error"),
    "scheduled": (*_SHARED, "joins", "deadline", "reason"),
}
"""Task state → the sorts with an index in that state: every sort a view of the state offers
(:data:`core.queries.SORTS`; a test checks), except ``id`` (``P:state:<state>``), ``score`` of
the queued and suspended tasks (their queue sets), ``state`` (one value within a state: the
id order) — and every sort of the running tasks: there are at most as many as the fleet has
slots (workers × ``pool.max_browsers`` × ``pool.contexts_per_browser``, plus leases not yet
recovered), so a page of the in-flight view reads them all (O(slots), :data:`UNINDEXED`), and
the claim and the ack, the queue's hot path, do not pay for six more indexes
(``bench/redis_sort_writes.py``)."""
UNINDEXED = frozenset({"running"})
"""States whose pages read every task of the state (bounded by the fleet's slots)."""

ID_SPAN = 10 ** 12
"""Ids are written in 12 digits (as the queue sets' members)."""

for _sort in {s for sorts in INDEXED.values() for s in sorts}:
    for _col, _desc in _ORDERS[_sort][:-1]:
        assert not (_col in TEXT and _desc), f"descending text cannot be encoded ({_sort})"
    assert _ORDERS[_sort][-1][0] == "id"


def key(prefix: str, state: str, sort: str) -> str:
    """The index of ``sort`` among the tasks in ``state``."""
    return f"{prefix}:sort:{state}:{sort}"


def _num(x: float, desc: bool) -> str:
    x = float(x)
    if x == 0:
        x = 0.0  # -0.0 sorts with 0.0
    b = bytearray(struct.pack(">d", x))
    if b[0] >= 128:
        b = bytearray(255 - c for c in b)
    else:
        b[0] += 128
    if desc:
        b = bytearray(255 - c for c in b)
    return "v" + b.hex()


def encode(sort: str, values: Cursor) -> str:
    """The member of a row whose values in ``sort``'s natural order are ``values`` (a cursor:
    the last value is the id)."""
    cols = order_of(sort, False)
    out: list[str] = []
    for (col, desc), v in zip(cols[:-1], values[:-1], strict=True):
        if v is None:
            out.append("a" if desc else "z")
        elif col in TEXT:
            out.append("v" + str(v).replace("\x00", "\x00\x01") + "\x00\x00")
        else:
            out.append(_num(float(v), desc))
    tid = int(values[-1])  # type: ignore[arg-type]
    out.append(f"{(ID_SPAN - 1 - tid) if cols[-1][1] else tid:012d}")
    return "".join(out)


def id_of(sort: str, m: Any) -> int:
    """The task id at the end of a member."""
    s = m.decode() if isinstance(m, bytes) else str(m)
    n = int(s[-12:])
    return (ID_SPAN - 1 - n) if _ORDERS[sort][-1][1] else n


def _lua_specs() -> str:
    """:data:`INDEXED` as a Lua table: state → list of {key, {column, desc, text, …}, id
    descending} (the key is the index's, the columns flat: three entries each)."""
    states = []
    for state, sorts in INDEXED.items():
        items = []
        for sort in sorts:
            cols = _ORDERS[sort]
            parts = ", ".join(
                f"'{c}', {'true' if d else 'false'}, {'true' if c in TEXT else 'false'}"
                for c, d in cols[:-1])
            items.append(f"{{k('sort:{state}:{sort}'), {{{parts}}}, "
                         f"{'true' if cols[-1][1] else 'false'}}}")
        states.append(f"  {state} = function() return {{{', '.join(items)}}} end")
    # Built on first use, one state at a time: the scripts run this prelude on every call,
    # and a claim or an ack needs two states' specs, not the hundred-odd tables of all.
    return ("local SORTED_SPECS = {\n" + ",\n".join(states) + "\n}\n"
            "local SORTED = setmetatable({}, {__index = function(tb, s)\n"
            "  local f = SORTED_SPECS[s]\n"
            "  local v = false\n"
            "  if f then v = f() end\n"
            "  rawset(tb, s, v)\n"
            "  return v\n"
            "end})\n")


LUA = _lua_specs() + r"""
local NULLABLE = {deadline = true, finished_at = true, took = true, error_class = true,
                  last_error = true}
local function fnum(x)
  if x == nil or x == '' then return nil end
  return tonumber(x)
end
local SHOPNP = {}
local function shop_np(sid)
  local s = SHOPNP[sid or '']
  if not s then
    local r = {false, false}
    if sid then r = redis.call('HMGET', k('shop:' .. sid), 'name', 'platform') end
    s = {r[1] or '', r[2] or ''}
    SHOPNP[sid or ''] = s
  end
  return s
end
-- a row's value in one sort column, as core.store.redis.pages reads it from the hash
local function sort_value(t, col)
  if col == 'shop' then return shop_np(t.shop_id)[1] end
  if col == 'platform' then return shop_np(t.shop_id)[2] end
  if col == 'took' then
    local fin = fnum(t.finished_at)
    if fin == nil then return nil end
    return fin - (fnum(t.started_at) or fnum(t.created_at) or 0)
  end
  local v = t[col]
  if col == 'type' or col == 'state_reason' or col == 'error_class' or col == 'last_error' then
    if v == nil and not NULLABLE[col] then return '' end
    return v
  end
  local x = fnum(v)
  if x == nil and not NULLABLE[col] then return 0 end
  return x
end
-- the double's 64 bits as two 32-bit halves, made order-preserving as _num() does
local function hexnum(x, desc)
  if x == 0 then x = 0 end
  local hi, lo = struct.unpack('>I4I4', struct.pack('>d', x))
  if hi >= 2147483648 then  -- negative: every bit flipped
    hi, lo = 4294967295 - hi, 4294967295 - lo
  else  -- positive: the sign bit set
    hi = hi + 2147483648
  end
  if desc then hi, lo = 4294967295 - hi, 4294967295 - lo end
  return string.format('v%08x%08x', hi, lo)
end
-- the task's member in each index of its state: key -> member. On the queue's hot path (a
-- claim computes the queued task's eight, an ack the finished one's eight): no table per
-- member, the id's two spellings and each column's value computed once per task.
local function sort_members(id, t)
  local out = {}
  local specs = SORTED[t.state]
  if not specs then return out end
  local n = tonumber(id)
  local ida, idd = string.format('%012d', n), string.format('%012d', 999999999999 - n)
  local vals = {}
  for _, spec in ipairs(specs) do
    local cols = spec[2]
    local m = ''
    for i = 1, #cols, 3 do
      local c = cols[i]
      local v = vals[c]
      if v == nil then
        v = sort_value(t, c)
        if v == nil then v = false end
        vals[c] = v
      end
      if v == false then
        if cols[i + 1] then m = m .. 'a' else m = m .. 'z' end
      elseif cols[i + 2] then
        if string.find(v, '\0', 1, true) then v = string.gsub(v, '%z', '\0\1') end
        m = m .. 'v' .. v .. '\0\0'
      else
        m = m .. hexnum(v, cols[i + 1])
      end
    end
    if spec[3] then m = m .. idd else m = m .. ida end
    out[spec[1]] = m
  end
  return out
end
-- write the members that changed between two sort_members() of a task
local function resort(before, after)
  for zk, m in pairs(before) do
    if after[zk] ~= m then redis.call('ZREM', zk, m) end
  end
  for zk, m in pairs(after) do
    if before[zk] ~= m then redis.call('ZADD', zk, 0, m) end
  end
end
"""
"""Lua for :mod:`core.store.redis.lua`'s PRELUDE (after ``k``): ``sort_members`` and
``resort``."""

REBUILD = r"""
-- ARGV[5..]: task ids; each task's members are (re)added for the state it is in now
local n = 0
for i = 5, #ARGV do
  local t = load(ARGV[i])
  if t then
    resort({}, sort_members(ARGV[i], t))
    n = n + 1
  end
end
return n
"""
