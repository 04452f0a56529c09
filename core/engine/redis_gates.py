"""Rate gates shared by every worker of a fleet, kept in Redis: the Redis twin of
:class:`core.engine.gates.RateGates` (same public interface; one token bucket per name for
the whole fleet, so the configured rates hold across all workers together). Keys, clocks and
why nothing here blocks the loop: :mod:`core.engine.redis_link`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import redis.asyncio as aioredis

from ..clock import SYSTEM_CLOCK, Clock
from ..config import GateSettings, GateSpec
from .gates import GLOBAL, GateLevel
from .redis_link import (
    _LUA_NOW,
    _MIN_WAIT_S,
    _REDIS_DOWN,
    DEFAULT_PREFIX,
    _cancelled,
    _Connection,
    _outage_pause,
    _s,
)

log = logging.getLogger(__name__)

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

    def slow_down(self, domain: str, factor: float) -> None:
        """Run the domain's gate, for every worker, at its configured rate divided by
        ``factor`` (1 restores it); the configured rate itself is kept (not persisted)."""
        spec = self._spec(domain)
        rate = spec.rate_per_s / max(1.0, factor)
        self.bucket(domain)
        c = self._cache[domain]
        c.rate, c.tokens = rate, min(c.tokens, float(spec.burst))
        self._pending.append(("rate", domain, rate, float(spec.burst)))
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

    def listen(self, on_change: Callable[[str, float, float], None]) -> None:
        """Call ``on_change`` after a change (see the constructor's ``on_change``)."""
        self._on_change = on_change

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
