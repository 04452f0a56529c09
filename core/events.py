"""Typed, frozen event records and the small bus that carries them out of the engine.

The engine publishes; subscribers (the desktop bridge, the worker's text summary, tests) are
called synchronously on the engine's loop thread and must return quickly — the desktop bridge
re-emits each event as a Qt signal, which Qt queues across threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    at: float


@dataclass(frozen=True)
class TasksSubmitted(Event):
    ids: tuple[int, ...]


@dataclass(frozen=True)
class TaskStateChanged(Event):
    task_id: int
    shop: str
    state: str
    reason: str


@dataclass(frozen=True)
class TaskProgress(Event):
    task_id: int
    step: int
    steps: int
    step_name: str


@dataclass(frozen=True)
class TicketOpened(Event):
    ticket_id: int
    task_id: int
    shop: str
    error_class: str
    error: str


@dataclass(frozen=True)
class TicketAnswered(Event):
    ticket_id: int
    task_id: int
    action: str


@dataclass(frozen=True)
class TaskPreempted(Event):
    """A running task was asked to yield its slot (it suspends at its next safe step)."""

    task_id: int
    for_task: int | None
    reason: str


@dataclass(frozen=True)
class PreemptionRefused(Event):
    task_id: int
    reason: str


@dataclass(frozen=True)
class TaskBumped(Event):
    task_id: int
    score: float


@dataclass(frozen=True)
class ShopPaused(Event):
    name: str
    paused: bool


@dataclass(frozen=True)
class DomainPaused(Event):
    domain: str
    paused: bool


@dataclass(frozen=True)
class GateChanged(Event):
    name: str
    rate_per_s: float
    burst: float


@dataclass(frozen=True)
class GateHeld(Event):
    domain: str
    seconds: float


@dataclass(frozen=True)
class BreakerChanged(Event):
    name: str
    state: str
    reason: str
    next_probe_at: float | None = None


@dataclass(frozen=True)
class ShopProxyChanged(Event):
    """#17: a shop's proxy went down (its tasks wait; ``error`` says why) or answers again."""

    shop: str
    down: bool
    error: str = ""


@dataclass(frozen=True)
class EngineProblem(Event):
    """A background job died, or the engine stopped because of one."""

    job: str
    error: str


@dataclass(frozen=True)
class EngineStopped(Event):
    reason: str


# --- #18 schedules (published by core.scheduler)
@dataclass(frozen=True)
class ScheduleFired(Event):
    """A schedule's firing submitted its tasks (``tasks``: ids, one per selected shop)."""

    name: str
    firing: float
    tasks: tuple[int, ...]
    note: str = ""


@dataclass(frozen=True)
class ScheduleFailed(Event):
    """A schedule could not fire (its template or selector no longer validates): it is paused,
    ``error`` says why; an operator fixes it and resumes it."""

    name: str
    error: str


@dataclass(frozen=True)
class Changes:
    """What an operator command changed, so views redraw only what they must (Anki's OpChanges).
    """

    tasks: bool = False
    shops: bool = False
    gates: bool = False
    breakers: bool = False
    browsers: bool = False
    tickets: bool = False
    detail: dict[str, Any] = field(default_factory=dict)


Subscriber = Callable[[Event], None]


class EventBus:
    """Fan-out of events to subscribers; a failing subscriber is logged, never fatal."""

    def __init__(self) -> None:
        self._subs: list[Subscriber] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        with self._lock:
            self._subs.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subs:
                    self._subs.remove(fn)
        return unsubscribe

    def publish(self, event: Event) -> None:
        with self._lock:
            subs = list(self._subs)
        for fn in subs:
            try:
                fn(event)
            except Exception:  # a broken view must not stop the engine
                log.exception("event subscriber %r failed on %r", fn, event)
