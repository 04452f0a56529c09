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
refreshing the tables (:mod:`desktop.window_refresh`); engine notifications and the tray badge
(:mod:`desktop.window_tray`); selection, copy/export and context menus
(:mod:`desktop.window_selection`); layout memory and shutdown (:mod:`desktop.window_layout`);
the in-flight rows (:mod:`desktop.inflight`); ticket reads (:mod:`desktop.tickets`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QActionGroup,
)
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QSystemTrayIcon,
    QToolBar,
    QToolButton,
    QWidget,
)

from core import (
    EngineHost,
    EngineStatistics,
    all_paused,
    pause_all,
)

from . import action_table as A
from . import columns as C
from . import names, palette, shops
from .actions import ActionRunner, ErrorPresenter
from .bridge import EngineBridge
from .context import ConsoleContext
from .dashboard import Dashboard
from .detail import DetailPane
from .elided import ElidedLabel
from .i18n import QT_TR_NOOP, tr
from .inflight import InFlightRow
from .models import (
    KeyedTableModel,
    ListTableModel,
    Reader,
    TaskTableModel,
    hard_aged_color,
    worker_state_color,
)
from .navigation import Navigation
from .panels import EMPTY_KEYS, TablePanel
from .results_view import NotifyStatus, ResultsView, SearchBar, with_search
from .schedules_view import SchedulesView
from .takeover import OpenTakeover
from .tickets import TicketReads
from .window_commands import CommandsMixin
from .window_layout import LayoutMixin
from .window_refresh import RefreshMixin
from .window_selection import EXPORT_LIMIT as EXPORT_LIMIT
from .window_selection import SelectionMixin
from .window_tray import TrayMixin, app_icon
from .window_tray import badge_icon as badge_icon

log = logging.getLogger(__name__)

TASK_PANELS = A.TASK_PANELS
DETAIL_VIEWS = (*TASK_PANELS, "tickets")
"""Views whose selection shows a task in the detail pane (elsewhere the pane is hidden)."""


class MainWindow(TrayMixin, SelectionMixin, LayoutMixin, RefreshMixin, CommandsMixin,
                 QMainWindow):
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
        self.last_export: asyncio.Task[None] | None = None
        self.beeps = 0
        self._closing = False
        self._closed = False
        self._shutdown_task: asyncio.Future[None] | None = None
        self.takeovers: list[OpenTakeover] = []
        """#15: takeovers started here (their browser may be open); closed when quitting."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._detail_stale = False
        self._detail_for: int | None = None
        """The task the detail pane should show (a read for another one is dropped)."""
        self._detail_reading: set[int] = set()
        self._current_steps: dict[int, int] = {}
        self._shops_next = 0.0
        self._history_next = 0.0
        self._fleet_next = 0.0
        self._notify_next = 0.0  # #19: failing alert targets, read every 10 s
        self._fleet_busy = False
        self._local_running: list[InFlightRow] = []
        self._remote_running: list[InFlightRow] = []
        self._flows: list[str] = []
        self._focus_table: dict[str, str] = {}
        self._open_tickets = -1
        self._badge_tip = ""
        self._detail_wanted = True
        self.counts: dict[str, int] = {}
        self._counts_busy = False
        self._lost_seen: set[str] = set()
        self.proxy_down: dict[str, str] = {}  # #17

        # -- models
        store, reader = self.store, self.reader
        self.models: dict[str, KeyedTableModel] = {
            "pending": TaskTableModel("pending", C.PENDING, reader, store, self),
            "in_flight": ListTableModel(C.IN_FLIGHT, lambda r: r.id, self._no_load, self),
            "suspended": TaskTableModel("suspended", C.PARKED, reader, store, self),
            "quarantine": TaskTableModel("quarantine", C.PARKED, reader, store, self),
            "tickets": ListTableModel(C.TICKETS, lambda r: r.id, self._load_tickets, self),
            "history": TaskTableModel("history", C.HISTORY, reader, store, self),
            "scheduled": TaskTableModel("scheduled", C.SCHEDULED, reader, store, self),  # #18
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
            panel.focused.connect(lambda n=name: self._table_focused(n))
            if hasattr(model, "loaded"):
                model.loaded.connect(self._update_titles)
            self.panels[name] = panel
        # A shop without a password is flagged (icon, tooltip) and can be listed alone.
        self.panels["shops"].add_only(QT_TR_NOOP("No password"), shops.without_password,
                                      tip=QT_TR_NOOP("Only shops without a password"))

        # -- layout: the side list of views | the view | the task's detail
        self.nav = Navigation(A.VIEWS, self)
        self.dashboard = Dashboard(self)
        # #19: a Results view, search boxes over tickets and answers, failing alert targets
        self.results_view = ResultsView(store, reader, self)
        self.search_bars = {p: SearchBar(p, store, reader, self) for p in ("tickets", "kb")}
        self.notify_status = NotifyStatus(store, reader, self)
        for name in ("pending", "in_flight", "suspended", "quarantine", "tickets", "history",
                     "shops", "workers"):
            self.nav.add_page(name, with_search(self.search_bars["tickets"], self.panels[name])
                              if name == "tickets" else self.panels[name])
        self.nav.add_page("results", self.results_view)
        gb = QSplitter(Qt.Orientation.Vertical, self)
        gb.addWidget(self.panels["gates"])
        gb.addWidget(self.panels["breakers"])
        self.nav.add_page("gates", gb)
        kb = QSplitter(Qt.Orientation.Vertical, self)
        kb.addWidget(self.search_bars["kb"])
        kb.addWidget(self.panels["kb"])
        kb.addWidget(self.panels["rules"])
        self.nav.add_page("kb", kb)
        self.nav.add_page("scheduled", self.panels["scheduled"])  # #18: delayed tasks
        self.schedules = SchedulesView(self.store, self.reader, parent=self)  # #18
        self.nav.add_page("schedules", self.schedules)
        self.nav.add_page("dashboard", self.dashboard)
        self.nav.current_changed.connect(self._tab_changed)
        self.detail = DetailPane(self)
        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.setObjectName("main-split")
        self.split.addWidget(self.nav)
        self.split.addWidget(self.nav.stack)
        self.split.addWidget(self.detail)
        self.split.setStretchFactor(0, 0)
        self.split.setStretchFactor(1, 3)
        self.split.setStretchFactor(2, 2)
        self.split.setCollapsible(1, False)
        self.setCentralWidget(self.split)

        # -- actions (one registry), menu bar, toolbar, status bar, tray
        self.acts: dict[str, QAction] = {}
        self.menus: dict[str, QMenu] = {}
        self._make_actions()
        self.toolbar = QToolBar(self)
        self.toolbar.setObjectName("toolbar")
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        last_menu = None
        for spec in sorted((a for a in A.ACTIONS if a.toolbar),
                           key=lambda a: A.TOOLBAR_SECTIONS.index(a.menu)
                           if a.menu in A.TOOLBAR_SECTIONS else 99):
            if spec.toolbar:
                if last_menu is not None and spec.menu != last_menu:
                    self.toolbar.addSeparator()
                self.toolbar.addAction(self.acts[spec.id])
                last_menu = spec.menu
        self.addToolBar(self.toolbar)
        for name, key in EMPTY_KEYS.items():
            seq = self.acts[key].shortcut()
            self.panels[name].shortcut_text = seq.toString(seq.SequenceFormat.NativeText)
        from .flow_editor_window import install_flow_editor  # #21: the flow editor's two entries

        install_flow_editor(self)
        # Elided labels: a long alert or store path gives up width, never the window (1024×600).
        self.status_counts = ElidedLabel(self)
        self.status_counts.setObjectName("status-counts")
        self.status_alert = ElidedLabel(self)
        self.status_alert.setObjectName("status-alert")
        self.status_engine = QLabel(self)
        self.status_store = ElidedLabel(self)
        self.status_store.setObjectName("status-store")
        self.statusBar().addPermanentWidget(self.notify_status)
        self.statusBar().addPermanentWidget(self.status_store)
        self.statusBar().addPermanentWidget(self.status_alert)
        self.statusBar().addPermanentWidget(self.status_counts)
        self.statusBar().addPermanentWidget(self.status_engine)
        # Live or held: the tables keep their order under the pointer and while a menu or
        # dialog is open; the operator can hold them too.
        self.live_button = QToolButton(self)
        self.live_button.setObjectName("live-toggle")
        self.live_button.setCheckable(True)
        self.live_button.setChecked(True)
        self.live_button.setAutoRaise(True)
        self.live_button.setText(tr("live"))
        self.live_button.toggled.connect(lambda _: self._refresh_visible())
        self.statusBar().addPermanentWidget(self.live_button)
        self.tray: QSystemTrayIcon | None = None
        self.tray_menu = QMenu(self)
        self.tray_menu.setObjectName("tray-menu")
        self.tray_show = self.tray_menu.addAction("", self._bring_to_front)
        self.tray_menu.addAction(self.acts["pause_all"])
        self.tray_menu.addSeparator()
        self.tray_menu.addAction(self.acts["quit"])
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(app_icon(), self)
            self.tray.setContextMenu(self.tray_menu)
            self.tray.activated.connect(self._tray_activated)
            self.tray.show()
        self._apply_palette()

        # -- timers: refresh what is stale and visible; poll the engine each second
        self.refresh_timer = QTimer(self, interval=250)
        self.refresh_timer.timeout.connect(self._refresh_visible)
        self.poll_timer = QTimer(self, interval=1000)
        self.poll_timer.timeout.connect(self._poll)
        self.retranslate()
        self._restore_layout()
        self._update_actions()
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
        b.shop_proxy_changed.connect(self._proxy_changed)  # #17
        b.breaker_tripped.connect(self._breaker_tripped)
        b.ticket_opened.connect(self._ticket_opened)
        b.ticket_answered.connect(lambda *_: self._mark(("tickets", "kb", "rules")))
        b.engine_problem_reported.connect(
            lambda e: self.status_alert.setText(tr("Engine problem: %1", e.error)))
        b.event_received.connect(self._schedule_event)  # #18
        b.ready()
        self._update_actions()

    # -- views and text ------------------------------------------------------------------

    def _tab_title(self, key: str) -> str:
        title = A.tab_names()[key]
        m = self.models.get(key)
        live = self.counts.get(key)  # the poll's one counts read, shown or hidden
        if isinstance(m, TaskTableModel) and key != "history":
            if live is None:
                title += f" ({names.count(m.total)})"
            elif m.flt.empty:
                title += f" ({names.count(live)})"
            else:  # filtered: what the filter shows of all of them
                title += f" ({names.count(m.total)}/{names.count(live)})"
        elif key in ("in_flight", "tickets"):
            if live is None or (key == "tickets"
                                and not self.panels["tickets"].current_filter().empty):
                live = self.models[key].rowCount()
            title += f" ({names.count(live)})"
        elif key == "workers":
            w = self.models["workers"]
            states = [getattr(w.snapshot(k), "state", "") for k in w.ids]
            lost = states.count("lost")
            title += f" ({states.count('alive')}" + (
                " · " + tr("%1 lost", lost) if lost else "") + ")"
        return title

    def _update_titles(self) -> None:
        for key in self.nav.keys:
            self.nav.set_title(key, self._tab_title(key))
        self._update_badge()

    def view_title(self, key: str) -> str:
        """The side list's text for a view (with its count)."""
        return self.nav.title(key)

    def retranslate(self) -> None:
        self.setWindowTitle(tr("ShopFleet console") + self.ctx.title_suffix)
        self._show_store()
        self.nav.retranslate()
        self._update_titles()
        for spec in A.all_actions():
            act = self.acts[spec.id]
            act.setText(tr(spec.text))
            tip = tr(spec.tip)
            seq = act.shortcut().toString(act.shortcut().SequenceFormat.NativeText)
            act.setToolTip(f"{tip} ({seq})" if seq else tip)
            act.setStatusTip(tip)
        self._show_pause_state()
        for key, title in A.MENUS:
            self.menus[key].setTitle(tr(title))
        if hasattr(self, "toolbar"):
            self.toolbar.setWindowTitle(tr("Toolbar"))
        self.tray_show.setText(tr("Show ShopFleet"))
        for p in self.panels.values():
            p.retranslate()
        self.detail.retranslate()
        self.dashboard.retranslate()
        self.schedules.retranslate()
        self.results_view.retranslate()
        for bar in self.search_bars.values():
            bar.retranslate_box()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        elif event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self._apply_palette()
        super().changeEvent(event)

    def _apply_palette(self) -> None:
        """Colours from the palette module (light or dark scheme)."""
        self.status_alert.setStyleSheet(f"{palette.error_style()}; font-weight: bold")
        self.dashboard.apply_palette()
        for m in self.models.values():
            m.retranslate()  # headers; rows repaint with the new highlight colours
        self._update_badge(force=True)

    def _tab_changed(self, key: str) -> None:
        for name in self._visible_models():
            m = self.models.get(name)
            if isinstance(m, TaskTableModel | ListTableModel):
                m.mark_stale()
        if key == "dashboard":
            self._history_next = 0.0
            self.dashboard.redraw()
        if key == "results":  # #19: what the filter shows now, without a click first
            self._spawn(self.results_view.refresh())
        act = self.acts.get(f"view_{key}")
        if act is not None:
            act.setChecked(True)
        self.detail.setVisible(key in DETAIL_VIEWS and self._detail_wanted)
        self.acts["toggle_detail"].setEnabled(key in DETAIL_VIEWS)
        self.acts["toggle_detail"].setChecked(self._detail_wanted)
        self._detail_follow()  # #15: the pane shows this view's selection, or nothing
        self._update_actions()

    # -- actions ------------------------------------------------------------------------

    def _make_actions(self) -> None:
        bar = self.menuBar()
        for key, _ in A.MENUS:
            menu = bar.addMenu("")
            menu.setObjectName(f"menu-{key}")
            self.menus[key] = menu
        views = QActionGroup(self)
        views.setExclusive(True)
        last_section: dict[str, int] = {}
        for spec in A.all_actions():
            act = QAction(self)
            act.setObjectName(f"act-{spec.id}")
            seq = spec.shortcut()
            if not seq.isEmpty():
                act.setShortcut(seq)
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.setCheckable(spec.checkable)
            act.triggered.connect(lambda *_, h=spec.handler: h(self))
            if spec.id.startswith("view_"):
                views.addAction(act)
            self.acts[spec.id] = act
            self.addAction(act)
            menu = self.menus[spec.menu]
            if spec.menu in last_section and last_section[spec.menu] != spec.section:
                menu.addSeparator()
            last_section[spec.menu] = spec.section
            menu.addAction(act)

    def current_key(self) -> str:
        return self.nav.current_key()

    def show_tab(self, key: str) -> None:
        """Show a view (``pending``, ``tickets``, ``dashboard``…)."""
        self.nav.show_key(key)

    def step_view(self, delta: int) -> None:
        self.nav.step(delta)

    def toggle_detail(self) -> None:
        self._detail_wanted = not self._detail_wanted
        self.detail.setVisible(self.current_key() in DETAIL_VIEWS and self._detail_wanted)
        self.acts["toggle_detail"].setChecked(self._detail_wanted)

    def toggle_pause_all(self) -> None:
        paused = not (self.stats is not None and all_paused(self.stats))
        # The switch shows the engine's state (read each second), not the click.
        self.acts["pause_all"].setChecked(not paused)
        self.runner.command(tr("Pause all") if paused else tr("Resume all"),
                            lambda e: pause_all(e, paused))

    def _show_pause_state(self) -> None:
        on = self.stats is not None and all_paused(self.stats)
        act = self.acts["pause_all"]
        act.setChecked(on)
        act.setText(tr("Resume all") if on else tr("Pause all"))

    def set_rules_enabled(self, enabled: bool) -> None:
        from . import operations as ops

        ids = [int(str(x)) for x in self._selected_in("rules")]
        self._each(tr("Enable rule") if enabled else tr("Disable rule"), ids,
                   lambda e, i: ops.set_rule_enabled(e, i, enabled))

    def delete_rules(self) -> None:
        from . import operations as ops

        ids = [int(str(x)) for x in self._selected_in("rules")]
        if not ids:
            return
        box = QMessageBox(QMessageBox.Icon.Question, tr("Delete rules"),
                          tr("Delete %1 rule(s)? Their failures open tickets again.",
                             len(ids)),
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.accepted.connect(lambda: self._each(tr("Delete rule"), ids,
                                                lambda e, i: ops.delete_rule(e, i)))
        self.last_confirm = box
        box.open()

    def show_shortcuts(self) -> None:
        lines = []
        for key, title in A.MENUS:
            lines.append(f"<tr><td colspan=2><b>{tr(title).replace('&', '')}</b></td></tr>")
            for spec in A.all_actions():
                if spec.menu != key:
                    continue
                act = self.acts[spec.id]
                seq = act.shortcut().toString(act.shortcut().SequenceFormat.NativeText)
                lines.append(f"<tr><td>{act.text().replace('&', '')}</td><td>{seq}</td></tr>")
        box = QMessageBox(QMessageBox.Icon.NoIcon, tr("Keyboard shortcuts"),
                          "<table cellspacing=4>" + "".join(lines) + "</table>",
                          QMessageBox.StandardButton.Close, self)
        box.setTextFormat(Qt.TextFormat.RichText)
        self.dialog = box
        box.open()

    def show_about(self) -> None:
        import core

        box = QMessageBox(QMessageBox.Icon.Information, tr("About ShopFleet"),
                          tr("ShopFleet %1 — runs the daily work of many online shops in real "
                             "browsers.\nStore: %2", core.__version__, self.store.url),
                          QMessageBox.StandardButton.Close, self)
        self.dialog = box
        box.open()
