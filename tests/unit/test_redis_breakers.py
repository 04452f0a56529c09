"""Circuit breakers shared through a real redis-server (:mod:`core.engine.redis_breakers`), as
several workers see them: one worker's failures open the breaker for all, one probe across the
fleet."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from core.config import BreakerSettings
from core.engine.breakers import BreakerState
from core.engine.redis_breakers import RedisBreakers

BREAKERS = BreakerSettings(failures=3, window_s=60, backoff_s=0.3, backoff_max_s=5)
"""For tests that wait for the back-off to end (with :func:`sync_until`)."""
HELD = BreakerSettings(failures=3, window_s=60, backoff_s=60, backoff_max_s=120)
"""For tests that look at an open breaker: its back-off outlasts any stall of a loaded machine
(with ``BREAKERS`` a 0.3 s stall between two round trips turned it half-open)."""


async def sync_until(workers: list[RedisBreakers], cond: Callable[[], bool],
                     timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while True:
        for w in workers:
            await w.sync()
        if cond():
            return
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def breakers_test(body: Callable[..., Awaitable[None]], url: str, n: int = 2,
                  settings: BreakerSettings = BREAKERS, **kw: Any) -> None:
    async def go() -> None:
        ws = [RedisBreakers(settings, url=url, worker_id=f"w{i}", **kw) for i in range(n)]
        try:
            await body(*ws)
        finally:
            for w in ws:
                await w.close()

    asyncio.run(go())


def test_failures_on_one_worker_open_the_breaker_for_all(redis_url: str) -> None:
    async def body(a: RedisBreakers, b: RedisBreakers, c: RedisBreakers) -> None:
        assert a.get("d.test").record_failure() is False
        assert b.get("d.test").record_failure() is False
        await a.sync()
        await b.sync()
        await a.sync()
        await c.sync()
        assert [v.recent_failures for v in c.views() if v.name == "d.test"] == [2]
        assert c.blocked_domains() == set()
        # the third failure, on a: a's mirror already counts b's, so a knows it opened it
        assert a.get("d.test").record_failure() is True
        assert a.blocked_domains() == {"d.test"}          # at once, before any round trip
        await a.sync()
        await b.sync()
        await c.sync()                                      # c never saw a task of d.test
        for w in (a, b, c):
            v = w.get("d.test").view()
            assert (v.state, v.trips) == (BreakerState.OPEN, 1)
            assert w.blocked_domains() == {"d.test"}
        # the pool breaker is this machine's own
        for _ in range(BREAKERS.failures * 4):
            a.pool.record_failure()
        await a.sync()
        await b.sync()
        assert not a.pool.allows() and b.pool.allows()

    breakers_test(body, redis_url, n=3, settings=HELD)


def test_half_open_lets_exactly_one_probe_across_the_fleet(redis_url: str) -> None:
    async def body(a: RedisBreakers, b: RedisBreakers) -> None:
        for _ in range(3):
            a.get("d.test").record_failure()
        await sync_until([a, b], lambda: b.blocked_domains() == {"d.test"})
        # back-off over: both race for the probe; exactly one gets it
        await sync_until([b, a], lambda: bool(a.probing_domains() | b.probing_domains()))
        for _ in range(3):                          # and the other never does while it runs
            await asyncio.gather(a.sync(), b.sync())
        probing = [w for w in (a, b) if w.probing_domains() == {"d.test"}]
        assert len(probing) == 1
        prober = probing[0]
        other = b if prober is a else a
        assert other.blocked_domains() == {"d.test"}
        started = [w.get("d.test").started() for w in (a, b)]
        assert started.count(True) == 1 and prober.get("d.test").started() is False
        assert prober.blocked_domains() == {"d.test"}       # no second probe here either
        for _ in range(3):
            await asyncio.gather(a.sync(), b.sync())
        assert other.get("d.test").started() is False
        assert other.get("d.test").view().probe_in_flight
        # the probe succeeds: closed for both
        assert prober.get("d.test").record_success(probe=True) is True
        await prober.sync()
        await other.sync()
        for w in (a, b):
            v = w.get("d.test").view()
            assert (v.state, v.trips, v.probe_in_flight) == (BreakerState.CLOSED, 0, False)
            assert w.blocked_domains() == set()

    # probe_idle_s: a claim not yet started is given back after it; here it is started a few
    # round trips after the claim, which a loaded machine can stretch past the default 2 s.
    breakers_test(body, redis_url, probe_idle_s=60)


def test_a_failed_probe_reopens_with_a_longer_back_off(redis_url: str) -> None:
    async def body(a: RedisBreakers, b: RedisBreakers) -> None:
        for _ in range(3):
            b.get("d.test").record_failure()
        await sync_until([a, b], lambda: bool(a.probing_domains() | b.probing_domains()))
        prober = a if a.probing_domains() else b
        assert prober.get("d.test").started()
        failed_at = time.time()
        assert prober.get("d.test").record_failure(probe=True) is True
        await prober.sync()
        await a.sync()
        await b.sync()
        for w in (a, b):
            v = w.get("d.test").view()
            assert v.trips == 2       # tripped again: the back-off doubles with each trip
            # Open for twice the first back-off (0.6 s) from the failed probe; a stall of the
            # machine longer than that may already have ended it (half-open, trips kept).
            assert v.state in (BreakerState.OPEN, BreakerState.HALF_OPEN)
            if v.state is BreakerState.OPEN:
                assert v.next_probe_at is not None
                assert v.next_probe_at >= failed_at + 2 * BREAKERS.backoff_s - 0.05

    breakers_test(body, redis_url)


def test_a_dead_probe_holder_loses_its_claim(redis_url: str) -> None:
    async def body(a: RedisBreakers, b: RedisBreakers) -> None:
        for _ in range(3):
            a.get("d.test").record_failure()
        await sync_until([a], lambda: a.probing_domains() == {"d.test"})
        assert a.get("d.test").started()
        # a "dies" (syncs no more, never renews); after the claim's TTL b may probe
        await sync_until([b], lambda: b.probing_domains() == {"d.test"})
        assert b.get("d.test").started()

    breakers_test(body, redis_url, probe_ttl_s=0.3)


def test_an_unused_probe_claim_is_given_back(redis_url: str) -> None:
    async def body(a: RedisBreakers, b: RedisBreakers) -> None:
        for _ in range(3):
            a.get("d.test").record_failure()
        await sync_until([a], lambda: a.probing_domains() == {"d.test"})
        # a holds the claim but has no task of d.test to run: b gets its turn
        await sync_until([a, b], lambda: b.probing_domains() == {"d.test"})
        assert a.blocked_domains() == {"d.test"}

    breakers_test(body, redis_url, probe_idle_s=0.2)


def test_an_operator_forces_a_breaker_for_the_fleet(redis_url: str) -> None:
    async def body(a: RedisBreakers, b: RedisBreakers) -> None:
        a.get("d.test").force(BreakerState.OPEN)
        await a.sync()
        await asyncio.sleep(BREAKERS.backoff_s * 2)   # no back-off ends a manual opening
        await b.sync()
        v = b.get("d.test").view()
        assert (v.state, v.manual) == (BreakerState.OPEN, True)
        assert b.probing_domains() == set() and b.blocked_domains() == {"d.test"}
        b.get("d.test").force(BreakerState.CLOSED)
        await b.sync()
        await a.sync()
        assert a.get("d.test").view().state is BreakerState.CLOSED
        assert a.blocked_domains() == set()

    breakers_test(body, redis_url)


def test_the_background_task_pushes_and_refreshes(redis_url: str) -> None:
    async def go() -> None:
        changed = asyncio.Event()
        a = RedisBreakers(HELD, url=redis_url, refresh_s=0.05)
        b = RedisBreakers(HELD, url=redis_url, refresh_s=0.05, on_change=changed.set)
        await a.start()
        await b.start()
        try:
            for _ in range(3):
                a.get("d.test").record_failure()     # pushed by a's task, seen by b's
            await asyncio.wait_for(changed.wait(), 60)
            assert b.blocked_domains() == {"d.test"}
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())


OUTAGE = BreakerSettings(failures=3, window_s=60, backoff_s=30, backoff_max_s=600)


def test_an_outage_opens_the_fleets_breaker_at_once_and_only_the_probe_backs_it_off(
        redis_url: str) -> None:
    """#15, the twin of ``CircuitBreaker.record_outage``: one network outage opens the
    breaker for the fleet at once (no threshold); another task's outage while it is open
    leaves the probe time where it is; the probe's outage backs it off longer; a worker whose
    mirror was behind learns the fleet's probe time from ``settled``, not its own guess."""
    async def go() -> None:
        a = RedisBreakers(OUTAGE, url=redis_url, worker_id="wa")
        b = RedisBreakers(OUTAGE, url=redis_url, worker_id="wb")
        try:
            await b.sync()
            assert a.get("d.test").record_outage() is True
            va = await a.settled("d.test")
            assert (va.state, va.trips) == (BreakerState.OPEN, 1)   # one outage, not three
            await b.sync()
            vb = b.get("d.test").view()
            assert (vb.state, vb.trips) == (BreakerState.OPEN, 1)
            # Another task of the domain (in flight when it opened) hits the outage too: the
            # breaker stays as it is, its probe time does not move.
            assert b.get("d.test").record_outage() is False
            vb2 = await b.settled("d.test")
            assert vb2.trips == 1 and vb2.next_probe_at is not None
            assert vb.next_probe_at is not None
            assert abs(vb2.next_probe_at - vb.next_probe_at) < 1.0   # clock offsets only
            # The probe's own outage backs off longer (trips 2: 60 s).
            assert a.get("d.test").record_outage(probe=True) is True
            va = await a.settled("d.test")
            assert (va.state, va.trips) == (BreakerState.OPEN, 2)
            assert va.next_probe_at is not None
            # A third worker that never synced sees the breaker closed and guesses a first
            # trip (30 s); settled() brings the fleet's state and probe time instead.
            c = RedisBreakers(OUTAGE, url=redis_url, worker_id="wc")
            try:
                assert c.get("d.test").record_outage() is True   # its own guess: it opened
                vc = await c.settled("d.test")
                assert (vc.state, vc.trips) == (BreakerState.OPEN, 2)
                assert vc.next_probe_at is not None
                assert abs(vc.next_probe_at - va.next_probe_at) < 1.0   # clock offsets only
            finally:
                await c.close()
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())
