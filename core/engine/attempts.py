"""Running a task's attempt and recording how it ended (with the rescue chain)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..errors import (
    BrowserCrashed,
    LeaseLost,
    NetworkDown,
    ProxyFailed,
    RateLimited,
    SiteFailed,
    StoreUnavailable,
    TaskError,
    WriteOutcomeUnknown,
)
from ..events import GateChanged, GateHeld, ShopProxyChanged, TaskStateChanged, TicketOpened
from ..store import ClaimedTask
from ..tickets import Rule, Signature
from .breakers import BreakerState, outage_probe_delay, proxy_breaker, split_breaker_names
from .control import Outcome, TaskControl
from .jobs import BackgroundJobs
from .rescue import Verdict, decide, signature_of

log = logging.getLogger(__name__)


class TaskAttempts(BackgroundJobs):
    """One attempt of a task, start to recorded end: the executor runs it; the outcome is
    written shielded from cancellation; a failure goes through the rescue chain (rule,
    ticket, quarantine, retry) and feeds the breakers and gates."""

    def _mark_probe(self, task: ClaimedTask) -> bool:
        """Right after the claim, before another dispatcher round can look: is this task its
        half-open domain's probe (and its shop's proxy probe)? Marked here, not when the
        task's coroutine first runs — a round in between would see the breaker still
        waiting for a probe and claim a second one."""
        probe = self.breakers.get(task.domain).started()
        pname = proxy_breaker(task.shop)
        if pname in self.breakers.probing_domains() and self.breakers.get(pname).started():
            self._proxy_probes.add(task.id)  # this task tries the shop's proxy again
        return probe

    async def _run_task(self, task: ClaimedTask, ctl: TaskControl, probe: bool) -> None:
        breaker = self.breakers.get(task.domain)
        pname = proxy_breaker(task.shop)
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
            if task.id in self._proxy_probes:  # ended without a verdict on the proxy
                self._proxy_probes.discard(task.id)
                self.breakers.get(pname).probe_abandoned()
            self._running.pop(task.id, None)
            self._poke()

    def _claim_filters(self) -> tuple[set[str], set[str], set[str], set[str]]:
        """What a claim of this engine leaves out now: (domains, probing domains, shops,
        probing shops). Proxy breakers (#17) hold one shop each, domain breakers every shop
        of a domain; a probing (half-open) one gives at most one task."""
        blocked, blocked_shops = split_breaker_names(self.breakers.blocked_domains())
        probing, probing_shops = split_breaker_names(self.breakers.probing_domains())
        return blocked, probing, blocked_shops, probing_shops

    def _start_attempt(self, task: ClaimedTask) -> None:
        """Run a claimed task in a slot (as its own asyncio task)."""
        self.rescue_budget.attempt()
        ctl = TaskControl(self, task)
        probe = self._mark_probe(task)
        runner = asyncio.create_task(self._run_task(task, ctl, probe), name=f"task-{task.id}")
        self._running[task.id] = (runner, ctl)
        self.bus.publish(TaskStateChanged(self.clock.now(), task.id, task.shop, "running",
                                          f"attempt {task.attempts}"))

    def _first_step(self, ctl: TaskControl) -> None:
        asked = self._urgent_pending.pop(ctl.task.id, None)
        if asked is not None:  # an urgent task that preempted: queued → first step
            now = self.clock.now()
            self._latencies.append((now, now - (ctl.task.created_at or asked)))

    def _claims_on_ack(self, task: ClaimedTask, probe: bool) -> bool:
        """May the ack of ``task`` also claim the next task for its slot (one transaction,
        #20)? Only when that claim is exactly the one the dispatcher would make once the
        slot is free; otherwise the ack goes alone and the dispatcher claims, as before:

        - the engine is not stopping, and the pool breaker lets work through;
        - this slot is the only one to fill: every slot is taken (none free besides this
          one) and no other ack is in flight. Otherwise the dispatcher's next round claims
          for several slots at once, which costs the store less: a claim reads which shops
          are busy (a walk over every running task), a round once for up to 64 tasks, a
          claim with the ack once a task (measured at 256 running tasks: 456 µs of CPU a
          task with the ack, 88 µs acked alone and claimed in rounds of 64);
        - this success changes no breaker: ``task`` is no probe (of its domain or of its
          shop's proxy), its domain's breaker is closed and its shop's proxy is not down
          (the dispatcher would claim after the breaker closed; here the exclusions are read
          before the ack);
        - no breaker is half-open: its single probe is claimed by the dispatcher alone
          (claims here run beside the dispatcher's round and each other; two of them could
          each start a "single" probe).

        Everything else a claim round does holds here as well: the store applies priority
        bands, hard aging and urgency, skips paused, held and busy shops (one task per shop on
        every worker: the slot's shop is free again only because its task was acked in the
        same transaction) and takes the lease for this engine's owner; rate gates are taken
        inside the attempt, as for any claimed task; the preemption round stays with the
        dispatcher, which is poked when the attempt ends.
        """
        if not self.claim_on_ack or self._stopping or not self.breakers.pool.allows():
            return False
        if len(self._running) != self.slots or self._acks_in_flight:
            return False
        if probe or task.id in self._proxy_probes or task.shop in self._proxy_errors:
            return False
        if self.breakers.get(task.domain).state is not BreakerState.CLOSED:
            return False
        return not self.breakers.probing_domains()

    async def _ack_and_claim(self, task: ClaimedTask, outcome: Outcome) -> ClaimedTask | None:
        blocked, _, blocked_shops, _ = self._claim_filters()
        return await self.astore.ack_and_claim(
            task.id, task.lease_owner, results=outcome.results, exclude_domains=blocked,
            exclude_shops=blocked_shops)

    async def _give_back(self, task: ClaimedTask, reason: str = "engine stopping") -> None:
        """A claimed task this engine will not run (stopping began while the claim was in
        flight — shutdown waits only for the attempts it saw —, or no slot is left for it):
        give it back as it was, its attempt not spent."""
        try:
            await self.astore.release(task.id, task.lease_owner, reason=reason,
                                      suspend=task.resumed)
        except (LeaseLost, StoreUnavailable) as exc:
            log.warning("task %s: claimed but not run (%s), not given back (%r); its lease "
                        "runs out and it is recovered", task.id, reason, exc)

    async def _take_slot(self, finished: ClaimedTask, nxt: ClaimedTask) -> None:
        """Run ``nxt`` (claimed with the ack of ``finished``) in ``finished``'s slot."""
        if self._stopping:
            await self._give_back(nxt)
            return
        # Its slot, now nxt's: never one over slots. The slot may have been freed already
        # (the ack was retried through a store outage, and the lease check meanwhile found
        # the finished task gone and ended its runner) and taken by the dispatcher: then
        # there is no room, and nxt goes back as it was.
        if self._running.pop(finished.id, None) is None and len(self._running) >= self.slots:
            await self._give_back(nxt, "no free slot: claimed with an ack whose slot was "
                                       "taken meanwhile")
            return
        self.claimed_with_ack += 1
        self._start_attempt(nxt)

    async def _done(self, task: ClaimedTask, outcome: Outcome, probe: bool) -> None:
        nxt: ClaimedTask | None = None
        combined = self._claims_on_ack(task, probe)
        self._acks_in_flight += 1
        try:  # also closes the task's answered tickets, in the same transaction
            if combined:
                nxt = await self._ack_and_claim(task, outcome)
            else:
                await self.astore.ack(task.id, task.lease_owner, results=outcome.results)
        except LeaseLost:  # nothing was claimed either
            return
        finally:
            self._acks_in_flight -= 1
        self.completed += 1
        self._proxy_answered(task)
        self.site_trouble.succeeded(task.domain, task.id)
        self._finished.add(self.clock.now(), True, "", task.platform)
        if self.rate_limits.slowed:
            self._restore_gates()
        if task.resumed:
            self._resumes.append((self.clock.now(), True))
        if self.breakers.get(task.domain).record_success(probe=probe):
            self._breaker_event(task.domain, "probe succeeded")
        self.breakers.pool.record_success()
        self.bus.publish(TaskStateChanged(self.clock.now(), task.id, task.shop, "done",
                                          "finished"))
        if nxt is not None:
            await self._take_slot(task, nxt)

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

    def _proxy_answered(self, task: ClaimedTask) -> None:
        """The attempt got past the shop's proxy: a proxy probe closes its breaker — and so
        does any attempt of a shop whose proxy was down that got through (a probe that was
        preempted and resumed is no longer the designated probe, yet proves the proxy)."""
        was_probe = task.id in self._proxy_probes
        if not was_probe and task.shop not in self._proxy_errors:
            return
        self._proxy_probes.discard(task.id)
        name = proxy_breaker(task.shop)
        b = self.breakers.get(name)
        if b.state is BreakerState.CLOSED:
            self._proxy_errors.pop(task.shop, None)
            return
        if b.record_success(probe=True):
            self._breaker_event(name, "proxy answers again")
            self._proxy_errors.pop(task.shop, None)
            self.bus.publish(ShopProxyChanged(self.clock.now(), task.shop, False))
            log.warning("shop %s: its proxy answers again; its tasks run", task.shop)

    async def _proxy_failed(self, task: ClaimedTask, exc: ProxyFailed, probe: bool) -> None:
        """The shop's proxy failed: the shop's own breaker counts it, the attempt is given
        back (no attempt spent, no ticket, no retry back-off), other shops are untouched."""
        name = proxy_breaker(task.shop)
        was_probe = task.id in self._proxy_probes
        self._proxy_probes.discard(task.id)
        if probe:  # a domain probe that never reached the site says nothing about it
            self.breakers.get(task.domain).probe_abandoned()
        if self.breakers.get(name).record_failure(probe=was_probe):
            first = task.shop not in self._proxy_errors
            self._proxy_errors[task.shop] = str(exc)
            self._breaker_event(name, str(exc))
            if first:
                log.warning("shop %s: %s; its tasks wait for the proxy", task.shop, exc)
                self.bus.publish(ShopProxyChanged(self.clock.now(), task.shop, True, str(exc)))
        try:
            await self.astore.release(task.id, task.lease_owner, reason=str(exc)[:300])
        except LeaseLost:
            return
        self.bus.publish(TaskStateChanged(self.clock.now(), task.id, task.shop, "queued",
                                          str(exc)[:300]))

    async def _failed(self, task: ClaimedTask, exc: TaskError, probe: bool) -> None:
        if isinstance(exc, ProxyFailed):
            await self._proxy_failed(task, exc, probe)
            return
        self._proxy_answered(task)
        now = self.clock.now()
        if await self._site_state(task, exc, probe):
            return
        breaker = self.breakers.get(task.domain)
        if isinstance(exc, SiteFailed):
            pass  # already counted by _site_state
        elif exc.counts_for_breaker:
            if breaker.record_failure(probe=probe):
                self._breaker_event(task.domain, f"{exc.error_class}: {exc}")
        elif probe:
            breaker.probe_abandoned()  # the task's own problem says nothing about the site
        if isinstance(exc, BrowserCrashed) and self.breakers.pool.record_failure():
            self._breaker_event(self.breakers.pool.name, "browsers keep crashing")
        self._finished.add(now, False, exc.error_class, task.platform)
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
                retry_after = None
                if d.wait_factor > 1:  # the rescue share is at its cap: wait longer
                    q = self.settings.queue
                    usual = min(q.retry_backoff_s * 2 ** max(0, task.attempts - 1),
                                q.retry_backoff_max_s)
                    retry_after = max(1.0, usual) * d.wait_factor
                    reason = d.reason
                st = await self.astore.fail(task.id, task.lease_owner,
                                            error_class=exc.error_class, message=str(exc),
                                            retry=True, retry_after_s=retry_after,
                                            evidence=exc.evidence or None)
                state = st.value
        except LeaseLost:
            return
        self.bus.publish(TaskStateChanged(now, task.id, task.shop, state, reason))

    async def _site_state(self, task: ClaimedTask, exc: TaskError, probe: bool) -> bool:
        """Settle a failure that is the site's or the network's state, not the task's: the
        task waits (released, its attempt not spent, no ticket). Returns False for the
        task's own failures, which go on to the rescue chain (:func:`.rescue.decide`)."""
        now = self.clock.now()
        breaker = self.breakers.get(task.domain)
        if isinstance(exc, RateLimited):
            # A held gate, not a failure: the breaker is not told (a 429 is the site
            # answering, alive); a domain that keeps doing it gets a slower gate.
            if probe:
                breaker.probe_abandoned()
            self.gates.hold(task.domain, exc.retry_after_s)
            self.bus.publish(GateHeld(now, task.domain, exc.retry_after_s))
            factor = self.rate_limits.note(task.domain)
            if factor > 1:
                self._slow_gate(task.domain, factor)
            wait = exc.retry_after_s
            why = f"rate limited: waits {wait:g}s for {task.domain}'s gate (no attempt used)"
        elif isinstance(exc, NetworkDown):
            # The network path failed: claims for the domain pause at once; the task is due
            # at the breaker's next probe — the moment the path is tried again — not after
            # a back-off of its own, so when the probe succeeds every task the outage held
            # is claimable at once. Only the probe's own outage backs the breaker off
            # further; tasks already in flight when it opened leave the probe time alone.
            if breaker.record_outage(probe=probe):
                self._breaker_event(task.domain, f"{exc.error_class}: {exc}")
            view = await self.breakers.settled(task.domain)
            now = self.clock.now()
            wait = outage_probe_delay(view, now)
            why = (f"network down: claims for {task.domain} paused, due at its next probe in "
                   f"{wait:.0f}s (no attempt used)")
        elif isinstance(exc, SiteFailed):
            opened = breaker.record_failure(probe=probe)
            if opened:
                self._breaker_event(task.domain, f"{exc.error_class}: {exc}")
            shared = self.site_trouble.note(task.domain, task.id)
            if not (opened or shared or breaker.state is not BreakerState.CLOSED):
                if (task.attempts < task.max_attempts
                        or self.site_trouble.others_succeed(task.domain, task.id)):
                    return False  # so far this task's own trouble: an attempt is spent
                # Its last attempt, and nothing of the domain works either: the site's
                # state until shown otherwise; the breaker opens and its probe tells.
                if breaker.record_failure(probe=True):
                    self._breaker_event(task.domain, f"{exc.error_class}: {exc} (nothing "
                                        "of the domain succeeds)")
            wait = self._until_probe(task.domain)
            why = (f"site failing: {task.domain} is in trouble, waits {wait:.0f}s "
                   "(no attempt used)")
        else:
            return False
        self._finished.add(now, False, exc.error_class, task.platform)
        try:
            await self.astore.release(task.id, task.lease_owner, reason=f"{why}: {exc}"[:500],
                                      delay_s=wait)
        except LeaseLost:
            return True
        self.bus.publish(TaskStateChanged(now, task.id, task.shop, "queued", why))
        return True

    def _until_probe(self, domain: str) -> float:
        """Seconds until the domain's breaker lets a probe through (its back-off when it
        is closed again: a site in trouble is not hammered)."""
        v = self.breakers.get(domain).view()
        if v.next_probe_at is not None:
            return max(1.0, v.next_probe_at - self.clock.now())
        q = self.settings.queue
        return max(1.0, q.retry_backoff_s)

    def _slow_gate(self, domain: str, factor: float) -> None:
        self.gates.slow_down(domain, factor)
        lv = next((g for g in self.gates.levels() if g.name == domain), None)
        rate = lv.rate_per_s if lv is not None else 0.0
        log.warning("%s keeps rate-limiting: its gate runs at 1/%g of its rate for a while",
                    domain, factor)
        self.bus.publish(GateChanged(self.clock.now(), domain, rate,
                                     lv.burst if lv is not None else 0.0))

    def _restore_gates(self) -> None:
        """Gates slowed by rate limits go back to their configured rate once quiet."""
        for domain in self.rate_limits.recovered():
            self.gates.slow_down(domain, 1.0)
            log.info("%s stopped rate-limiting: its gate is back to its configured rate",
                     domain)

    def _rescue_facts(self, task: ClaimedTask, sig: Signature) -> tuple[Rule | None, int]:
        return self.tickets.matching_rule(sig), self.store.crashes(task.id)
