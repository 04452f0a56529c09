"""The engine's state, set up in one place (the bottom layer of :class:`~core.engine.Engine`)."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from typing import TYPE_CHECKING, Any

from ..clock import SYSTEM_CLOCK, Clock
from ..config import Settings
from ..events import BreakerChanged, EngineProblem, EventBus, GateChanged
from ..store import AsyncStore, ClaimedTask, new_owner_id
from ..store.base import Store
from .breakers import Breakers, BreakerState
from .control import Executor, TaskControl
from .finished import FinishedWindow
from .gates import RateGates
from .preemption import StormLimiter
from .rescue import RateLimitMemory, RescueBudget, SiteTrouble

if TYPE_CHECKING:
    from .redis_breakers import RedisBreakers
    from .redis_gates import RedisRateGates

log = logging.getLogger(__name__)


_HOST = socket.gethostname()


_OUTAGE_RETRY_S = 1.0
"""Real-time pause before a dispatcher round or a background job tries an unreachable store
again."""


class EngineState:
    """The engine's state and the small helpers every layer uses.

    The engine is built in layers, each a subclass of the one before:
    :mod:`.state` (:class:`EngineState`), :mod:`.statistics`, :mod:`.jobs` (background jobs),
    :mod:`.attempts` (a task's attempt and its rescue), :mod:`.dispatch` (claiming, preemption)
    and :mod:`.engine` (life cycle, operator commands). A layer calls only what it or the
    layers below define.
    """

    def __init__(self, store: Store, settings: Settings | None = None, *,
                 executor: Executor, slots: int | None = None, clock: Clock = SYSTEM_CLOCK,
                 bus: EventBus | None = None, poll_s: float = 0.25,
                 grace_s: float = 15.0, owner: str | None = None,
                 gates: RateGates | RedisRateGates | None = None,
                 breakers: Breakers | RedisBreakers | None = None) -> None:
        self.store = store
        self.astore = AsyncStore(store)
        self.settings = settings or store.settings
        self.executor = executor
        self.clock = clock
        self.bus = bus or EventBus()
        self.owner = owner or new_owner_id()
        cap = getattr(executor, "capacity", None)
        self.slots = slots or (int(cap) if cap else self.settings.pool.max_browsers)
        self.poll_s = poll_s
        self.grace_s = grace_s
        self._changed_gates: set[str] = set()
        # The composition root (core.build) passes the fleet's Redis gates and breakers
        # for a shared store; by default they live in this process.
        self.gates: RateGates | RedisRateGates = (
            gates if gates is not None else RateGates(self.settings.gates, clock=clock))
        self.breakers: Breakers | RedisBreakers = (
            breakers if breakers is not None else Breakers(self.settings.breakers, clock=clock))
        self.gates.listen(self._gate_changed)
        self.breakers.listen(self._poke)
        self.tickets = store.ticket_book()
        self.rescue_budget = RescueBudget(self.settings.rescue, clock)
        self.rate_limits = RateLimitMemory(clock)
        self.site_trouble = SiteTrouble(self.settings.breakers.window_s, clock)
        self.storm = StormLimiter(self.settings.preemption, clock)
        self._urgent_pending: dict[int, float] = {}    # urgent task id -> when a slot was asked
        self._refused_at: dict[int, float] = {}
        self._preemptions: deque[float] = deque()
        self._refusals: deque[float] = deque()
        self._latencies: deque[tuple[float, float]] = deque()
        self._resumes: deque[tuple[float, bool]] = deque()
        self._last_preempt_check = 0.0
        self._open_tickets = 0
        self._running: dict[int, tuple[asyncio.Task[None], TaskControl]] = {}
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._started = False
        self._jobs: list[asyncio.Task[None]] = []
        self._shutdown_task: asyncio.Future[None] | None = None
        self._problem: BaseException | None = None
        self._finished = FinishedWindow()
        self._queue_snapshot: dict[str, Any] = {}
        self._bands_due = 0.0  # loop time when the metrics job counts the bands again
        self._last_breaker_states: dict[str, BreakerState] = {}
        self._breaker_causes: dict[str, str] = {}
        """Breaker name → why it last opened (here), for what ``--until-idle`` says is left."""
        self._proxy_probes: set[int] = set()     # task ids probing their shop's proxy (#17)
        self._proxy_errors: dict[str, str] = {}  # shop -> why its proxy is down (#17)
        self.completed = 0
        self.claim_on_ack = True
        """A finished task's ack also claims the next task for its slot, in one store
        transaction (#20; see ``TaskAttempts._claims_on_ack``). ``False``: the ack alone,
        the dispatcher claims (benchmarks measure both)."""
        self._acks_in_flight = 0  # acks of finished tasks being written now
        self.claimed_with_ack = 0
        """Tasks this engine claimed together with an ack (the rest: dispatcher rounds)."""
        self._started_at = clock.now()
        self._outage_since: float | None = None
        self._outage_logged = 0.0

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _store_trouble(self, where: str, exc: BaseException) -> None:
        """Log an outage once when it starts (and every minute while it lasts)."""
        now = self.clock.now()
        if self._outage_since is None:
            self._outage_since = now
            self._outage_logged = now
            log.error("%s: the store cannot be reached (%s); waiting for it — running tasks "
                      "go on, their results are written when it is back", where, exc)
            self.bus.publish(EngineProblem(now, where, f"store unreachable: {exc}"))
        elif now - self._outage_logged >= 60:
            self._outage_logged = now
            log.error("%s: the store is still unreachable after %.0fs (%s)", where,
                      now - self._outage_since, exc)

    def _breaker_event(self, name: str, reason: str) -> None:
        v = self.breakers.get(name).view()
        self._last_breaker_states[name] = v.state
        if v.state is not BreakerState.CLOSED:
            self._breaker_causes[name] = reason
        self.bus.publish(BreakerChanged(self.clock.now(), name, v.state.value, reason,
                                        v.next_probe_at))

    def _gate_changed(self, name: str, rate: float, burst: float) -> None:
        self._changed_gates.add(name)
        self.bus.publish(GateChanged(self.clock.now(), name, rate, burst))

    def running_tasks(self) -> list[tuple[ClaimedTask, TaskControl]]:
        return [(ctl.task, ctl) for _, ctl in self._running.values()]
