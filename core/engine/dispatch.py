"""The dispatcher: claiming tasks into free slots, and preemption for urgent work."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ..errors import StoreUnavailable
from ..events import Changes, PreemptionRefused, TaskPreempted
from .attempts import TaskAttempts
from .preemption import Candidate, Holder, choose_victim
from .state import _OUTAGE_RETRY_S

log = logging.getLogger(__name__)


_CLAIM_ROUND = 64
"""Most tasks claimed (one transaction) and started in one dispatcher round."""


_PREEMPT_POLL_S = 0.1
"""Real-time interval at which a busy dispatcher looks for urgent work waiting for a slot."""


class Dispatcher(TaskAttempts):
    """Claims tasks while there are free slots and breakers allow, waits for change, and
    hands a busy slot to urgent work by cooperative preemption."""

    _preempt_due = False
    """Work was submitted in this process: look for urgent work at the next round, without
    waiting for the preemption poll (which remains for other processes' submissions)."""

    def _notice_submitted(self) -> None:
        """The submit path's signal: new work may be urgent enough to preempt."""
        self._preempt_due = True
        self._poke()

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

    async def _dispatch_once(self) -> int:
        if self._running and self.settings.preemption.enabled and not self._stopping:
            loop = asyncio.get_running_loop()
            if self._preempt_due or loop.time() - self._last_preempt_check >= 0.1:
                self._preempt_due = False
                self._last_preempt_check = loop.time()
                await self._preempt_round()
        if self.rate_limits.slowed:
            self._restore_gates()
        free = self.slots - len(self._running)
        if free <= 0 or self._stopping or not self.breakers.pool.allows():
            return 0
        # A round claims at most _CLAIM_ROUND tasks: starting hundreds of task coroutines in
        # one go stalls the loop (measured: p99 lag 23 ms at 256 slots, 17 ms at 64).
        blocked, probing, blocked_shops, probing_shops = self._claim_filters()
        claimed = await self.astore.claim_many(
            self.owner, min(free, _CLAIM_ROUND), exclude_domains=blocked,
            probe_domains=probing, exclude_shops=blocked_shops, probe_shops=probing_shops)
        if self._stopping:  # stop() began during the claim: its shutdown did not see these
            await asyncio.gather(*(self._give_back(task) for task in claimed))
            return 0
        for task in claimed:
            self._start_attempt(task)
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
        # Both reads at once: each is a thread hop, and this runs while urgent work waits.
        asked, cands = await asyncio.gather(
            self.astore.run(self.store.preempt_requests, list(before)),
            self.astore.run(self.store.urgent_waiting,
                            self.settings.priority.preempt_threshold))
        for tid, why in asked.items():
            entry = self._running.get(tid)
            # The same attempt as when we asked: a request read just before this task was
            # released (which clears it) must not stop the task's next attempt.
            if entry is not None and entry[1] is before.get(tid) and not entry[1].preempted:
                self._ask_yield(tid, None, why)
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
            prepare = getattr(self.executor, "prepare_context", None)
            if prepare is not None:  # the urgent task's context is made while the holder yields
                prepare()
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
