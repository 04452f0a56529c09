"""The window's layout memory and shutdown: geometry and splitters saved and restored, the
close question, quitting. Mixed into :class:`desktop.window.MainWindow`."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, QTimer, SignalInstance
from PySide6.QtGui import (
    QCloseEvent,
    QGuiApplication,
)
from PySide6.QtWidgets import (
    QMainWindow,
    QMessageBox,
    QSplitter,
    QSystemTrayIcon,
)

from core import Store

from .actions import ActionRunner
from .bridge import EngineBridge
from .context import ConsoleContext
from .i18n import tr
from .models import KeyedTableModel, Reader
from .navigation import Navigation
from .panels import TablePanel
from .takeover import close_takeovers, open_takeovers

if TYPE_CHECKING:
    _Base = QMainWindow  # the checker sees the window this is mixed into
else:
    _Base = object

log = logging.getLogger(__name__)


class LayoutMixin(_Base):
    """Remembering the layout; closing and shutting down."""

    ctx: ConsoleContext
    store: Store
    reader: Reader
    runner: ActionRunner
    bridge: EngineBridge | None
    models: dict[str, KeyedTableModel]
    panels: dict[str, TablePanel]
    nav: Navigation
    split: QSplitter
    tray: QSystemTrayIcon | None
    refresh_timer: QTimer
    poll_timer: QTimer
    last_confirm: QMessageBox | None
    shut_down: SignalInstance
    _tasks: set[asyncio.Task[Any]]
    _closing: bool
    _closed: bool
    _shutdown_task: asyncio.Future[None] | None

    if TYPE_CHECKING:  # defined by the window and its other parts
        def current_key(self) -> str: ...
        def show_tab(self, key: str) -> None: ...
        def notify(self, title: str, message: str) -> None: ...
        def status_message(self, text: str) -> None: ...
    # -- layout memory and shutdown ----------------------------------------------------

    def _restore_layout(self) -> None:
        s = QSettings()
        geo = s.value("window/geometry")
        if geo is not None:
            self.restoreGeometry(geo)
        else:
            self.resize(1400, 860)
        self.place_on_screen()
        state = s.value("window/state")
        if state is not None:
            self.restoreState(state)
        split = s.value("window/split3")
        if split is not None:
            self.split.restoreState(split)
        else:
            w = self.width()
            self.split.setSizes([170, int((w - 170) * 0.62), int((w - 170) * 0.38)])
        self._detail_wanted = bool(s.value("window/detail", True, type=bool))
        for p in self.panels.values():
            p.restore_state(s)
        view = str(s.value("window/view", "pending"))
        self.show_tab(view if view in self.nav.keys else "pending")

    def place_on_screen(self) -> None:
        """Keep the window on a screen that exists now: a geometry saved on a bigger or
        another monitor is fitted to the available area, and centred on the primary screen
        when too little of it would show."""
        frame = self.frameGeometry()
        screens = QGuiApplication.screens()
        primary = QGuiApplication.primaryScreen()
        if primary is None:
            return
        best = max(screens, key=lambda sc: _overlap(sc.availableGeometry(), frame),
                   default=primary)
        area = best.availableGeometry()
        visible = _overlap(area, frame)
        if visible < 0.5 * max(1, frame.width() * frame.height()):
            area = primary.availableGeometry()
        width, height = min(self.width(), area.width()), min(self.height(), area.height())
        if (width, height) != (self.width(), self.height()):
            self.resize(width, height)
        if visible < 0.5 * max(1, frame.width() * frame.height()) or not area.contains(
                self.frameGeometry()):
            f = self.frameGeometry()
            f.moveCenter(area.center())
            f.moveLeft(max(area.left(), f.left()))
            f.moveTop(max(area.top(), f.top()))
            self.move(f.topLeft())

    def save_layout(self) -> None:
        s = QSettings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("window/split3", self.split.saveState())
        s.setValue("window/view", self.current_key())
        s.setValue("window/detail", self._detail_wanted)
        for p in self.panels.values():
            p.save_state(s)
        s.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._closed:
            event.accept()
            return
        event.ignore()
        if event.spontaneous() and not self._closing and (
                self.ctx.host is not None or open_takeovers(self)):
            # The window's close button: the operator may only want the window gone (or
            # still be working in a shop's browser).
            self.ask_close()
            return
        self.quit()

    def ask_close(self) -> QMessageBox:
        """Ask what closing means: stop automation and quit, keep it running (in the tray),
        or cancel."""
        text = tr("Stop automation and quit? Running tasks save their place and go back to "
                  "the queue.")
        taken = open_takeovers(self)
        if taken:
            # #15: quitting closes a taken-over browser; say so before the person loses it.
            text += "\n\n" + tr("The browser of %1 is open (taken over). Quitting closes it, "
                                 "saves its session and gives the shop back to automation.",
                                 ", ".join(t.label for t in taken))
        box = QMessageBox(QMessageBox.Icon.Question, tr("Close ShopFleet"), text,
                          QMessageBox.StandardButton.NoButton, self)
        box.setObjectName("close-prompt")
        stop = box.addButton(tr("Stop automation and quit"),
                             QMessageBox.ButtonRole.DestructiveRole)
        keep = box.addButton(tr("Keep running in the tray") if self.tray is not None
                             else tr("Keep running (minimise)"),
                             QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(keep)

        def chosen(button: Any) -> None:
            if button is stop:
                self.quit()
            elif button is keep:
                self.keep_running()

        box.buttonClicked.connect(chosen)
        self.last_confirm = box
        box.open()
        return box

    def keep_running(self) -> None:
        """Hide the window; the engine goes on (the tray brings the window back)."""
        if self.tray is not None:
            self.hide()
            self.notify(tr("ShopFleet keeps running"),
                        tr("Automation goes on; the tray icon brings the window back."))
        else:
            self.showMinimized()

    def quit(self) -> None:
        """Stop automation (running tasks save their place) and close, without asking."""
        if not self._closing:
            self._closing = True
            self.save_layout()
            self.status_message(tr("Stopping: running tasks save their place…"))
            self.shutdown()

    def shutdown(self) -> asyncio.Future[None]:
        """Stop in order: our timers and reads, the engine (its tasks checkpoint and go back
        to the queue; the pool closes its browsers), the store; then close the window.
        Calling it again returns the same shutdown."""
        if self._shutdown_task is None:
            self._shutdown_task = asyncio.ensure_future(self._shutdown())
        return self._shutdown_task

    async def _shutdown(self) -> None:
        self._closing = True
        # #15 first, while the store is open: a taken-over browser closes, saves its session
        # and releases the shop's hold (else the hold would block the shop until it runs out).
        pool = self.ctx.settings.pool
        left = await close_takeovers(self, wait_s=3 * pool.close_timeout_s + 5)
        if left:
            log.warning("quitting: the browser of %s did not close in time; its hold runs "
                        "out on its own", ", ".join(left))
        self.refresh_timer.stop()
        self.poll_timer.stop()
        self.runner.cancel_all()
        for t in list(self._tasks):
            t.cancel()
        if self.bridge is not None:
            self.bridge.close()
        await asyncio.to_thread(self.reader.close)
        host = self.ctx.host
        if host is not None:
            await asyncio.to_thread(host.stop)
        else:
            await asyncio.to_thread(self.store.close)
        if self.tray is not None:
            self.tray.hide()
        self._closed = True
        self.close()
        self.shut_down.emit()


def _overlap(a: Any, b: Any) -> int:
    """The area two rectangles share."""
    r = a.intersected(b)
    return max(0, r.width()) * max(0, r.height()) if not r.isEmpty() else 0
