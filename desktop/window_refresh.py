"""How the window's tables stay fresh: events and commands mark models stale, a timer
refreshes the stale ones on screen, a poll reads the engine's snapshot and the fleet. Mixed
into :class:`desktop.window.MainWindow` (its attributes are declared here for the checker)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QToolButton, QWidget

from core import (
    Changes,
    EngineStatistics,
    Store,
    TaskStateChanged,
    all_paused,
    filter_choices,
    flow_names,
    metrics_series,
    task_page,
    view_counts,
)

from . import columns as C
from . import names, shops
from .context import ConsoleContext
from .dashboard import Dashboard
from .detail import DetailPane
from .i18n import tr
from .inflight import InFlightRow, engine_snapshot, fleet_running, merge_in_flight
from .models import KeyedTableModel, ListTableModel, Reader, ReaderClosed, TaskTableModel
from .navigation import Navigation
from .panels import TablePanel
from .results_view import NotifyStatus
from .tickets import TicketReads

log = logging.getLogger(__name__)


if TYPE_CHECKING:
    _Base = QMainWindow  # the checker sees the window this is mixed into
else:
    _Base = object


class RefreshMixin(_Base):
    """Reading the tables, marking them stale and refreshing what is on screen."""

    ctx: ConsoleContext
    store: Store
    reader: Reader
    tickets: TicketReads
    models: dict[str, KeyedTableModel]
    panels: dict[str, TablePanel]
    nav: Navigation
    dashboard: Dashboard
    detail: DetailPane
    status_counts: QLabel
    status_alert: QLabel
    status_engine: QLabel
    status_store: QLabel
    stats: EngineStatistics | None
    choices: Any
    _tasks: set[asyncio.Task[Any]]
    _closing: bool
    _detail_stale: bool
    _current_steps: dict[int, int]
    _shops_next: float
    _history_next: float
    _fleet_next: float
    _notify_next: float  # #19
    notify_status: NotifyStatus  # #19
    _fleet_busy: bool
    _local_running: list[InFlightRow]
    _remote_running: list[InFlightRow]
    _flows: list[str]
    counts: dict[str, int]
    """Every view's count from the one counts read of the last poll (titles and status bar)."""
    _counts_busy: bool
    live_button: QToolButton
    dialog: QWidget | None
    _lost_seen: set[str]
    proxy_down: dict[str, str]
    """#17: shops whose proxy is down, with why (the engine's snapshot and its events)."""

    if TYPE_CHECKING:  # defined by the window and its other parts
        def current_key(self) -> str: ...
        def _update_titles(self) -> None: ...
        def _show_pause_state(self) -> None: ...
        async def _load_detail(self, task_id: int) -> None: ...
        def notify(self, title: str, message: str) -> None: ...
        def _update_badge(self, force: bool = False) -> None: ...

    @staticmethod
    async def _no_load() -> list[Any]:
        return []

    async def _load_tickets(self) -> list[Any]:
        flt = self.panels["tickets"].current_filter() if "tickets" in self.panels else None
        return await self.reader(self.tickets.tickets, shop=flt.shop if flt else "",
                                 platform=flt.platform if flt else "",
                                 type=flt.type if flt else "")

    async def _load_shops(self) -> list[Any]:
        return await self.reader(shops.load_shop_lines, self.store, dict(self.proxy_down))

    def _proxy_changed(self, event: Any) -> None:
        """#17: a shop's proxy went down or answers again: its row says so at once."""
        if event.down:
            self.proxy_down[event.shop] = event.error
        else:
            self.proxy_down.pop(event.shop, None)
        self._mark(("shops",))

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
        self._notify_lost(workers)
        self._size_owner_column()
        here = self.ctx.host.engine.owner if self.ctx.host is not None else None
        self._remote_running = fleet_running(page.rows, workers, here)
        self._show_in_flight()

    def _notify_lost(self, workers: Sequence[Any]) -> None:
        """A worker newly lost notifies like a ticket (tray message and badge)."""
        lost = {str(w.owner) for w in workers if getattr(w, "state", "") == "lost"}
        for owner in sorted(lost - self._lost_seen):
            self.notify(tr("Worker lost"), tr("%1 stopped answering; its tasks go back to the "
                                              "queue", owner))
        self._lost_seen = lost
        self._update_badge(force=True)

    def _size_owner_column(self) -> None:
        """Fit the worker ids once, unless the operator has sized the column already."""
        view = self.panels["workers"].view
        header = view.horizontalHeader()
        if self.models["workers"].rowCount() and header.sectionSize(1) == \
                header.defaultSectionSize():
            view.resizeColumnToContents(1)

    def _show_in_flight(self) -> None:
        """This engine's tasks as it sees them, then the ones other workers run."""
        if self.current_key() == "in_flight" and self.hold_reason() and \
                self.models["in_flight"].rowCount() > 0:
            return  # the next snapshot after the hold redraws it
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
            exc = None if t.cancelled() else t.exception()
            if exc is not None and not self._closing and not isinstance(exc, ReaderClosed):
                log.error("console task failed", exc_info=exc)
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
        if isinstance(event, TaskStateChanged) and event.state == "quarantined":
            self.notify(tr("Task quarantined"), tr("Task #%1 (%2) is in quarantine: %3",
                                                   event.task_id, event.shop,
                                                   event.reason or "—"))

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
        key = self.nav.current_key()
        return {"gates": ["gates", "breakers"], "kb": ["kb", "rules"],
                "dashboard": []}.get(key, [key] if key else [])

    def _refresh_visible(self) -> None:
        if self._closing:
            return
        now = time.monotonic()
        held = self.hold_reason()
        self._show_live(held)
        for name in self._visible_models():
            m = self.models.get(name)
            if held and name in self.panels and m is not None and m.rowCount() > 0:
                continue  # stays stale: refreshed when the hold ends (an empty one loads)
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

    # -- live or held -------------------------------------------------------------------

    def hold_reason(self) -> str:
        """Why the shown tables keep their rows and order now ("" when they are live): the
        operator paused them, the pointer is over a table, or a menu or dialog is open (a
        click or a command then lands on the row the operator saw)."""
        if not self.live_button.isChecked():
            return tr("paused")
        if QApplication.activePopupWidget() is not None or (
                self.dialog is not None and self.dialog.isVisible()) or (
                QApplication.activeModalWidget() is not None):
            return tr("held while a menu or dialog is open")
        if any(p.hovered and p.isVisible() for p in self.panels.values()):
            return tr("held under the pointer")
        return ""

    def _show_live(self, held: str) -> None:
        text = tr("live") if not held else tr("paused") if held == tr("paused") else held
        if self.live_button.text() != text:
            self.live_button.setText(text)

    # -- counts: one read feeds every title and the status bar --------------------------

    async def _load_counts(self) -> None:
        if self._counts_busy or self.reader.closed:
            return
        self._counts_busy = True
        try:
            self.counts = await self.reader(view_counts, self.store)
        except Exception as exc:  # the store is closing, or Redis is away for a moment
            log.debug("counts read failed: %r", exc)
            return
        finally:
            self._counts_busy = False
        self._update_titles()
        if self.stats is not None:
            self._show_status(self.stats)

    def _poll(self) -> None:
        if self._closing:
            return
        self._spawn(self._load_counts())
        if self.current_key() == "shops":
            # #15: a hold (a takeover here, on another console of the fleet) comes and goes
            # without a task event; the view re-reads (at most every 2 s) while it is shown.
            self._mark(("shops",))
        now = time.monotonic()
        if now >= self._fleet_next:  # each second on screen, else every 5 s (tab counts)
            on_screen = self.current_key() in ("in_flight", "workers")
            self._fleet_next = now + (1.0 if on_screen else 5.0)
            self._spawn(self._load_fleet())
        if now >= self._notify_next:  # #19
            self._notify_next = now + 10.0
            self._spawn(self.notify_status.refresh())
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
        if self.current_key() == "dashboard" and time.monotonic() > self._history_next:
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
        if stats.proxy_down != self.proxy_down:  # #17: the fleet's view (Redis breakers too)
            self.proxy_down = dict(stats.proxy_down)
            self._mark(("shops",))
        self.dashboard.add_live(stats)
        if self.current_key() == "dashboard":
            self.dashboard.redraw()
        self._show_status(stats)
        self._show_pause_state()
        self._update_titles()

    async def _load_history(self) -> None:
        since = int(time.time() // 60) - 24 * 60
        rows = await self.reader(metrics_series, self.store, since_minute=since)
        self.dashboard.set_history(rows)

    def _show_status(self, s: EngineStatistics) -> None:
        # The same numbers as the views' titles: the poll's one counts read.
        c = self.counts
        queued = c.get("pending", s.queued)
        waiting = c.get("tickets", self.models["tickets"].rowCount())
        self.status_counts.setText(tr(
            "queued %1 · running %2/%3 · tickets %4 · done/min %5 · failed/min %6 · "
            "oldest wait %7", f"{queued:,}", s.running, s.slots, waiting, s.done_per_min,
            s.failed_per_min, C.fmt_duration(s.oldest_wait_s)))
        open_b = [names.breaker(b.name) for b in s.breakers
                  if b.state.value != "closed" and not (b.name == "*pool*" and b.manual)]
        alerts = []
        if all_paused(s):
            alerts.append(tr("ALL PAUSED: no new task starts (Tasks → Resume all)"))
        if open_b:
            alerts.append(tr("breaker tripped: %1", ", ".join(open_b)))
        if s.problems:
            alerts.append(tr("engine problem: %1", "; ".join(s.problems)))
        self.status_alert.setText(" · ".join(alerts))
        self.status_engine.setText(tr("browsers %1", s.browsers_alive))
        self._show_store()

    def _show_store(self) -> None:
        url = str(self.store.url)
        # Short on the status bar (a long path would push the counts off a 1024 px screen);
        # whole in the tooltip.
        self.status_store.setText(tr("store: %1", url if len(url) <= 40 else "…" + url[-39:]))
        self.status_store.setToolTip(tr("store: %1", self.store.url) + "\n" + tr(
            "Every console and worker on this store shares its queue"))
