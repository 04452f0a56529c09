"""The engine's background jobs, each watched (see :meth:`BackgroundJobs._watch`)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable

from ..errors import StoreUnavailable
from ..events import BreakerChanged, EngineProblem, TaskStateChanged
from .breakers import BreakerState
from .state import _HOST, _OUTAGE_RETRY_S
from .statistics import EngineStats

log = logging.getLogger(__name__)


_BANDS_SHARE = 0.02
"""Most of the (real) time the metrics job spends counting the queue's bands: on a deep
queue a count takes a while (it walks index entries, off the loop), so it runs again only
after 1/_BANDS_SHARE times as long as it took (every second when it is quick)."""


class BackgroundJobs(EngineStats):
    """Watched background jobs: heartbeat, lease recovery and renewal, metrics. If one dies
    the engine says so and stops instead of limping on."""

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
            # Heartbeat first (the console shows it), and never count this worker: after a
            # long pause (a laptop asleep, a stalled loop) between its heartbeat and the check,
            # it would find itself silent and requeue its own running tasks.
            await self._heartbeat()
            lost = await self.astore.run(self.store.recover_lost_workers, lost_after,
                                         alive=self.owner)
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
            await self._refresh_queue_snapshot(bands_due_only=True)
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

    async def _refresh_queue_snapshot(self, *, bands_due_only: bool = False) -> None:
        """Read the queue's status, bands and open tickets for :meth:`statistics`.

        ``bands_due_only`` (the metrics job): keep the last band counts until they are due
        again (:data:`_BANDS_SHARE`)."""
        p = self.settings.priority
        st = await self.astore.status()
        loop = asyncio.get_running_loop()
        bands = self._queue_snapshot.get("bands")
        if bands is None or not bands_due_only or loop.time() >= self._bands_due:
            t0 = loop.time()
            bands = await self.astore.run(self.store.queue_bands,
                                          urgent_at=p.preempt_threshold,
                                          low_below=min(p.types.values(), default=0.0) + 1.0)
            took = loop.time() - t0
            self._bands_due = loop.time() + took / _BANDS_SHARE
        tickets = await self.astore.run(self.tickets.open_count)
        self._queue_snapshot = {"status": st, "bands": bands, "open_tickets": tickets}
