"""What an executor sees of the engine: :class:`TaskControl` for one task, the
:class:`Executor` protocol, the :class:`Outcome` it returns, and :class:`NoopExecutor`.

:class:`TaskControl` reaches the engine through the small :class:`EngineView` protocol, so this
module does not depend on the engine (which depends on it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..clock import SYSTEM_CLOCK, Clock
from ..config import Settings
from ..events import EventBus, TaskProgress
from ..store import AsyncStore, ClaimedTask
from .gates import RateGates
from .rescue import RescueBudget

if TYPE_CHECKING:
    from .redis_gates import RedisRateGates


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended without an error: finished, or yielded at a safe step."""

    status: Literal["done", "yielded"]
    results: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None


class EngineView(Protocol):
    """What a :class:`TaskControl` uses of its engine."""

    @property
    def gates(self) -> RateGates | RedisRateGates: ...

    @property
    def astore(self) -> AsyncStore: ...

    @property
    def rescue_budget(self) -> RescueBudget: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def bus(self) -> EventBus: ...

    def _first_step(self, ctl: TaskControl) -> None:
        """Told once, when the task's first step starts (preemption latency)."""
        ...


class TaskControl:
    """What an executor gets for one task: gates, checkpoints, progress, and the yield flag."""

    def __init__(self, engine: EngineView, task: ClaimedTask) -> None:
        self._engine = engine
        self.task = task
        self.yield_requested = False
        self.yield_reason = ""
        self.last_checkpoint: dict[str, Any] | None = task.checkpoint
        self.step = 0
        self.steps = 0
        self.step_name = ""
        self.browser_id: int | None = None
        self.started_at = engine.clock.now()
        self.preempted = False
        """Asked to yield its slot to urgent work (suspends rather than requeues)."""
        self.yield_at: float | None = None
        self.hard_cancelled = False
        self.first_step_at: float | None = None

    async def gate(self, domain: str | None = None) -> None:
        """Take a token from the global gate, then the domain's (waits, never blocks)."""
        await self._engine.gates.acquire(domain or self.task.domain)

    def gate_issued_at(self) -> float | None:
        """The gates' own time of the last grant in this process (Redis ``TIME`` for shared
        gates; None for local ones). Read right after :meth:`gate`, with no ``await`` in
        between, it is the time this task's tokens were taken."""
        return self._engine.gates.last_issue_at

    async def checkpoint(self, data: dict[str, Any]) -> None:
        """Durably record progress; returns once it is committed."""
        self.last_checkpoint = data
        await self._engine.astore.save_checkpoint(self.task.id, self.task.lease_owner, data)

    def should_yield(self) -> bool:
        return self.yield_requested

    def may_rescue(self) -> bool:
        """May the executor spend a rescue (a reload-and-resume) now? Counts it if so."""
        budget = self._engine.rescue_budget
        if self.yield_requested or not budget.allows():
            return False
        elapsed = self._engine.clock.now() - self.started_at
        if elapsed > self._engine.settings.rescue.attempt_budget_s:
            return False
        budget.rescue()
        return True

    def progress(self, step: int, steps: int, name: str) -> None:
        if self.first_step_at is None:
            self.first_step_at = self._engine.clock.now()
            self._engine._first_step(self)
        self.step, self.steps, self.step_name = step, steps, name
        self._engine.bus.publish(TaskProgress(self._engine.clock.now(), self.task.id, step,
                                              steps, name))


class Executor(Protocol):
    """Runs one claimed task. Raises a :class:`TaskError` subclass when the attempt failed."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def execute(self, task: ClaimedTask, ctl: TaskControl) -> Outcome: ...

    def resources(self) -> dict[str, int]:
        """Live browsers and contexts, for the statistics snapshot."""
        ...


@dataclass(frozen=True)
class Execution:
    """When one :class:`NoopExecutor` execution ran, on this process' clock (and the gate's)."""

    started_at: float
    """The executor was called: the task was claimed and its shop's slot taken."""
    granted_at: float
    """Its gate tokens were granted (seen by the worker, a little after the gate's decision)."""
    ended_at: float
    """It finished; the task is acknowledged (and its shop's slot freed) after this."""
    issued_at: float | None
    """The gate's own time of the grant: Redis ``TIME`` for a fleet's shared gates (the time
    its bucket was charged), None for a process' local gates."""


class NoopExecutor:
    """Finishes every task at once after one gate token: measures the engine itself."""

    def __init__(self, *, hold_s: float = 0.0, clock: Clock = SYSTEM_CLOCK,
                 record: Callable[[ClaimedTask, Execution], None] | None = None
                 ) -> None:
        self.hold_s = hold_s
        self.clock = clock
        self.record = record
        """Told each execution's times when it ends (fleet tests check from them that one
        shop's executions never overlap and that the gates' rates held)."""

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def execute(self, task: ClaimedTask, ctl: TaskControl) -> Outcome:
        started = self.clock.now()
        await ctl.gate()
        granted, issued = self.clock.now(), ctl.gate_issued_at()  # no await in between
        if self.hold_s:
            await self.clock.sleep(self.hold_s)
        if self.record is not None:
            self.record(task, Execution(started, granted, self.clock.now(), issued))
        return Outcome("done", {})

    def resources(self) -> dict[str, int]:
        return {"browsers": 0, "contexts": 0}
