"""Rate gates shared through a real redis-server (:mod:`core.engine.redis_gates`), as several
workers see them (the breakers: test_redis_breakers.py).

The gate tests count what the workers took together and check the token bucket's bound on
*every* window between two acquisitions: ``n ≤ rate·(t_last − t_first) + burst``, with the
server times at which the tokens were issued. Per-worker buckets would issue about once per
worker and fail it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from typing import Any

import pytest

from core.config import GateSettings
from core.engine.redis_gates import RedisRateGates
from core.testing import FakeClock

GLOBAL_RATE, GLOBAL_BURST = 20.0, 5.0


def gate_settings(*, global_: tuple[float, float] = (GLOBAL_RATE, GLOBAL_BURST),
                  domains: dict[str, tuple[float, float]] | None = None,
                  default: tuple[float, float] = (1000.0, 1000.0)) -> GateSettings:
    return GateSettings.model_validate({
        "global": {"rate_per_s": global_[0], "burst": global_[1]},
        "default_domain": {"rate_per_s": default[0], "burst": default[1]},
        "domains": {d: {"rate_per_s": r, "burst": b} for d, (r, b) in (domains or {}).items()},
    })


def assert_within_bound(stamps: list[float], rate: float, burst: float) -> None:
    """No window [t_i, t_j] holds more than rate·(t_j − t_i) + burst acquisitions."""
    t = sorted(stamps)
    for i in range(len(t)):
        for j in range(i, len(t)):
            n = j - i + 1
            allowed = rate * (t[j] - t[i]) + burst
            assert n <= allowed + 1e-6, (f"{n} tokens in {t[j] - t[i]:.3f}s, bound "
                                         f"{allowed:.2f} (rate {rate}, burst {burst})")


async def hammer(gates: RedisRateGates, domain: str, tokens: int | None = None, *,
                 until: asyncio.Event | None = None) -> list[float]:
    """Acquire as fast as the gate allows, ``tokens`` of them (or until ``until`` is set);
    the server time of each token. A count, not a duration: the gate's rate, not the
    machine's speed, decides how long it takes."""
    stamps: list[float] = []
    while (len(stamps) < tokens) if tokens is not None else not until.is_set():  # type: ignore[union-attr]
        await gates.acquire(domain)
        assert gates.last_issue_at is not None
        stamps.append(gates.last_issue_at)
    return stamps


# -- gates ---------------------------------------------------------------------------------------

def test_three_workers_share_one_global_bucket(redis_url: str) -> None:
    async def go() -> list[float]:
        workers = [RedisRateGates(gate_settings(), url=redis_url) for _ in range(3)]
        try:
            # two concurrent requesters per worker, different domains: only the global gate binds
            runs = await asyncio.gather(*(hammer(g, f"shop{i % 2}.test", 6)
                                          for g in workers for i in range(2)))
        finally:
            for g in workers:
                await g.close()
        return [t for r in runs for t in r]

    stamps = asyncio.run(go())
    assert len(stamps) == 36 > 2 * GLOBAL_BURST    # past the burst: refills flow
    assert_within_bound(stamps, GLOBAL_RATE, GLOBAL_BURST)


def test_global_and_domain_are_both_enforced_across_workers(redis_url: str) -> None:
    settings = gate_settings(global_=(10.0, 3.0), domains={"slow.test": (3.0, 2.0)})

    async def go() -> tuple[list[float], list[float]]:
        a = RedisRateGates(settings, url=redis_url)
        b = RedisRateGates(settings, url=redis_url)
        try:
            slow_done = asyncio.Event()

            async def slow(g: RedisRateGates) -> list[float]:
                return await hammer(g, "slow.test", 4)

            async def both_slow() -> list[list[float]]:
                try:
                    return await asyncio.gather(slow(a), slow(b))
                finally:
                    slow_done.set()

            (slow_a, slow_b), fast_b = await asyncio.gather(
                both_slow(), hammer(b, "fast.test", until=slow_done))
        finally:
            await a.close()
            await b.close()
        return slow_a + slow_b, fast_b

    slow, fast = asyncio.run(go())
    assert_within_bound(slow, 3.0, 2.0)            # the domain's own gate, both workers together
    assert_within_bound(slow + fast, 10.0, 3.0)    # and the global gate over every domain
    assert len(slow) == 8 and fast
    # slow.test waiting for its own tokens does not take global ones meanwhile: while the 8
    # slow ones trickle out at 3/s (≥ 2 s of server time), the global gate (10/s) keeps
    # serving fast.test, which gets more.
    assert len(fast) > len(slow)


def test_a_hold_on_one_worker_holds_every_worker(redis_url: str) -> None:
    clock = FakeClock()
    settings = gate_settings(domains={"x.test": (2.0, 1.0)})

    async def go() -> None:
        a = RedisRateGates(settings, url=redis_url, time_fn=clock.now, clock=clock)
        b = RedisRateGates(settings, url=redis_url, time_fn=clock.now, clock=clock)
        try:
            a.hold("x.test", 5.0)         # synchronous, as the engine calls it: pushed behind
            await a.flush()
            assert await b.try_acquire("x.test") == pytest.approx(5.0)
            clock.advance(4.0)
            assert await b.try_acquire("x.test") == pytest.approx(1.0)
            assert await b.try_acquire("other.test") == 0.0       # other domains are not held
            clock.advance(1.0)                 # hold over: the bucket restarts empty
            assert await b.try_acquire("x.test") == pytest.approx(0.5)
            clock.advance(0.5)
            assert await b.try_acquire("x.test") == 0.0
            await a.refresh()
            level = {lv.name: lv for lv in a.levels()}["x.test"]
            assert level.held_until is None and level.tokens == pytest.approx(0.0)
            a.hold("x.test", 3.0)
            await b.refresh()                  # b never held it, but sees the fleet's hold
            level = {lv.name: lv for lv in b.levels()}["x.test"]
            assert level.held_until == pytest.approx(clock.now() + 3.0)
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())


def test_a_rate_change_on_one_worker_applies_to_every_worker(redis_url: str) -> None:
    clock = FakeClock()
    settings = gate_settings(domains={"y.test": (2.0, 1.0)})
    changes: list[tuple[str, float, float]] = []

    async def go() -> None:
        a = RedisRateGates(settings, url=redis_url, time_fn=clock.now, clock=clock,
                           on_change=lambda *c: changes.append(c))
        b = RedisRateGates(settings, url=redis_url, time_fn=clock.now, clock=clock)
        try:
            assert await b.try_acquire("y.test") == 0.0
            assert await b.try_acquire("y.test") == pytest.approx(0.5)     # 2/s
            a.set_rate("y.test", 10.0, 3.0)
            await a.flush()
            assert await b.try_acquire("y.test") == pytest.approx(0.1)     # 10/s on b too
            clock.advance(1.0)
            for _ in range(3):                                              # new burst: 3
                assert await b.try_acquire("y.test") == 0.0
            assert await b.try_acquire("y.test") > 0
            a.set_rate("*", 1.0, 1.0)                                       # the global gate
            await a.flush()
            clock.advance(10.0)
            assert await b.try_acquire("z.test") == 0.0
            assert await b.try_acquire("z.test") == pytest.approx(1.0)
            await b.refresh()
            levels = {lv.name: (lv.rate_per_s, lv.burst) for lv in b.levels()}
            assert levels["y.test"] == (10.0, 3.0) and levels["*"] == (1.0, 1.0)
            # a new worker started with the old configuration still follows the change
            c = RedisRateGates(settings, url=redis_url, time_fn=clock.now, clock=clock)
            clock.advance(10.0)
            assert await c.try_acquire("y.test") == 0.0
            assert await c.try_acquire("q.test") == pytest.approx(1.0)      # global 1/s
            await c.close()
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())
    assert changes == [("y.test", 10.0, 3.0), ("*", 1.0, 1.0)]


def _hammer_in_process(url: str, ready: Any, tokens: int, out: Any) -> None:
    async def main() -> list[float]:
        gates = RedisRateGates(gate_settings(), url=url)
        try:
            first = await hammer(gates, "shop.test", 1)
            await asyncio.to_thread(ready.wait, 60)     # every one has its first token
            return first + await hammer(gates, "shop.test", tokens - 1)
        finally:
            await gates.close()

    out.put(asyncio.run(main()))


@pytest.mark.slow
def test_three_processes_share_one_bound(redis_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    ready = ctx.Barrier(3)            # spawning a Python takes a while: an ordering, no clock
    procs = [ctx.Process(target=_hammer_in_process, args=(redis_url, ready, 12, out))
             for _ in range(3)]
    for p in procs:
        p.start()
    try:
        runs = [out.get(timeout=60) for _ in procs]
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    stamps = [t for r in runs for t in r]
    assert [len(r) for r in runs] == [12, 12, 12]
    assert_within_bound(stamps, GLOBAL_RATE, GLOBAL_BURST)
    # They ran together (the barrier: each took its first token before any took its second);
    # per-process buckets would have issued 3 × 4 more at once after it.
    firsts, lasts = [min(r) for r in runs], [max(r) for r in runs]
    assert max(firsts) < min(lasts)
