"""The Schedules view (#18): every schedule with its next runs in its own time zone; paused
ones greyed, a failed one's last error in red; pause, resume, run now and delete for the
selected schedule.

Self-contained: a :class:`SchedulesView` takes the store and the window's off-thread
:class:`~desktop.models.Reader` (every store call runs there, never on the GUI thread). It
refreshes when shown, after each of its actions, and when the bridge reports a schedule fired
or failed (:meth:`SchedulesView.on_event`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core import (
    Event,
    ScheduleFailed,
    ScheduleFired,
    ScheduleRow,
    Store,
    resume_schedule,
    run_schedule_now,
    schedule_rows,
)

from . import palette
from .i18n import QT_TR_NOOP, tr
from .models import Column, ListTableModel, Reader
from .panels import TablePanel

NEXT_RUNS = 3


SCHEDULES = [
    Column("name", QT_TR_NOOP("Schedule"), lambda r: r.name),
    Column("when", QT_TR_NOOP("When"), lambda r: r.describe or tr("(no longer valid)")),
    Column("shops", QT_TR_NOOP("Shops"), lambda r: r.shops),
    Column("next", QT_TR_NOOP("Next runs"), lambda r: tr("paused") if r.paused else
           "  ·  ".join(r.next_runs)),
    Column("last", QT_TR_NOOP("Last run"), lambda r: r.last_run),
    Column("error", QT_TR_NOOP("Last error"), lambda r: r.last_error),
]
"""The view's columns (next runs are local times of each schedule's own zone)."""


BUTTONS: dict[str, str] = {"pause": QT_TR_NOOP("Pause"), "resume": QT_TR_NOOP("Resume"),
                           "run_now": QT_TR_NOOP("Run now"), "delete": QT_TR_NOOP("Delete")}
"""The view's buttons and their words."""


def schedule_color(row: ScheduleRow) -> QColor | None:
    """Failed: red; paused: grey."""
    if row.last_error:
        return palette.signal("error")
    if row.paused:
        return palette.signal("muted")
    return None


class SchedulesView(QWidget):
    """The schedules table with its actions (see the module docstring)."""

    changed = Signal(str)
    """An action finished: what it did, in words (for the status bar)."""
    failed = Signal(str)
    """An action failed: the error, in words."""

    def __init__(self, store: Store, reader: Reader, *, parent: QWidget | None = None,
                 now: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.setObjectName("schedules-view")
        self.store, self.reader, self._now = store, reader, now
        self.model = ListTableModel(SCHEDULES, lambda r: r.name, self._load, self)
        self.model.highlight = schedule_color
        self.panel = TablePanel("schedules", self.model, filters=False, parent=self)
        self.panel.selection_changed.connect(lambda _ids: self._update_buttons())
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        for key in BUTTONS:
            b = QPushButton(self)
            b.setObjectName(f"schedule-{key}")
            b.clicked.connect(lambda _=False, k=key: self.act(k))
            self.buttons[key] = b
            row.addWidget(b)
        row.addStretch(1)
        self.status = QLabel("", self)
        row.addWidget(self.status)
        lay = QVBoxLayout(self)
        lay.addWidget(self.panel)
        lay.addLayout(row)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.retranslate()
        self._update_buttons()

    def retranslate(self) -> None:
        """Words in the current language (the window calls this when the language changes)."""
        for key, text in BUTTONS.items():
            self.buttons[key].setText(tr(text))
        self.panel.retranslate()

    async def _load(self) -> list[ScheduleRow]:
        return await self.reader(schedule_rows, self.store, self._now(), n=NEXT_RUNS)

    def selected(self) -> ScheduleRow | None:
        rows = self.panel.selected_rows()
        return rows[0] if rows else None

    def _update_buttons(self) -> None:
        row = self.selected()
        self.buttons["pause"].setEnabled(row is not None and not row.paused)
        self.buttons["resume"].setEnabled(row is not None and row.paused)
        self.buttons["run_now"].setEnabled(row is not None and bool(row.describe))
        self.buttons["delete"].setEnabled(row is not None)

    async def refresh(self) -> None:
        await self.model.refresh()
        self._update_buttons()

    def on_event(self, ev: Event) -> None:
        """The bridge's events: a firing or a failure changes what the view shows."""
        if isinstance(ev, ScheduleFired | ScheduleFailed):
            self.model.mark_stale()
            if self.isVisible():
                self._spawn(self.refresh())

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self.model.stale:
            self._spawn(self.refresh())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def act(self, key: str) -> None:
        """Run an action on the selected schedule (off the GUI thread), then refresh."""
        row = self.selected()
        if row is None:
            return
        self._spawn(self.perform(key, row.name))

    async def perform(self, key: str, name: str) -> str:
        """Pause, resume, run now or delete ``name``; returns what was done, in words."""
        store = self.store
        try:
            if key == "pause":
                await self.reader(store.set_schedule_state, name, paused=True)
                done = tr("schedule %1 paused", name)
            elif key == "resume":
                await self.reader(resume_schedule, store, name)
                done = tr("schedule %1 resumed", name)
            elif key == "run_now":
                ids = await self.reader(run_schedule_now, store, name)
                done = tr("schedule %1 ran now: %2 task(s)", name, len(ids))
            elif key == "delete":
                await self.reader(store.delete_schedule, name)
                done = tr("schedule %1 deleted", name)
            else:
                raise ValueError(key)
        except Exception as exc:  # shown to the operator; the view stays usable
            self.status.setText(str(exc))
            self.failed.emit(str(exc))
            await self.refresh()
            return str(exc)
        self.status.setText(done)
        self.changed.emit(done)
        await self.refresh()
        return done
