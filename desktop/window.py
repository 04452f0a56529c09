"""The main window: layout and wiring of the live tables, the detail pane, the dashboard and
the operator's actions.

Data flows one way. Commands go to the engine through :class:`desktop.actions.ActionRunner`;
changes come back as core events through the :class:`desktop.bridge.EngineBridge`, which marks
table models stale; a short timer refreshes the stale models that are on screen (so a burst of
events costs one read, and a hidden table costs nothing). Table models read pages from the
store on worker threads; they never own the data.

What lives elsewhere: the actions' words, shortcuts, menus and enabling
(:mod:`desktop.action_table`); the operations they run, one call into core each
(:mod:`desktop.operations`); the in-flight rows (:mod:`desktop.inflight`); ticket reads
(:mod:`desktop.tickets`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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

from core import (
    Changes,
    Engine,
    EngineHost,
    EngineStatistics,
    Settings,
    Store,
    TaskStateChanged,
    data_dir,
    resources_dir,
    save_settings,
)

from . import action_table as A
from . import columns as C
from . import operations as ops
from ._core import (
    filter_choices,
    flow_names,
    metrics_series,
    shop_rows,
    task_detail,
    task_page,
)
from .actions import ActionRunner, ErrorPresenter
from .bridge import EngineBridge
from .dashboard import Dashboard
from .detail import DetailPane
from .dialogs import BumpDialog, GateDialog, SettingsDialog, SubmitDialog
from .i18n import install_language, save_language, saved_language, tr
from .inflight import InFlightRow, engine_snapshot, fleet_running, merge_in_flight
from .models import (
    KeyedTableModel,
    ListTableModel,
    Reader,
    TaskTableModel,
    hard_aged_color,
    worker_state_color,
)
from .panels import TablePanel
from .ticket_dialog import TicketDialog, load_bundle
from .tickets import TicketReads

log = logging.getLogger(__name__)

TASK_PANELS = A.TASK_PANELS


@dataclass
class ConsoleContext:
    """What the window works with."""

    settings: Settings
    store: Store
    host: EngineHost | None
    config_path: Path | None = None
    title_suffix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class MainWindow(QMainWindow):
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

        for name in ("pending", "in_flight", "suspended", "quarantine", "tickets", "history",
                     "shops", "workers"):
            add(name, self.panels[name])
        gb = QSplitter(Qt.Orientation.Vertical, self)
        gb.addWidget(self.panels["gates"])
        gb.addWidget(self.panels["breakers"])
        add("gates", gb)
        kb = QSplitter(Qt.Orientation.Vertical, self)
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
        self.statusBar().addPermanentWidget(self.status_store)
        self.statusBar().addPermanentWidget(self.status_alert)
        self.statusBar().addPermanentWidget(self.status_counts)
        self.statusBar().addPermanentWidget(self.status_engine)
        self.tray: QSystemTrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(app_icon(), self)
            self.tray.activated.connect(lambda *_: (self.showNormal(), self.raise_()))
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
            sig.connect(lambda *_: self.models["shops"].mark_stale())
        b.breaker_tripped.connect(self._breaker_tripped)
        b.ticket_opened.connect(self._ticket_opened)
        b.ticket_answered.connect(lambda *_: self._mark(("tickets", "kb", "rules")))
        b.engine_problem_reported.connect(
            lambda e: self.status_alert.setText(tr("Engine problem: %1", e.error)))
        b.ready()
        self._update_actions()

    @staticmethod
    async def _no_load() -> list[Any]:
        return []

    async def _load_tickets(self) -> list[Any]:
        flt = self.panels["tickets"].current_filter() if "tickets" in self.panels else None
        return await self.reader(self.tickets.tickets, shop=flt.shop if flt else "",
                                 platform=flt.platform if flt else "",
                                 type=flt.type if flt else "")

    async def _load_shops(self) -> list[Any]:
        return await self.reader(shop_rows, self.store)

    async def _load_workers(self) -> list[Any]:
        return await self.reader(self.store.workers)

    async def _load_fleet(self) -> None:
        """The fleet's workers and the tasks running anywhere (another machine's included,
        so the operator can preempt or cancel them from here), read off the GUI thread."""
        if self._fleet_busy or self.reader.closed:
            return
        self._fleet_busy = True
        try:
            workers = await self.reader(self.store.workers)
            page = await self.reader(task_page, self.store, "in_flight", limit=500)
        except Exception as exc:  # the store is closing, or Redis is away for a moment
            log.debug("fleet read failed: %r", exc)
            return
        finally:
            self._fleet_busy = False
        self.models["workers"].set_rows(workers)
        self._size_owner_column()
        here = self.ctx.host.engine.owner if self.ctx.host is not None else None
        self._remote_running = fleet_running(page.rows, workers, here)
        self._show_in_flight()

    def _size_owner_column(self) -> None:
        """Fit the worker ids once, unless the operator has sized the column already."""
        view = self.panels["workers"].view
        header = view.horizontalHeader()
        if self.models["workers"].rowCount() and header.sectionSize(1) == \
                header.defaultSectionSize():
            view.resizeColumnToContents(1)

    def _show_in_flight(self) -> None:
        """This engine's tasks as it sees them, then the ones other workers run."""
        self.models["in_flight"].set_rows(
            merge_in_flight(self._local_running, self._remote_running))
        self._update_titles()

    async def _load_kb(self) -> list[Any]:
        return await self.reader(self.tickets.kb_entries)

    async def _load_rules(self) -> list[Any]:
        return await self.reader(self.tickets.rules)

    async def _load_choices(self) -> None:
        choices = await self.reader(filter_choices, self.store)
        self._flows = await self.reader(flow_names, self.ctx.settings)
        self.choices = choices
        for p in self.panels.values():
            p.set_choices(choices)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None and not self._closing:
                log.error("console task failed", exc_info=t.exception())
        task.add_done_callback(done)

    # -- events → stale ------------------------------------------------------------------

    def _mark(self, names: Sequence[str]) -> None:
        for n in names:
            m = self.models[n]
            if isinstance(m, TaskTableModel | ListTableModel):
                m.mark_stale()

    def _tasks_changed(self, event: Any) -> None:
        self._mark(("pending", "suspended", "quarantine", "history", "tickets", "shops"))
        if getattr(event, "task_id", None) == self.detail.task_id or (
                self.detail.task_id in getattr(event, "ids", ())):
            self._detail_stale = True
        if isinstance(event, TaskStateChanged) and event.state != "running":
            self._current_steps.pop(event.task_id, None)

    def _progress(self, event: Any) -> None:
        self._current_steps[event.task_id] = event.step
        if event.task_id == self.detail.task_id:
            self._detail_stale = True

    def _changes(self, ch: Changes) -> None:
        if ch.tasks:
            self._mark(("pending", "suspended", "quarantine", "history", "tickets"))
            self._detail_stale = self.detail.task_id is not None
        if ch.shops:
            self._mark(("shops",))
        if ch.tickets:
            self._mark(("tickets", "kb", "rules"))
        if ch.gates or ch.breakers:
            self._poll()

    def _visible_models(self) -> list[str]:
        key = self._tab_keys[self.tabs.currentIndex()] if self.tabs.currentIndex() >= 0 else ""
        return {"gates": ["gates", "breakers"], "kb": ["kb", "rules"]}.get(key, [key])

    def _refresh_visible(self) -> None:
        if self._closing:
            return
        now = time.monotonic()
        for name in self._visible_models():
            m = self.models.get(name)
            if isinstance(m, TaskTableModel | ListTableModel) and m.stale:
                if name == "shops":  # counts over a big queue: at most every 2 s
                    if now < self._shops_next:
                        continue
                    self._shops_next = now + 2.0
                self._spawn(m.refresh())
        # Tickets matter on every tab (tab title, tray): keep their count fresh.
        t = self.models["tickets"]
        if isinstance(t, ListTableModel) and t.stale and "tickets" not in self._visible_models():
            self._spawn(t.refresh())
        if self._detail_stale and self.detail.task_id is not None:
            self._detail_stale = False
            self._spawn(self._load_detail(self.detail.task_id))

    def _poll(self) -> None:
        if self._closing:
            return
        now = time.monotonic()
        if now >= self._fleet_next:  # each second on screen, else every 5 s (tab counts)
            on_screen = self.current_key() in ("in_flight", "workers")
            self._fleet_next = now + (1.0 if on_screen else 5.0)
            self._spawn(self._load_fleet())
        if self.ctx.host is None:
            self.models["workers"].tick()
            return
        try:
            fut = self.ctx.host.call_soon(engine_snapshot)
        except Exception:
            return
        self._spawn(self._take_snapshot(asyncio.wrap_future(fut)))
        for m in self.models.values():
            m.tick()
        if self.tabs.currentWidget() is self.dashboard and time.monotonic() > self._history_next:
            self._history_next = time.monotonic() + 30.0
            self._spawn(self._load_history())

    async def _take_snapshot(self, fut: Awaitable[tuple[EngineStatistics, list[InFlightRow]]]
                             ) -> None:
        try:
            stats, rows = await fut
        except Exception:
            return  # the engine is stopping
        self.stats = stats
        self._local_running = rows
        self._show_in_flight()
        self.models["gates"].set_rows(stats.gates)
        self.models["breakers"].set_rows(stats.breakers)
        self.dashboard.add_live(stats)
        if self.tabs.currentWidget() is self.dashboard:
            self.dashboard.redraw()
        self._show_status(stats)
        self._update_titles()

    async def _load_history(self) -> None:
        since = int(time.time() // 60) - 24 * 60
        rows = await self.reader(metrics_series, self.store, since_minute=since)
        self.dashboard.set_history(rows)

    def _show_status(self, s: EngineStatistics) -> None:
        waiting = self.models["tickets"].rowCount()
        self.status_counts.setText(tr(
            "queued %1 · running %2/%3 · tickets %4 · done/min %5 · failed/min %6 · "
            "oldest wait %7", f"{s.queued:,}", s.running, s.slots, waiting, s.done_per_min,
            s.failed_per_min, C.fmt_duration(s.oldest_wait_s)))
        open_b = [b.name for b in s.breakers if b.state.value != "closed"]
        alerts = []
        if open_b:
            alerts.append(tr("breaker open: %1", ", ".join(open_b)))
        if s.problems:
            alerts.append(tr("engine problem: %1", "; ".join(s.problems)))
        self.status_alert.setText(" · ".join(alerts))
        self.status_engine.setText(tr("browsers %1", s.browsers_alive))
        self._show_store()

    def _show_store(self) -> None:
        self.status_store.setText(tr("store: %1", self.store.url))
        self.status_store.setToolTip(tr("Every console and worker on this store shares its "
                                        "queue"))

    def _breaker_tripped(self, event: Any) -> None:
        self.notify(tr("Breaker open"), tr("%1: %2", event.name, event.reason))

    def _ticket_opened(self, event: Any) -> None:
        self._mark(("tickets",))
        shop = getattr(event, "shop", "")
        reason = getattr(event, "reason", "") or getattr(event, "error", "")
        self.notify(tr("New ticket"), tr("Task #%1 (%2) needs a person: %3",
                                         getattr(event, "task_id", "?"), shop, reason))

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
                tid = int(ids[0]) if name != "tickets" else next(
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

    # -- the actions themselves ---------------------------------------------------------

    def _each(self, what: str, ids: Sequence[Any],
              fn: ops.Operation) -> asyncio.Task[None] | None:
        """Run one operation per selected item as one action; the first refusal stops it and
        is shown; what was done before it stays done."""
        if not ids:
            return None
        items = list(ids)

        async def all_of(engine: Engine) -> Changes:
            return ops.merged([await fn(engine, x) for x in items])

        return self.runner.command(what, all_of)

    def bump_selected(self) -> None:
        ids = self.selected_task_ids()
        if not ids:
            return
        snap = self.models[self.current_key()].snapshot(ids[0]) \
            if self.current_key() in self.models else None
        dlg = BumpDialog(len(ids), snap.score if snap is not None else None, self)
        dlg.accepted.connect(lambda: self._each(
            tr("Bump"), ids, lambda e, i: ops.bump(e, i, **dlg.values())))
        self.dialog = dlg
        dlg.open()

    def cancel_selected(self) -> None:
        ids = self.selected_task_ids()
        if not ids:
            return
        box = QMessageBox(QMessageBox.Icon.Question, tr("Cancel tasks"),
                          tr("Cancel %1 task(s)? Running ones stop at their next step.",
                             len(ids)),
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.accepted.connect(lambda: self._each(tr("Cancel"), ids, lambda e, i: ops.cancel(e, i)))
        self.last_confirm = box
        box.open()

    def retry_selected(self) -> None:
        self._each(tr("Retry"), self.selected_task_ids(), lambda e, i: ops.retry(e, i))

    def preempt_selected(self) -> None:
        self._each(tr("Preempt"), self.selected_task_ids(), lambda e, i: ops.preempt(e, i))

    def release_selected(self) -> None:
        self._each(tr("Release"), self.selected_task_ids(), lambda e, i: ops.release(e, i))

    def pause_shops(self, paused: bool) -> None:
        names = [s.name for s in self._selected_shops()]
        self._each(tr("Pause shop") if paused else tr("Resume shop"), names,
                   lambda e, n: ops.pause_shop(e, n, paused))

    def pause_domains(self, paused: bool) -> None:
        domains = sorted({s.domain for s in self._selected_shops() if s.domain})
        self._each(tr("Pause domain") if paused else tr("Resume domain"), domains,
                   lambda e, d: ops.pause_domain(e, d, paused))

    def set_breakers(self, state: Literal["open", "closed"]) -> None:
        names = self._selected_in("breakers")
        self._each(tr("Open breaker") if state == "open" else tr("Close breaker"), names,
                   lambda e, n: ops.set_breaker(e, n, state))

    def change_gate(self) -> None:
        gates = self.models["gates"]
        current = {g.name: (g.rate_per_s, g.burst) for g in (gates.snapshot(k) for k in gates.ids)
                   if g is not None}
        names = list(current) or ["*"]
        choices = getattr(self, "choices", None)
        for d in (choices.domains if choices is not None else []):
            if d not in current:  # a domain whose gate has not been used yet
                names.append(d)
                spec = self.ctx.settings.gates.default_domain
                current[d] = (spec.rate_per_s, spec.burst)
        sel = self._selected_in("gates")
        dlg = GateDialog(names, current, str(sel[0]) if sel else "*", self)

        def go() -> None:
            name, rate, burst = dlg.values()
            self.runner.command(tr("Gate rate"),
                                lambda e: ops.set_gate_rate(e, name, rate, burst))

        dlg.accepted.connect(go)
        self.dialog = dlg
        dlg.open()

    def submit_tasks(self) -> None:
        choices = getattr(self, "choices", None)
        dlg = SubmitDialog(choices.shops if choices else [], choices.types if choices else [],
                           self._flows, self)

        def go() -> None:
            specs = dlg.specs
            self.runner.command(tr("Submit tasks"), lambda e: ops.submit(e, specs),
                                then=lambda ids: self.status_message(
                                    tr("Submitted %1 task(s)", len(ids))))
            self._mark(("pending",))

        dlg.accepted.connect(go)
        self.dialog = dlg
        dlg.open()

    def answer_selected(self) -> None:
        rows = [r for r in self.panels["tickets"].selected_rows() if r is not None]
        if not rows:
            return
        tid = rows[0].id

        def show(bundle: Any) -> None:
            dlg = TicketDialog(bundle, self)
            dlg.answered.connect(self._answer)
            self.dialog = dlg
            dlg.open()

        self.runner.run(tr("Open ticket"), lambda: self.reader(load_bundle, self.tickets, tid),
                        then=show)

    def _answer(self, ticket_id: int, action: str, note: str, make_rule: bool) -> None:
        self.runner.command(
            tr("Answer ticket"),
            lambda e: ops.answer_ticket(e, ticket_id, action, note=note, make_rule=make_rule))
        self._mark(("tickets", "kb", "rules"))

    def open_settings(self) -> None:
        path = self.ctx.config_path or default_config_path()
        dlg = SettingsDialog(self.ctx.settings, language=saved_language(), path=str(path),
                             parent=self)

        def go() -> None:
            lang = dlg.chosen_language()
            if lang != saved_language():
                save_language(lang)
                install_language(lang)
            if dlg.settings is not None and dlg.settings != self.ctx.settings:
                chosen = dlg.settings

                async def write() -> None:
                    await asyncio.to_thread(save_settings, chosen, path)

                self.runner.run(tr("Save settings"), write, then=lambda _: self.status_message(
                    tr("Settings saved to %1; they apply at the next start", path)))

        dlg.accepted.connect(go)
        self.dialog = dlg
        dlg.open()

    def refresh_all(self) -> None:
        for m in self.models.values():
            if isinstance(m, TaskTableModel | ListTableModel):
                m.mark_stale()
        self._spawn(self._load_choices())

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


def default_config_path() -> Path:
    return data_dir() / "shopfleet.toml"


def app_icon() -> QIcon:
    folder = resources_dir() / "icons"
    icon = QIcon(str(folder / "shopfleet.svg"))
    if icon.isNull():
        icon = QIcon(str(folder / "shopfleet.png"))
    return icon
