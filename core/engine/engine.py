"""The engine: claims tasks while there is room, runs them, records how each attempt ended.

It composes the store (order), an executor (the browser pool and flow runner, or a no-op one for
benchmarks), the rate gates (pace) and the circuit breakers (failure isolation). It is an async
context manager with ``run()``, ``stop()`` (graceful, then abort), ``run_until_idle()`` for
deterministic tests, and ``statistics()`` returning a frozen snapshot. Background jobs (lease
recovery and renewal, metrics) are watched: if one dies, the engine reports it and stops.

Every command an operator can give (submit, bump, cancel, pause/resume, gate rates, breakers)
is a coroutine here; it returns a :class:`core.events.Changes` summary and publishes events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..clock import SYSTEM_CLOCK, Clock
from ..config import Settings
from ..errors import (
    BrowserCrashed,
    LeaseLost,
    RateLimited,
    Refused,
    ShopFleetError,
    StoreUnavailable,
    TaskError,
    WriteOutcomeUnknown,
)
from ..events import (
    BreakerChanged,
    Changes,
    DomainPaused,
    EngineProblem,
    EngineStopped,
    EventBus,
    GateChanged,
    GateHeld,
    PreemptionRefused,
    ShopPaused,
    TaskBumped,
    TaskPreempted,
    TaskProgress,
    TasksSubmitted,
    TaskStateChanged,
    TicketAnswered,
    TicketOpened,
)
from ..scheduler import scheduler_job
from ..specs import TaskSpec
from ..store import AsyncStore, ClaimedTask, new_owner_id
from ..store.base import Store
from ..tickets import Rule, Signature
from .breakers import Breakers, BreakerState, BreakerView
from .gates import GateLevel, RateGates
from .preemption import Candidate, Holder, StormLimiter, choose_victim
from .rescue import RescueBudget, Verdict, decide, signature_of

if TYPE_CHECKING:
    from .redis_breakers import RedisBreakers
    from .redis_gates import RedisRateGates

log = logging.getLogger(__name__)
_HOST = socket.gethostname()


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended without an error: finished, or yielded at a safe step."""

    status: Literal["done", "yielded"]
    results: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None


class TaskControl:
    """What an executor gets for one task: gates, checkpoints, progress, and the yield flag."""

    def __init__(self, engine: Engine, task: ClaimedTask) -> None:
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
        issued = getattr(self._engine.gates, "last_issue_at", None)
        return float(issued) if issued is not None else None

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


@dataclass(frozen=True)
class EngineStatistics:
    """A snapshot of the engine and its queue at one instant."""

    at: float
    running: int
    slots: int
    queued: int
    queued_by_band: dict[str, int]
    score_spread: float | None
    over_hard_age: int
    oldest_wait_s: float
    done_per_min: int
    failed_per_min: int
    failures_by_class: dict[str, int]
    failures_by_platform: dict[str, int]
    failures_hour_by_class: dict[str, int]
    failures_hour_by_platform: dict[str, int]
    success_rate: float | None
    gates: list[GateLevel]
    breakers: list[BreakerView]
    browsers_alive: int
    contexts_alive: int
    preemptions_per_hour: int = 0
    preemptions_refused_per_hour: int = 0
    preemption_latency_p50_s: float | None = None
    preemption_latency_p95_s: float | None = None
    resume_success_rate: float | None = None
    open_tickets: int = 0
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = json.loads(json.dumps(asdict(self), default=str))
        return d


_CLAIM_ROUND = 64
"""Most tasks claimed (one transaction) and started in one dispatcher round."""
_OUTAGE_RETRY_S = 1.0
"""Real-time pause before a dispatcher round or a background job tries an unreachable store
again."""
_PREEMPT_POLL_S = 0.1
"""Real-time interval at which a busy dispatcher looks for urgent work waiting for a slot."""


def _pct(sorted_values: list[float], p: float) -> float | None:
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


class Engine:
    """Dispatcher, gates, breakers and bookkeeping around one executor.

    Args:
        store: the store (its blocking calls are made off the loop).
        settings: the configuration.
        executor: what runs a task (browser executor, or :class:`NoopExecutor`).
        slots: tasks run at once (default: the executor's capacity or the pool size).
        clock: the injected clock.
        bus: where events go (one is made if not given).
        poll_s: longest idle wait before looking at the queue again (other processes submit).
        owner: this worker's id in the store's leases (default: a fresh one).
        gates, breakers: the rate gates and circuit breakers (default: this process's own;
            :func:`core.build.build_engine` passes a fleet's Redis twins).
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
        self._finished: deque[tuple[float, bool, str, str]] = deque()  # (at, ok, class, platform)
        self._queue_snapshot: dict[str, Any] = {}
        self._last_breaker_states: dict[str, BreakerState] = {}
        self.completed = 0
        self._started_at = clock.now()
        self._outage_since: float | None = None
        self._outage_logged = 0.0

    # -- life cycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._stopping = False
        self._problem = None
        self._shutdown_task = None
        self._wake = asyncio.Event()
        saved = await self.astore.run(self.store.meta, "gate_rates")
        if saved:
            rates = {k: (float(v[0]), float(v[1])) for k, v in json.loads(saved).items()}
            self.gates.apply_saved(rates)
            self._changed_gates.update(rates)
        recovered = await self.astore.recover_expired()
        if recovered:
            log.info("recovered %d tasks whose worker died", len(recovered))
        # Shared breakers sync once in start(): the fleet's open ones are known before the
        # first claim.
        await self.gates.start()
        await self.breakers.start()
        await self.executor.start()
        await self._refresh_queue_snapshot()
        await self._heartbeat()
        self._watch("heartbeat", self._job_heartbeat)
        self._watch("lease-recovery", self._job_recover)
        self._watch("lease-renewal", self._job_renew)
        self._watch("metrics", self._job_metrics)
        self._watch("scheduler", lambda: scheduler_job(  # #18: schedules fire
            self.astore, self.clock, self.bus.publish, self._poke))

    def _watch(self, name: str, fn: Callable[[], Awaitable[None]]) -> None:
        async def guarded() -> None:
            while True:
                try:
                    await fn()
                    return
                except StoreUnavailable as exc:  # a shared store's outage: wait it out
                    self._store_trouble(name, exc)
                    await asyncio.sleep(_OUTAGE_RETRY_S)

        job = asyncio.create_task(guarded(), name=f"shopfleet-{name}")

        def done(t: asyncio.Task[None]) -> None:
            if t.cancelled() or self._stopping:
                return
            exc = t.exception() or RuntimeError(f"{name} ended unexpectedly")
            log.error("background job %s died: %r; stopping the engine", name, exc)
            self._problem = exc
            self.bus.publish(EngineProblem(self.clock.now(), name, repr(exc)))
            self._stopping = True
            self._poke()

        job.add_done_callback(done)
        self._jobs.append(job)

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Claim and run tasks until :meth:`stop`; raises if a background job died."""
        await self.start()
        while not self._stopping:
            await self._dispatch_guarded()
            await self._idle_wait()
        await self._shutdown()
        if self._problem is not None:
            raise ShopFleetError(f"engine stopped: a background job died: {self._problem!r}")

    async def run_until_idle(self) -> None:
        """Run until nothing is running and nothing is claimable now (deterministic tests)."""
        await self.start()
        while not self._stopping:
            n = await self._dispatch_guarded()
            if n is None:
                continue
            if n == 0 and not self._running:
                break
            await self._wait_for_change()
        if self._problem is not None:
            raise ShopFleetError(f"engine stopped: a background job died: {self._problem!r}")

    async def stop(self, *, grace_s: float | None = None) -> None:
        """Stop claiming; running tasks yield at their next safe step (checkpoint, release);
        after the grace period the rest are cancelled and released. Nothing is lost."""
        self._stopping = True
        self._poke()
        await self._shutdown(grace_s)

    async def _shutdown(self, grace_s: float | None = None) -> None:
        """Shut down once: ``run()`` ending and ``stop()`` both await the same shutdown, so
        neither returns before the executor (and its browsers) are closed."""
        if self._shutdown_task is None:
            if not self._started:
                return
            self._shutdown_task = asyncio.ensure_future(self._do_shutdown(grace_s))
        await asyncio.shield(self._shutdown_task)

    async def _do_shutdown(self, grace_s: float | None) -> None:
        self._started = False
        for _, ctl in self._running.values():
            ctl.yield_requested, ctl.yield_reason = True, "engine stopping"
        tasks = [t for t, _ in self._running.values()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.grace_s if grace_s is None
                                            else grace_s)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending, timeout=30)
        for job in self._jobs:
            job.cancel()
        await asyncio.gather(*self._jobs, return_exceptions=True)
        self._jobs.clear()
        await self.executor.close()
        for close in (self.gates.close, self.breakers.close):
            with contextlib.suppress(Exception):
                await close()
        try:
            await self.astore.run(self.store.worker_gone, self.owner)
        except Exception as exc:  # the store may be the reason we stop: say so, go on
            log.warning("could not record that worker %s stopped: %r", self.owner, exc)
        await self._refresh_queue_snapshot()
        self.bus.publish(EngineStopped(self.clock.now(),
                                       "background job died" if self._problem else "stopped"))

    # -- dispatching ------------------------------------------------------------------------------

    async def _dispatch_guarded(self) -> int | None:
        """One dispatcher round; None when the store could not be reached (after a pause)."""
        try:
            n = await self._dispatch_once()
        except StoreUnavailable as exc:
            self._store_trouble("dispatcher", exc)
            await asyncio.sleep(_OUTAGE_RETRY_S)
            return None
        if self._outage_since is not None:
            log.warning("store reachable again after %.0fs",
                        self.clock.now() - self._outage_since)
            self._outage_since = None
        return n

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

    async def _dispatch_once(self) -> int:
        if self._running and self.settings.preemption.enabled and not self._stopping:
            loop = asyncio.get_running_loop()
            if loop.time() - self._last_preempt_check >= 0.1:
                self._last_preempt_check = loop.time()
                await self._preempt_round()
        free = self.slots - len(self._running)
        if free <= 0 or self._stopping or not self.breakers.pool.allows():
            return 0
        # A round claims at most _CLAIM_ROUND tasks: starting hundreds of task coroutines in
        # one go stalls the loop (measured: p99 lag 23 ms at 256 slots, 17 ms at 64).
        claimed = await self.astore.claim_many(
            self.owner, min(free, _CLAIM_ROUND),
            exclude_domains=self.breakers.blocked_domains(),
            probe_domains=self.breakers.probing_domains())
        for task in claimed:
            self.rescue_budget.attempt()
            ctl = TaskControl(self, task)
            runner = asyncio.create_task(self._run_task(task, ctl), name=f"task-{task.id}")
            self._running[task.id] = (runner, ctl)
            self.bus.publish(TaskStateChanged(self.clock.now(), task.id, task.shop, "running",
                                              f"attempt {task.attempts}"))
        return len(claimed)

    async def _wake_or(self, seconds: float | None) -> None:
        """Wait for a wake-up; with work running and preemption on, look again after
        ``_PREEMPT_POLL_S`` of real time (urgent work may be waiting for a busy slot)."""
        assert self._wake is not None
        if seconds is None and self._running and self.settings.preemption.enabled:
            seconds = _PREEMPT_POLL_S
        if seconds is None:
            await self._wake.wait()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _wait_for_change(self) -> None:
        assert self._wake is not None
        self._wake.clear()
        if self._running:
            await self._wake_or(None)

    async def _idle_wait(self) -> None:
        assert self._wake is not None
        if self._stopping:
            return
        if self._running and len(self._running) >= self.slots:
            self._wake.clear()
            await self._wake_or(None)
            return
        self._wake.clear()
        sleeper = asyncio.ensure_future(self.clock.sleep(self.poll_s))
        waker = asyncio.ensure_future(self._wake.wait())
        await asyncio.wait([sleeper, waker], return_when=asyncio.FIRST_COMPLETED)
        for f in (sleeper, waker):
            f.cancel()

    async def _run_task(self, task: ClaimedTask, ctl: TaskControl) -> None:
        breaker = self.breakers.get(task.domain)
        probe = breaker.started()
        try:
            try:
                outcome = await self.executor.execute(task, ctl)
            except asyncio.CancelledError:
                if ctl.hard_cancelled:  # did not yield in its grace period: a crashed attempt
                    wedged = BrowserCrashed(f"did not yield within "
                                            f"{self.settings.preemption.grace_s:.0f}s of being "
                                            "preempted; cancelled")
                    await asyncio.shield(self._failed(task, wedged, probe))
                    return
                await asyncio.shield(self._release(task, ctl, "aborted at shutdown", probe))
                raise
            except LeaseLost:
                log.info("task %s: lease lost (cancelled or recovered elsewhere)", task.id)
                breaker.probe_abandoned()
            except StoreUnavailable as exc:  # a checkpoint could not be written
                log.warning("task %s: stopped, the store is unreachable (%s); its lease runs "
                            "out and it resumes from its last checkpoint", task.id, exc)
                breaker.probe_abandoned()
            except TaskError as exc:
                await asyncio.shield(self._failed(task, exc, probe))
            except Exception as exc:  # a bug in an executor or flow: fail the attempt, say so
                log.exception("task %s: unexpected error", task.id)
                err = TaskError(f"internal error: {exc!r}")
                await asyncio.shield(self._failed(task, err, probe))
            else:
                if outcome.status == "done":
                    await asyncio.shield(self._done(task, outcome, probe))
                else:
                    await asyncio.shield(self._release(
                        task, ctl, ctl.yield_reason or "yielded", probe,
                        checkpoint=outcome.checkpoint))
        except StoreUnavailable as exc:  # the outcome could not be written (after retries)
            log.warning("task %s: its outcome was not recorded, the store is unreachable "
                        "(%s); its lease runs out and it resumes from its last checkpoint",
                        task.id, exc)
        finally:
            self._running.pop(task.id, None)
            self._poke()

    async def _done(self, task: ClaimedTask, outcome: Outcome, probe: bool) -> None:
        try:  # also closes the task's answered tickets, in the same transaction
            await self.astore.ack(task.id, task.lease_owner, results=outcome.results)
        except LeaseLost:
            return
        self.completed += 1
        self._finished.append((self.clock.now(), True, "", task.platform))
        if task.resumed:
            self._resumes.append((self.clock.now(), True))
        if self.breakers.get(task.domain).record_success(probe=probe):
            self._breaker_event(task.domain, "probe succeeded")
        self.breakers.pool.record_success()
        self.bus.publish(TaskStateChanged(self.clock.now(), task.id, task.shop, "done",
                                          "finished"))

    async def _release(self, task: ClaimedTask, ctl: TaskControl, reason: str, probe: bool,
                       checkpoint: dict[str, Any] | None = None) -> None:
        if probe:
            self.breakers.get(task.domain).probe_abandoned()
        try:
            await self.astore.release(task.id, task.lease_owner, reason=reason,
                                      checkpoint=checkpoint or ctl.last_checkpoint,
                                      suspend=ctl.preempted)
        except LeaseLost:
            return
        self.bus.publish(TaskStateChanged(self.clock.now(), task.id, task.shop,
                                          "suspended" if ctl.preempted else "queued", reason))

    async def _failed(self, task: ClaimedTask, exc: TaskError, probe: bool) -> None:
        now = self.clock.now()
        retry_after = None
        if isinstance(exc, RateLimited):
            retry_after = exc.retry_after_s
            self.gates.hold(task.domain, exc.retry_after_s)
            self.bus.publish(GateHeld(now, task.domain, exc.retry_after_s))
        breaker = self.breakers.get(task.domain)
        if exc.counts_for_breaker:
            if breaker.record_failure(probe=probe):
                self._breaker_event(task.domain, f"{exc.error_class}: {exc}")
        elif probe:
            breaker.probe_abandoned()  # the task's own problem says nothing about the site
        if isinstance(exc, BrowserCrashed) and self.breakers.pool.record_failure():
            self._breaker_event(self.breakers.pool.name, "browsers keep crashing")
        self._finished.append((now, False, exc.error_class, task.platform))
        if task.resumed:
            self._resumes.append((now, False))
        sig = signature_of(task, exc)
        rule, crashes = await self.astore.run(self._rescue_facts, task, sig)
        d = decide(task, exc, crashes=crashes, rule=rule, settings=self.settings.rescue,
                   budget=self.rescue_budget)
        reason = f"{exc.error_class}: {exc}"
        try:
            if d.verdict is Verdict.RULE:
                assert d.rule is not None
                state = await self.astore.apply_rule(
                    task.id, task.lease_owner, d.rule, signature=sig,
                    error_class=exc.error_class, error=str(exc), step=exc.step,
                    step_name=exc.step_name or "", evidence=exc.evidence)
                reason = d.reason
            elif d.verdict is Verdict.TICKET:
                tid = await self.astore.open_ticket(
                    task.id, task.lease_owner, signature=sig, step=exc.step, error=str(exc),
                    evidence=exc.evidence,
                    kind="write_unknown" if isinstance(exc, WriteOutcomeUnknown) else "failure",
                    reason=f"ticket: {d.reason}: {exc.error_class}")
                state = "waiting_human"
                self.bus.publish(TicketOpened(now, tid, task.id, task.shop, exc.error_class,
                                              str(exc)[:300]))
            elif d.verdict is Verdict.QUARANTINE:
                state = await self.astore.record_crash(
                    task.id, task.lease_owner, error_class=exc.error_class, message=str(exc),
                    quarantine=True, evidence=exc.evidence)
                reason = d.reason
            elif isinstance(exc, BrowserCrashed):
                self.rescue_budget.rescue()
                state = await self.astore.record_crash(
                    task.id, task.lease_owner, error_class=exc.error_class, message=str(exc),
                    quarantine=False, evidence=exc.evidence)
            else:
                self.rescue_budget.rescue()
                st = await self.astore.fail(task.id, task.lease_owner,
                                            error_class=exc.error_class, message=str(exc),
                                            retry=True, retry_after_s=retry_after,
                                            evidence=exc.evidence or None)
                state = st.value
        except LeaseLost:
            return
        self.bus.publish(TaskStateChanged(now, task.id, task.shop, state, reason))

    def _rescue_facts(self, task: ClaimedTask, sig: Signature) -> tuple[Rule | None, int]:
        return self.tickets.matching_rule(sig), self.store.crashes(task.id)

    # -- preemption -------------------------------------------------------------------------

    async def _preempt_round(self) -> None:
        """Ask holders to yield to urgent waiting tasks; enforce the grace period."""
        now = self.clock.now()
        grace = self.settings.preemption.grace_s
        for runner, ctl in list(self._running.values()):
            if ctl.preempted and ctl.yield_at is not None and now - ctl.yield_at > grace \
                    and not ctl.hard_cancelled:
                ctl.hard_cancelled = True
                runner.cancel()
        before = {tid: ctl for tid, (_, ctl) in self._running.items()}
        asked = await self.astore.run(self.store.preempt_requests, list(before))
        for tid, why in asked.items():
            entry = self._running.get(tid)
            # The same attempt as when we asked: a request read just before this task was
            # released (which clears it) must not stop the task's next attempt.
            if entry is not None and entry[1] is before.get(tid) and not entry[1].preempted:
                self._ask_yield(tid, None, why)
        cands = await self.astore.run(self.store.urgent_waiting,
                                        self.settings.priority.preempt_threshold)
        holders = [Holder(t.id, t.shop_id, t.score, t.preemptible, c.yield_requested)
                   for t, c in self.running_tasks()]
        for cid, shop_id, score in cands:
            if cid in self._urgent_pending or cid in self._running:
                continue
            victim, why = choose_victim(Candidate(cid, shop_id, score), holders,
                                        slots=self.slots,
                                        shop_limit=self.settings.queue.max_tasks_per_shop,
                                        min_gap=self.settings.preemption.min_score_gap)
            if victim is None:
                # Considered and not taken (a free slot, a hard-aged or non-preemptible or
                # more urgent holder): said at debug level, so a test can tell "refused"
                # from "never considered".
                log.debug("preemption for task %s not taken: %s", cid, why)
                continue
            if not self.storm.allows(victim.shop_id):
                if now - self._refused_at.get(cid, 0.0) >= 60:
                    self._refused_at[cid] = now
                    self._refusals.append(now)
                    reason = (f"preemption refused: storm limit "
                              f"({self.settings.preemption.storm_limit} per slot per "
                              f"{self.settings.preemption.storm_window_s:.0f}s); waits at "
                              "the front of the queue")
                    self.bus.publish(PreemptionRefused(now, cid, reason))
                    await self.astore.run(self.store.log_event, cid, reason)
                continue
            self.storm.record(victim.shop_id)
            self._urgent_pending[cid] = now
            self._ask_yield(victim.task_id, cid, why)
            holders = [h if h.task_id != victim.task_id else
                       Holder(h.task_id, h.shop_id, h.score, h.preemptible, True)
                       for h in holders]

    def _ask_yield(self, task_id: int, for_task: int | None, why: str) -> None:
        entry = self._running.get(task_id)
        if entry is None:
            return
        ctl = entry[1]
        now = self.clock.now()
        ctl.preempted = True
        ctl.yield_requested = True
        ctl.yield_at = now
        ctl.yield_reason = (f"suspended: preempted by #{for_task} ({why})" if for_task
                            else f"suspended: preempted by operator ({why})")
        self._preemptions.append(now)
        log.info("task %s asked to yield: %s", task_id, ctl.yield_reason)
        self.bus.publish(TaskPreempted(now, task_id, for_task, ctl.yield_reason))

    def _first_step(self, ctl: TaskControl) -> None:
        asked = self._urgent_pending.pop(ctl.task.id, None)
        if asked is not None:  # an urgent task that preempted: queued → first step
            now = self.clock.now()
            self._latencies.append((now, now - (ctl.task.created_at or asked)))

    async def preempt(self, task_id: int, *, for_task: int | None = None,
                      reason: str = "by operator") -> Changes:
        """Suspend a running task at its next safe step (an operator's hand: hard-aged and
        storm limits do not apply; a non-interruptible step still finishes first)."""
        if for_task is not None:
            st = await self.astore.status()
            top = (st.top_score or 0.0) + 1.0
            await self.astore.bump(for_task, to=max(top, self.settings.priority.preempt_threshold))
        if task_id in self._running:
            self._ask_yield(task_id, for_task, reason)
            if for_task is not None:
                self._urgent_pending[for_task] = self.clock.now()
        else:
            await self.astore.run(self.store.request_preempt, task_id, reason)
        return Changes(tasks=True, detail={"task": task_id})

    def _breaker_event(self, name: str, reason: str) -> None:
        v = self.breakers.get(name).view()
        self._last_breaker_states[name] = v.state
        self.bus.publish(BreakerChanged(self.clock.now(), name, v.state.value, reason,
                                        v.next_probe_at))

    # -- background jobs ----------------------------------------------------------------------

    async def _heartbeat(self) -> None:
        res = self.executor.resources()
        info = {"host": _HOST, "pid": os.getpid(), "slots": self.slots,
                "running": len(self._running), "started_at": self._started_at,
                "store": self.store.url, "done": self.completed,
                "browsers": res.get("browsers", 0), "running_ids": sorted(self._running)[:64]}
        await self.astore.run(self.store.heartbeat, self.owner, info)

    async def _job_heartbeat(self) -> None:
        """Say this worker is alive (the console shows it; a silent one is marked lost)."""
        while True:
            await self.clock.sleep(self.settings.queue.heartbeat_s)
            await self._heartbeat()

    async def _job_recover(self) -> None:
        every = self.settings.queue.recover_every_s
        lost_after = self.settings.queue.worker_lost_after_s
        while True:
            await self.clock.sleep(every)
            ids = await self.astore.recover_expired()
            # Heartbeat first: after a long pause (a laptop asleep, a stalled loop) this
            # worker must not find itself silent and requeue its own running tasks.
            await self._heartbeat()
            lost = await self.astore.run(self.store.recover_lost_workers, lost_after)
            if lost:
                log.warning("requeued %d tasks of workers that stopped heartbeating",
                            len(lost))
            ids = [*ids, *lost]
            for tid in ids:
                self.bus.publish(TaskStateChanged(self.clock.now(), tid, "", "queued",
                                                  "recovered: lease expired"))
            if ids:
                self._poke()

    async def _job_renew(self) -> None:
        every = max(0.05, self.settings.queue.lease_s / 3)
        while True:
            await self.clock.sleep(every)
            ids = list(self._running)
            if not ids:
                continue
            lost = await self.astore.renew_leases(self.owner, ids)
            for tid in lost:  # cancelled by an operator or recovered: stop working on it
                entry = self._running.get(tid)
                if entry is not None:
                    entry[1].yield_requested, entry[1].yield_reason = True, "lease lost"
                    entry[0].cancel()

    async def _job_metrics(self) -> None:
        last_minute = int(self.clock.now() // 60)
        ticks = 0
        while True:
            await self.clock.sleep(1.0)
            await self._refresh_queue_snapshot()
            self._check_breaker_transitions()
            ticks += 1
            if ticks % 5 == 0:  # for `shopfleet status --json` in another process
                snap = json.dumps({"owner": self.owner, **self.statistics().to_json()})
                await self.astore.run(self.store.set_meta, "engine_snapshot", snap)
            minute = int(self.clock.now() // 60)
            if minute != last_minute:
                stats = self.statistics()
                row = self._minute_row(stats)
                await self.astore.run(self.store.record_minute, last_minute, row,
                                        snapshot=stats.to_json())
                last_minute = minute

    def _check_breaker_transitions(self) -> None:
        for v in self.breakers.views():
            if self._last_breaker_states.get(v.name, BreakerState.CLOSED) is not v.state:
                self._last_breaker_states[v.name] = v.state
                self.bus.publish(BreakerChanged(self.clock.now(), v.name, v.state.value,
                                                "back-off over" if v.state is
                                                BreakerState.HALF_OPEN else "", v.next_probe_at))
                self._poke()

    async def _refresh_queue_snapshot(self) -> None:
        p = self.settings.priority
        st = await self.astore.status()
        bands = await self.astore.run(self.store.queue_bands, urgent_at=p.preempt_threshold,
                                        low_below=min(p.types.values(), default=0.0) + 1.0)
        tickets = await self.astore.run(self.tickets.open_count)
        self._queue_snapshot = {"status": st, "bands": bands, "open_tickets": tickets}

    @staticmethod
    def _minute_row(s: EngineStatistics) -> dict[str, Any]:
        return {
            "queued": s.queued, "running": s.running, "done": s.done_per_min,
            "failed": s.failed_per_min, "success_rate": s.success_rate,
            "oldest_wait_s": s.oldest_wait_s, "failures_by_class": s.failures_by_class,
            "failures_by_platform": s.failures_by_platform,
            "failures_hour_by_class": s.failures_hour_by_class,
            "preemptions_per_hour": s.preemptions_per_hour,
            "preemptions_refused_per_hour": s.preemptions_refused_per_hour,
            "preemption_latency_p95_s": s.preemption_latency_p95_s,
            "resume_success_rate": s.resume_success_rate, "open_tickets": s.open_tickets,
            "breakers_open": sum(1 for b in s.breakers if b.state is not BreakerState.CLOSED),
        }

    # -- statistics ------------------------------------------------------------------------------

    def statistics(self) -> EngineStatistics:
        """A frozen snapshot: queue (refreshed each second), running work, gates, breakers."""
        now = self.clock.now()
        while self._finished and self._finished[0][0] < now - 3600:
            self._finished.popleft()
        last_min = [f for f in self._finished if f[0] >= now - 60]
        done = sum(1 for f in last_min if f[1])
        failed = len(last_min) - done
        by_class = Counter(f[2] for f in last_min if not f[1])
        by_platform = Counter(f[3] for f in last_min if not f[1])
        hour = list(self._finished)
        hour_class = Counter(f[2] for f in hour if not f[1])
        hour_platform = Counter(f[3] for f in hour if not f[1])
        rate = (sum(1 for f in hour if f[1]) / len(hour)) if hour else None
        snap = self._queue_snapshot
        st = snap.get("status")
        spread = (st.top_score - st.bottom_score) if st and st.top_score is not None \
            and st.bottom_score is not None else None
        res = self.executor.resources()
        for dq in (self._preemptions, self._refusals):
            while dq and dq[0] < now - 3600:
                dq.popleft()
        while self._latencies and self._latencies[0][0] < now - 3600:
            self._latencies.popleft()
        while self._resumes and self._resumes[0][0] < now - 3600:
            self._resumes.popleft()
        lat = sorted(x for _, x in self._latencies)
        resumes = [ok for _, ok in self._resumes]
        return EngineStatistics(
            at=now, running=len(self._running), slots=self.slots,
            queued=st.queued if st else 0, queued_by_band=dict(snap.get("bands", {})),
            score_spread=spread, over_hard_age=st.hard_aged if st else 0,
            oldest_wait_s=st.oldest_wait_s if st else 0.0, done_per_min=done,
            failed_per_min=failed, failures_by_class=dict(by_class),
            failures_by_platform=dict(by_platform), failures_hour_by_class=dict(hour_class),
            failures_hour_by_platform=dict(hour_platform), success_rate=rate,
            open_tickets=int(snap.get("open_tickets", 0)),
            gates=self.gates.levels(), breakers=self.breakers.views(),
            browsers_alive=res.get("browsers", 0), contexts_alive=res.get("contexts", 0),
            preemptions_per_hour=len(self._preemptions),
            preemptions_refused_per_hour=len(self._refusals),
            preemption_latency_p50_s=_pct(lat, 50), preemption_latency_p95_s=_pct(lat, 95),
            resume_success_rate=(sum(resumes) / len(resumes)) if resumes else None,
            problems=(repr(self._problem),) if self._problem else ())

    def running_tasks(self) -> list[tuple[ClaimedTask, TaskControl]]:
        return [(ctl.task, ctl) for _, ctl in self._running.values()]

    # -- operator commands ------------------------------------------------------------------------

    async def submit(self, specs: Sequence[TaskSpec], *, wait: bool = True) -> list[int]:
        ids = await self.astore.submit_many(specs, wait=wait)
        self.bus.publish(TasksSubmitted(self.clock.now(), tuple(ids)))
        self._poke()
        return ids

    async def bump(self, task_id: int, *, to: float | None = None,
                   by: float | None = None) -> Changes:
        score = await self.astore.bump(task_id, to=to, by=by)
        self.bus.publish(TaskBumped(self.clock.now(), task_id, score))
        return Changes(tasks=True, detail={"score": score})

    async def cancel(self, task_id: int) -> Changes:
        before = await self.astore.cancel(task_id)
        entry = self._running.get(task_id)
        if entry is not None:
            entry[1].yield_requested, entry[1].yield_reason = True, "cancelled"
            entry[0].cancel()
        rec = await self.astore.task(task_id)
        self.bus.publish(TaskStateChanged(self.clock.now(), task_id, rec.shop, "cancelled",
                                          "cancelled by operator"))
        return Changes(tasks=True, detail={"was": before.value})

    async def retry(self, task_id: int) -> Changes:
        """Run a finished task (done, failed or cancelled) again: a new task with its spec.

        Raises:
            Refused: the task has not finished (it may still run, or wait for a person).
        """
        rec = await self.astore.task(task_id)
        if not rec.state.is_final:
            raise Refused(f"task {task_id} is {rec.state.value}; only finished tasks can be "
                          "retried")
        data: dict[str, Any] = {"type": rec.type, "shop": rec.shop, "params": rec.params,
                                "max_attempts": rec.max_attempts}
        if rec.flow is not None:
            data["flow"] = rec.flow
        else:
            data["steps"] = rec.steps
        ids = await self.submit([TaskSpec.model_validate(data)])
        return Changes(tasks=True, detail={"retried_as": ids[0]})

    async def pause_shop(self, name: str, paused: bool = True) -> Changes:
        await self.astore.run(self.store.set_shop_paused, name, paused)
        self.bus.publish(ShopPaused(self.clock.now(), name, paused))
        self._poke()
        return Changes(shops=True, tasks=True)

    async def pause_domain(self, domain: str, paused: bool = True) -> Changes:
        await self.astore.run(self.store.set_domain_paused, domain, paused)
        self.bus.publish(DomainPaused(self.clock.now(), domain, paused))
        self._poke()
        return Changes(shops=True, tasks=True)

    async def set_gate_rate(self, name: str, *, rate_per_s: float, burst: float) -> Changes:
        if rate_per_s <= 0 or burst < 1:
            raise Refused(f"gate {name}: rate must be > 0 and burst at least 1")
        self.gates.set_rate(name, rate_per_s, burst)
        saved = {lv.name: (lv.rate_per_s, lv.burst) for lv in self.gates.levels()
                 if lv.name in self._changed_gates}
        await self.astore.run(self.store.set_meta, "gate_rates", json.dumps(saved))
        return Changes(gates=True)

    def _gate_changed(self, name: str, rate: float, burst: float) -> None:
        self._changed_gates.add(name)
        self.bus.publish(GateChanged(self.clock.now(), name, rate, burst))

    async def answer_ticket(self, ticket_id: int, action: str, *, note: str = "",
                            make_rule: str | None = None,
                            rule_delay_s: float = 600.0) -> Changes:
        """Answer a ticket (retry / resume / skip / done / cancel), optionally making a rule."""
        t = await self.astore.run(self.tickets.answer, ticket_id, action, note=note,
                                    make_rule=make_rule, rule_delay_s=rule_delay_s)
        self.bus.publish(TicketAnswered(self.clock.now(), ticket_id, t.task_id, action))
        rec = await self.astore.task(t.task_id)
        self.bus.publish(TaskStateChanged(self.clock.now(), t.task_id, rec.shop,
                                          rec.state.value, rec.state_reason))
        self._poke()
        return Changes(tasks=True, tickets=True, detail={"ticket": t.to_json()})

    async def release_quarantined(self, task_id: int) -> Changes:
        await self.astore.run(self.tickets.release, task_id)
        rec = await self.astore.task(task_id)
        self.bus.publish(TaskStateChanged(self.clock.now(), task_id, rec.shop, "queued",
                                          rec.state_reason))
        self._poke()
        return Changes(tasks=True)

    async def set_rule_enabled(self, rule_id: int, enabled: bool) -> Changes:
        await self.astore.run(self.tickets.set_rule_enabled, rule_id, enabled)
        return Changes(tickets=True)

    async def delete_rule(self, rule_id: int) -> Changes:
        await self.astore.run(self.tickets.delete_rule, rule_id)
        return Changes(tickets=True)

    async def set_breaker(self, name: str, state: Literal["open", "closed"]) -> Changes:
        self.breakers.get(name).force(BreakerState(state))
        self._breaker_event(name, f"{state} by operator")
        self._poke()
        return Changes(breakers=True)

