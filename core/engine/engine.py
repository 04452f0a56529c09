"""The engine: claims tasks while there is room, runs them, records how each attempt ended.

It composes the store (order), an executor (the browser pool and flow runner, or a no-op one for
benchmarks), the rate gates (pace) and the circuit breakers (failure isolation). It is an async
context manager with ``run()``, ``stop()`` (graceful, then abort), ``run_until_idle()`` for
deterministic tests, and ``statistics()`` returning a frozen snapshot. Background jobs (lease
recovery and renewal, metrics) are watched: if one dies, the engine reports it and stops.

Every command an operator can give (submit, bump, cancel, pause/resume, gate rates, breakers)
is a coroutine here; it returns a :class:`core.events.Changes` summary and publishes events.

The engine is built in layers, each a subclass of the one before: :mod:`.state` (its state,
set up in one place), :mod:`.statistics`, :mod:`.jobs` (background jobs), :mod:`.attempts` (a
task's attempt and its rescue), :mod:`.dispatch` (claiming, preemption) and this module (life
cycle, operator commands). A layer calls only what it or the layers below define; what an
executor sees of the engine is in :mod:`.control`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import Refused, ShopFleetError
from ..events import (
    Changes,
    DomainPaused,
    EngineStopped,
    ShopPaused,
    TaskBumped,
    TasksSubmitted,
    TaskStateChanged,
    TicketAnswered,
)
from ..scheduler import scheduler_job
from ..specs import TaskSpec
from ..tickets import check_rule_change, check_write_safety, parse_answer
from . import collector
from .breakers import BreakerState
from .dispatch import Dispatcher

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Leftover:
    """Work left on the store when a worker stops (``run_until_idle``), and why."""

    waiting: int
    tickets: int
    quarantined: int
    running: int
    reasons: tuple[str, ...]

    @property
    def empty(self) -> bool:
        """Nothing waits, nothing waits for a person, nothing is quarantined (tasks running
        on other workers are theirs)."""
        return not (self.waiting or self.tickets or self.quarantined)

class Engine(Dispatcher):
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
        collector.engine_started()  # short full collections while it runs (lag, #20)
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
            self.astore, self.clock, self.bus.publish, self._poke,
            tick_s=self.settings.queue.schedule_tick_s))

    async def run(self) -> None:
        """Claim and run tasks until :meth:`stop`; raises if a background job died."""
        await self.start()
        while not self._stopping:
            await self._dispatch_guarded()
            await self._idle_wait()
        await self._shutdown()
        if self._problem is not None:
            raise ShopFleetError(f"engine stopped: a background job died: {self._problem!r}")

    async def run_until_idle(self, *, reach_s: float = 0.0) -> Leftover:
        """Run until nothing is running and nothing is claimable now; returns what is left.

        Args:
            reach_s: also wait for work that is only held back (a task's back-off or
                ``not_before``, an open breaker's next probe, a held gate) when it becomes
                claimable within this many seconds; 0 stops as soon as nothing is claimable
                (deterministic tests step the clock themselves).
        """
        await self.start()
        assert self._wake is not None
        while not self._stopping:
            # A change from here on (a task ended, a breaker moved) is seen after the round:
            # a round that looked while a shop's task ran found the shop busy; if the task
            # ended before the round returned, its shop's next task is claimable although
            # nothing runs — look again instead of calling that idle.
            self._wake.clear()
            n = await self._dispatch_guarded()
            if n is None or self._wake.is_set():
                continue
            if n == 0 and not self._running:
                if reach_s <= 0:
                    break
                wait = await self._held_back_for()
                if wait is None or wait > reach_s:
                    break
                await self._sleep_or_wake(wait)
                continue
            await self._wait_for_change()
        if self._problem is not None:
            raise ShopFleetError(f"engine stopped: a background job died: {self._problem!r}")
        return await self.leftover(reach_s=reach_s)

    async def _held_back_for(self) -> float | None:
        """Seconds until held-back work may be claimable (None: nothing waits, or nothing
        but an operator can release it: a breaker opened by hand)."""
        now = self.clock.now()
        counts = await self.astore.run(self.store.counts)
        if counts.get("queued", 0) + counts.get("suspended", 0) == 0:
            return None
        due = await self.astore.run(self.store.next_due)
        cands: list[float] = []
        if due is not None and due > now:
            cands.append(due - now)
        probing = False
        for v in self.breakers.views():
            if v.state is BreakerState.OPEN and v.next_probe_at is not None:
                # held until the breaker's next probe: that is when it may be claimable
                cands.append(max(0.0, v.next_probe_at - now))
            elif v.state is BreakerState.HALF_OPEN:
                probing = True
        # Claimable by time and held only by a probe about to be claimed or by another
        # worker's running task: look again soon. (An open breaker is not a reason to poll:
        # its next probe is the time to wait for, and a probe beyond the reach ends the run
        # with the work left said, instead of waiting forever, #15.)
        if due is not None and due <= now and (probing or counts.get("running", 0)):
            cands.append(self.poll_s)
        return min(cands) if cands else None

    async def _sleep_or_wake(self, seconds: float) -> None:
        assert self._wake is not None
        self._wake.clear()
        sleeper = asyncio.ensure_future(self.clock.sleep(max(seconds, 0.01)))
        waker = asyncio.ensure_future(self._wake.wait())
        await asyncio.wait([sleeper, waker], return_when=asyncio.FIRST_COMPLETED)
        for f in (sleeper, waker):
            f.cancel()

    async def leftover(self, *, reach_s: float = 0.0) -> Leftover:
        """What work is left on the store and why it did not run (for ``--until-idle``)."""
        now = self.clock.now()
        counts = await self.astore.run(self.store.counts)
        waiting = counts.get("queued", 0) + counts.get("suspended", 0)
        why: list[str] = []
        if waiting:
            due = await self.astore.run(self.store.next_due)
            if due is not None and due > now:
                why.append(f"{waiting} tasks wait; the next may run in {due - now:.0f}s"
                           + (f", beyond the {reach_s:.0f}s this worker waits" if reach_s
                              else ""))
            else:
                why.append(f"{waiting} tasks wait and none could be claimed now")
        for v in self.breakers.views():
            if v.state is BreakerState.CLOSED:
                continue
            if v.manual:
                why.append(f"breaker {v.name} is open by hand (shopfleet breaker close)")
            elif v.next_probe_at is not None:
                probe_in = max(0.0, v.next_probe_at - now)
                cause = self._breaker_causes.get(v.name, "")
                why.append(f"breaker {v.name} is open; its next probe in {probe_in:.0f}s"
                           + (f", beyond the {reach_s:.0f}s this worker waits"
                              if reach_s and probe_in > reach_s else "")
                           + (f" (opened by {cause[:200]})" if cause else ""))
            else:
                why.append(f"breaker {v.name} is {v.state.value}")
        for lv in self.gates.levels():
            if lv.held_until is not None and lv.held_until > now:
                why.append(f"gate {lv.name} is held for {lv.held_until - now:.0f}s more")
        tickets = counts.get("waiting_human", 0)
        if tickets:
            why.append(f"{tickets} tasks wait for a person (shopfleet tickets)")
        quarantined = counts.get("quarantined", 0)
        if quarantined:
            why.append(f"{quarantined} tasks are quarantined (shopfleet quarantine)")
        return Leftover(waiting=waiting, tickets=tickets, quarantined=quarantined,
                        running=counts.get("running", 0), reasons=tuple(why))

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
        try:
            await self._shut_down(grace_s)
        finally:
            collector.engine_stopped()

    async def _shut_down(self, grace_s: float | None) -> None:
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

    async def submit(self, specs: Sequence[TaskSpec], *, wait: bool = True) -> list[int]:
        ids = await self.astore.submit_many(specs, wait=wait)
        self.bus.publish(TasksSubmitted(self.clock.now(), tuple(ids)))
        self._notice_submitted()  # by event: urgent work is looked for at once
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

    async def answer_ticket(self, ticket_id: int, action: str, *, note: str = "",
                            make_rule: str | None = None,
                            rule_delay_s: float = 600.0,
                            confirm_resend: bool = False) -> Changes:
        """Answer a ticket (retry / resume / skip / done / cancel), optionally making a rule.

        Raises:
            InvalidInput: ``confirm_resend``: a resend of a write of unknown outcome that was
                not confirmed (:func:`core.tickets.check_write_safety`).
        """
        act, rule_act = parse_answer(action, make_rule)
        if rule_act is not None:
            check_rule_change(rule_act, rule_delay_s, "")
        ticket = await self.astore.run(self.tickets.ticket, ticket_id)
        check_write_safety(ticket.kind, act, confirm_resend=confirm_resend)
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

    async def edit_rule(self, rule_id: int, *, action: str, delay_s: float,
                        note: str = "") -> Changes:
        """Change what a rule does and its note (its scope stays).

        Raises:
            InvalidInput: naming ``rule``, ``action``, ``delay_s`` or ``note``.
        """
        rule = await self.astore.run(self.tickets.edit_rule, rule_id, action=action,
                                     delay_s=delay_s, note=note)
        return Changes(tickets=True, detail={"rule": rule.id, "description": rule.description})

    async def set_breaker(self, name: str, state: Literal["open", "closed"]) -> Changes:
        self.breakers.get(name).force(BreakerState(state))
        self._breaker_event(name, f"{state} by operator")
        self._poke()
        return Changes(breakers=True)
