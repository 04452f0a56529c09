"""The one bridge from core's event bus to Qt: typed events in, Qt signals out.

The bus calls subscribers on the engine's thread. The bridge hands every event to the Qt main
thread through a queued signal and re-emits it there under a past-tense name. Events that come
before the window is ready are buffered and delivered, in order, by :meth:`EngineBridge.ready`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal, SignalInstance

from core import (
    BreakerChanged,
    DomainPaused,
    EngineProblem,
    EngineStopped,
    Event,
    EventBus,
    GateChanged,
    GateHeld,
    ShopPaused,
    ShopProxyChanged,
    TaskBumped,
    TaskPreempted,
    TaskProgress,
    TasksSubmitted,
    TaskStateChanged,
    TicketAnswered,
    TicketOpened,
)

_SIGNAL_FOR: dict[type[Event], str] = {
    TasksSubmitted: "tasks_submitted",
    TaskStateChanged: "task_state_changed",
    TaskProgress: "task_progressed",
    TaskBumped: "task_bumped",
    TaskPreempted: "task_preempted",
    ShopPaused: "shop_paused",
    ShopProxyChanged: "shop_proxy_changed",
    DomainPaused: "domain_paused",
    GateChanged: "gate_changed",
    GateHeld: "gate_held",
    BreakerChanged: "breaker_changed",
    EngineProblem: "engine_problem_reported",
    EngineStopped: "engine_stopped",
    TicketOpened: "ticket_opened",
    TicketAnswered: "ticket_answered",
}
"""Core's event types and the signal each becomes."""


class EngineBridge(QObject):
    """Re-emits core events as Qt signals on the main thread (one per event type)."""

    tasks_submitted = Signal(object)
    task_state_changed = Signal(object)
    task_progressed = Signal(object)
    task_bumped = Signal(object)
    shop_paused = Signal(object)
    shop_proxy_changed = Signal(object)
    """#17: a shop's proxy went down (its tasks wait) or answers again."""
    domain_paused = Signal(object)
    gate_changed = Signal(object)
    gate_held = Signal(object)
    breaker_changed = Signal(object)
    breaker_tripped = Signal(object)
    """A breaker opened (after ``breaker_changed``)."""
    engine_problem_reported = Signal(object)
    engine_stopped = Signal(object)
    ticket_opened = Signal(object)
    ticket_answered = Signal(object)
    task_preempted = Signal(object)
    task_quarantined = Signal(object)
    """A task's state changed to ``quarantined`` (after ``task_state_changed``)."""
    event_received = Signal(object)
    """Every event, after its own signal (for views that care about any change)."""

    _arrived = Signal(object)

    def __init__(self, bus: EventBus, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ready = False
        self._buffer: deque[Event] = deque()
        # Queued: the bus calls us on the engine thread; the slot runs on ours.
        self._arrived.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        self._unsubscribe: Callable[[], None] | None = bus.subscribe(self._on_engine_thread)

    def _on_engine_thread(self, event: Event) -> None:
        self._arrived.emit(event)

    def ready(self) -> None:
        """The window is built: deliver what was buffered, then deliver as events come."""
        self._ready = True
        while self._buffer:
            self._emit(self._buffer.popleft())

    def close(self) -> None:
        """Stop listening to the bus."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _deliver(self, event: Event) -> None:
        if not self._ready:
            self._buffer.append(event)
            return
        self._emit(event)

    def _emit(self, event: Event) -> None:
        name = _SIGNAL_FOR.get(type(event))
        if name is not None:
            signal: SignalInstance = getattr(self, name)
            signal.emit(event)
        if isinstance(event, BreakerChanged) and event.state == "open":
            self.breaker_tripped.emit(event)
        if isinstance(event, TaskStateChanged) and event.state == "quarantined":
            self.task_quarantined.emit(event)
        self.event_received.emit(event)
