"""The scheduler (#18): each round, every stored schedule's due firings become tasks.

One round, for each schedule (:func:`scheduler_round`, blocking: the engine runs it off its
loop):

1. read the schedule and its mark; plan what is due now (:func:`core.schedules.plan_due`, the
   catch-up policy and the pause included);
2. expand each firing into one task per selected shop (:func:`core.schedules.expand`), keys
   ``sched:<name>:<firing>:<shop>``;
3. submit those tasks and move the mark in ONE transaction
   (:meth:`core.store.base.Store.fire_schedule`): it compares the mark first, so of several
   workers planning the same firing only one writes, and a crash before the commit leaves
   neither tasks nor mark (the next round plans the same firing again); the keys make even a
   replay harmless.

A schedule whose definition or template no longer validates (a shop removed so the selector
picks none, a flow renamed) is paused with ``last_error`` and a :class:`ScheduleFailed` event,
logged as an error: loud, never skipped silently. A full backlog is not the schedule's fault:
the firing waits (mark unmoved) and is tried again next round.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from .clock import Clock
from .errors import BacklogFull, InvalidInput
from .events import Event, ScheduleFailed, ScheduleFired
from .schedules import Schedule, expand, next_firings, plan_due
from .specs import TaskSpec, validate_spec
from .store import AsyncStore
from .store.base import Store
from .store.records import ScheduleRecord

log = logging.getLogger(__name__)

SCHEDULER_TICK_S = 5.0
"""How often the engine's scheduler looks for due firings (a firing starts at most this late,
plus its jitter)."""


def firing_specs(sched: Schedule, firing_ts: float, store: Store) -> list[TaskSpec]:
    """The tasks of one firing as specs to submit (``not_before`` = firing + jitter).

    Raises:
        SpecError: the selector picks no shop, or the template no longer validates.
    """
    from datetime import UTC, datetime

    firing = datetime.fromtimestamp(firing_ts, UTC)
    planned = expand(sched, firing, store.shops())
    return [validate_spec(p.to_dict(), where="--task") for p in planned]


def _fail(store: Store, rec: ScheduleRecord, error: str, now: float) -> ScheduleFailed:
    log.error("schedule %s failed and is paused: %s", rec.name, error)
    store.set_schedule_state(rec.name, paused=True, last_error=error)
    return ScheduleFailed(now, rec.name, error)


def fire_due(store: Store, rec: ScheduleRecord, now: float) -> list[Event]:
    """Handle one schedule at ``now`` (see the module docstring); returns the events."""
    try:
        sched = Schedule.from_dict({**rec.definition, "paused": rec.paused})
    except InvalidInput as exc:
        return [] if rec.paused else [_fail(store, rec, str(exc), now)]
    plan = plan_due(sched, rec.mark, now)
    new_mark = plan.mark.timestamp()
    if not plan.firings and new_mark == rec.mark:
        return []
    specs: list[TaskSpec] = []
    try:
        for f in plan.firings:
            specs += firing_specs(sched, f.timestamp(), store)
        ids = store.fire_schedule(rec.name, expected_mark=rec.mark, mark=new_mark,
                                  specs=specs)
    except BacklogFull as exc:
        log.warning("schedule %s: the backlog is full (%s); its firing waits", rec.name, exc)
        return []
    except InvalidInput as exc:
        return [_fail(store, rec, str(exc), now)]
    if ids is None:  # another worker handled it
        return []
    if plan.note:
        log.warning("%s", plan.note)
    if not plan.firings:
        return []
    log.info("schedule %s fired %d firing(s): %d task(s)", rec.name, len(plan.firings),
             len(ids))
    return [ScheduleFired(now, rec.name, plan.firings[-1].timestamp(), tuple(ids), plan.note)]


def scheduler_round(store: Store, now: float) -> list[Event]:
    """One round over every stored schedule (blocking store calls)."""
    events: list[Event] = []
    for rec in store.schedules():
        events += fire_due(store, rec, now)
    return events


async def scheduler_job(astore: AsyncStore, clock: Clock, publish: Callable[[Event], None],
                        poke: Callable[[], None], *, tick_s: float = SCHEDULER_TICK_S) -> None:
    """The engine's watched background job: a round every ``tick_s`` (off the loop, through
    the engine's :class:`AsyncStore`), its events published, the engine woken when a firing
    submitted tasks."""
    while True:
        events = await astore.run(scheduler_round, astore.sync, clock.now())
        for ev in events:
            publish(ev)
        if any(isinstance(ev, ScheduleFired) for ev in events):
            poke()
        await clock.sleep(tick_s)


# -- what the console and the command line do with schedules --------------------------------


@dataclass(frozen=True)
class ScheduleRow:
    """A schedule as the console's Schedules view shows it.

    Attributes:
        next_runs: the next firings as local times of the schedule's zone (``2026-03-02
            08:00 CST``); empty when paused or ended.
        describe: the rule in words, or ``""`` when the definition no longer validates.
    """

    name: str
    describe: str
    shops: str
    tz: str
    paused: bool
    last_error: str
    next_runs: tuple[str, ...]
    last_run: str


def _parsed(rec: ScheduleRecord) -> Schedule | None:
    try:
        return Schedule.from_dict({**rec.definition, "paused": rec.paused})
    except InvalidInput:
        return None


def schedule_rows(store: Store, now: float, *, n: int = 3) -> list[ScheduleRow]:
    """Every schedule with its next ``n`` runs in its own zone (blocking store reads)."""
    from datetime import UTC, datetime

    out = []
    for rec in store.schedules():
        s = _parsed(rec)
        if s is None:
            out.append(ScheduleRow(rec.name, "", str(rec.definition.get("shops", "")),
                                   str(rec.definition.get("tz", "")), rec.paused,
                                   rec.last_error or "the definition no longer validates",
                                   (), ""))
            continue
        fmt = "%Y-%m-%d %H:%M %Z"
        nxt = () if rec.paused else tuple(
            f.astimezone(s.zone).strftime(fmt) for f in next_firings(s, max(rec.mark, now), n))
        last = datetime.fromtimestamp(rec.mark, UTC).astimezone(s.zone).strftime(fmt)
        out.append(ScheduleRow(rec.name, s.describe(), s.shops, s.tz, rec.paused,
                               rec.last_error, nxt, last))
    return out


def resume_schedule(store: Store, name: str) -> ScheduleRecord:
    """Resume a schedule from now: the firings that fell in the pause are declined, the last
    error is cleared."""
    store.schedule_record(name)
    return store.set_schedule_state(name, paused=False, last_error="",
                                    mark=store.clock.now())


def run_schedule_now(store: Store, name: str) -> list[int]:
    """Submit one firing of a schedule at once (its keys name this moment; the mark stays).

    Raises:
        InvalidInput: no such schedule, or its definition, selector or template no longer
            validates (naming the field).
    """
    from datetime import UTC, datetime

    rec = store.schedule_record(name)
    s = _parsed(rec)
    if s is None:
        raise InvalidInput("NAME", f"schedule {name}'s definition no longer validates: "
                           f"{rec.last_error or 'see schedule show'}")
    now = datetime.fromtimestamp(store.clock.now(), UTC).replace(microsecond=0)
    planned = expand(s, now, store.shops())
    return store.submit_many([validate_spec(p.to_dict(), where="--task") for p in planned])
