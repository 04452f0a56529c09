"""Under zh_CN no visible text of the console is left in English: every widget, action, menu,
header and dialog of the main window is walked, and a text made only of ASCII letters (after
the proper names, IDs, URLs, shortcuts and the operator's own data are taken out) fails."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QTableView,
    QTabWidget,
    QTreeWidget,
    QWidget,
)

from core import SqliteStore, TaskState
from desktop.i18n import install_language
from tests.gui.conftest import Run
from tests.gui.test_console import quick, show, trigger

pytestmark = pytest.mark.gui

PROPER = ["TikTok Shop", "ShopFleet", "Temu", "Chromium", "Chrome", "Edge", "Excel", "JSONL",
          "JSON", "CSV", "XLSX", "TOML", "Redis", "SQLite", "UTF-8", "shopfleet worker",
          "shopfleet shop add", "--platform pdd --url", "Ctrl", "Shift", "Alt", "PgDown",
          "PgUp", "Del", "Return", "Enter", "F1", "F5", "FULL", "NORMAL", "OFF", "msedge",
          "chrome", "xlsx", "csv", "jsonl", "json", "pyqtgraph", "pip install",
          "English"]
"""Proper names, formats and commands that stay as they are in Chinese text."""

URL = re.compile(r"\w+://\S+|[\w.-]+\.(?:test|com|cn|db|toml|json|jsonl|png|html)\b")
IDS = re.compile(r"#\d+|\b\d[\d,.:]*\b")
TAGS = re.compile(r"<[^>]+>|&\w+;")


def english_only(text: str, data: set[str]) -> bool:
    """A text with ASCII letters and no Chinese, once allowed words are removed."""
    if text.lstrip().startswith("{"):
        return False  # a JSON example (the parameters' placeholder)
    t = TAGS.sub(" ", text).replace("&", "")
    if re.search(r"[\u4e00-\u9fff]", t):
        return False
    for d in sorted(data, key=len, reverse=True):
        if d:
            t = t.replace(d, " ")
    t = URL.sub(" ", t)
    for p in PROPER:
        t = t.replace(p, " ")
    t = IDS.sub(" ", t)
    return re.search(r"[A-Za-z]{2,}", t) is not None


def texts(root: QWidget) -> Iterator[tuple[str, str]]:
    """(where, text) of what the operator can read in ``root`` and its children."""
    widgets = [root, *root.findChildren(QWidget)]
    for w in widgets:
        name = f"{type(w).__name__}#{w.objectName()}"
        if w.isWindow() and w.windowTitle():
            yield name + ".title", w.windowTitle()
        if isinstance(w, QLabel | QAbstractButton):
            yield name, w.text()
        elif isinstance(w, QGroupBox):
            yield name, w.title()
        if isinstance(w, QLineEdit | QPlainTextEdit):
            yield name + ".placeholder", w.placeholderText()
        if isinstance(w, QTabWidget):
            for i in range(w.count()):
                yield f"{name}.tab{i}", w.tabText(i)
        if isinstance(w, QTreeWidget):
            h = w.headerItem()
            for c in range(w.columnCount()):
                yield f"{name}.header{c}", h.text(c) if h is not None else ""
            if w.objectName() == "navigation":
                for i in range(w.topLevelItemCount()):
                    g = w.topLevelItem(i)
                    yield f"{name}.group{i}", g.text(0)
                    for j in range(g.childCount()):
                        yield f"{name}.view{i}.{j}", g.child(j).text(0)
        if isinstance(w, QTableView) and w.model() is not None:
            m = w.model()
            for c in range(m.columnCount()):
                yield f"{name}.column{c}", str(m.headerData(c, Qt.Orientation.Horizontal) or "")
        if isinstance(w, QComboBox):
            for i in range(w.count()):
                yield f"{name}.item{i}", w.itemText(i)
        if isinstance(w, QMenu):
            yield name + ".menu", w.title()
        for a in w.actions():
            if a.text():
                yield f"{name}.action:{a.objectName()}", a.text()
            if a.menu() is not None:
                yield f"{name}.menu:{a.objectName()}", a.menu().title()
                for b in a.menu().actions():
                    if b.text():
                        yield f"{name}.menuitem:{b.objectName()}", b.text()


def untranslated(root: QWidget, data: set[str]) -> list[str]:
    # Line by line: a label composed of parts must not hide an English line among Chinese.
    return sorted({f"{where}: {line!r}" for where, text in texts(root)
                   for line in re.split(r"<br\s*/?>|\n", text or "")
                   if line.strip() and english_only(line, data)})


def test_the_english_walk_sees_english(window: Any) -> None:
    # The walk must fail when a text is not translated: in English it finds the menus.
    found = untranslated(window, set())
    assert any("File" in f for f in found) and any("Pending" in f for f in found)
    assert english_only("Cancel: drop the task", set())
    assert not english_only("取消任务 (Ctrl+N)", set())
    assert not english_only("Temu", set()) and not english_only("#12 · pdd-1", {"pdd-1"})


def test_every_visible_text_is_chinese_under_zh_cn(
        window: Any, run: Run, store: SqliteStore) -> None:
    data = {s.name for s in store.shops()} | {s.domain for s in store.shops()} | {
        store.url, str(window.ctx.config_path)}
    tids = [store.submit(quick(s, params={"page": 1, "fake": "needs_human"}))
            for s in ("pdd-1", "temu-1")]
    run.until(lambda: all(store.task(t).state is TaskState.WAITING_HUMAN for t in tids))
    try:
        assert install_language("zh_CN") == "zh_CN"
        run.until(lambda: window.view_title("pending").startswith("待处理"))
        bad: list[str] = []
        for key in window.nav.keys:
            show(window, run, key) if key in window.models else window.show_tab(key)
            bad += untranslated(window, data)
        for name in window.panels:  # every table's right-click menu
            window._context_menu(name, window.mapToGlobal(window.rect().center()))
            bad += untranslated(window.dialog, data)
            window.dialog.close()
        bad += untranslated(window.tray_menu, data)
        show(window, run, "tickets")
        run.until(lambda: window.models["tickets"].rowCount() == 2)
        # Both selected: the ticket dialog also says the answer goes to the other one.
        window.panels["tickets"].select_ids(window.models["tickets"].ids)
        run.until(lambda: hasattr(window, "choices"))
        opened: list[Any] = []
        for key in ("submit", "gate_rate", "settings", "answer", "shortcuts", "about"):
            trigger(window, key)
            run.until(lambda: window.dialog is not None and window.dialog.isVisible()
                      and window.dialog not in opened)
            opened.append(window.dialog)
            bad += untranslated(window.dialog, data | {str(window.ctx.config_path)})
            window.dialog.close()
        assert sorted(set(bad)) == [], "\n".join(sorted(set(bad)))
    finally:
        install_language("en")
