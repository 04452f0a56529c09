"""Preemption: urgent work takes a browser slot from lower-scored work, only at safe steps.

The policy (:func:`choose_victim`): a waiting task whose score passes the threshold may take

* its own shop's slot (a shop runs one task at a time) from the task holding it, or
* when every slot is busy, the slot of the lowest-scored preemptible running task,

provided the holder scores lower and is preemptible: not hard-aged, not marked
non-preemptible, not already yielding. A holder inside a non-interruptible step (a submit) is
never interrupted: the runner yields only at a step boundary before an interruptible step, or
inside an interruptible wait. A :class:`StormLimiter` refuses more than ``storm_limit``
preemptions of one slot per window; the urgent task then waits at the front of the queue.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from ..clock import Clock
from ..config import PreemptionSettings


@dataclass(frozen=True)
class Holder:
    """A running task as the policy sees it."""

    task_id: int
    shop_id: int
    score: float
    preemptible: bool
    yielding: bool


@dataclass(frozen=True)
class Candidate:
    """A waiting urgent task."""

    task_id: int
    shop_id: int
    score: float


def choose_victim(c: Candidate, running: Sequence[Holder], *, slots: int,
                  shop_limit: int = 1, min_gap: float = 0.0) -> tuple[Holder | None, str]:
    """The running task ``c`` should take the slot of, or None with the reason why not."""
    same_shop = [h for h in running if h.shop_id == c.shop_id]
    if len(same_shop) >= shop_limit:
        pool = same_shop
        where = "its shop's slot"
    elif len(running) >= slots:
        pool = list(running)
        where = "a slot of the full pool"
    else:
        return None, "a slot is free: no preemption needed"
    if any(h.yielding for h in pool) and where == "its shop's slot":
        return None, "the shop's holder is already yielding"
    eligible = [h for h in pool
                if h.preemptible and not h.yielding and h.score + min_gap <= c.score]
    if not eligible:
        return None, (f"no preemptible holder of {where} scores {min_gap:g}+ points lower "
                      "(hard-aged, marked non-preemptible, or more urgent)")
    victim = min(eligible, key=lambda h: (h.score, -h.task_id))
    return victim, f"{where}: #{victim.task_id} scores {victim.score:.2f} < {c.score:.2f}"


class StormLimiter:
    """At most ``storm_limit`` preemptions of one slot per ``storm_window_s``."""

    def __init__(self, settings: PreemptionSettings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock
        self._by_slot: dict[int, deque[float]] = {}

    def allows(self, slot: int) -> bool:
        q = self._by_slot.setdefault(slot, deque())
        edge = self.clock.now() - self.settings.storm_window_s
        while q and q[0] <= edge:
            q.popleft()
        return len(q) < self.settings.storm_limit

    def record(self, slot: int) -> None:
        self._by_slot.setdefault(slot, deque()).append(self.clock.now())
