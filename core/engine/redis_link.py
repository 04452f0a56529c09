"""What the Redis twins of the gates and breakers share: the connection, its outage
handling and the clock inside their scripts (:mod:`core.engine.redis_gates`,
:mod:`core.engine.redis_breakers`).

Rate gates and circuit breakers shared by every worker of a fleet, kept in Redis.

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
import logging
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

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
