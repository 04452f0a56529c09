"""A table panel: a filter bar over a table view, with selection kept across refreshes."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QModelIndex, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core import FilterChoices, TaskFilter

from . import names
from .i18n import QT_TR_NOOP, tr
from .models import ID_ROLE, ROW_ROLE, FilterProxy, KeyedTableModel, TaskTableModel

EMPTY: dict[str, str] = {
    "pending": QT_TR_NOOP("No task is waiting. Submit tasks with Tasks → Submit… (%1), or "
                          "import a JSON file there."),
    "in_flight": QT_TR_NOOP("Nothing is running. Tasks start here as soon as a browser and "
                            "the site's rate limit allow; pending tasks are under Pending."),
    "suspended": QT_TR_NOOP("No task is suspended. A running task lands here when more "
                            "urgent work preempts it; it resumes by itself."),
    "quarantine": QT_TR_NOOP("Quarantine is empty. Tasks that failed every attempt come here; "
                             "release them once the cause is fixed."),
    "tickets": QT_TR_NOOP("No ticket is open: nothing needs a person. A ticket appears here "
                          "(and in the tray) when a task needs you."),
    "history": QT_TR_NOOP("No task has finished yet. Finished, failed and cancelled tasks are "
                          "listed here."),
    "shops": QT_TR_NOOP("No shops yet. Add one with Shops → Add shop… (%1), or import a list "
                        "(CSV or XLSX) with Shops → Import shops…."),
    "gates": QT_TR_NOOP("No rate limit has been used yet. Each site gets one when its first "
                        "task runs; change it with Shops → Rate limit… (%1)."),
    "breakers": QT_TR_NOOP("No breaker yet: each site gets one when its tasks run."),
    "kb": QT_TR_NOOP("The knowledge base is empty. Every ticket you answer is kept here, and "
                     "shown when the same failure comes back."),
    "rules": QT_TR_NOOP("No rules. Tick \"Make this a rule\" when answering a ticket to "
                        "answer such failures by themselves."),
    "workers": QT_TR_NOOP("Only this console works on this queue. Other computers appear here "
                          "when they run: shopfleet worker"),
}
"""What to do next, shown over an empty table (fresh console)."""

EMPTY_KEYS = {"pending": "submit", "gates": "gate_rate", "shops": "add_shop"}
"""Empty-state texts whose %1 is an action's shortcut."""


class TablePanel(QWidget):
    """Filter bar (shop, platform, type, text) and a sortable table, multi-select.

    Task models filter and sort in the store query; other models through a proxy.
    """

    selection_changed = Signal(list)
    """The selected row ids."""
    activated = Signal(object)
    """A row id was double-clicked or Enter was pressed."""
    context_requested = Signal(object)
    """A context menu was asked for at this global position."""
    focused = Signal()
    """The table got the keyboard focus or was clicked (views of two tables follow it)."""

    def __init__(self, name: str, model: KeyedTableModel, *, filters: bool = True,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"panel-{name}")
        self.name = name
        self.model = model
        self.is_task_model = isinstance(model, TaskTableModel)
        self.proxy: FilterProxy | None = None
        self.view = QTableView(self)
        self.view.setObjectName(f"table-{name}")
        if self.is_task_model:
            self.view.setModel(model)
        else:
            self.proxy = FilterProxy(self)
            self.proxy.setSourceModel(model)
            self.view.setModel(self.proxy)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.horizontalHeader().setSectionsMovable(True)
        for i, col in enumerate(model.columns):
            if col.width is not None:
                self.view.setColumnWidth(i, col.width)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(
            lambda pos: self.context_requested.emit(self.view.viewport().mapToGlobal(pos)))
        self.view.doubleClicked.connect(self._double_clicked)
        self.view.installEventFilter(self)
        self.view.viewport().installEventFilter(self)
        self.empty = QLabel(self)
        self.empty.setObjectName(f"empty-{name}")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setMargin(16)
        self.empty.hide()
        self.shortcut_text = ""
        self.hovered = False
        """The pointer is over this table's rows."""
        self._only: list[tuple[QCheckBox, str, str]] = []
        model.rowsInserted.connect(self._show_empty)
        model.rowsRemoved.connect(self._show_empty)
        model.modelReset.connect(self._show_empty)
        model.layoutChanged.connect(self._show_empty)
        header = self.view.horizontalHeader()
        if self.is_task_model:
            assert isinstance(model, TaskTableModel)
            # Before enabling sorting, which sorts by the indicator's column at once.
            header.setSortIndicator(model.sort_column(), Qt.SortOrder.DescendingOrder
                                    if model.descending else Qt.SortOrder.AscendingOrder)
            header.sortIndicatorChanged.connect(self._sort_changed)
        else:
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.view.setSortingEnabled(True)
        self.view.selectionModel().selectionChanged.connect(self._selection_changed)
        self.view.selectionModel().currentRowChanged.connect(
            lambda *_: self._selection_changed())

        self.shop = QComboBox(self)
        self.platform = QComboBox(self)
        self.type = QComboBox(self)
        for box in (self.shop, self.platform, self.type):
            # Narrow by default (the text filter keeps room at 1024 px); the list opens wide.
            box.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(7)
            box.currentIndexChanged.connect(self._filter_changed)
        self.text = QLineEdit(self)
        self.text.setClearButtonEnabled(True)
        self._text_timer = QTimer(self, singleShot=True, interval=250)
        self._text_timer.timeout.connect(self._filter_changed)
        self.text.textChanged.connect(lambda *_: self._text_timer.start())
        self.count = QLabel(self)
        self.count.setObjectName(f"count-{name}")
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        self._labels = [QLabel(self) for _ in range(3)]
        for label, box in zip(self._labels, (self.shop, self.platform, self.type), strict=True):
            bar.addWidget(label)
            bar.addWidget(box)
        self.text.setMinimumWidth(160)
        bar.addWidget(self.text, 1)
        bar.addWidget(self.count)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self._bar = QWidget(self)
        self._bar.setLayout(bar)
        self._bar.setVisible(filters)
        lay.addWidget(self._bar)
        lay.addWidget(self.empty)
        lay.addWidget(self.view, 1)
        if isinstance(model, TaskTableModel):
            model.total_changed.connect(self._show_total)
        self.set_choices(FilterChoices())
        self.retranslate()

    def add_only(self, text: str, only: Callable[[Any], bool], *, tip: str = "") -> QCheckBox:
        """A switch on the filter bar showing only the rows that meet ``only`` (``text``,
        ``tip``: source words, translated when shown; short: the bar fits 1024 px)."""
        assert self.proxy is not None, "task views filter in the store query"
        box = QCheckBox(self)
        box.setObjectName(f"only-{self.name}")
        box.toggled.connect(lambda on: self.proxy.set_only(only if on else None)
                            if self.proxy is not None else None)
        self._only.append((box, text, tip))
        bar = self._bar.layout()
        assert isinstance(bar, QHBoxLayout)
        bar.insertWidget(bar.count() - 1, box)
        box.setText(tr(text))
        box.setToolTip(tr(tip) if tip else "")
        return box

    # -- text
    def retranslate(self) -> None:
        for box, text, tip in getattr(self, "_only", []):
            box.setText(tr(text))
            box.setToolTip(tr(tip) if tip else "")
        for label, text in zip(self._labels, (tr("Shop"), tr("Platform"), tr("Type")),
                               strict=True):
            label.setText(text)
        for box in (self.shop, self.platform, self.type):
            if box.count():
                box.setItemText(0, tr("all"))
        self.text.setPlaceholderText(tr("Filter: id, type, shop, error…"))
        self.model.retranslate()
        if isinstance(self.model, TaskTableModel):
            self._show_total(self.model.total, self.model.total_exact)
        for box, namer in ((self.platform, names.platform), (self.type, names.task_type)):
            for i in range(1, box.count()):
                box.setItemText(i, namer(str(box.itemData(i))))
        self._show_empty()

    def _show_total(self, n: int, exact: bool) -> None:
        self.count.setText(tr("%1 tasks", f"{n:,}") if exact else tr("over %1 tasks", f"{n:,}"))

    def _show_empty(self, *_: object) -> None:
        """Over an empty table, say what to do next (not while a filter hides rows)."""
        text = EMPTY.get(self.name)
        filtered = self.current_filter() != TaskFilter()
        show = text is not None and self.model.rowCount() == 0 and not filtered
        if show and text is not None:
            self.empty.setText(tr(text, self.shortcut_text))
        self.empty.setVisible(show)

    def focus_filter(self) -> None:
        """Put the cursor in the filter (Ctrl+F)."""
        if self._bar.isVisible():
            self.text.setFocus(Qt.FocusReason.ShortcutFocusReason)
            self.text.selectAll()
        else:
            self.view.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.FocusIn, QEvent.Type.MouseButtonPress):
            self.focused.emit()
        if obj is self.view.viewport():
            # The pointer over the rows: the window holds this table's order (no row moves
            # under a click).
            if event.type() == QEvent.Type.Enter:
                self.hovered = True
            elif event.type() in (QEvent.Type.Leave, QEvent.Type.Hide):
                self.hovered = False
        return super().eventFilter(obj, event)

    def row_at_view(self, i: int) -> Any:
        """The row snapshot shown at row ``i`` of the view (in its sort order)."""
        return self.view.model().index(i, 0).data(ROW_ROLE)

    # -- filters
    def set_choices(self, choices: FilterChoices) -> None:
        for box, values in ((self.shop, choices.shops), (self.platform, choices.platforms),
                            (self.type, choices.types)):
            current = box.currentData()
            box.blockSignals(True)
            box.clear()
            box.addItem(tr("all"), "")
            namer = {id(self.platform): names.platform, id(self.type): names.task_type}.get(
                id(box), str)
            for v in values:
                box.addItem(namer(v), v)
            i = box.findData(current) if current else 0
            box.setCurrentIndex(max(0, i))
            box.blockSignals(False)
        if self._saved_filter:
            self._apply_saved_choices()
            self._saved_filter = None
            self._filter_changed()

    def current_filter(self) -> TaskFilter:
        return TaskFilter(shop=self.shop.currentData() or "",
                          platform=self.platform.currentData() or "",
                          type=self.type.currentData() or "", text=self.text.text())

    def _filter_changed(self, *_: object) -> None:
        flt = self.current_filter()
        if self.proxy is not None:
            self.proxy.set_filter(flt)
        elif isinstance(self.model, TaskTableModel):
            self.model.set_filter(flt)
        self._show_empty()

    def _sort_changed(self, column: int, order: Qt.SortOrder) -> None:
        assert isinstance(self.model, TaskTableModel)
        if not self.model.sortable(column):
            # A column without a store sort (none of the task tables' since #15) keeps the
            # current order.
            header = self.view.horizontalHeader()
            header.blockSignals(True)
            header.setSortIndicator(self.model.sort_column(),
                                    Qt.SortOrder.DescendingOrder if self.model.descending
                                    else Qt.SortOrder.AscendingOrder)
            header.blockSignals(False)

    # -- selection
    def _source_index(self, index: QModelIndex) -> QModelIndex:
        return self.proxy.mapToSource(index) if self.proxy is not None else index

    def selected_ids(self) -> list[Hashable]:
        rows = self.view.selectionModel().selectedRows()
        out = [self._source_index(i).data(ID_ROLE) for i in sorted(rows, key=lambda i: i.row())]
        if not out:
            cur = self.view.currentIndex()
            if cur.isValid() and self.view.selectionModel().isSelected(cur):
                out = [self._source_index(cur).data(ID_ROLE)]
        return [x for x in out if x is not None]

    def selected_rows(self) -> list[Any]:
        rows = self.view.selectionModel().selectedRows()
        return [self._source_index(i).data(ROW_ROLE) for i in sorted(rows, key=lambda i: i.row())]

    def select_ids(self, ids: list[Hashable]) -> None:
        sm = self.view.selectionModel()
        sm.clearSelection()
        for key in ids:
            r = self.model.row_of(key)
            if r < 0:
                continue
            idx = self.model.index(r, 0)
            if self.proxy is not None:
                idx = self.proxy.mapFromSource(idx)
            sm.select(idx, sm.SelectionFlag.Select | sm.SelectionFlag.Rows)
            # Not view.setCurrentIndex: it re-selects by the keyboard's modifiers (clearing
            # the rows selected before, or toggling this one off with Ctrl held).
            sm.setCurrentIndex(idx, sm.SelectionFlag.NoUpdate)

    def _selection_changed(self, *_: object) -> None:
        self.selection_changed.emit(self.selected_ids())

    def _double_clicked(self, index: QModelIndex) -> None:
        key = self._source_index(index).data(ID_ROLE)
        if key is not None:
            self.activated.emit(key)

    # -- layout memory
    def save_state(self, settings: QSettings) -> None:
        """Column widths and order, the sort and the filters (restored at the next start)."""
        header = self.view.horizontalHeader()
        settings.setValue(f"columns/{self.name}", header.saveState())
        settings.setValue(f"sort/{self.name}", [header.sortIndicatorSection(),
                                                header.sortIndicatorOrder().value])
        f = self.current_filter()
        settings.setValue(f"filters/{self.name}", [f.shop, f.platform, f.type, f.text])

    def restore_state(self, settings: QSettings) -> None:
        state = settings.value(f"columns/{self.name}")
        if isinstance(state, QByteArray | bytes):
            self.view.horizontalHeader().restoreState(QByteArray(state))
            if self.is_task_model:
                self.view.horizontalHeader().setSectionResizeMode(
                    QHeaderView.ResizeMode.Interactive)
        sort = settings.value(f"sort/{self.name}")
        if isinstance(sort, list) and len(sort) == 2:
            try:
                col, order = int(sort[0]), Qt.SortOrder(int(sort[1]))
            except (TypeError, ValueError):
                col, order = -1, Qt.SortOrder.AscendingOrder
            if 0 <= col < len(self.model.columns) and (
                    not self.is_task_model or self.model.columns[col].sort is not None):
                self.view.sortByColumn(col, order)
        flt = settings.value(f"filters/{self.name}")
        if isinstance(flt, list) and len(flt) == 4:
            self._saved_filter = [str(x) for x in flt]
            self.text.setText(self._saved_filter[3])
            self._apply_saved_choices()
            self._filter_changed()

    _saved_filter: list[str] | None = None

    def _apply_saved_choices(self) -> None:
        """Select the remembered shop/platform/type once the choices are loaded."""
        if not self._saved_filter:
            return
        for box, value in zip((self.shop, self.platform, self.type), self._saved_filter[:3],
                              strict=True):
            if value and box.findData(value) >= 0:
                box.blockSignals(True)
                box.setCurrentIndex(box.findData(value))
                box.blockSignals(False)
