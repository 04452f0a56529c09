"""Table models: row ids plus a cache of row snapshots, never the data itself.

:class:`KeyedTableModel` keeps ``ids`` (the order) and ``rows`` (id → frozen snapshot) and
applies a new read as removals, insertions, a re-order and a ``dataChanged`` — so views keep
their selection (persistent indexes follow the ids) and their scroll position. Columns are
declared once, with how each is shown and how it sorts.

:class:`TaskTableModel` pages a task view from the store with keyset cursors: it holds the
first page and more only as the operator scrolls (``fetchMore``); sorting and filtering happen
in the store query. Small tables (in flight, shops, gates, breakers, tickets, knowledge base)
use :class:`ListTableModel` under a :class:`FilterProxy`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QBrush, QColor

from core import SORTS, TaskFilter, TaskRow, count_tasks, task_page

from . import names, palette
from .i18n import tr

T = TypeVar("T")
ID_ROLE = Qt.ItemDataRole.UserRole + 1
"""The row's id (task id, shop name, gate name…)."""
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
"""The raw value a proxy sorts by."""
ROW_ROLE = Qt.ItemDataRole.UserRole + 3
"""The row snapshot itself."""

PAGE = 200
MAX_WINDOW = 5000
"""Most rows a refresh re-reads (the operator scrolled this far); the rest load again on
scrolling."""

Index = QModelIndex | QPersistentModelIndex


class ReaderClosed(RuntimeError):
    """A read asked for after the window closed its reader (a late timer or task): nothing to
    show any more, so nothing to report."""


class Reader:
    """Runs blocking store reads on two worker threads, awaited on the window's loop."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="console-read")
        self.closed = False

    async def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.closed:
            raise ReaderClosed("the console's reader is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, partial(fn, *args, **kwargs))
        except RuntimeError as exc:
            if self.closed:  # shut down between the check and the submit
                raise ReaderClosed("the console's reader is closed") from exc
            raise

    def close(self) -> None:
        self.closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)


# -- formatting ------------------------------------------------------------------------------


def fmt_duration(seconds: float | None) -> str:
    """A duration in the console's language (``44m 49s`` / ``44分49秒``)."""
    return names.duration(seconds)


def fmt_time(ts: float | None) -> str:
    if not ts:
        return ""
    lt = time.localtime(ts)
    if time.localtime().tm_yday == lt.tm_yday:
        return time.strftime("%H:%M:%S", lt)
    return time.strftime("%m-%d %H:%M", lt)


def fmt_in(ts: float | None) -> str:
    """A deadline relative to now: "in 12m" or "5m late"."""
    if ts is None:
        return ""
    d = ts - time.time()
    return tr("in %1", fmt_duration(d)) if d >= 0 else tr("%1 late", fmt_duration(-d))


# -- columns ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column: its untranslated title, how a row shows in it, how it sorts.

    Args:
        title: source text (translated when shown; mark it with ``QT_TR_NOOP``).
        show: the text for a row.
        raw: the value to sort by (default: the shown text).
        sort: for task tables, the store sort this column selects (None: not sortable).
        live: the text changes with time (redrawn every second without a read).
        right: right-aligned (numbers).
    """

    key: str
    title: str
    show: Callable[[Any], str]
    raw: Callable[[Any], Any] | None = None
    sort: str | None = None
    live: bool = False
    right: bool = False
    tip: Callable[[Any], str] | None = None
    icon: Callable[[Any], Any] | None = None
    """A flag beside the text (a ``QIcon`` or None), e.g. a shop without a password."""
    width: int | None = None
    """Its first width in pixels (None: the header's default); a width the operator set is
    remembered over it."""


# -- the keyed model ----------------------------------------------------------------------


class KeyedTableModel(QAbstractTableModel):
    """Rows identified by keys; :meth:`apply` turns a fresh read into minimal changes."""

    def __init__(self, columns: Sequence[Column], key: Callable[[Any], Hashable],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.columns = list(columns)
        self._key = key
        self._ids: list[Hashable] = []
        self._rows: dict[Hashable, Any] = {}
        self.highlight: Callable[[Any], QColor | None] | None = None

    # -- Qt API
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._ids)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.columns):
            if role == Qt.ItemDataRole.DisplayRole:
                return tr(self.columns[section].title)
        elif orientation == Qt.Orientation.Vertical and role == Qt.ItemDataRole.DisplayRole:
            return section + 1
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._ids) or index.column() >= len(
                self.columns):
            return None
        key = self._ids[index.row()]
        row = self._rows.get(key)
        if row is None:
            return None
        col = self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return col.show(row)
        if role == SORT_ROLE:
            return col.raw(row) if col.raw is not None else col.show(row)
        if role == ID_ROLE:
            return key
        if role == ROW_ROLE:
            return row
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int((Qt.AlignmentFlag.AlignRight if col.right else Qt.AlignmentFlag.AlignLeft)
                       | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and col.tip is not None:
            return col.tip(row)
        if role == Qt.ItemDataRole.DecorationRole and col.icon is not None:
            return col.icon(row)
        if role == Qt.ItemDataRole.ForegroundRole and self.highlight is not None:
            color = self.highlight(row)
            return QBrush(color) if color is not None else None
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    # -- ours
    @property
    def ids(self) -> list[Hashable]:
        return list(self._ids)

    def row_at(self, row: int) -> Any:
        return self._rows.get(self._ids[row]) if 0 <= row < len(self._ids) else None

    def row_of(self, key: Hashable) -> int:
        try:
            return self._ids.index(key)
        except ValueError:
            return -1

    def snapshot(self, key: Hashable) -> Any:
        return self._rows.get(key)

    def retranslate(self) -> None:
        if self.columns:
            self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(self.columns) - 1)

    def tick(self) -> None:
        """Redraw the columns that change with time (waited, elapsed)."""
        if not self._ids:
            return
        for c, col in enumerate(self.columns):
            if col.live:
                self.dataChanged.emit(self.index(0, c), self.index(len(self._ids) - 1, c),
                                      [Qt.ItemDataRole.DisplayRole])

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.apply([self._key(r) for r in rows], {self._key(r): r for r in rows})

    def apply(self, ids: Sequence[Hashable], rows: dict[Hashable, Any]) -> None:
        """Make the model show ``ids`` in this order with these snapshots, in small steps."""
        ids = list(dict.fromkeys(ids))  # no duplicates, order kept
        self._rows.update(rows)  # superset while rows move: data() always finds a row
        wanted = set(ids)
        old = self._ids
        i = len(old) - 1
        while i >= 0:
            if old[i] in wanted:
                i -= 1
                continue
            j = i
            while j > 0 and old[j - 1] not in wanted:
                j -= 1
            self.beginRemoveRows(QModelIndex(), j, i)
            del old[j:i + 1]
            self.endRemoveRows()
            i = j - 1
        have = set(old)
        added = [k for k in ids if k not in have]
        if added:
            self.beginInsertRows(QModelIndex(), len(old), len(old) + len(added) - 1)
            old.extend(added)
            self.endInsertRows()
        if old != ids:
            self.layoutAboutToBeChanged.emit()
            pos = {k: n for n, k in enumerate(ids)}
            persistent = self.persistentIndexList()
            moved = [self.index(pos[old[p.row()]], p.column())
                     if 0 <= p.row() < len(old) else QModelIndex() for p in persistent]
            self._ids = ids
            self.changePersistentIndexList(persistent, moved)
            self.layoutChanged.emit()
        for gone in set(self._rows) - wanted:
            del self._rows[gone]
        if self._ids:
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(len(self._ids) - 1, len(self.columns) - 1))

    def append(self, ids: Sequence[Hashable], rows: dict[Hashable, Any]) -> None:
        """Add rows at the end (the next page), skipping ones already shown."""
        have = set(self._ids)
        new = [k for k in dict.fromkeys(ids) if k not in have]
        if not new:
            return
        self._rows.update({k: rows[k] for k in new})
        self.beginInsertRows(QModelIndex(), len(self._ids), len(self._ids) + len(new) - 1)
        self._ids.extend(new)
        self.endInsertRows()


class ListTableModel(KeyedTableModel):
    """A small table read whole by ``load`` (in flight, shops, gates, tickets…)."""

    loaded = Signal()

    def __init__(self, columns: Sequence[Column], key: Callable[[Any], Hashable],
                 load: Callable[[], Awaitable[Sequence[Any]]],
                 parent: QObject | None = None) -> None:
        super().__init__(columns, key, parent)
        self._load = load
        self.stale = True
        self.active = False
        self._busy = False

    def mark_stale(self, *_: object) -> None:
        self.stale = True

    async def refresh(self) -> None:
        if self._busy:
            return
        self._busy = True
        self.stale = False
        try:
            rows = await self._load()
            self.set_rows(rows)
        finally:
            self._busy = False
        self.loaded.emit()


class TaskTableModel(KeyedTableModel):
    """A task view paged from the store: first page on refresh, more as the view scrolls.

    Args:
        view: a view of :data:`core.queries.VIEWS` (pending, history…).
        columns: the columns; a column's ``sort`` names the store sort it selects.
        reader: runs the blocking store reads off the loop.
        store: the store.
    """

    total_changed = Signal(int, bool)
    """(count, exact) after each refresh."""
    loaded = Signal()

    def __init__(self, view: str, columns: Sequence[Column], reader: Reader, store: Any,
                 parent: QObject | None = None) -> None:
        super().__init__(columns, key=lambda r: r.id, parent=parent)
        self.view = view
        self.reader = reader
        self.store = store
        self.flt = TaskFilter()
        self.sort_name: str = SORTS[view][0]
        self.descending: bool | None = None
        self._cursor: tuple[int | float | str | None, ...] | None = None  # keyset values
        self._more = False
        self._busy = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.stale = True
        self.active = False
        self.total = 0
        self.total_exact = True
        self.last_read_s = 0.0

    # -- sorting and filtering (in the store query)
    def sort_column(self) -> int:
        for i, c in enumerate(self.columns):
            if c.sort == self.sort_name:
                return i
        return -1

    def sortable(self, column: int) -> bool:
        return 0 <= column < len(self.columns) and self.columns[column].sort is not None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not self.sortable(column):
            return
        name = self.columns[column].sort
        assert name is not None
        # The header's ascending arrow means the sort's natural order (best / oldest first).
        desc = order == Qt.SortOrder.DescendingOrder
        if name == self.sort_name and desc == bool(self.descending):
            return
        self.sort_name, self.descending = name, desc
        self._restart()

    def set_filter(self, flt: TaskFilter) -> None:
        if flt == self.flt:
            return
        self.flt = flt
        self._restart()

    def _restart(self) -> None:
        self.beginResetModel()
        self._ids, self._rows = [], {}
        self._cursor, self._more = None, False
        self.endResetModel()
        self.stale = True
        self._spawn(self.refresh())

    def mark_stale(self, *_: object) -> None:
        self.stale = True

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self.reader.closed:
            # The window is closing (or closed): a signal from a widget being torn down
            # asks for a read that nobody will see. Not started, and not left un-awaited.
            coro.close()
            return
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def refresh(self) -> None:
        """Re-read the rows the operator can reach now (the first page, or as many as were
        scrolled to, up to :data:`MAX_WINDOW`) and apply them in place."""
        if self._busy or self.reader.closed:
            return
        self._busy = True
        self.stale = False
        try:
            window = min(MAX_WINDOW, max(PAGE, len(self._ids)))
            t0 = time.perf_counter()
            page = await self.reader(task_page, self.store, self.view, flt=self.flt,
                                     sort=self.sort_name, descending=self.descending,
                                     limit=window)
            total, exact = await self.reader(count_tasks, self.store, self.view, flt=self.flt)
            self.last_read_s = time.perf_counter() - t0
            self.apply([r.id for r in page.rows], {r.id: r for r in page.rows})
            self._cursor, self._more = page.cursor, page.cursor is not None
            if (total, exact) != (self.total, self.total_exact):
                self.total, self.total_exact = total, exact
            self.total_changed.emit(total, exact)
        finally:
            self._busy = False
        self.loaded.emit()

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and self._more and not self._busy

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if self.canFetchMore(parent):
            self._busy = True
            self._spawn(self._fetch_more())

    async def _fetch_more(self) -> None:
        try:
            page = await self.reader(task_page, self.store, self.view, flt=self.flt,
                                     sort=self.sort_name, descending=self.descending,
                                     after=self._cursor, limit=PAGE)
            self.append([r.id for r in page.rows], {r.id: r for r in page.rows})
            self._cursor, self._more = page.cursor, page.cursor is not None
        finally:
            self._busy = False
        self.loaded.emit()

    async def wait_idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


class FilterProxy(QSortFilterProxyModel):
    """Sorting and filtering for the small tables: shop, platform, type and text."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.setSortCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.flt = TaskFilter()
        self.only: Callable[[Any], bool] | None = None
        """An extra condition a row must meet (a view's "only …" switch), or None."""

    def set_only(self, only: Callable[[Any], bool] | None) -> None:
        if hasattr(self, "beginFilterChange"):
            self.beginFilterChange()
            self.only = only
            self.endFilterChange()
        else:
            self.only = only
            self.invalidateFilter()

    def set_filter(self, flt: TaskFilter) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt 6.9+: invalidateFilter is deprecated
            self.beginFilterChange()
            self.flt = flt
            self.endFilterChange()
        else:
            self.flt = flt
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        if not isinstance(model, KeyedTableModel):
            return True
        row = model.row_at(source_row)
        if row is None:
            return False
        if self.only is not None and not self.only(row):
            return False
        f = self.flt
        for name in ("shop", "platform", "type"):
            want = getattr(f, name)
            if want and getattr(row, name, want) != want:
                return False
        text = f.text.strip().lower()
        if text:
            cells = " ".join(str(c.show(row)) for c in model.columns).lower()
            return text in cells
        return True


def worker_state_color(row: Any) -> QColor | None:
    """A lost worker (stopped heartbeating) in red, a stopped one greyed."""
    state = getattr(row, "state", "")
    if state == "lost":
        return palette.signal("error")
    if state == "stopped":
        return palette.signal("muted")
    return None


def hard_aged_color(row: TaskRow) -> QColor | None:
    if getattr(row, "hard_aged", False):
        return palette.signal("warning")
    return None
