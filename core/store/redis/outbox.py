"""The Redis store's notification outbox (#19): :class:`core.notify.Outbox` in a few keys per
target (listed in :mod:`core.store.redis.keys`), every change one Lua script.

The claim is atomic in Lua: :meth:`RedisOutbox.due_batch` reads the oldest unclaimed events,
computes the batch id (a SHA-256 that Redis' Lua cannot), then a script claims them *only if*
no batch is claimed for that target and every one of those events is still unclaimed;
otherwise (another dispatcher won) it reads again. A claimed batch carries ``next_at = now +
claim_s`` as a lease, so a second dispatcher of the fleet does not send it while the first
one is; after a crash between send and mark it goes again with the same id once the lease
has passed (at-least-once, deduplicable).
"""

from __future__ import annotations

import json
from typing import Any

from ...notify.messages import NotifyEvent, message_id
from ...notify.outbox import Batch, Pending, TargetHealth
from ..sqlite.outbox import CLAIM_S, KEEP_DAYS, event_json, event_of
from .keys import Keys

# KEYS: seen, wait, ev, targets   ARGV: event id, event JSON, now, target
_ENQUEUE = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[4])
return 1
"""

# KEYS: batch, wait, batches   ARGV: now, claim_s, batch id, target, ids...
# returns {'claimed'} | {'retry'} | {'held'} | {'again', id, ids JSON, attempts}
_CLAIM = """
local now = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  local b = redis.call('HMGET', KEYS[1], 'id', 'ids', 'next_at', 'attempts')
  if tonumber(b[3]) > now then return {'held'} end
  redis.call('HSET', KEYS[1], 'next_at', string.format('%.17g', now + tonumber(ARGV[2])))
  return {'again', b[1], b[2], b[4]}
end
if #ARGV < 5 then return {'retry'} end
for i = 5, #ARGV do
  if not redis.call('ZSCORE', KEYS[2], ARGV[i]) then return {'retry'} end
end
local ids = {}
for i = 5, #ARGV do
  redis.call('ZREM', KEYS[2], ARGV[i])
  ids[#ids + 1] = ARGV[i]
end
redis.call('HSET', KEYS[1], 'id', ARGV[3], 'ids', cjson.encode(ids),
           'next_at', string.format('%.17g', now + tonumber(ARGV[2])), 'attempts', '0')
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
return {'claimed'}
"""

# KEYS: batch, ev, seen, health, batches   ARGV: batch id, now, keep_s
_SENT = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
local ids = cjson.decode(redis.call('HGET', KEYS[1], 'ids'))
for _, id in ipairs(ids) do redis.call('HDEL', KEYS[2], id) end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[4], 'failing_since')
redis.call('HSET', KEYS[4], 'last_error', '', 'last_sent_at', ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (tonumber(ARGV[2]) - tonumber(ARGV[3])))
return 1
"""

# KEYS: batch, ev, health, batches   ARGV: batch id, now, error, next_at ('' = give up)
_FAILED = """
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
if not redis.call('HGET', KEYS[3], 'failing_since') then
  redis.call('HSET', KEYS[3], 'failing_since', ARGV[2])
end
redis.call('HSET', KEYS[3], 'last_error', ARGV[3])
if ARGV[4] == '' then
  local ids = cjson.decode(redis.call('HGET', KEYS[1], 'ids'))
  for _, id in ipairs(ids) do redis.call('HDEL', KEYS[2], id) end
  redis.call('DEL', KEYS[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  redis.call('HINCRBY', KEYS[3], 'given_up', #ids)
else
  redis.call('HSET', KEYS[1], 'next_at', ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'attempts', 1)
end
return 1
"""


def _num(v: Any) -> float | None:
    return float(v) if v not in (None, "") else None


class RedisOutbox:
    """:class:`core.notify.Outbox` on a :class:`RedisStore`'s Redis (any process of a fleet).

    ``store``: the :class:`~core.store.redis.store.RedisStore` (its client and key names).
    """

    def __init__(self, store: Any, *, claim_s: float = CLAIM_S,
                 keep_days: float = KEEP_DAYS) -> None:
        self._r: Any = store._r
        self.keys: Keys = store.keys
        self.claim_s = claim_s
        self.keep_s = keep_days * 86400.0
        self._enqueue = self._r.register_script(_ENQUEUE)
        self._claim = self._r.register_script(_CLAIM)
        self._sent = self._r.register_script(_SENT)
        self._failed = self._r.register_script(_FAILED)

    def _k(self, target: str, part: str) -> str:
        return self.keys.outbox(target, part)

    def enqueue(self, target: str, event: NotifyEvent, *, now: float) -> bool:
        k = self._k
        return bool(self._enqueue(
            keys=[k(target, "seen"), k(target, "wait"), k(target, "ev"),
                  self.keys.outbox_targets],
            args=[event.id, event_json(event), repr(now), target]))

    def pending(self, *, now: float) -> dict[str, Pending]:
        targets = sorted(self._r.smembers(self.keys.outbox_targets))
        pipe = self._r.pipeline(transaction=False)
        for t in targets:
            pipe.zrange(self._k(t, "wait"), 0, 0, withscores=True)
            pipe.hget(self._k(t, "batch"), "next_at")
        got = pipe.execute()
        out: dict[str, Pending] = {}
        for i, t in enumerate(targets):
            oldest = got[2 * i][0][1] if got[2 * i] else None
            nxt = _num(got[2 * i + 1])
            if oldest is not None or nxt is not None:
                out[t] = Pending(float(oldest) if oldest is not None else None, nxt)
        return out

    def due_batch(self, target: str, *, now: float, limit: int) -> Batch | None:
        k = self._k
        for _ in range(20):  # another dispatcher may claim in between: read again
            ids = self._r.zrange(k(target, "wait"), 0, max(int(limit), 1) - 1)
            raw = self._r.hmget(k(target, "ev"), ids) if ids else []
            events = tuple(event_of(r) for r in raw if r is not None)
            bid = message_id(events) if events else ""
            res = self._claim(keys=[k(target, "batch"), k(target, "wait"),
                                    self.keys.outbox_batches],
                              args=[repr(now), repr(self.claim_s), bid, target,
                                    *[e.id for e in events]])
            verdict = res[0]
            if verdict == "held":
                return None
            if verdict == "again":
                again_ids = json.loads(res[2])
                rows = self._r.hmget(k(target, "ev"), again_ids)
                return Batch(str(res[1]), target,
                             tuple(event_of(r) for r in rows if r is not None), int(res[3]))
            if verdict == "claimed":
                return Batch(bid, target, events, 0)
            if not ids:
                return None
        return None

    def _target_of(self, batch_id: str) -> str | None:
        t = self._r.hget(self.keys.outbox_batches, batch_id)
        return str(t) if t is not None else None

    def mark_sent(self, batch_id: str, *, now: float) -> None:
        target = self._target_of(batch_id)
        if target is None:
            return
        k = self._k
        self._sent(keys=[k(target, "batch"), k(target, "ev"), k(target, "seen"),
                         k(target, "health"), self.keys.outbox_batches],
                   args=[batch_id, repr(now), repr(self.keep_s)])

    def mark_failed(self, batch_id: str, *, now: float, error: str,
                    next_at: float | None) -> None:
        target = self._target_of(batch_id)
        if target is None:
            return
        k = self._k
        self._failed(keys=[k(target, "batch"), k(target, "ev"), k(target, "health"),
                           self.keys.outbox_batches],
                     args=[batch_id, repr(now), error[:500],
                           "" if next_at is None else repr(next_at)])

    def health(self) -> list[TargetHealth]:
        targets = sorted(self._r.smembers(self.keys.outbox_targets))
        pipe = self._r.pipeline(transaction=False)
        for t in targets:
            pipe.hlen(self._k(t, "ev"))
            pipe.hgetall(self._k(t, "health"))
        got = pipe.execute()
        out = []
        for i, t in enumerate(targets):
            h = got[2 * i + 1]
            out.append(TargetHealth(t, int(got[2 * i]), _num(h.get("failing_since")),
                                    h.get("last_error", ""), int(h.get("given_up", 0)),
                                    _num(h.get("last_sent_at"))))
        return out
