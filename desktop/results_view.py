"""The console's Results view (#19): filter what the robots collected, preview it, search it,
export it to CSV, XLSX or JSON Lines — and :class:`SearchBar`, the search box the Tickets and
Knowledge base views carry, and :class:`NotifyStatus`, the status-bar line that names failing
notification targets.

Every store read runs on the window's :class:`~desktop.models.Reader` threads, never on the
GUI loop. Bad input in a box (a selector that picks nothing, a date that is not one) shows its
one-line reason under the boxes; nothing is read or written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core import (
    FORMATS,
    InvalidInput,
    Refused,
    ResultFilter,
    Store,
    export_results,
    make_filter,
)

from .i18n import QT_TR_NOOP, tr

PREVIEW = 200
SEARCH_COLUMNS: dict[str, tuple[str, ...]] = {
    "tickets": ("id", "task_id", "shop", "state", "step_name", "error", "note"),
    "kb": ("id", "ticket_id", "step_name", "error_norm", "action", "note"),
}
Read = Callable[..., Any]  # the window's Reader: ``await reader(fn, *args)``


def _fill(table: QTableWidget, columns: list[str], rows: list[dict[str, Any]]) -> None:
    table.clear()
    table.setColumnCount(len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.setRowCount(len(rows))
    for i, row in enumerate(rows):
        for j, col in enumerate(columns):
            value = row.get(col)
            table.setItem(i, j, QTableWidgetItem("" if value is None else str(value)))
    table.resizeColumnsToContents()


class ResultsView(QWidget):
    """Filter boxes, a search box, a preview of the first records, and Export."""

    def __init__(self, store: Store, reader: Read, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("results-view")
        self.store, self.reader = store, reader
        self.type_box = QLineEdit(self)
        self.shops_box = QLineEdit(self)
        self.since_box = QLineEdit(self)
        self.until_box = QLineEdit(self)
        self.flow_box = QLineEdit(self)
        self.search_box = QLineEdit(self)
        self.format_box = QComboBox(self)
        self.format_box.addItems(list(FORMATS))
        self.sheets_box = QComboBox(self)
        for key in ("", "type", "shop"):
            self.sheets_box.addItem("", key)
        self.preview_btn = QPushButton(self)
        self.export_btn = QPushButton(self)
        self.format_label = QLabel(self)
        self.sheets_label = QLabel(self)
        self.message = QLabel("", self)
        self.message.setObjectName("results-message")
        self.table = QTableWidget(self)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        boxes = QHBoxLayout()
        for w in (self.type_box, self.shops_box, self.since_box, self.until_box, self.flow_box):
            boxes.addWidget(w)
        actions = QHBoxLayout()
        actions.addWidget(self.search_box, 2)
        actions.addWidget(self.preview_btn)
        actions.addWidget(self.format_label)
        actions.addWidget(self.format_box)
        actions.addWidget(self.sheets_label)
        actions.addWidget(self.sheets_box)
        actions.addWidget(self.export_btn)
        layout = QVBoxLayout(self)
        layout.addLayout(boxes)
        layout.addLayout(actions)
        layout.addWidget(self.message)
        self.retranslate()
        layout.addWidget(self.table, 1)
        self.rows: list[dict[str, Any]] = []
        self._spawn: Callable[[Any], Any] | None = None


    def retranslate(self) -> None:
        """Words in the current language (the window calls this when the language changes)."""
        for box, text in ((self.type_box, QT_TR_NOOP("type, e.g. collect_data")),
                          (self.shops_box, QT_TR_NOOP('shops, e.g. "platform:pdd"')),
                          (self.since_box, QT_TR_NOOP("since YYYY-MM-DD")),
                          (self.until_box, QT_TR_NOOP("until YYYY-MM-DD")),
                          (self.flow_box, QT_TR_NOOP("flow")),
                          (self.search_box, QT_TR_NOOP("search the records (中文 too)"))):
            box.setPlaceholderText(tr(text))
        for i, text in enumerate(("", QT_TR_NOOP("one sheet per type"),
                                  QT_TR_NOOP("one sheet per shop"))):
            self.sheets_box.setItemText(i, tr(text) if text else "")
        self.preview_btn.setText(tr("Preview"))
        self.export_btn.setText(tr("Export…"))
        self.format_label.setText(tr("format"))
        self.sheets_label.setText(tr("sheet per"))
    def connect_actions(self, spawn: Callable[[Any], Any]) -> None:
        """Wire the buttons: ``spawn(coro)`` runs a coroutine on the window's loop."""
        self._spawn = spawn
        self.preview_btn.clicked.connect(lambda: spawn(self.refresh()))
        self.search_box.returnPressed.connect(lambda: spawn(self.refresh()))
        self.export_btn.clicked.connect(lambda: spawn(self.export_dialog()))

    def _filter(self, shops: list[Any]) -> ResultFilter:
        text = self.type_box.text().strip()
        return make_filter(shops, types=[t.strip() for t in text.split(",")] if text else (),
                           shop_selector=self.shops_box.text().strip() or None,
                           since=self.since_box.text().strip() or None,
                           until=self.until_box.text().strip() or None,
                           flow=self.flow_box.text().strip() or None)

    async def current_filter(self) -> ResultFilter:
        shops = await self.reader(self.store.shops) if self.shops_box.text().strip() else []
        return self._filter(shops)

    async def refresh(self) -> int:
        """Read the preview (or the search hits); returns how many rows are shown."""
        try:
            text = self.search_box.text().strip()
            if text:
                rows = await self.reader(self.store.search, "results", text, limit=PREVIEW)
                columns = ["task_id", "shop", "platform", "type", "flow", "text"]
            else:
                flt = await self.current_filter()
                rows = await self.reader(
                    lambda: list(self.store.iter_results(flt, limit=PREVIEW)))
                columns = list(dict.fromkeys(c for r in rows for c in r))
        except (InvalidInput, Refused) as exc:
            self.message.setText(str(exc))
            return 0
        self.rows = rows
        _fill(self.table, columns, rows)
        self.message.setText(tr("%1 records shown", len(rows)) if rows else tr("no records"))
        return len(rows)

    async def export_to(self, path: str, fmt: str, sheet_per: str = "") -> int:
        """Export every record the filter passes (not only the preview) to ``path``."""
        try:
            flt = await self.current_filter()
            n: int = await self.reader(export_results, lambda: self.store.iter_results(flt), fmt,
                                       path, split_by=sheet_per or None)
        except InvalidInput as exc:
            self.message.setText(str(exc))
            return 0
        self.message.setText(tr("%1 records written to %2", n, path))
        return n

    async def export_dialog(self) -> int:
        fmt = self.format_box.currentText()
        path, _ = QFileDialog.getSaveFileName(self, tr("Export results"), f"results.{fmt}",
                                              f"{fmt.upper()} (*.{fmt})")
        if not path:
            return 0
        return await self.export_to(path, fmt, str(self.sheets_box.currentData() or ""))


class SearchBar(QWidget):
    """A search box over ``tickets`` or ``kb`` with its hits listed under it (hidden when
    the box is empty)."""

    def __init__(self, place: str, store: Store, reader: Read,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"search-{place}")
        self.place, self.store, self.reader = place, store, reader
        self.box = QLineEdit(self)
        self.retranslate_box()
        self.message = QLabel("", self)
        self.hits = QTableWidget(self)
        self.hits.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.hits.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.box)
        layout.addWidget(self.message)
        layout.addWidget(self.hits)
        self.rows: list[dict[str, Any]] = []


    def retranslate_box(self) -> None:
        self.box.setPlaceholderText(tr("search (中文 too), Enter"))
    def connect_actions(self, spawn: Callable[[Any], Any]) -> None:
        self.box.returnPressed.connect(lambda: spawn(self.search()))

    async def search(self) -> int:
        text = self.box.text().strip()
        if not text:
            self.rows = []
            self.hits.setVisible(False)
            self.message.setText("")
            return 0
        try:
            rows = await self.reader(self.store.search, self.place, text, limit=100)
        except (InvalidInput, Refused) as exc:
            self.message.setText(str(exc))
            self.hits.setVisible(False)
            return 0
        self.rows = rows
        _fill(self.hits, list(SEARCH_COLUMNS[self.place]), rows)
        self.hits.setVisible(bool(rows))
        self.message.setText(tr("%1 found", len(rows)) if rows else tr("nothing found"))
        return len(rows)


class NotifyStatus(QLabel):
    """Names the notification targets that fail (from the outbox's health); hidden when
    every target is fine."""

    def __init__(self, store: Store, reader: Read, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setObjectName("notify-status")
        self.store, self.reader = store, reader
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setVisible(False)

    async def refresh(self) -> list[str]:
        """Read the targets' health; returns the names of the failing ones."""
        health = await self.reader(lambda: self.store.outbox().health())
        failing = [h for h in health if h.failing_since is not None]
        if not failing:
            self.setVisible(False)
            self.setText("")
            return []
        now = time.time()
        parts = [f"{h.target} ({h.last_error}, {int((now - h.failing_since) // 60)} min)"
                 for h in failing if h.failing_since is not None]
        self.setText(tr("Notifications failing: %1", "; ".join(parts)))
        self.setToolTip("\n".join(f"{h.target}: {h.pending} waiting, {h.given_up} given up"
                                  for h in failing))
        self.setVisible(True)
        return [h.target for h in failing]


def with_search(bar: QWidget, panel: QWidget) -> QWidget:
    """A view with a search bar above it (the Tickets tab)."""
    box = QWidget(panel.parentWidget())
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(bar)
    layout.addWidget(panel, 1)
    return box
