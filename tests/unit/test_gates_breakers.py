"""Rate gates and circuit breakers on a fake clock: an hour of behaviour in milliseconds."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import BreakerSettings, GateSettings, GateSpec
from core.engine import Breakers, BreakerState, CircuitBreaker, RateGates, TokenBucket
from core.testing import FakeClock, drive


def max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - window + 1e-9:
            j += 1
        best = max(best, i - j + 1)
    return best


@settings(max_examples=40, deadline=None)
@given(rate=st.floats(0.5, 50), burst=st.integers(1, 20),
       arrivals=st.lists(st.floats(0, 30), min_size=1, max_size=120),
       windows=st.lists(st.floats(0.01, 20), min_size=1, max_size=5))
def test_bucket_never_issues_more_than_rate_t_plus_burst(
        rate: float, burst: int, arrivals: list[float], windows: list[float]) -> None:
    clock = FakeClock()
    bucket = TokenBucket("d", rate, burst, clock=clock)
    t0 = clock.now()
    issued: list[float] = []

    async def client(at: float) -> None:
        await clock.sleep(at)
        await bucket.acquire()
        issued.append(clock.now() - t0)

    async def all_clients() -> None:
        await asyncio.gather(*(client(a) for a in arrivals))

    asyncio.run(drive(clock, all_clients()))
    assert len(issued) == len(arrivals)          # everybody was served eventually
    for w in windows:
        assert max_in_window(issued, w) <= rate * w + burst + 1e-6


def test_global_then_domain_and_retry_after_holds_only_that_domain() -> None:
    clock = FakeClock()
    gates = RateGates(GateSettings(global_=GateSpec(rate_per_s=100, burst=100),
                                   default_domain=GateSpec(rate_per_s=10, burst=1)), clock=clock)
    t0 = clock.now()
    got: dict[str, list[float]] = {"a.test": [], "b.test": []}

    async def use(domain: str, n: int) -> None:
        for _ in range(n):
            await gates.acquire(domain)
            got[domain].append(clock.now() - t0)

    async def scenario() -> None:
        gates.hold("a.test", 30)
        await asyncio.gather(use("a.test", 2), use("b.test", 3))

    asyncio.run(drive(clock, scenario()))
    assert got["b.test"] == pytest.approx([0.0, 0.1, 0.2], abs=1e-5)   # b is not held
    assert got["a.test"][0] >= 30.0                          # a waits out its Retry-After
    assert gates.global_bucket.issued == 5


def test_rate_change_at_runtime_applies_and_is_reported() -> None:
    clock = FakeClock()
    changes: list[tuple[str, float, float]] = []
    gates = RateGates(GateSettings(), clock=clock, on_change=lambda *a: changes.append(a))
    gates.set_rate("x.test", 1, 1)
    t0 = clock.now()
    seen: list[float] = []

    async def use() -> None:
        for _ in range(3):
            await gates.acquire("x.test")
            seen.append(clock.now() - t0)

    asyncio.run(drive(clock, use()))
    assert seen == pytest.approx([0, 1, 2])
    assert changes == [("x.test", 1, 1)]
    with pytest.raises(ValueError):
        gates.set_rate("x.test", 0, 1)


def bs(**kw: float) -> BreakerSettings:
    base = {"failures": 3, "window_s": 60, "backoff_s": 30, "backoff_max_s": 100}
    base.update(kw)
    return BreakerSettings.model_validate(base)


def test_breaker_life_cycle_with_half_open_probe_and_capped_backoff() -> None:
    clock = FakeClock()
    b = CircuitBreaker("a.test", bs(), clock=clock)
    assert b.allows()
    assert not b.record_failure()
    clock.advance(61)                       # the first failure leaves the window
    b.record_failure()
    b.record_failure()
    assert b.state is BreakerState.CLOSED
    assert b.record_failure()              # 3 within 60 s: open
    assert b.state is BreakerState.OPEN and not b.allows()
    assert b.view().next_probe_at == pytest.approx(clock.now() + 30)
    clock.advance(30)
    assert b.state is BreakerState.HALF_OPEN and b.allows()
    assert b.started()                      # the probe
    assert not b.allows()                   # only one probe at a time
    assert b.record_failure(probe=True)     # probe failed: open again, longer back-off
    assert b.view().next_probe_at == pytest.approx(clock.now() + 60)
    clock.advance(60)
    b.started()
    b.record_failure(probe=True)
    assert b.view().next_probe_at == pytest.approx(clock.now() + 100)   # capped
    clock.advance(100)
    assert b.started()
    assert b.record_success(probe=True)
    assert b.state is BreakerState.CLOSED and b.trips == 0


def test_operator_can_open_and_close_by_hand() -> None:
    clock = FakeClock()
    breakers = Breakers(bs(), clock=clock)
    breakers.get("a.test").force(BreakerState.OPEN)
    clock.advance(10_000)                   # a manual open does not half-open by itself
    assert breakers.blocked_domains() == {"a.test"}
    breakers.get("a.test").force(BreakerState.CLOSED)
    assert breakers.blocked_domains() == set()


def test_an_outage_opens_at_once_and_only_the_probes_outage_backs_off_further() -> None:
    """#15: ``record_outage`` — the network path failed. A closed breaker opens at once (no
    threshold); another task's outage while it is open or half-open leaves the probe time
    alone; the probe's outage backs off longer; a breaker opened by hand stays as it is."""
    from core.engine.breakers import outage_probe_delay
    clock = FakeClock()
    b = CircuitBreaker("a.test", BreakerSettings(failures=5, window_s=60, backoff_s=10,
                                                 backoff_max_s=100), clock=clock)
    assert b.record_outage() is True
    v = b.view()
    assert (v.state, v.trips, v.next_probe_at) == (BreakerState.OPEN, 1, clock.now() + 10)
    assert outage_probe_delay(v, clock.now()) == 10
    clock.advance(4)
    assert b.record_outage() is False                       # in flight when it opened
    assert b.view().next_probe_at == v.next_probe_at
    assert outage_probe_delay(b.view(), clock.now()) == 6   # due at the same probe
    clock.advance(6)
    assert b.started()                                      # the half-open probe
    assert b.record_outage() is False                       # not the probe: no verdict
    assert outage_probe_delay(b.view(), clock.now()) == 0   # half-open: due now, held
    assert b.record_outage(probe=True) is True              # the probe's outage
    v = b.view()
    assert (v.state, v.trips, v.next_probe_at) == (BreakerState.OPEN, 2, clock.now() + 20)
    b.force(BreakerState.OPEN)
    assert b.record_outage(probe=True) is False and b.view().manual
    assert outage_probe_delay(b.view(), clock.now()) == 0
