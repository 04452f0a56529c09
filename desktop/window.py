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
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QActionGroup,
    QCloseEvent,
    QGuiApplication,
    QIcon,
    QPainter,
    QPixmap,
)
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
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
    BreakerChanged,
    EngineHost,
    EngineStatistics,
    ScheduleFailed,
    TicketOpened,
    all_paused,
    pause_all,
    resources_dir,
    task_detail,
    task_page,
)

from . import action_table as A
from . import columns as C
from . import names, palette, shops
from .actions import ActionRunner, ErrorPresenter
from .bridge import EngineBridge
from .context import ConsoleContext
from .dashboard import Dashboard
from .detail import DetailPane
from .export import Table, table_of, to_tsv, write_table
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
from .tickets import TicketReads
from .window_commands import CommandsMixin
from .window_refresh import RefreshMixin

log = logging.getLogger(__name__)

TASK_PANELS = A.TASK_PANELS
DETAIL_VIEWS = (*TASK_PANELS, "tickets")
"""Views whose selection shows a task in the detail pane (elsewhere the pane is hidden)."""
VIEW_TABLES: dict[str, tuple[str, ...]] = {"gates": ("gates", "breakers"), "kb": ("kb", "rules"),
                                           "dashboard": ()}
"""The tables of a view (default: the one named like the view)."""
EXPORT_LIMIT = 1_000_000
"""Most rows an export writes (a spreadsheet holds 1,048,576)."""


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
        self.last_export: asyncio.Task[None] | None = None
        self.beeps = 0
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
        self._focus_table: dict[str, str] = {}
        self._open_tickets = -1
        self._badge_tip = ""
        self._detail_wanted = True
        self.counts: dict[str, int] = {}
        self._counts_busy = False
        self._lost_seen: set[str] = set()

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
        from .flow_editor import install_flow_editor  # #21: the flow editor's two entries

        install_flow_editor(self)
        self.status_counts = QLabel(self)
        self.status_counts.setObjectName("status-counts")
        self.status_alert = QLabel(self)
        self.status_alert.setObjectName("status-alert")
        self.status_engine = QLabel(self)
        self.status_store = QLabel(self)
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
        b.breaker_tripped.connect(self._breaker_tripped)
        b.ticket_opened.connect(self._ticket_opened)
        b.ticket_answered.connect(lambda *_: self._mark(("tickets", "kb", "rules")))
        b.engine_problem_reported.connect(
            lambda e: self.status_alert.setText(tr("Engine problem: %1", e.error)))
        b.event_received.connect(self._schedule_event)  # #18
        b.ready()
        self._update_actions()

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
        act = self.acts.get(f"view_{key}")
        if act is not None:
            act.setChecked(True)
        self.detail.setVisible(key in DETAIL_VIEWS and self._detail_wanted)
        self.acts["toggle_detail"].setEnabled(key in DETAIL_VIEWS)
        self.acts["toggle_detail"].setChecked(self._detail_wanted)
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

    def current_panel(self) -> TablePanel | None:
        """The table the operator works in: the view's, or in a view of two tables the one
        last clicked."""
        key = self.current_key()
        tables = VIEW_TABLES.get(key, (key,))
        if not tables:
            return None
        name = self._focus_table.get(key)
        return self.panels.get(name if name in tables else tables[0])

    def _table_focused(self, name: str) -> None:
        key = self.current_key()
        if name in VIEW_TABLES.get(key, (key,)):
            self._focus_table[key] = name
            self._update_actions()

    def focus_filter(self) -> None:
        p = self.current_panel()
        if p is not None:
            p.focus_filter()

    def select_all(self) -> None:
        p = self.current_panel()
        if p is not None:
            p.view.selectAll()

    def _table_now(self, panel: TablePanel, rows: list[Any]) -> Table:
        cols = panel.model.columns
        return table_of(cols, rows, [tr(c.title) for c in cols])

    def copy_selection(self) -> None:
        """The selected rows (with the header) as tab-separated text on the clipboard."""
        p = self.current_panel()
        if p is None:
            return
        rows = p.selected_rows()
        if not rows:
            return
        QGuiApplication.clipboard().setText(to_tsv(self._table_now(p, rows)))
        self.status_message(tr("Copied %1", names.rows(len(rows))))

    def export_dialog(self, *, selected_only: bool) -> None:
        p = self.current_panel()
        if p is None:
            return
        name = A.tab_names().get(p.name, p.name) if p.name in A.VIEW_NAMES else p.name
        dlg = QFileDialog(self, tr("Export table"), str(Path.home() / f"{name}.xlsx"))
        dlg.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dlg.setNameFilters([tr("Excel workbook (*.xlsx)"), tr("CSV, UTF-8 (*.csv)")])
        dlg.setOption(QFileDialog.Option.DontUseNativeDialog, False)

        def chosen(path: str) -> None:
            f = Path(path)
            if f.suffix.lower() not in (".xlsx", ".csv"):
                f = f.with_suffix(".csv" if "csv" in dlg.selectedNameFilter().lower()
                                  else ".xlsx")
            self.export_to(f, selected_only=selected_only)

        dlg.fileSelected.connect(chosen)
        self.dialog = dlg
        dlg.open()

    def export_to(self, path: Path, *, selected_only: bool,
                  panel: TablePanel | None = None) -> asyncio.Task[None]:
        """Write the current table (every row the filter lets through, not just the ones
        loaded) or its selected rows to ``path`` (CSV or XLSX by suffix), off the GUI
        thread. Returns the task (tests await it)."""
        p = panel or self.current_panel()
        assert p is not None
        selected = p.selected_rows() if selected_only else None
        model = p.model

        async def go() -> int:
            if selected is not None:
                rows = [r for r in selected if r is not None]
            elif isinstance(model, TaskTableModel):
                rows = await self.reader(_all_task_rows, self.store, model.view, model.flt,
                                         model.sort_name, model.descending)
            else:
                rows = [p.row_at_view(i) for i in range(p.view.model().rowCount())]
            table = self._table_now(p, rows)
            await self.reader(write_table, path, table)
            return len(table[1])

        task = self.runner.run(tr("Export"), go, then=lambda n: self.status_message(
            tr("Exported %1 to %2", names.rows(n), path)))
        self.last_export = task
        return task

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
        p = self.current_panel()
        sel = A.Selection(tab=key, engine=self.ctx.host is not None,
                          tasks=bool(self.selected_task_ids()),
                          shops=bool(self._selected_shops()),
                          breakers=bool(self._selected_in("breakers")),
                          rows=bool(p is not None and p.selected_ids()),
                          table=p is not None,
                          rules=key == "kb" and bool(self._selected_in("rules")))
        for spec in A.all_actions():
            if spec.id == "toggle_detail":
                continue
            self.acts[spec.id].setEnabled(spec.enabled(sel))

    def _context_menu(self, name: str, pos: Any) -> None:
        self._table_focused(name)
        self._update_actions()
        menu = QMenu(self)
        menu.setObjectName(f"context-{name}")
        per = A.CONTEXT_MENUS.get(name, []) + A.COMMON
        for key in per:
            if key is None:
                if menu.actions() and not menu.actions()[-1].isSeparator():
                    menu.addSeparator()
            else:
                menu.addAction(self.acts[key])
        menu.popup(pos)
        self.dialog = menu

    def _activated(self, name: str, key: Hashable) -> None:
        if name == "tickets":
            self.answer_selected()
        elif name == "gates":
            self.change_gate()

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
        if event.spontaneous() and not self._closing and self.ctx.host is not None:
            # The window's close button: the operator may only want the window gone.
            self.ask_close()
            return
        self.quit()

    def ask_close(self) -> QMessageBox:
        """Ask what closing means: stop automation and quit, keep it running (in the tray),
        or cancel."""
        box = QMessageBox(QMessageBox.Icon.Question, tr("Close ShopFleet"),
                          tr("Stop automation and quit? Running tasks save their place and go "
                             "back to the queue."), QMessageBox.StandardButton.NoButton, self)
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


@dataclass(frozen=True)
class _ShopRef:
    name: str
    domain: str


def _all_task_rows(store: Any, view: str, flt: Any, sort: str, descending: bool | None
                   ) -> list[Any]:
    """Every row of a task view under a filter, page by page (blocking: a worker thread)."""
    rows: list[Any] = []
    after = None
    while len(rows) < EXPORT_LIMIT:
        page = task_page(store, view, flt=flt, sort=sort, descending=descending, after=after,
                         limit=min(2000, EXPORT_LIMIT - len(rows)))
        rows.extend(page.rows)
        if page.cursor is None or not page.rows:
            break
        after = page.cursor
    return rows


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
