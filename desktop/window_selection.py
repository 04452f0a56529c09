"""The window's selection: the current panel, copy and export, the selected rows, the
context menus and activation. Mixed into :class:`desktop.window.MainWindow`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import (
    QAction,
    QGuiApplication,
)
from PySide6.QtWidgets import (
    QFileDialog,
    QMainWindow,
    QMenu,
    QWidget,
)

from core import (
    Store,
    task_detail,
    task_page,
)

from . import action_table as A
from . import names
from .actions import ActionRunner
from .context import ConsoleContext
from .detail import DetailPane, evidence_files
from .export import Table, table_of, to_tsv, write_table
from .i18n import tr
from .models import (
    KeyedTableModel,
    Reader,
    TaskTableModel,
)
from .panels import TablePanel

if TYPE_CHECKING:
    _Base = QMainWindow  # the checker sees the window this is mixed into
else:
    _Base = object

EXPORT_LIMIT = 1_000_000
"""Most rows an export writes (a spreadsheet holds 1,048,576)."""
TASK_PANELS = A.TASK_PANELS
VIEW_TABLES: dict[str, tuple[str, ...]] = {"gates": ("gates", "breakers"), "kb": ("kb", "rules"),
                                           "dashboard": ()}
"""The tables of a view (default: the one named like the view)."""


class SelectionMixin(_Base):
    """Selected rows, copy/export, context menus."""

    ctx: ConsoleContext
    store: Store
    reader: Reader
    runner: ActionRunner
    models: dict[str, KeyedTableModel]
    panels: dict[str, TablePanel]
    detail: DetailPane
    acts: dict[str, QAction]
    dialog: QWidget | None
    last_export: asyncio.Task[None] | None
    _current_steps: dict[int, int]
    _detail_for: int | None
    _detail_reading: set[int]
    _focus_table: dict[str, str]

    if TYPE_CHECKING:  # defined by the window and its other parts
        def current_key(self) -> str: ...
        def status_message(self, text: str) -> None: ...
        def _spawn(self, coro: Awaitable[Any]) -> None: ...
        def answer_selected(self) -> None: ...
        def change_gate(self) -> None: ...
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
        if name == self.current_key():  # a hidden view's selection is not the pane's
            self._detail_follow()

    def _selected_task(self, key: str) -> int | None:
        """The task the view's selection shows in the detail pane (its first), else None."""
        if key in TASK_PANELS:
            ids = self._selected_in(key)
            return int(str(ids[0])) if ids else None
        if key == "tickets":
            return next((r.task_id for r in self.panels["tickets"].selected_rows() if r), None)
        return None

    def _detail_follow(self) -> None:
        """The detail pane follows the current view's selection: its task, or nothing when
        the view has no selection (switching from Pending to History does not leave the
        pending task there)."""
        tid = self._selected_task(self.current_key())
        self._detail_for = tid
        if tid is None:
            self.detail.clear()  # also an error line about an earlier task
        elif tid != self.detail.task_id and tid not in self._detail_reading:
            self._detail_reading.add(tid)  # now: a second signal of this tick reads it once
            self._spawn(self._load_detail(tid))

    async def _load_detail(self, task_id: int) -> None:
        """Read a task's detail into the pane, unless by then the pane wants another one
        (``_detail_for``, set when the selection or the view changes)."""
        self._detail_reading.add(task_id)
        try:
            try:
                d = await self.reader(task_detail, self.store, task_id,
                                      current_step=self._current_steps.get(task_id))
            except Exception as exc:  # the task may be gone; say so in the pane
                if self._detail_for == task_id:
                    self.detail.clear()
                    self.detail.header.setText(str(exc))
                return
            files = await asyncio.to_thread(evidence_files, d)   # file checks and decoding
        finally:
            self._detail_reading.discard(task_id)
        if self._detail_for != task_id:
            return  # the selection (or the view) moved on while it was read
        self.detail.show_detail(d, files=files)

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
