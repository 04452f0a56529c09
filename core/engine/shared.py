"""Rate gates and circuit breakers shared by every worker of a fleet, kept in Redis.

:class:`RedisRateGates` and :class:`RedisBreakers` have the public interface of
:class:`~core.engine.gates.RateGates` and :class:`~core.engine.breakers.Breakers`, so the engine
takes either. The difference is where the state lives: one token bucket and one breaker per
name for the whole fleet, not one per process, so the configured rates hold across all
workers together.

Keys (``prefix`` defaults to ``"shopfleet"``; write it as ``"{shopfleet}"`` on a Redis Cluster so
that every key lands in one hash slot — the acquire script touches two buckets)::

    {prefix}:gate:{name}               hash: tokens, stamp, held_until; rate, burst once changed
    {prefix}:gates                     set of gate names (for the console's levels)
    {prefix}:breaker:{name}            hash: state, trips, reopen_at, manual
    {prefix}:breaker:{name}:failures   sorted set: failure times in the sliding window
    {prefix}:breaker:{name}:probe      the half-open probe's holder (SET NX PX, renewed)
    {prefix}:breakers                  set of breaker names

Clocks. Every time inside these keys is the Redis server's (``TIME`` inside the script), not
the worker's. The store can live with worker clocks: it compares lease deadlines and creation
times at the scale of seconds to minutes, and a second of skew between machines moves a lease
or an aging score by a second. A token bucket cannot: a worker whose clock runs ahead by 0.5 s
would refill a 20/s bucket with 10 extra tokens on every call, and one running behind would
starve — skew mints tokens and the ``rate·T + burst`` bound is gone. With one clock for all
readers of a bucket (the server that also serialises the scripts), skew between workers cannot
change what the bucket issues. Tests can pass ``time_fn`` to drive the scripts from a fake clock
instead. Scripts call ``TIME`` before writing, which Redis ≥ 5 allows (effects replication).

Never on the event loop's critical path: the engine calls ``hold``, ``set_rate``, breaker
``started``/``record_*``/``probe_abandoned``/``force`` and ``blocked_domains``/``probing_domains``
synchronously, so those touch only a local mirror and queue the change; a background task
(:meth:`RedisBreakers.run`, :meth:`RedisRateGates.run`; or :meth:`start`/:meth:`close`) pushes
queued changes through ``redis.asyncio`` and refreshes the mirror. ``acquire`` is a coroutine and
does its own (async) script calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..clock import SYSTEM_CLOCK, Clock
from ..config import BreakerSettings, GateSettings, GateSpec
from .breakers import POOL, BreakerState, BreakerView, CircuitBreaker
from .gates import GLOBAL, GateLevel

log = logging.getLogger(__name__)

DEFAULT_PREFIX = "shopfleet"

_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)
"""Errors that mean "Redis is unreachable right now": wait and try again, do not crash."""

_MIN_WAIT_S = 0.001
"""Shortest sleep between two script calls (a shorter one only hammers Redis)."""
_OUTAGE_WAIT_S = (0.1, 2.0)
"""First and longest wait between attempts while Redis is unreachable."""

# -- Lua ------------------------------------------------------------------------------------------

_LUA_NOW = """
local function server_now()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function f17(x) return string.format('%.17g', x) end
local function f6(x) return string.format('%.6f', x) end
"""

_GATE_LUA = _LUA_NOW + """
-- KEYS[1]: the name set; KEYS[2..]: bucket hashes (global first, then the domain's).
-- ARGV[1]: now ('' = server TIME); ARGV[2]: op ('take' | 'peek' | 'hold' | 'rate');
-- ARGV[3], ARGV[4]: op arguments (hold: seconds; rate: new rate, new burst);
-- then per bucket: name, default rate, default burst (used while no rate was set by hand).
-- take: one token from every bucket or from none. Returns {wait, now, per bucket: rate, burst,
-- tokens, held_until or ''}; wait 0 means the tokens were taken.
local EPS, MIN_WAIT = 1e-9, 1e-6
local now = server_now()
local op = ARGV[2]
local n = #KEYS - 1
local b = {}
local wait = 0
for i = 1, n do
  local key = KEYS[i + 1]
  local base = 4 + 3 * (i - 1)
  local h = redis.call('HMGET', key, 'rate', 'burst', 'tokens', 'stamp', 'held_until')
  local rate = tonumber(h[1]) or tonumber(ARGV[base + 2])
  local burst = tonumber(h[2]) or tonumber(ARGV[base + 3])
  local tokens = tonumber(h[3])
  if tokens == nil then tokens = burst end
  local stamp = tonumber(h[4]) or now
  local held = tonumber(h[5])
  local w = 0
  if held ~= nil and now < held - EPS then
    w = held - now
  else
    if held ~= nil then
      if held > stamp then stamp = held end
      held = nil
    end
    if now > stamp then
      tokens = math.min(burst, tokens + (now - stamp) * rate)
      stamp = now
    end
    if tokens < 1 - EPS then w = math.max(MIN_WAIT, (1 - tokens) / rate) end
  end
  if w > wait then wait = w end
  b[i] = {key = key, name = ARGV[base + 1], rate = rate, burst = burst, tokens = tokens,
          stamp = stamp, held = held}
end
local function save(x)
  redis.call('HSET', x.key, 'tokens', f17(x.tokens), 'stamp', f6(x.stamp))
  if x.held ~= nil then
    redis.call('HSET', x.key, 'held_until', f6(x.held))
  else
    redis.call('HDEL', x.key, 'held_until')
  end
  redis.call('SADD', KEYS[1], x.name)
end
if op == 'take' then
  if wait == 0 then
    for i = 1, n do
      b[i].tokens = math.max(0, b[i].tokens - 1)
      save(b[i])
    end
  end
elseif op == 'hold' then
  local x = b[1]
  local untl = now + math.max(0, tonumber(ARGV[3]))
  if x.held == nil or untl > x.held then x.held = untl end
  x.tokens, x.stamp = 0, now
  save(x)
  wait = x.held - now
elseif op == 'rate' then
  local x = b[1]
  x.rate, x.burst = tonumber(ARGV[3]), tonumber(ARGV[4])
  x.tokens = math.min(x.tokens, x.burst)
  save(x)
  redis.call('HSET', x.key, 'rate', f17(x.rate), 'burst', f17(x.burst))
end
local out = {f17(wait), f6(now)}
for i = 1, n do
  local x = b[i]
  local held = ''
  if x.held ~= nil and x.held > now then held = f6(x.held) end
  table.insert(out, f17(x.rate))
  table.insert(out, f17(x.burst))
  table.insert(out, f17(x.tokens))
  table.insert(out, held)
end
return out
"""

_BREAKER_LUA = _LUA_NOW + """
-- KEYS: state hash, failures zset, probe key, name set.
-- ARGV: now ('' = server TIME), op, name, me, failures threshold, window_s, backoff_s,
--       backoff_max_s, probe_ttl_ms, flag.
-- op: 'refresh' (flag 1: claim the half-open probe if free; flag 2: renew our probe)
--     'failure' (flag 1: it was the probe), 'success' (flag 1: it was the probe),
--     'force_open', 'force_closed', 'release' (give our unused probe claim back).
-- Returns {state, failures in window, trips, reopen_at or '', manual, probe holder or '',
--          now, changed (1 when this call opened or closed the breaker)}.
local now = server_now()
local op, name, me = ARGV[2], ARGV[3], ARGV[4]
local threshold, window = tonumber(ARGV[5]), tonumber(ARGV[6])
local backoff, backoff_max = tonumber(ARGV[7]), tonumber(ARGV[8])
local ttl, flag = tonumber(ARGV[9]), tonumber(ARGV[10])
local h = redis.call('HMGET', KEYS[1], 'state', 'trips', 'reopen_at', 'manual')
local state = h[1] or 'closed'
local trips = tonumber(h[2]) or 0
local reopen = tonumber(h[3])
local manual = h[4] == '1'
local holder = redis.call('GET', KEYS[3])
if holder == false then holder = nil end
local changed = 0
if state == 'open' and not manual and reopen ~= nil and now >= reopen then
  state = 'half_open'
  redis.call('HSET', KEYS[1], 'state', state)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', f6(now - window))

local function open()
  trips = trips + 1
  local wait = math.min(backoff * 2 ^ math.max(0, trips - 1), backoff_max)
  state, reopen, changed = 'open', now + wait, 1
  redis.call('HSET', KEYS[1], 'state', state, 'trips', trips, 'reopen_at', f6(reopen))
  redis.call('DEL', KEYS[2], KEYS[3])
  holder = nil
end
local function close()
  state, trips, reopen, manual, changed = 'closed', 0, nil, false, 1
  redis.call('HSET', KEYS[1], 'state', state, 'trips', 0, 'manual', '0')
  redis.call('HDEL', KEYS[1], 'reopen_at')
  redis.call('DEL', KEYS[2], KEYS[3])
  holder = nil
end

if op == 'refresh' then
  if state == 'half_open' and holder == nil and flag == 1 then
    redis.call('SET', KEYS[3], me, 'PX', ttl)
    holder = me
  elseif holder == me and flag == 2 then
    redis.call('PEXPIRE', KEYS[3], ttl)
  end
elseif op == 'failure' then
  if manual then
    -- held open by an operator: nothing to count
  elseif state ~= 'closed' and (flag == 1 or (state == 'half_open' and holder == me)) then
    open()  -- the probe failed: back off longer
  elseif state == 'closed' then
    -- (a probe whose breaker was closed meanwhile counts as one failure)
    redis.call('ZADD', KEYS[2], f6(now), ARGV[11])
    if redis.call('ZCARD', KEYS[2]) >= threshold then open() end
  end
elseif op == 'success' then
  if not manual and state ~= 'closed'
      and (flag == 1 or (state == 'half_open' and holder == me)) then
    close()
  end
elseif op == 'force_open' then
  state, reopen, manual = 'open', nil, true
  redis.call('HSET', KEYS[1], 'state', state, 'manual', '1')
  redis.call('HDEL', KEYS[1], 'reopen_at')
  redis.call('DEL', KEYS[2], KEYS[3])
  holder, changed = nil, 1
elseif op == 'force_closed' then
  close()
elseif op == 'release' then
  if holder == me then
    redis.call('DEL', KEYS[3])
    holder = nil
  end
end
redis.call('SADD', KEYS[4], name)
local r = ''
if reopen ~= nil then r = f6(reopen) end
local m = '0'
if manual then m = '1' end
return {state, redis.call('ZCARD', KEYS[2]), trips, r, m, holder or '', f6(now), changed}
"""


def _s(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


class _Connection:
    """A ``redis.asyncio`` client made on first use, inside the loop that uses it.

    The engine builds its gates and breakers before its loop runs (and in another thread, for
    the desktop); an asyncio Redis client belongs to the loop it first connects from.
    """

    def __init__(self, url: str | None, client: aioredis.Redis | None) -> None:
        if (url is None) == (client is None):
            raise ValueError("give exactly one of url= and client=")
        self._url = url
        self._client = client
        self._owned = client is None
        self._scripts: dict[str, Any] = {}

    def get(self) -> aioredis.Redis:
        if self._client is None:
            assert self._url is not None
            self._client = aioredis.Redis.from_url(self._url)
            self._scripts.clear()
        return self._client

    async def eval(self, body: str, numkeys: int, *keys_and_args: Any) -> Any:
        """Run a script by its SHA1 (EVALSHA: the body crosses the network once, and the
        server need not hash it per call); loaded again if the server forgot it."""
        client = self.get()
        script = self._scripts.get(body)
        if script is None:
            script = self._scripts[body] = client.register_script(body)
        return await script(keys=list(keys_and_args[:numkeys]),
                            args=list(keys_and_args[numkeys:]))

    async def close(self) -> None:
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


async def _cancelled(task: asyncio.Task[None] | None) -> None:
    """Cancel a background task and wait until it has stopped."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _outage_pause(what: str, attempt: int) -> None:
    wait = min(_OUTAGE_WAIT_S[0] * 2 ** attempt, _OUTAGE_WAIT_S[1])
    if attempt == 0:
        log.warning("%s: Redis unreachable, retrying", what)
    await asyncio.sleep(wait)


# -- gates ----------------------------------------------------------------------------------------

@dataclass
class _LevelCache:
    rate: float
    burst: float
    tokens: float
    held_until: float | None   # local clock
    at: float = 0.0            # local time of the reading
    issued: int = 0
    wait_s_total: float = 0.0
    waiting: int = 0


class SharedBucket:
    """One shared bucket, shaped like :class:`~core.engine.gates.TokenBucket` (for callers
    that use a single bucket, e.g. ``gates.global_bucket.acquire()``)."""

    def __init__(self, gates: RedisRateGates, name: str) -> None:
        self._gates = gates
        self.name = name

    async def acquire(self) -> float:
        return await self._gates._acquire_names([self.name])

    def hold(self, seconds: float) -> None:
        self._gates.hold(self.name, seconds)

    def set_rate(self, rate_per_s: float, burst: float) -> None:
        self._gates.set_rate(self.name, rate_per_s, burst)

    def level(self) -> GateLevel:
        return self._gates._level(self.name)


class RedisRateGates:
    """The global bucket and one bucket per domain, shared by every worker through Redis.

    Same interface as :class:`~core.engine.gates.RateGates`. A request takes a token from the
    global bucket *and* its domain's in one script, or from neither (a domain that has to wait
    does not burn global tokens meanwhile). Holds (Retry-After) and rate changes are written to
    the bucket's hash, so they apply to every worker. Local waiters of one domain are served
    first come first served; across workers, whoever asks first after a refill gets the token.

    While Redis is unreachable ``acquire`` keeps waiting (with back-off) rather than let a
    request through: no gate means no pace.

    Args:
        settings: ``[gates]`` from the configuration (the defaults; a rate changed by hand is
            kept in Redis and wins over them on every worker).
        url: the Redis URL (a client is made on first use, inside the running loop), or
        client: a ``redis.asyncio`` client to share (not closed by :meth:`close`).
        prefix: key prefix.
        clock: sleeps between attempts, and measures the seconds waited.
        on_change: called with (gate name, rate, burst) after :meth:`set_rate`.
        time_fn: tests only: the scripts' "now" from this instead of Redis ``TIME``.
        refresh_s: how often :meth:`run` re-reads every bucket for :meth:`levels`.
    """

    def __init__(self, settings: GateSettings, *, url: str | None = None,
                 client: aioredis.Redis | None = None, prefix: str = DEFAULT_PREFIX,
                 clock: Clock = SYSTEM_CLOCK,
                 on_change: Callable[[str, float, float], None] | None = None,
                 time_fn: Callable[[], float] | None = None, refresh_s: float = 1.0) -> None:
        if refresh_s <= 0:
            raise ValueError("refresh_s must be > 0")
        self._conn = _Connection(url, client)
        self.prefix = prefix
        self.clock = clock
        self._on_change = on_change
        self._time_fn = time_fn
        self.refresh_s = refresh_s
        g = settings.global_
        self._global_spec = GateSpec(rate_per_s=g.rate_per_s, burst=g.burst)
        self._default = settings.default_domain
        self._specs: dict[str, GateSpec] = dict(settings.domains)
        self._cache: dict[str, _LevelCache] = {}
        self._buckets: dict[str, SharedBucket] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._pending: list[tuple[str, str, float, float]] = []   # (op, name, a, b), in order
        self._flush_lock: asyncio.Lock | None = None
        self._kicks: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._offset = 0.0          # server time - local time, from the last script reply
        self.last_issue_at: float | None = None
        """Server time of the last token this instance took (tests check the bound with it)."""
        self.global_bucket = self.bucket(GLOBAL)

    # -- keys and specs --

    def key(self, name: str) -> str:
        return f"{self.prefix}:gate:{name}"

    @property
    def _index_key(self) -> str:
        return f"{self.prefix}:gates"

    def _spec(self, name: str) -> GateSpec:
        if name == GLOBAL:
            return self._global_spec
        return self._specs.get(name, self._default)

    def bucket(self, domain: str) -> SharedBucket:
        b = self._buckets.get(domain)
        if b is None:
            b = self._buckets[domain] = SharedBucket(self, domain)
            spec = self._spec(domain)
            self._cache.setdefault(domain, _LevelCache(spec.rate_per_s, spec.burst,
                                                       spec.burst, None, self.clock.now()))
        return b

    # -- the script --

    async def _script(self, op: str, names: list[str], a: float = 0.0, b: float = 0.0
                      ) -> float:
        """Run the gate script on ``names``; update the level cache; return its wait."""
        args: list[str | float] = ["" if self._time_fn is None else repr(self._time_fn()),
                                   op, repr(a), repr(b)]
        for n in names:
            spec = self._spec(n)
            args += [n, repr(spec.rate_per_s), repr(spec.burst)]
        reply = await self._conn.eval(_GATE_LUA, len(names) + 1, self._index_key,
                                  *(self.key(n) for n in names), *args)
        wait, server_now = float(_s(reply[0])), float(_s(reply[1]))
        local_now = self.clock.now()
        self._offset = server_now - local_now
        for i, n in enumerate(names):
            rate, burst, tokens, held = (_s(x) for x in reply[2 + 4 * i: 6 + 4 * i])
            c = self._cache.setdefault(n, _LevelCache(0.0, 0.0, 0.0, None))
            c.rate, c.burst, c.tokens = float(rate), float(burst), float(tokens)
            c.held_until = float(held) - self._offset if held else None
            c.at = local_now
        if op == "take" and wait == 0:
            self.last_issue_at = server_now
            for n in names:
                self._cache[n].issued += 1
        return wait

    async def flush(self) -> None:
        """Push holds and rate changes queued by the synchronous methods, in order."""
        if not self._pending:
            return
        if self._flush_lock is None:
            self._flush_lock = asyncio.Lock()
        async with self._flush_lock:
            while self._pending:
                op, name, a, b = self._pending[0]
                await self._script(op, [name], a, b)
                self._pending.pop(0)

    def _kick(self) -> None:
        """Push queued changes now if a loop runs here (else the next acquire/refresh does)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._flush_quietly())
        self._kicks.add(task)  # keep a reference until done
        task.add_done_callback(self._kicks.discard)

    async def _flush_quietly(self) -> None:
        try:
            await self.flush()
        except _REDIS_DOWN:
            log.warning("gates: could not push a change to Redis yet; will retry")

    # -- the RateGates interface --

    async def try_acquire(self, domain: str) -> float:
        """One attempt: take a global and a domain token now (returns 0.0), or return how long
        until both might be there. One round trip; does not wait."""
        await self.flush()
        self.bucket(domain)
        return await self._script("take", [GLOBAL, domain] if domain != GLOBAL else [GLOBAL])

    async def acquire(self, domain: str) -> float:
        """Global token and the domain's token together; returns the seconds waited."""
        self.bucket(domain)
        return await self._acquire_names([GLOBAL, domain] if domain != GLOBAL else [GLOBAL])

    async def _acquire_names(self, names: list[str]) -> float:
        start = self.clock.now()
        lock = self._locks.setdefault(names[-1], asyncio.Lock())
        caches = [self._cache[n] for n in names]
        for c in caches:
            c.waiting += 1
        try:
            async with lock:  # local waiters of one domain: first come, first served
                outage = 0
                while True:
                    try:
                        await self.flush()
                        wait = await self._script("take", names)
                    except _REDIS_DOWN:
                        await _outage_pause("gate " + names[-1], outage)
                        outage += 1
                        continue
                    outage = 0
                    if wait <= 0:
                        break
                    await self.clock.sleep(max(_MIN_WAIT_S, wait))
        finally:
            for c in caches:
                c.waiting -= 1
        waited = max(0.0, self.clock.now() - start)
        caches[-1].wait_s_total += waited
        return waited

    def hold(self, domain: str, seconds: float) -> None:
        """Issue nothing for ``seconds`` on every worker (a Retry-After); pushed in the
        background, and before this instance's next acquisition in any case."""
        self.bucket(domain)
        c = self._cache[domain]
        until = self.clock.now() + max(0.0, seconds)
        c.held_until = max(c.held_until or 0.0, until)
        c.tokens, c.at = 0.0, self.clock.now()
        self._pending.append(("hold", domain, max(0.0, seconds), 0.0))
        self._kick()

    def set_rate(self, name: str, rate_per_s: float, burst: float) -> None:
        """Change a gate (``"*"`` for the global one) for every worker."""
        self._set_rate(name, rate_per_s, burst)
        if self._on_change is not None:
            self._on_change(name, rate_per_s, burst)

    def _set_rate(self, name: str, rate_per_s: float, burst: float) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError(f"gate {name}: rate must be > 0 and burst >= 1")
        spec = GateSpec(rate_per_s=rate_per_s, burst=burst)
        if name == GLOBAL:
            self._global_spec = spec
        else:
            self._specs[name] = spec
        self.bucket(name)
        c = self._cache[name]
        c.rate, c.burst, c.tokens = float(rate_per_s), float(burst), min(c.tokens, burst)
        self._pending.append(("rate", name, float(rate_per_s), float(burst)))
        self._kick()

    def apply_saved(self, saved: dict[str, tuple[float, float]]) -> None:
        """Re-apply rates an operator changed earlier (no change callback)."""
        for name, (rate, burst) in saved.items():
            self._set_rate(name, rate, burst)

    def _level(self, name: str) -> GateLevel:
        c = self._cache[name]
        now = self.clock.now()
        held = c.held_until if c.held_until and c.held_until > now else None
        tokens = c.tokens if held else min(c.burst, c.tokens + max(0.0, now - c.at) * c.rate)
        return GateLevel(name, c.rate, c.burst, tokens, c.waiting, held, c.issued,
                         c.wait_s_total)

    def levels(self) -> list[GateLevel]:
        """The buckets as last read from Redis (every ``refresh_s`` while :meth:`run` runs);
        ``issued``, ``waiting`` and ``wait_s_total`` are this worker's own."""
        return [self._level(GLOBAL)] + [self._level(n) for n in sorted(self._cache)
                                        if n != GLOBAL]

    # -- background refresh --

    async def refresh(self) -> None:
        """Push queued changes and re-read every bucket of the fleet (for :meth:`levels`)."""
        await self.flush()
        names = sorted(_s(n) for n in await self._conn.get().smembers(self._index_key))
        for n in [GLOBAL, *names]:
            self.bucket(n)
        for n in [GLOBAL, *(n for n in names if n != GLOBAL)]:
            await self._script("peek", [n])

    async def run(self) -> None:
        """Refresh forever (the engine runs this as a watched background job)."""
        outage = 0
        while True:
            try:
                await self.refresh()
                outage = 0
            except _REDIS_DOWN:
                await _outage_pause("gates refresh", outage)
                outage += 1
                continue
            await self.clock.sleep(self.refresh_s)

    async def start(self) -> None:
        """Start :meth:`run` as a task (for callers that do not watch it themselves)."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="shared-gates")

    async def close(self) -> None:
        """Stop the refresher, push what is queued (if Redis answers), close the client."""
        await _cancelled(self._task)
        self._task = None
        with contextlib.suppress(*_REDIS_DOWN):
            await self.flush()
        await self._conn.close()


# -- breakers -------------------------------------------------------------------------------------

_op_ids = itertools.count()


class SharedBreaker:
    """One domain's breaker as this worker sees it: a mirror of the shared state in Redis.

    Same interface as :class:`~core.engine.breakers.CircuitBreaker`. Every method is
    synchronous and local; changes are queued for the owner's background task.
    """

    def __init__(self, owner: RedisBreakers, name: str) -> None:
        self._owner = owner
        self.name = name
        self.settings = owner.settings
        self.clock = owner.clock
        self._state = BreakerState.CLOSED     # as of the last reply (server's view)
        self._failures = 0                    # in the window, as of the last reply
        self.trips = 0
        self._reopen_at: float | None = None  # local clock
        self._manual = False
        self._holder = ""                     # who holds the half-open probe claim
        self._probe_in_flight = False         # our probe is running
        self._claimed_at: float | None = None # when we got (or last used) the claim
        self._skip_claim_until = 0.0
        self._gen = 0                         # local changes not yet reflected in a reply
        self._synced = False

    # -- the mirror --

    @property
    def _claimed(self) -> bool:
        return self._holder == self._owner.me

    @property
    def state(self) -> BreakerState:
        """The state now (an open breaker whose back-off ended reads as half-open)."""
        if (self._state is BreakerState.OPEN and not self._manual
                and self._reopen_at is not None and self.clock.now() >= self._reopen_at):
            return BreakerState.HALF_OPEN
        return self._state

    def allows(self) -> bool:
        """May this worker claim a task of this domain now? Half-open: only the worker that
        holds the fleet's single probe claim, and only while its probe has not started."""
        s = self.state
        return s is BreakerState.CLOSED or (s is BreakerState.HALF_OPEN and self._claimed
                                            and not self._probe_in_flight)

    def started(self) -> bool:
        """A task of this domain started; returns True if it is the fleet's half-open probe."""
        if self.state is BreakerState.HALF_OPEN and self._claimed and not self._probe_in_flight:
            self._probe_in_flight = True
            self._claimed_at = self.clock.now()
            return True
        return False

    def _backoff(self, trips: int) -> float:
        s = self.settings
        return float(min(s.backoff_s * 2 ** max(0, trips - 1), s.backoff_max_s))

    def _open_locally(self) -> None:
        self.trips += 1
        self._state = BreakerState.OPEN
        self._reopen_at = self.clock.now() + self._backoff(self.trips)
        self._probe_in_flight = False
        self._holder = ""
        self._failures = 0

    def _push(self, op: str, flag: int = 0) -> None:
        self._gen += 1
        self._owner._queue(self, op, flag)

    def record_failure(self, *, probe: bool = False) -> bool:
        """Count a classified site failure; returns True if this opened the breaker (as far
        as this worker can tell now; the fleet's verdict arrives with the next reply)."""
        state = self.state
        was_probe = probe or (state is BreakerState.HALF_OPEN and self._probe_in_flight)
        if was_probe:
            self._open_locally()
            self._push("failure", 1)
            return True
        if state is not BreakerState.CLOSED:
            return False
        self._failures += 1
        self._push("failure", 0)
        if self._failures >= self.settings.failures:
            self._open_locally()
            return True
        return False

    def record_success(self, *, probe: bool = False) -> bool:
        """A task of this domain succeeded; returns True if this closed the breaker."""
        if probe or (self.state is BreakerState.HALF_OPEN and self._probe_in_flight):
            if self._manual and self._state is BreakerState.OPEN:
                self._probe_in_flight = False
                return False
            self._state = BreakerState.CLOSED
            self.trips = 0
            self._reopen_at = None
            self._probe_in_flight = False
            self._holder = ""
            self._failures = 0
            self._push("success", 1)
            return True
        return False

    def probe_abandoned(self) -> None:
        """The probe ended without a verdict: this worker keeps the claim and may start
        another probe at once; an unused claim is given back after ``probe_idle_s``."""
        self._probe_in_flight = False
        self._claimed_at = self.clock.now()

    def force(self, state: BreakerState) -> None:
        """An operator opens (held until closed by hand) or closes the breaker, fleet-wide."""
        self._manual = state is BreakerState.OPEN
        self._probe_in_flight = False
        self._holder = ""
        self._failures = 0
        self._reopen_at = None
        if state is BreakerState.OPEN:
            self._state = BreakerState.OPEN
            self._push("force_open")
        else:
            self._state = BreakerState.CLOSED
            self.trips = 0
            self._push("force_closed")

    def view(self) -> BreakerView:
        s = self.state
        return BreakerView(self.name, s, self._failures, self.trips,
                           self._reopen_at if s is BreakerState.OPEN else None,
                           self._probe_in_flight or bool(self._holder), self._manual)

    def _apply(self, reply: list[Any], gen: int) -> bool:
        """Take a script's reply into the mirror unless a local change came after it was
        asked for; returns True if what this worker may claim changed."""
        if gen != self._gen:
            return False
        before = (self.state, self.allows())
        state, failures, trips, reopen, manual, holder, now = (_s(x) for x in reply[:7])
        offset = float(now) - self.clock.now()
        self._state = BreakerState(state)
        self._failures = int(failures)
        self.trips = int(trips)
        self._reopen_at = float(reopen) - offset if reopen else None
        self._manual = manual == "1"
        had_claim = self._claimed
        self._holder = holder
        if self._claimed and not had_claim:
            self._claimed_at = self.clock.now()
        if self._state is BreakerState.CLOSED or (self._state is BreakerState.OPEN
                                                 and self.state is BreakerState.OPEN):
            self._probe_in_flight = False
        self._synced = True
        return before != (self.state, self.allows())


class RedisBreakers:
    """Per-domain breakers shared by the fleet through Redis, plus this machine's pool breaker.

    Same interface as :class:`~core.engine.breakers.Breakers`. The engine's calls are
    synchronous and read or change a local mirror; a background task (:meth:`run`, or
    :meth:`start`/:meth:`close`) pushes each change through a Lua script, re-reads every
    breaker of the fleet every ``refresh_s`` and right after a push, and claims the half-open
    probe (``SET NX PX``) so that one probe runs across the fleet. The claim is renewed while
    the probe runs and expires ``probe_ttl_s`` after its holder dies; an unused claim is given
    back after ``probe_idle_s``. The pool breaker (browser crashes) is about this machine's
    browsers, so it stays local.

    Args:
        settings: ``[breakers]`` from the configuration.
        url: the Redis URL (a client is made on first use, inside the running loop), or
        client: a ``redis.asyncio`` client to share (not closed by :meth:`close`).
        prefix: key prefix.
        clock: the local clock (times in views; the pool breaker).
        worker_id: who holds a probe claim (default: a fresh random id).
        refresh_s: how often the mirror is refreshed.
        probe_ttl_s: a probe claim's lifetime without renewal (its holder died).
        probe_idle_s: an unused probe claim is given back after this long (default
            ``max(2 s, 4 × refresh_s)``).
        on_change: called (on the loop) when a refresh changed what this worker may claim, so
            the engine can look at the queue again.
    """

    def __init__(self, settings: BreakerSettings, *, url: str | None = None,
                 client: aioredis.Redis | None = None, prefix: str = DEFAULT_PREFIX,
                 clock: Clock = SYSTEM_CLOCK, worker_id: str | None = None,
                 refresh_s: float = 0.5, probe_ttl_s: float = 30.0,
                 probe_idle_s: float | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        if refresh_s <= 0 or probe_ttl_s <= 0:
            raise ValueError("refresh_s and probe_ttl_s must be > 0")
        self.settings = settings
        self.clock = clock
        self.prefix = prefix
        self.me = worker_id or uuid.uuid4().hex
        self.refresh_s = refresh_s
        self.probe_ttl_s = probe_ttl_s
        self.probe_idle_s = probe_idle_s if probe_idle_s is not None else max(2.0, 4 * refresh_s)
        self._on_change = on_change
        self._conn = _Connection(url, client)
        self._by_name: dict[str, SharedBreaker] = {}
        self._ops: list[tuple[SharedBreaker, str, int, str]] = []
        self._wake: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None
        self.pool = CircuitBreaker(POOL, settings.model_copy(
            update={"failures": settings.failures * 4}), clock=clock)

    def key(self, name: str) -> str:
        return f"{self.prefix}:breaker:{name}"

    def get(self, name: str) -> CircuitBreaker | SharedBreaker:
        """The breaker for ``name`` (:data:`POOL`: this machine's local pool breaker)."""
        if name == POOL:
            return self.pool
        return self._breaker(name)

    def _breaker(self, name: str) -> SharedBreaker:
        b = self._by_name.get(name)
        if b is None:
            b = self._by_name[name] = SharedBreaker(self, name)
        return b

    def blocked_domains(self) -> set[str]:
        """Domains whose tasks this worker must not claim now."""
        return {n for n, b in self._by_name.items() if not b.allows()}

    def probing_domains(self) -> set[str]:
        """Half-open domains whose fleet-wide probe this worker holds and has not started."""
        return {n for n, b in self._by_name.items()
                if b.state is BreakerState.HALF_OPEN and b.allows()}

    def views(self) -> list[BreakerView]:
        views = [b.view() for b in self._by_name.values()] + [self.pool.view()]
        return sorted(views, key=lambda v: v.name)

    # -- background sync --

    def _queue(self, b: SharedBreaker, op: str, flag: int) -> None:
        self._ops.append((b, op, flag, f"{self.me}:{next(_op_ids)}"))
        if self._wake is not None:
            self._wake.set()

    async def _script(self, b: SharedBreaker, op: str, flag: int = 0, member: str = ""
                      ) -> list[Any]:
        s = self.settings
        k = self.key(b.name)
        reply: list[Any] = await self._conn.eval(
            _BREAKER_LUA, 4, k, f"{k}:failures", f"{k}:probe", f"{self.prefix}:breakers",
            "", op, b.name, self.me, s.failures, repr(s.window_s), repr(s.backoff_s),
            repr(s.backoff_max_s), int(self.probe_ttl_s * 1000), flag, member)
        return reply

    async def sync(self) -> None:
        """One round: push queued changes in order, then refresh every breaker of the fleet
        (claiming a free half-open probe, renewing ours, giving back an unused one)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        changed = False
        async with self._lock:
            while self._ops:
                b, op, flag, member = self._ops[0]
                gen = b._gen
                reply = await self._script(b, op, flag, member)
                self._ops.pop(0)
                if not any(o[0] is b for o in self._ops):
                    changed |= b._apply(reply, gen)
            names = {_s(n) for n in await self._conn.get().smembers(f"{self.prefix}:breakers")}
            for n in sorted(names | set(self._by_name)):
                b = self._breaker(n)
                now = self.clock.now()
                flag = 0
                if b._claimed and not b._probe_in_flight and b._claimed_at is not None \
                        and now - b._claimed_at >= self.probe_idle_s:
                    op = "release"                 # not used: let another worker probe
                    b._skip_claim_until = now + self.probe_idle_s
                else:
                    op = "refresh"
                    if b._probe_in_flight:
                        flag = 2
                    elif now >= b._skip_claim_until:
                        flag = 1
                gen = b._gen
                reply = await self._script(b, op, flag)
                changed |= b._apply(reply, gen)
        if changed and self._on_change is not None:
            self._on_change()

    async def run(self) -> None:
        """Sync every ``refresh_s`` and right after a local change, forever (the engine runs
        this as a watched background job)."""
        self._wake = asyncio.Event()
        outage = 0
        while True:
            self._wake.clear()
            try:
                await self.sync()
                outage = 0
            except _REDIS_DOWN:
                await _outage_pause("breakers sync", outage)
                outage += 1
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.refresh_s)

    async def start(self) -> None:
        """Sync once, then keep syncing in a background task until :meth:`close`."""
        await self.sync()
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="shared-breakers")

    async def close(self) -> None:
        """Stop syncing, push what is queued (if Redis answers), close the client."""
        await _cancelled(self._task)
        self._task = None
        with contextlib.suppress(*_REDIS_DOWN):
            for b in self._by_name.values():
                if b._claimed and not b._probe_in_flight:
                    b._claimed_at = self.clock.now() - self.probe_idle_s
            await self.sync()   # also gives back unused probe claims
        await self._conn.close()
