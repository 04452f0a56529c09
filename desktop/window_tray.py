"""The window's tray and notifications: engine events that need a person, the tray badge
and its tooltip. Mixed into :class:`desktop.window.MainWindow`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import (
    QIcon,
    QPainter,
    QPixmap,
)
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QSystemTrayIcon,
)

from core import (
    BreakerChanged,
    EngineStatistics,
    ScheduleFailed,
    TicketOpened,
    resources_dir,
)

from . import names, palette
from .context import ConsoleContext
from .i18n import tr
from .models import KeyedTableModel
from .schedules_view import SchedulesView

if TYPE_CHECKING:
    _Base = QMainWindow  # the checker sees the window this is mixed into
else:
    _Base = object


class TrayMixin(_Base):
    """Engine events that notify, and the tray badge."""

    ctx: ConsoleContext
    models: dict[str, KeyedTableModel]
    schedules: SchedulesView
    stats: EngineStatistics | None
    status_alert: QLabel
    tray: QSystemTrayIcon | None
    counts: dict[str, int]
    notifications: list[str]
    beeps: int
    _open_tickets: int
    _badge_tip: str

    if TYPE_CHECKING:  # defined by the window and its other parts
        def _mark(self, names: Sequence[str]) -> None: ...
    def _schedule_event(self, event: object) -> None:
        """#18: the Schedules view follows firings; a failed schedule is loud."""
        self.schedules.on_event(event)  # type: ignore[arg-type]
        if isinstance(event, ScheduleFailed):
            self.status_alert.setText(tr("Schedule %1 paused: %2", event.name, event.error))
            self.notify(tr("Schedule failed"), tr("%1: %2", event.name, event.error))

    def _bring_to_front(self, *_: object) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def _tray_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason != QSystemTrayIcon.ActivationReason.Context:
            self._bring_to_front()

    def _breaker_tripped(self, event: BreakerChanged) -> None:
        self._update_badge(force=True)
        if event.state == "open":
            self.notify(tr("Breaker tripped"), tr("%1: %2", names.breaker(event.name),
                                                  event.reason))

    def _ticket_opened(self, event: TicketOpened) -> None:
        self._mark(("tickets",))
        self.notify(tr("New ticket"), tr("Task #%1 (%2) needs a person: %3", event.task_id,
                                         event.shop, names.error_headline(
                                             getattr(event, "error_class", "")) or event.error))
        if QSettings().value("notify/sound", False, type=bool):
            self.beeps += 1
            QApplication.beep()

    def notify(self, title: str, message: str) -> None:
        """A desktop notification (tray balloon) and a line in the status bar."""
        self.notifications.append(f"{title}: {message}")
        if self.tray is not None:
            self.tray.showMessage(title, message, QSystemTrayIcon.MessageIcon.Information, 8000)
        self.status_message(f"{title}: {message}")

    def status_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)


    # -- tray badge ---------------------------------------------------------------------

    def attention(self) -> dict[str, int]:
        """What waits for a person: open tickets, quarantined tasks, lost workers, open
        breakers (the tray badge counts them all)."""
        c = self.counts
        w = self.models["workers"]
        lost = sum(1 for k in w.ids if getattr(w.snapshot(k), "state", "") == "lost")
        b = self.stats.breakers if self.stats is not None else []
        open_b = sum(1 for x in b if x.state.value == "open"
                     and not (x.name == "*pool*" and x.manual))
        return {"tickets": c.get("tickets", self.models["tickets"].rowCount()),
                "quarantine": c.get("quarantine", 0), "lost": lost, "breakers": open_b}

    def tray_tooltip(self) -> str:
        a = self.attention()
        c = self.counts
        return "\n".join([
            tr("ShopFleet"),
            tr("queued %1 · running %2", names.count(c.get("pending", 0)),
               names.count(c.get("in_flight", 0))),
            tr("tickets %1 · quarantine %2", a["tickets"], a["quarantine"]),
            tr("breakers open %1 · workers lost %2", a["breakers"], a["lost"])])

    def _update_badge(self, force: bool = False) -> None:
        """The tray icon with the number of things waiting for a person, and a tooltip
        with the counts."""
        n = sum(self.attention().values()) if "tickets" in self.models else 0
        tip = self.tray_tooltip()
        if n == self._open_tickets and tip == self._badge_tip and not force:
            return
        self._open_tickets, self._badge_tip = n, tip
        if self.tray is None:
            return
        self.tray.setIcon(badge_icon(app_icon(), n))
        self.tray.setToolTip(tip)


def badge_icon(icon: QIcon, n: int) -> QIcon:
    """``icon`` with a round badge showing ``n`` (none for 0)."""
    pm = icon.pixmap(64, 64)
    if pm.isNull():
        pm = QPixmap(64, 64)
        pm.fill(Qt.GlobalColor.transparent)
    if n <= 0:
        return QIcon(pm)
    fill, text = palette.badge_colors()
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setBrush(fill)
    p.setPen(Qt.PenStyle.NoPen)
    p.drawEllipse(28, 0, 36, 36)
    p.setPen(text)
    f = p.font()
    f.setPixelSize(22 if n < 100 else 16)
    f.setBold(True)
    p.setFont(f)
    p.drawText(28, 0, 36, 36, int(Qt.AlignmentFlag.AlignCenter), str(n) if n < 100 else "99+")
    p.end()
    return QIcon(pm)


def app_icon() -> QIcon:
    folder = resources_dir() / "icons"
    icon = QIcon(str(folder / "shopfleet.svg"))
    if icon.isNull():
        icon = QIcon(str(folder / "shopfleet.png"))
    return icon
