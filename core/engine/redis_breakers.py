"""Circuit breakers shared by every worker of a fleet, kept in Redis: the Redis twin of
:class:`core.engine.breakers.Breakers` (same public interface; one breaker per name for the
whole fleet). Keys, clocks and why nothing here blocks the loop: :mod:`core.engine.redis_link`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis

from ..clock import SYSTEM_CLOCK, Clock
from ..config import BreakerSettings
from .breakers import POOL, BreakerState, BreakerView, CircuitBreaker
from .redis_link import (
    _LUA_NOW,
    _REDIS_DOWN,
    DEFAULT_PREFIX,
    _cancelled,
    _Connection,
    _outage_pause,
    _s,
)

log = logging.getLogger(__name__)

_BREAKER_LUA = _LUA_NOW + """
-- KEYS: state hash, failures zset, probe key, name set.
-- ARGV: now ('' = server TIME), op, name, me, failures threshold, window_s, backoff_s,
--       backoff_max_s, probe_ttl_ms, flag.
-- op: 'refresh' (flag 1: claim the half-open probe if free; flag 2: renew our probe)
--     'failure' (flag 1: it was the probe), 'success' (flag 1: it was the probe),
--     'outage' (the network path failed; flag 1: it was the probe),
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
elseif op == 'outage' then
  -- A closed breaker opens at once; the probe's outage backs off longer; another task's
  -- outage while it is open or half-open leaves the next probe time where it is.
  if not manual and (state == 'closed' or flag == 1) then open() end
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

    def record_outage(self, *, probe: bool = False) -> bool:
        """The network path failed (see :meth:`CircuitBreaker.record_outage`); returns True
        if this opened the breaker as far as this worker can tell now (the fleet's state,
        and so its probe time, comes back with the next reply: :meth:`RedisBreakers.settled`)."""
        if self._manual:
            return False
        opened = probe or self.state is BreakerState.CLOSED
        if opened:
            self._open_locally()
        self._push("outage", 1 if probe else 0)
        return opened

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

    async def settled(self, name: str) -> BreakerView:
        """The breaker as the fleet has it after this worker's queued changes: they are
        pushed and the fleet's state read back (a worker whose mirror was behind — another
        worker opened the breaker earlier — gets the fleet's probe time, not its own guess).
        With Redis unreachable, the mirror as it stands."""
        if name == POOL:
            return self.pool.view()
        with contextlib.suppress(*_REDIS_DOWN):
            await self.sync()
        return self._breaker(name).view()

    def listen(self, on_change: Callable[[], None]) -> None:
        """Call ``on_change`` after a change (see the constructor's ``on_change``)."""
        self._on_change = on_change

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
