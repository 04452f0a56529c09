"""The side list of views, grouped (work, sites, overview), beside a stack of the views.

Eleven views do not fit as tabs (not even at 1600 px); a grouped list does at 1024 px, shows
each view's count, and lets Ctrl+1…9 and Ctrl+PgUp/PgDown move between them (Ctrl+Tab is
the table's).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QSizePolicy,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)

from .i18n import tr

KEY_ROLE = Qt.ItemDataRole.UserRole + 10


class Navigation(QTreeWidget):
    """Groups of views; selecting one shows it in :attr:`stack`."""

    current_changed = Signal(str)
    """The key of the view now shown."""

    def __init__(self, groups: tuple[tuple[str, tuple[str, ...]], ...],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("navigation")
        self.setHeaderHidden(True)
        self.setRootIsDecorated(False)
        self.setIndentation(8)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.stack = QStackedWidget(parent)
        self.stack.setObjectName("views")
        self.groups = groups
        self.keys: list[str] = []
        self.items: dict[str, QTreeWidgetItem] = {}
        self._group_items: list[QTreeWidgetItem] = []
        self._pages: dict[str, int] = {}
        for title, keys in groups:
            g = QTreeWidgetItem(self)
            g.setFlags(Qt.ItemFlag.ItemIsEnabled)
            f = g.font(0)
            f.setBold(True)
            g.setFont(0, f)
            g.setData(0, KEY_ROLE, title)
            self._group_items.append(g)
            for key in keys:
                it = QTreeWidgetItem(g)
                it.setData(0, KEY_ROLE, key)
                self.items[key] = it
                self.keys.append(key)
        self.expandAll()
        self.currentItemChanged.connect(self._changed)

    def add_page(self, key: str, widget: QWidget) -> None:
        self._pages[key] = self.stack.addWidget(widget)

    def retranslate(self) -> None:
        for g in self._group_items:
            g.setText(0, tr(str(g.data(0, KEY_ROLE))))

    def set_title(self, key: str, text: str) -> None:
        self.items[key].setText(0, text)

    def title(self, key: str) -> str:
        return self.items[key].text(0)

    def current_key(self) -> str:
        it = self.currentItem()
        key = it.data(0, KEY_ROLE) if it is not None else None
        return str(key) if key in self.items else ""

    def show_key(self, key: str) -> None:
        if key in self.items:
            self.setCurrentItem(self.items[key])

    def step(self, delta: int) -> None:
        cur = self.current_key()
        i = self.keys.index(cur) if cur in self.keys else 0
        self.show_key(self.keys[(i + delta) % len(self.keys)])

    def current_widget(self) -> QWidget | None:
        return self.stack.currentWidget()

    def _changed(self, item: QTreeWidgetItem | None, _: QTreeWidgetItem | None) -> None:
        key = item.data(0, KEY_ROLE) if item is not None else None
        if key not in self._pages:
            return  # a group heading
        self.stack.setCurrentIndex(self._pages[key])
        self.current_changed.emit(key)
