"""Rate gates: token buckets, one global and one per target domain.

A request passes the global bucket first, then its domain's. A bucket with rate ``r`` and burst
``b`` never issues more than ``r·T + b`` tokens in any window of length ``T``: tokens refill
continuously at ``r`` per second up to ``b``, and a token is taken only when one is there.
Waiting never blocks the loop (the injected clock sleeps), waiters are served first come first
served, and a domain that answered 429/503 with ``Retry-After`` is *held*: its bucket issues
nothing until the hold ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from ..clock import SYSTEM_CLOCK, Clock
from ..config import GateSettings, GateSpec

_EPS = 1e-9
"""Float slack: a wait computed as ``deadline - now`` can come out a hair short."""
_MIN_WAIT_S = 1e-6
"""Shortest wait: epoch-second floats resolve ~2.4e-7 s, so a shorter sleep would not move."""


@dataclass(frozen=True)
class GateLevel:
    """A bucket at one instant, for the console and the statistics snapshot."""

    name: str
    rate_per_s: float
    burst: float
    tokens: float
    waiting: int
    held_until: float | None
    issued: int
    wait_s_total: float


class TokenBucket:
    """One token bucket on an injected clock."""

    def __init__(self, name: str, rate_per_s: float, burst: float, *,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError(f"gate {name}: rate must be > 0 and burst >= 1")
        self.name = name
        self.clock = clock
        self.rate = float(rate_per_s)
        self.burst = float(burst)
        self._tokens = float(burst)
        self._stamp = clock.now()
        self._held_until: float | None = None
        self._lock = asyncio.Lock()
        self._waiting = 0
        self.issued = 0
        self.wait_s_total = 0.0

    def _refill(self, now: float) -> None:
        if now > self._stamp:
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now

    def set_rate(self, rate_per_s: float, burst: float) -> None:
        """Change the rate and burst from now on (tokens above the new burst are dropped)."""
        if rate_per_s <= 0 or burst < 1:
            raise ValueError(f"gate {self.name}: rate must be > 0 and burst >= 1")
        self._refill(self.clock.now())
        self.rate, self.burst = float(rate_per_s), float(burst)
        self._tokens = min(self._tokens, self.burst)

    def hold(self, seconds: float) -> None:
        """Issue nothing for ``seconds`` (a Retry-After); the bucket restarts empty after it."""
        now = self.clock.now()
        until = now + max(0.0, seconds)
        if self._held_until is None or until > self._held_until:
            self._held_until = until
        self._refill(now)
        self._tokens = 0.0

    def try_take(self) -> float:
        """Take a token now if one is there; else return how long until one might be."""
        now = self.clock.now()
        if self._held_until is not None:
            if now < self._held_until - _EPS:
                return self._held_until - now
            self._stamp = max(self._stamp, self._held_until)
            self._held_until = None
        self._refill(now)
        if self._tokens >= 1.0 - _EPS:
            self._tokens = max(0.0, self._tokens - 1.0)
            self.issued += 1
            return 0.0
        return max(_MIN_WAIT_S, (1.0 - self._tokens) / self.rate)

    async def acquire(self) -> float:
        """Wait for a token; returns the seconds waited."""
        start = self.clock.now()
        self._waiting += 1
        try:
            async with self._lock:  # first come, first served
                while (wait := self.try_take()) > 0:
                    await self.clock.sleep(wait)
        finally:
            self._waiting -= 1
        waited = self.clock.now() - start
        self.wait_s_total += waited
        return waited

    def level(self) -> GateLevel:
        now = self.clock.now()
        tokens = self._tokens
        if self._held_until is None or now >= self._held_until:
            tokens = min(self.burst, tokens + max(0.0, now - self._stamp) * self.rate)
        held = self._held_until if self._held_until and self._held_until > now else None
        return GateLevel(self.name, self.rate, self.burst, tokens, self._waiting, held,
                         self.issued, self.wait_s_total)


GLOBAL = "*"


class RateGates:
    """The global bucket and one bucket per domain (created on first use from the defaults).

    Args:
        settings: ``[gates]`` from the configuration.
        clock: the injected clock.
        on_change: called with (gate name, rate, burst) after a runtime rate change, so the
            engine can persist it.
    """

    def __init__(self, settings: GateSettings, *, clock: Clock = SYSTEM_CLOCK,
                 on_change: Callable[[str, float, float], None] | None = None) -> None:
        self.clock = clock
        self._default = settings.default_domain
        self._specs: dict[str, GateSpec] = dict(settings.domains)
        self._on_change = on_change
        g = settings.global_
        self.global_bucket = TokenBucket(GLOBAL, g.rate_per_s, g.burst, clock=clock)
        self._domains: dict[str, TokenBucket] = {}
        self.last_issue_at: float | None = None
        """The gates' own time of the last grant: always None here (a fleet's shared gates
        give Redis ``TIME``); the same attribute on both, so nobody probes for it."""

    def bucket(self, domain: str) -> TokenBucket:
        if domain == GLOBAL:
            return self.global_bucket
        b = self._domains.get(domain)
        if b is None:
            spec = self._specs.get(domain, self._default)
            b = self._domains[domain] = TokenBucket(domain, spec.rate_per_s, spec.burst,
                                                    clock=self.clock)
        return b

    async def acquire(self, domain: str) -> float:
        """Global token first, then the domain's; returns the seconds waited in total."""
        waited = await self.global_bucket.acquire()
        return waited + await self.bucket(domain).acquire()

    def hold(self, domain: str, seconds: float) -> None:
        self.bucket(domain).hold(seconds)

    def slow_down(self, domain: str, factor: float) -> None:
        """Run the domain's gate at its configured rate divided by ``factor`` (1 restores it):
        the adaptive answer to a domain that keeps rate-limiting us. Not the operator's
        setting: nothing is persisted and :meth:`levels` shows the rate in force."""
        spec = self._specs.get(domain, self._default)
        self.bucket(domain).set_rate(spec.rate_per_s / max(1.0, factor), spec.burst)

    def set_rate(self, name: str, rate_per_s: float, burst: float) -> None:
        """Change a gate (``"*"`` for the global one) while running; persisted by the engine."""
        self.bucket(name).set_rate(rate_per_s, burst)
        if name != GLOBAL:
            self._specs[name] = GateSpec(rate_per_s=rate_per_s, burst=burst)
        if self._on_change is not None:
            self._on_change(name, rate_per_s, burst)

    def apply_saved(self, saved: dict[str, tuple[float, float]]) -> None:
        """Re-apply rates an operator changed in an earlier run (no change callback)."""
        for name, (rate, burst) in saved.items():
            self.bucket(name).set_rate(rate, burst)
            if name != GLOBAL:
                self._specs[name] = GateSpec(rate_per_s=rate, burst=burst)

    def levels(self) -> list[GateLevel]:
        return [self.global_bucket.level()] + [b.level() for _, b in sorted(self._domains.items())]

    def listen(self, on_change: Callable[[str, float, float], None]) -> None:
        """Call ``on_change(name, rate, burst)`` after each runtime rate change (the engine
        persists it)."""
        self._on_change = on_change

    async def start(self) -> None:
        """Nothing to load: the buckets live in this process (the Redis twin syncs here)."""

    async def close(self) -> None:
        """Nothing to release (the Redis twin pushes its queued changes here)."""
