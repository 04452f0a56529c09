"""Circuit breakers: one per domain and one for the whole pool.

Life cycle (:class:`BreakerState`): *closed* counts classified site failures in a sliding
window; at ``failures`` it *opens*: the domain's tasks stay queued (not claimed, no attempts
burnt). After a back-off — growing with each consecutive trip, capped — it is *half-open*: one
probe task may run. The probe's success closes the breaker; its failure opens it again with a
longer back-off. An operator can open or close any breaker by hand. Only failures that say
something about the site count (``TaskError.counts_for_breaker``): a changed layout on one page
or a CAPTCHA is the task's own problem.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..clock import SYSTEM_CLOCK, Clock
from ..config import BreakerSettings

POOL = "*pool*"
PROXY_PREFIX = "proxy:"
"""Breakers named ``proxy:<shop>`` hold one shop whose own proxy fails (#17), not a domain."""


def proxy_breaker(shop: str) -> str:
    """The name of ``shop``'s proxy breaker."""
    return PROXY_PREFIX + shop


def split_breaker_names(names: set[str]) -> tuple[set[str], set[str]]:
    """(domains, shops): breaker names as a claim takes them (a domain never has a colon)."""
    shops = {n[len(PROXY_PREFIX):] for n in names if n.startswith(PROXY_PREFIX)}
    return {n for n in names if not n.startswith(PROXY_PREFIX)}, shops


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    """Work flows; failures are being counted."""
    OPEN = "open"
    """Too many failures: the domain's tasks wait until the back-off ends."""
    HALF_OPEN = "half_open"
    """Back-off over: one probe task may run; its outcome decides."""


@dataclass(frozen=True)
class BreakerView:
    name: str
    state: BreakerState
    recent_failures: int
    trips: int
    next_probe_at: float | None
    probe_in_flight: bool
    manual: bool


class CircuitBreaker:
    def __init__(self, name: str, settings: BreakerSettings, *, clock: Clock = SYSTEM_CLOCK
                 ) -> None:
        self.name = name
        self.settings = settings
        self.clock = clock
        self._state = BreakerState.CLOSED
        self._failures: deque[float] = deque()
        self.trips = 0
        self._reopen_at: float | None = None
        self._probe_in_flight = False
        self._manual = False

    @property
    def state(self) -> BreakerState:
        """The state now (an open breaker whose back-off ended reads as half-open)."""
        if (self._state is BreakerState.OPEN and not self._manual
                and self._reopen_at is not None and self.clock.now() >= self._reopen_at):
            self._state = BreakerState.HALF_OPEN
        return self._state

    def allows(self) -> bool:
        """May a task of this domain be claimed now?"""
        s = self.state
        return s is BreakerState.CLOSED or (s is BreakerState.HALF_OPEN
                                            and not self._probe_in_flight)

    def started(self) -> bool:
        """A task of this domain started; returns True if it is the half-open probe."""
        if self.state is BreakerState.HALF_OPEN and not self._probe_in_flight:
            self._probe_in_flight = True
            return True
        return False

    def _backoff(self) -> float:
        s = self.settings
        return float(min(s.backoff_s * 2 ** max(0, self.trips - 1), s.backoff_max_s))

    def _open(self) -> None:
        self.trips += 1
        self._state = BreakerState.OPEN
        self._reopen_at = self.clock.now() + self._backoff()
        self._probe_in_flight = False
        self._failures.clear()

    def record_failure(self, *, probe: bool = False) -> bool:
        """Count a classified site failure; returns True if this opened the breaker."""
        now = self.clock.now()
        state = self.state
        if probe or (state is BreakerState.HALF_OPEN and self._probe_in_flight):
            self._open()  # the probe failed: back off longer
            return True
        if state is not BreakerState.CLOSED:
            return False
        self._failures.append(now)
        while self._failures and self._failures[0] <= now - self.settings.window_s:
            self._failures.popleft()
        if len(self._failures) >= self.settings.failures:
            self._open()
            return True
        return False

    def record_outage(self, *, probe: bool = False) -> bool:
        """The network path to the domain failed (DNS, refused, offline); returns True if this
        opened the breaker. A closed breaker opens at once (no threshold: the path is down);
        the probe's outage opens it again with a longer back-off; any other outage while it
        is open or half-open (a task claimed before it opened) changes nothing, so the
        next probe time stays where it is (:func:`outage_probe_delay`)."""
        if self._manual:
            return False
        if probe or self.state is BreakerState.CLOSED:
            self._open()
            return True
        return False

    def record_success(self, *, probe: bool = False) -> bool:
        """A task of this domain succeeded; returns True if this closed the breaker."""
        if probe or (self.state is BreakerState.HALF_OPEN and self._probe_in_flight):
            self._state = BreakerState.CLOSED
            self.trips = 0
            self._reopen_at = None
            self._probe_in_flight = False
            self._failures.clear()
            return True
        return False

    def probe_abandoned(self) -> None:
        """The probe ended without a verdict (released, cancelled): allow another probe."""
        self._probe_in_flight = False

    def force(self, state: BreakerState) -> None:
        """An operator opens (held until closed by hand) or closes the breaker."""
        self._manual = state is BreakerState.OPEN
        self._probe_in_flight = False
        self._failures.clear()
        if state is BreakerState.OPEN:
            self._state = BreakerState.OPEN
            self._reopen_at = None
        else:
            self._state = BreakerState.CLOSED
            self.trips = 0
            self._reopen_at = None

    def view(self) -> BreakerView:
        s = self.state
        now = self.clock.now()
        recent = sum(1 for t in self._failures if t > now - self.settings.window_s)
        return BreakerView(self.name, s, recent, self.trips,
                           self._reopen_at if s is BreakerState.OPEN else None,
                           self._probe_in_flight, self._manual)


def outage_probe_delay(view: BreakerView, now: float) -> float:
    """Seconds from ``now`` until the engine tries a network path again: an open breaker's
    next probe; 0 when half-open (the probe is due or running; the breaker itself holds the
    domain's tasks until it ends) or open by hand (held until an operator closes it). A task
    stopped by an outage is requeued to this moment, so when the probe succeeds every task
    held by the outage is already due (#15)."""
    if view.state is BreakerState.OPEN and view.next_probe_at is not None:
        return max(0.0, view.next_probe_at - now)
    return 0.0


class Breakers:
    """Per-domain breakers plus the pool-wide one (which, open, stops all claiming)."""

    def __init__(self, settings: BreakerSettings, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings
        self.clock = clock
        self._by_name: dict[str, CircuitBreaker] = {}
        self.pool = self.get(POOL)

    def get(self, name: str) -> CircuitBreaker:
        b = self._by_name.get(name)
        if b is None:
            # The pool breaker needs more failures: it trips only when many domains fail.
            s = (self.settings if name != POOL else self.settings.model_copy(
                update={"failures": self.settings.failures * 4}))
            b = self._by_name[name] = CircuitBreaker(name, s, clock=self.clock)
        return b

    def blocked_domains(self) -> set[str]:
        """Domains whose tasks must not be claimed now."""
        return {n for n, b in self._by_name.items() if n != POOL and not b.allows()}

    def probing_domains(self) -> set[str]:
        """Half-open domains whose probe has not started: at most one task each may start."""
        return {n for n, b in self._by_name.items()
                if n != POOL and b.state is BreakerState.HALF_OPEN and b.allows()}

    def views(self) -> list[BreakerView]:
        return [b.view() for _, b in sorted(self._by_name.items())]

    def listen(self, on_change: Callable[[], None]) -> None:
        """Accepted for the Redis twin's interface: these breakers change only through the
        engine's own calls, so the engine never needs waking for them."""

    async def settled(self, name: str) -> BreakerView:
        """The breaker as it stands after the changes made so far (the Redis twin pushes
        them and reads the fleet's state back first)."""
        return self.get(name).view()

    async def start(self) -> None:
        """Nothing to load: the breakers live in this process (the Redis twin syncs here)."""

    async def close(self) -> None:
        """Nothing to release (the Redis twin pushes its queued changes here)."""
