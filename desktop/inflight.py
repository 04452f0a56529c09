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


def host_of(owner: str) -> str:
    """The host part of a lease owner id (``host/pid/nonce``, :func:`core.new_owner_id`)."""
    return owner.split("/", 1)[0] if owner else ""


def remote_row(r: TaskRow, worker: Any | None) -> InFlightRow:
    """A task another worker runs, from its store row: no step progress, that stays on the
    worker. The worker is the task's lease owner (its registry entry, when alive, for the
    host)."""
    owner = r.lease_owner or (worker.owner if worker else "")
    host = worker.host if worker is not None and worker.host else host_of(owner)
    return InFlightRow(id=r.id, type=r.type, shop=r.shop, platform=r.platform, domain=r.domain,
                       step=0, steps=0, step_name="", browser_id=None,
                       started_at=r.started_at or r.updated_at, score=r.score,
                       preemptible=r.preemptible, worker=host, owner=owner, remote=True)


def engine_snapshot(engine: Engine) -> tuple[EngineStatistics, list[InFlightRow]]:
    """Runs on the engine thread: TaskControl is mutable and belongs there."""
    rows = [InFlightRow(id=t.id, type=t.type, shop=t.shop, platform=t.platform,
                        domain=t.domain, step=c.step, steps=c.steps, step_name=c.step_name,
                        browser_id=c.browser_id, started_at=c.started_at, score=t.score,
                        preemptible=t.preemptible)
            for t, c in engine.running_tasks()]
    return engine.statistics(), rows


def fleet_running(page_rows: Any, workers: list[Any], here: str | None) -> list[InFlightRow]:
    """The running tasks of ``page_rows`` that a worker other than ``here`` holds, each with
    the worker running it.

    Whose task it is comes from the task's own lease (``lease_owner``, written by the claim),
    not from the workers' heartbeats: a heartbeat lists its running tasks up to one interval
    late, so a task this console had just claimed (not yet in the engine's snapshot) or just
    finished (its row not yet written) used to look like another worker's — "elsewhere", a
    second row for the shop, on a single PC. A task ``here`` holds is never remote: its row
    comes from the engine's own snapshot, or from the next one.
    """
    by_owner = {w.owner: w for w in workers}
    by_task = {int(t): w for w in workers if w.state == "alive"
               for t in w.detail.get("running_ids", []) or []}
    out = []
    for r in page_rows:
        owner = getattr(r, "lease_owner", None)
        if here is not None and owner == here:
            continue
        w = by_owner.get(owner) if owner else by_task.get(r.id)
        if here is not None and owner is None and w is not None and w.owner == here:
            continue
        out.append(remote_row(r, w))
    return out


def merge_in_flight(local: list[InFlightRow], remote: list[InFlightRow]) -> list[InFlightRow]:
    """This engine's tasks as it sees them, then the ones other workers run."""
    ids = {r.id for r in local}
    return local + [r for r in remote if r.id not in ids]
