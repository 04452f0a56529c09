"""The in-flight table's rows: this console's engine's running tasks as it sees them now, and
the tasks other workers of the fleet run, as the store has them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core import Engine, EngineStatistics, TaskRow


@dataclass(frozen=True)
class InFlightRow:
    """A running task: as this console's engine sees it now (copied on the engine thread),
    or, when another worker of the fleet runs it, as the store has it (``remote``)."""

    id: int
    type: str
    shop: str
    platform: str
    domain: str
    step: int
    steps: int
    step_name: str
    browser_id: int | None
    started_at: float
    score: float
    preemptible: bool
    worker: str = ""
    """The host of the worker running it (a remote task)."""
    owner: str = ""
    remote: bool = False


def remote_row(r: TaskRow, worker: Any | None) -> InFlightRow:
    """A task another worker (its registry entry, if alive) runs, from its store row: no step
    progress, that stays on the worker."""
    return InFlightRow(id=r.id, type=r.type, shop=r.shop, platform=r.platform, domain=r.domain,
                       step=0, steps=0, step_name="", browser_id=None,
                       started_at=r.started_at or r.updated_at, score=r.score,
                       preemptible=r.preemptible, worker=worker.host if worker else "",
                       owner=worker.owner if worker else "", remote=True)


def engine_snapshot(engine: Engine) -> tuple[EngineStatistics, list[InFlightRow]]:
    """Runs on the engine thread: TaskControl is mutable and belongs there."""
    rows = [InFlightRow(id=t.id, type=t.type, shop=t.shop, platform=t.platform,
                        domain=t.domain, step=c.step, steps=c.steps, step_name=c.step_name,
                        browser_id=c.browser_id, started_at=c.started_at, score=t.score,
                        preemptible=t.preemptible)
            for t, c in engine.running_tasks()]
    return engine.statistics(), rows


def fleet_running(page_rows: Any, workers: list[Any], here: str | None) -> list[InFlightRow]:
    """The running tasks of ``page_rows`` that a worker other than ``here`` runs (or that no
    live worker claims), each with the worker running it."""
    by_task = {int(t): w for w in workers if w.state == "alive"
               for t in w.detail.get("running_ids", []) or []}
    out = []
    for r in page_rows:
        w = by_task.get(r.id)
        if here is None or w is None or w.owner != here:
            out.append(remote_row(r, w))
    return out


def merge_in_flight(local: list[InFlightRow], remote: list[InFlightRow]) -> list[InFlightRow]:
    """This engine's tasks as it sees them, then the ones other workers run."""
    ids = {r.id for r in local}
    return local + [r for r in remote if r.id not in ids]
