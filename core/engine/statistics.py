"""The engine's statistics: a frozen snapshot at one instant (:class:`EngineStatistics`)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .breakers import PROXY_PREFIX, BreakerState, BreakerView
from .gates import GateLevel
from .state import EngineState


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
    proxy_down: dict[str, str] = field(default_factory=dict)
    """#17: shops whose own proxy is down now (their tasks wait), with why."""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = json.loads(json.dumps(asdict(self), default=str))
        return d


def _pct(sorted_values: list[float], p: float) -> float | None:
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


class EngineStats(EngineState):
    """The frozen snapshot of the engine, and the per-minute row the store keeps of it."""

    def statistics(self) -> EngineStatistics:
        """A frozen snapshot: queue (refreshed each second), running work, gates, breakers."""
        now = self.clock.now()
        fin = self._finished
        fin.expire(now)
        done, failed, by_class, by_platform = fin.last_minute(now)
        hour_class = Counter(fin.by_class)
        hour_platform = Counter(fin.by_platform)
        rate = (fin.done / len(fin)) if len(fin) else None
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
            problems=(repr(self._problem),) if self._problem else (),
            proxy_down=self.proxy_trouble())

    def proxy_trouble(self) -> dict[str, str]:
        """#17: shops whose own proxy is down now (their tasks wait), with why — what the
        console shows as "proxy down". An operator closes one with
        ``set_breaker("proxy:<shop>", "closed")``."""
        out: dict[str, str] = {}
        for v in self.breakers.views():
            if v.name.startswith(PROXY_PREFIX) and v.state is not BreakerState.CLOSED:
                shop = v.name[len(PROXY_PREFIX):]
                out[shop] = self._proxy_errors.get(shop, "proxy down (seen by another worker)")
        return out

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
