"""The main window: layout and wiring of the live tables, the detail pane, the dashboard and
the operator's actions.

Data flows one way. Commands go to the engine through :class:`desktop.actions.ActionRunner`;
changes come back as core events through the :class:`desktop.bridge.EngineBridge`, which marks
table models stale; a short timer refreshes the stale models that are on screen (so a burst of
events costs one read, and a hidden table costs nothing). Table models read pages from the
store on worker threads; they never own the data.

What lives elsewhere: the actions' words, shortcuts, menus and enabling
(:mod:`desktop.action_table`); the operations they run, one call into core each
(:mod:`desktop.operations`) and their handlers (:mod:`desktop.window_commands`); reading and
refreshing the tables (:mod:`desktop.window_refresh`); the in-flight rows
(:mod:`desktop.inflight`); ticket reads (:mod:`desktop.tickets`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QIcon
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QSystemTrayIcon,
    QTabWidget,
    QToolBar,
    QWidget,
)

from core import BreakerChanged, EngineHost, EngineStatistics, TicketOpened, resources_dir

from . import action_table as A
from . import columns as C
from ._core import task_detail
from .actions import ActionRunner, ErrorPresenter
from .bridge import EngineBridge
from .context import ConsoleContext
from .dashboard import Dashboard
from .detail import DetailPane
from .i18n import tr
from .inflight import InFlightRow
from .models import (
    KeyedTableModel,
    ListTableModel,
    Reader,
    TaskTableModel,
    hard_aged_color,
    worker_state_color,
)
from .panels import TablePanel
from .results_view import NotifyStatus, ResultsView, SearchBar, with_search
from .tickets import TicketReads
from .window_commands import CommandsMixin
from .window_refresh import RefreshMixin

log = logging.getLogger(__name__)

TASK_PANELS = A.TASK_PANELS


class MainWindow(RefreshMixin, CommandsMixin, QMainWindow):
    """The operator console."""

    shut_down = Signal()
    """The engine has stopped and the window is closing."""

    def __init__(self, ctx: ConsoleContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.store = ctx.store
        self.tickets = TicketReads(ctx.store)
        self.setObjectName("main-window")
        self.setWindowIcon(app_icon())
        self.reader = Reader()
        self.presenter = ErrorPresenter(self)
        self.runner = ActionRunner(ctx.host, self.presenter, self)
        self.runner.changed.connect(self._changes)
        self.runner.finished.connect(lambda what, _: self.status_message(tr("%1: done", what)))
        self.bridge: EngineBridge | None = None
        self.stats: EngineStatistics | None = None
        self.notifications: list[str] = []
        self.last_confirm: QMessageBox | None = None
        self.dialog: QWidget | None = None
        self._closing = False
        self._closed = False
        self._shutdown_task: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._detail_stale = False
        self._current_steps: dict[int, int] = {}
        self._shops_next = 0.0
        self._history_next = 0.0
        self._fleet_next = 0.0
        self._notify_next = 0.0  # #19: failing alert targets, read every 10 s
        self._fleet_busy = False
        self._local_running: list[InFlightRow] = []
        self._remote_running: list[InFlightRow] = []
        self._flows: list[str] = []

        # -- models
        store, reader = self.store, self.reader
        self.models: dict[str, KeyedTableModel] = {
            "pending": TaskTableModel("pending", C.PENDING, reader, store, self),
            "in_flight": ListTableModel(C.IN_FLIGHT, lambda r: r.id, self._no_load, self),
            "suspended": TaskTableModel("suspended", C.PARKED, reader, store, self),
            "quarantine": TaskTableModel("quarantine", C.PARKED, reader, store, self),
            "tickets": ListTableModel(C.TICKETS, lambda r: r.id, self._load_tickets, self),
            "history": TaskTableModel("history", C.HISTORY, reader, store, self),
            "shops": ListTableModel(C.SHOPS, lambda r: r.name, self._load_shops, self),
            "gates": ListTableModel(C.GATES, lambda r: r.name, self._no_load, self),
            "breakers": ListTableModel(C.BREAKERS, lambda r: r.name, self._no_load, self),
            "kb": ListTableModel(C.KB, lambda r: r.id, self._load_kb, self),
            "rules": ListTableModel(C.RULES, lambda r: r.id, self._load_rules, self),
            "workers": ListTableModel(C.WORKERS, lambda r: r.owner, self._load_workers, self),
        }
        self.models["pending"].highlight = hard_aged_color
        self.models["workers"].highlight = worker_state_color
        self.panels: dict[str, TablePanel] = {}
        for name, model in self.models.items():
            filters = name not in ("gates", "breakers", "kb", "rules", "workers")
            panel = TablePanel(name, model, filters=filters, parent=self)
            panel.selection_changed.connect(lambda ids, n=name: self._selected(n, ids))
            panel.context_requested.connect(lambda pos, n=name: self._context_menu(n, pos))
            panel.activated.connect(lambda key, n=name: self._activated(n, key))
            self.panels[name] = panel

        # -- layout
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("tabs")
        self.dashboard = Dashboard(self)
        self._tab_keys: list[str] = []

        def add(key: str, w: QWidget) -> None:
            self.tabs.addTab(w, "")
            self._tab_keys.append(key)

        # #19: a Results view, search boxes over tickets and answers, failing alert targets
        self.results_view = ResultsView(store, reader, self)
        self.search_bars = {p: SearchBar(p, store, reader, self) for p in ("tickets", "kb")}
        self.notify_status = NotifyStatus(store, reader, self)
        for name in ("pending", "in_flight", "suspended", "quarantine", "tickets", "history",
                     "shops", "workers"):
            add(name, with_search(self.search_bars["tickets"], self.panels[name])
                if name == "tickets" else self.panels[name])
        add("results", self.results_view)
        gb = QSplitter(Qt.Orientation.Vertical, self)
        gb.addWidget(self.panels["gates"])
        gb.addWidget(self.panels["breakers"])
        add("gates", gb)
        kb = QSplitter(Qt.Orientation.Vertical, self)
        kb.addWidget(self.search_bars["kb"])
        kb.addWidget(self.panels["kb"])
        kb.addWidget(self.panels["rules"])
        add("kb", kb)
        add("dashboard", self.dashboard)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.detail = DetailPane(self)
        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.setObjectName("main-split")
        self.split.addWidget(self.tabs)
        self.split.addWidget(self.detail)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        self.setCentralWidget(self.split)

        # -- actions, toolbar, menus, status bar, tray
        self.acts: dict[str, QAction] = {}
        self._make_actions()
        self.toolbar = QToolBar(self)
        self.toolbar.setObjectName("toolbar")
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        for key in A.TOOLBAR:
            if key is None:
                self.toolbar.addSeparator()
            else:
                self.toolbar.addAction(self.acts[key])
        self.addToolBar(self.toolbar)
        self.status_counts = QLabel(self)
        self.status_counts.setObjectName("status-counts")
        self.status_alert = QLabel(self)
        self.status_alert.setObjectName("status-alert")
        self.status_alert.setStyleSheet("color: #b00020; font-weight: bold")
        self.status_engine = QLabel(self)
        self.status_store = QLabel(self)
        self.status_store.setObjectName("status-store")
        self.statusBar().addPermanentWidget(self.notify_status)
        self.statusBar().addPermanentWidget(self.status_store)
        self.statusBar().addPermanentWidget(self.status_alert)
        self.statusBar().addPermanentWidget(self.status_counts)
        self.statusBar().addPermanentWidget(self.status_engine)
        self.tray: QSystemTrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(app_icon(), self)
            self.tray.activated.connect(self._bring_to_front)
            self.tray.show()

        # -- timers: refresh what is stale and visible; poll the engine each second
        self.refresh_timer = QTimer(self, interval=250)
        self.refresh_timer.timeout.connect(self._refresh_visible)
        self.poll_timer = QTimer(self, interval=1000)
        self.poll_timer.timeout.connect(self._poll)
        self.retranslate()
        self._update_actions()
        self._restore_layout()
        if ctx.host is not None:
            self.attach_engine(ctx.host)
        self.refresh_timer.start()
        self.poll_timer.start()
        self._spawn(self._load_choices())
        self.results_view.connect_actions(self._spawn)
        for bar in self.search_bars.values():
            bar.connect_actions(self._spawn)

    # -- engine --------------------------------------------------------------------------

    def attach_engine(self, host: EngineHost) -> None:
        """Connect to a started engine: subscribe to its events, enable the actions."""
        self.ctx.host = host
        self.runner.host = host
        self.bridge = EngineBridge(host.bus, self)
        b = self.bridge
        for sig in (b.tasks_submitted, b.task_state_changed, b.task_bumped):
            sig.connect(self._tasks_changed)
        b.task_progressed.connect(self._progress)
        for sig in (b.shop_paused, b.domain_paused):
            sig.connect(lambda *_: self._mark(("shops",)))
        b.breaker_tripped.connect(self._breaker_tripped)
        b.ticket_opened.connect(self._ticket_opened)
        b.ticket_answered.connect(lambda *_: self._mark(("tickets", "kb", "rules")))
        b.engine_problem_reported.connect(
            lambda e: self.status_alert.setText(tr("Engine problem: %1", e.error)))
        b.ready()
        self._update_actions()

    def _bring_to_front(self, *_: object) -> None:
        self.showNormal()
        self.raise_()

    def _breaker_tripped(self, event: BreakerChanged) -> None:
        self.notify(tr("Breaker open"), tr("%1: %2", event.name, event.reason))

    def _ticket_opened(self, event: TicketOpened) -> None:
        self._mark(("tickets",))
        self.notify(tr("New ticket"), tr("Task #%1 (%2) needs a person: %3",
                                         event.task_id, event.shop, event.error))

    def notify(self, title: str, message: str) -> None:
        """A desktop notification (tray balloon) and a line in the status bar."""
        self.notifications.append(f"{title}: {message}")
        if self.tray is not None:
            self.tray.showMessage(title, message, QSystemTrayIcon.MessageIcon.Information, 8000)
        self.status_message(f"{title}: {message}")

    def status_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    # -- tabs and text -------------------------------------------------------------------

    def _tab_title(self, key: str) -> str:
        title = A.tab_names()[key]
        m = self.models.get(key)
        if isinstance(m, TaskTableModel) and key != "history":
            title += f" ({m.total:,})"
        elif key in ("in_flight", "tickets"):
            title += f" ({self.models[key].rowCount()})"
        elif key == "workers":
            w = self.models["workers"]
            states = [getattr(w.snapshot(k), "state", "") for k in w.ids]
            lost = states.count("lost")
            title += f" ({states.count('alive')}" + (
                " · " + tr("%1 lost", lost) if lost else "") + ")"
        return title

    def _update_titles(self) -> None:
        for i, key in enumerate(self._tab_keys):
            self.tabs.setTabText(i, self._tab_title(key).replace("&", "&&"))

    def retranslate(self) -> None:
        self.setWindowTitle(tr("ShopFleet console") + self.ctx.title_suffix)
        self._show_store()
        self._update_titles()
        texts = A.texts()
        for key, act in self.acts.items():
            text, tip = texts[key]
            act.setText(text)
            act.setToolTip(f"{tip} ({act.shortcut().toString()})" if not act.shortcut().isEmpty()
                           else tip)
        for p in self.panels.values():
            p.retranslate()
        self.detail.retranslate()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def _tab_changed(self, _: int) -> None:
        for name in self._visible_models():
            m = self.models.get(name)
            if isinstance(m, TaskTableModel | ListTableModel):
                m.mark_stale()
        if self.tabs.currentWidget() is self.dashboard:
            self._history_next = 0.0
        self._update_actions()

    # -- actions ------------------------------------------------------------------------

    def _make_actions(self) -> None:
        keys = A.shortcuts()
        handlers: dict[str, Callable[[], None]] = {
            "submit": self.submit_tasks, "bump": self.bump_selected,
            "preempt": self.preempt_selected, "cancel": self.cancel_selected,
            "retry": self.retry_selected, "release": self.release_selected,
            "answer": self.answer_selected,
            "pause_shop": lambda: self.pause_shops(True),
            "resume_shop": lambda: self.pause_shops(False),
            "pause_domain": lambda: self.pause_domains(True),
            "resume_domain": lambda: self.pause_domains(False),
            "gate_rate": self.change_gate, "breaker_open": lambda: self.set_breakers("open"),
            "breaker_close": lambda: self.set_breakers("closed"),
            "settings": self.open_settings, "refresh": self.refresh_all,
        }
        for key, seq in keys.items():
            act = QAction(self)
            act.setObjectName(f"act-{key}")
            if not seq.isEmpty():
                act.setShortcut(seq)
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(lambda *_, h=handlers[key]: h())
            self.acts[key] = act
            self.addAction(act)

    def current_key(self) -> str:
        i = self.tabs.currentIndex()
        return self._tab_keys[i] if i >= 0 else ""

    def show_tab(self, key: str) -> None:
        self.tabs.setCurrentIndex(self._tab_keys.index(key))

    def _selected_in(self, name: str) -> list[Any]:
        return self.panels[name].selected_ids() if name in self.panels else []

    def selected_task_ids(self) -> list[int]:
        key = self.current_key()
        if key in TASK_PANELS:
            return [int(x) for x in self._selected_in(key)]
        if key == "tickets":
            return [r.task_id for r in self.panels["tickets"].selected_rows() if r is not None]
        return []

    def _selected_shops(self) -> list[Any]:
        key = self.current_key()
        if key == "shops":
            return [r for r in self.panels["shops"].selected_rows() if r is not None]
        out: dict[str, Any] = {}
        if key in TASK_PANELS or key == "tickets":
            for r in self.panels[key].selected_rows():
                name = getattr(r, "shop", None)
                if name and name not in out:
                    out[name] = self.models["shops"].snapshot(name) or _ShopRef(
                        name, getattr(r, "domain", ""))
        return list(out.values())

    def _selected(self, name: str, ids: list[Hashable]) -> None:
        self._update_actions()
        if name in TASK_PANELS or name == "tickets":
            tid: int | None = None
            if ids:
                tid = int(str(ids[0])) if name != "tickets" else next(
                    (r.task_id for r in self.panels["tickets"].selected_rows() if r), None)
            if tid is not None and tid != self.detail.task_id:
                self._spawn(self._load_detail(tid))

    async def _load_detail(self, task_id: int) -> None:
        try:
            d = await self.reader(task_detail, self.store, task_id,
                                  current_step=self._current_steps.get(task_id))
        except Exception as exc:  # the task may be gone; say so in the pane
            self.detail.clear()
            self.detail.header.setText(str(exc))
            return
        self.detail.show_detail(d)

    def _update_actions(self) -> None:
        key = self.current_key()
        sel = A.Selection(tab=key, engine=self.ctx.host is not None,
                          tasks=bool(self.selected_task_ids()),
                          shops=bool(self._selected_shops()),
                          breakers=bool(self._selected_in("breakers")))
        for k, on in A.enabled(sel).items():
            self.acts[k].setEnabled(on)

    def _context_menu(self, name: str, pos: Any) -> None:
        self._update_actions()
        menu = QMenu(self)
        per = A.CONTEXT_MENUS.get(name, [])
        for key in per:
            if key is None:
                menu.addSeparator()
            else:
                menu.addAction(self.acts[key])
        if per:
            menu.popup(pos)
            self.dialog = menu

    def _activated(self, name: str, key: Hashable) -> None:
        if name == "tickets":
            self.answer_selected()
        elif name == "gates":
            self.change_gate()

    # -- layout memory and shutdown ----------------------------------------------------

    def _restore_layout(self) -> None:
        s = QSettings()
        geo = s.value("window/geometry")
        if geo is not None:
            self.restoreGeometry(geo)
        else:
            self.resize(1400, 860)
        state = s.value("window/state")
        if state is not None:
            self.restoreState(state)
        split = s.value("window/split")
        if split is not None:
            self.split.restoreState(split)
        else:
            self.split.setSizes([int(self.width() * 0.62), int(self.width() * 0.38)])
        for p in self.panels.values():
            p.restore_state(s)

    def save_layout(self) -> None:
        s = QSettings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("window/split", self.split.saveState())
        for p in self.panels.values():
            p.save_state(s)
        s.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._closed:
            event.accept()
            return
        event.ignore()
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


@dataclass(frozen=True)
class _ShopRef:
    name: str
    domain: str


def app_icon() -> QIcon:
    folder = resources_dir() / "icons"
    icon = QIcon(str(folder / "shopfleet.svg"))
    if icon.isNull():
        icon = QIcon(str(folder / "shopfleet.png"))
    return icon
