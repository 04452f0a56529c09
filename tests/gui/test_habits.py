"""Desktop habits (#16): the menu bar holds every action with its shortcut; Ctrl+F and
Ctrl+1…9; copy and export (CSV, XLSX read back with openpyxl); bulk answer of tickets; pause
all; remembered view; dialogs that fit 1024×600; no colour literal outside the palette."""

from __future__ import annotations

import csv
import re
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QMenu

from core import EngineHost, SqliteStore, TaskState
from desktop import action_table as A
from desktop import columns as C
from tests.gui.conftest import Run
from tests.gui.test_console import pause_all_but, quick, select, show, trigger

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]


def menu_actions(menu: QMenu) -> list[QAction]:
    out = []
    for a in menu.actions():
        out.append(a)
        if a.menu() is not None:
            out.extend(menu_actions(a.menu()))
    return out


def test_every_action_is_in_the_menu_bar_with_its_shortcut(window: Any) -> None:
    bar = window.menuBar()
    titles = [a.text() for a in bar.actions()]
    assert [t.replace("&", "") for t in titles] == [
        "File", "Edit", "View", "Tasks", "Tickets", "Shops", "Help"]
    in_menus = {a for m in bar.actions() for a in menu_actions(m.menu())}
    seen: dict[str, str] = {}
    for spec in A.all_actions():
        act = window.acts[spec.id]
        assert act in in_menus, f"{spec.id} is not in the menu bar"
        assert act.shortcut() == spec.shortcut()
        seq = act.shortcut().toString()
        if seq:
            assert seq not in seen, f"{spec.id} and {seen[seq]} share {seq}"
            seen[seq] = spec.id
    # The operator's daily actions all have a key; Preferences has one on every platform.
    for key in ("submit", "bump", "preempt", "cancel", "retry", "release", "answer",
                "pause_all", "pause_shop", "resume_shop", "pause_domain", "resume_domain",
                "gate_rate", "breaker_open", "breaker_close", "settings", "refresh", "copy",
                "export", "find", "quit"):
        assert not window.acts[key].shortcut().isEmpty(), key
    assert window.acts["settings"].shortcut() in (
        QKeySequence(QKeySequence.StandardKey.Preferences), QKeySequence("Ctrl+,"))
    # Every table has a right-click menu (the knowledge base, rules and workers too).
    for name in window.panels:
        window._context_menu(name, window.mapToGlobal(window.rect().center()))
        menu = window.dialog
        assert isinstance(menu, QMenu) and window.acts["copy"] in menu.actions(), name
        assert window.acts["export"] in menu.actions(), name
        menu.close()


def test_ctrl_number_keys_switch_views_and_ctrl_f_goes_to_the_filter(
        window: Any, qtbot: Any, run: Run) -> None:
    window.activateWindow()
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is window.windowHandle())
    window.panels["pending"].view.setFocus()  # a table has the focus (it ate Ctrl+Tab)
    for i, key in enumerate(A.VIEW_ORDER[:9], start=1):
        qtbot.keyClick(QGuiApplication.focusObject(), getattr(Qt.Key, f"Key_{i}"),
                       Qt.KeyboardModifier.ControlModifier)
        assert window.current_key() == key, f"Ctrl+{i}"
    qtbot.keyClick(QGuiApplication.focusObject(), Qt.Key.Key_1,
                   Qt.KeyboardModifier.ControlModifier)
    assert window.current_key() == "pending"
    window.panels["pending"].view.setFocus()
    qtbot.keyClick(window.panels["pending"].view, Qt.Key.Key_F,
                   Qt.KeyboardModifier.ControlModifier)
    assert window.panels["pending"].text.hasFocus()
    # Ctrl+PgDown: the next view; the detail pane is only beside task tables.
    qtbot.keyClick(QGuiApplication.focusObject(), Qt.Key.Key_PageDown,
                   Qt.KeyboardModifier.ControlModifier)
    assert window.current_key() == A.VIEW_ORDER[1]
    qtbot.keyClick(QGuiApplication.focusObject(), Qt.Key.Key_Shift)  # Ctrl is up again
    window.show_tab("dashboard")
    assert not window.detail.isVisible()
    window.show_tab("pending")
    assert window.detail.isVisible()


def _read_xlsx(path: Path) -> list[list[str]]:
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    rows = [["" if v is None else str(v) for v in r] for r in book.active.iter_rows(
        values_only=True)]
    book.close()
    return rows


def test_export_writes_csv_and_xlsx_with_every_row_and_copy_puts_tsv_on_the_clipboard(
        window: Any, run: Run, store: SqliteStore, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # One "now" for both exports: cells such as "Waited 0s" / "1s" are relative to it, and
    # on a loaded machine the second export ran a second later (a flake, not a difference).
    now = time.time()
    monkeypatch.setattr(C, "_now", lambda: now)
    pause_all_but(store)
    ids = store.submit_many([quick("pdd-1") for _ in range(230)]
                            + [quick("temu-1", params={"page": 2})])
    show(window, run, "pending")
    panel = window.panels["pending"]
    model = window.models["pending"]
    assert model.rowCount() == 200  # one page loaded…
    run(window.export_to(tmp_path / "pending.csv", selected_only=False))
    run(window.export_to(tmp_path / "pending.xlsx", selected_only=False))
    with open(tmp_path / "pending.csv", encoding="utf-8") as f:
        assert f.read(1) == "\ufeff"  # a BOM: Excel opens the Chinese text as UTF-8
    with open(tmp_path / "pending.csv", encoding="utf-8-sig", newline="") as f:
        from_csv = list(csv.reader(f))
    from_xlsx = _read_xlsx(tmp_path / "pending.xlsx")
    assert from_csv == from_xlsx
    header = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    assert from_csv[0] == header
    assert len(from_csv) == 1 + len(ids)  # …every row of the table is exported
    assert sorted(int(r[0].lstrip("#")) for r in from_csv[1:]) == sorted(ids)
    # The rows read as shown: the first rows equal the table's cells, display names included.
    shown = [[model.index(r, c).data() for c in range(model.columnCount())] for r in range(3)]
    assert [r[:2] + r[2:5] for r in from_csv[1:4]] == [r[:2] + r[2:5] for r in shown]
    assert "Collect data" in from_csv[1]
    # The selection only, and Ctrl+C as tab-separated text.
    first = model.row_at(0).id
    select(window, run, "pending", first)
    run(window.export_to(tmp_path / "one.xlsx", selected_only=True))
    one = _read_xlsx(tmp_path / "one.xlsx")
    assert len(one) == 2 and one[1][0] == f"#{first}"
    panel.view.setFocus()
    trigger(window, "copy")
    text = QGuiApplication.clipboard().text()
    assert text.splitlines()[0].split("\t") == header
    assert text.splitlines()[1].split("\t")[0] == f"#{first}"


def test_bulk_answer_sends_the_same_answer_to_every_selected_ticket(
        window: Any, run: Run, store: SqliteStore) -> None:
    tids = [store.submit(quick(s, params={"page": 1, "fake": "needs_human"}))
            for s in ("pdd-1", "pdd-2", "temu-1")]
    run.until(lambda: all(store.task(t).state is TaskState.WAITING_HUMAN for t in tids))
    show(window, run, "tickets")
    model = window.models["tickets"]
    run.until(lambda: model.rowCount() == 3)
    chosen = [model.row_at(i) for i in range(2)]
    panel = window.panels["tickets"]
    panel.select_ids([t.id for t in chosen])
    assert len(panel.selected_rows()) == 2
    trigger(window, "answer")
    run.until(lambda: window.dialog is not None and window.dialog.objectName() == "ticket-dialog"
              and window.dialog.isVisible())
    dlg = window.dialog
    assert dlg.others == 1 and "2" in dlg.send_btn.text()
    dlg.buttons["cancel"].setChecked(True)
    dlg.note.setPlainText("duplicate orders")
    dlg.accept()
    answered = {t.task_id for t in chosen}
    run.until(lambda: all(store.task(t).state is TaskState.CANCELLED for t in answered))
    other = next(t for t in tids if t not in answered)
    assert store.task(other).state is TaskState.WAITING_HUMAN  # not selected: untouched
    book = store.ticket_book()
    notes = [a.note for a in book.knowledge_base(limit=10)]
    assert notes.count("duplicate orders") == 2


def test_pause_all_switch_stops_and_restarts_the_queue(
        window: Any, run: Run, store: SqliteStore, host: EngineHost) -> None:
    trigger(window, "pause_all")
    run.until(lambda: "PAUSED" in window.status_alert.text())
    assert window.acts["pause_all"].isChecked()
    assert window.acts["pause_all"].text() == "Resume all"
    tid = store.submit(quick("pdd-1"))
    host.call_soon(lambda e: e._poke()).result(60)
    assert store.task(tid).state is TaskState.QUEUED
    assert window.acts["pause_all"] in window.tray_menu.actions()
    trigger(window, "pause_all")
    run.until(lambda: not window.acts["pause_all"].isChecked())
    run.until(lambda: store.task(tid).state is TaskState.DONE)


def test_the_view_sort_and_filters_are_remembered(window: Any, run: Run) -> None:
    window.show_tab("history")
    panel = window.panels["history"]
    panel.text.setText("temu")
    window.save_layout()
    s = QSettings()
    assert s.value("window/view") == "history"
    assert list(s.value("filters/history"))[3] == "temu"
    from desktop.window import ConsoleContext, MainWindow

    again = MainWindow(ConsoleContext(settings=window.ctx.settings, store=window.store,
                                      host=None))
    try:
        assert again.current_key() == "history"
        assert again.panels["history"].text.text() == "temu"
    finally:
        # As its close would: no timer fires into it later, and no read starts after this.
        again._closing = True
        for timer in again.findChildren(QTimer):
            timer.stop()
        again.reader.close()
        again.deleteLater()


def test_empty_tables_say_what_to_do_next(window: Any, run: Run) -> None:
    show(window, run, "pending")
    empty = window.panels["pending"].empty
    assert empty.isVisible() and "Submit" in empty.text() and "Ctrl+N" in empty.text()
    show(window, run, "tickets")
    assert "No ticket is open" in window.panels["tickets"].empty.text()


def test_every_dialog_fits_1024_by_600(window: Any, run: Run, store: SqliteStore) -> None:
    tid = store.submit(quick("pdd-1", params={"page": 1, "fake": "needs_human"}))
    run.until(lambda: store.task(tid).state is TaskState.WAITING_HUMAN)
    show(window, run, "tickets")
    run.until(lambda: window.models["tickets"].rowCount() == 1)
    select(window, run, "tickets", window.models["tickets"].row_at(0).id)
    opened = []
    for key in ("submit", "gate_rate", "settings", "answer", "add_shop"):
        trigger(window, key)
        run.until(lambda: window.dialog is not None and window.dialog.isVisible()
                  and window.dialog not in opened)
        dlg = window.dialog
        opened.append(dlg)
        hint = dlg.minimumSizeHint()
        assert hint.width() <= 1024 and hint.height() <= 600, (key, hint)
        dlg.resize(1024 - 40, 600 - 60)
        assert dlg.width() <= 1024 and dlg.height() <= 600, key
        dlg.close()


COLOUR = re.compile(r"""#[0-9a-fA-F]{3,8}\b|\brgba?\(|QColor\(\s*["'\d]"""
                    r"""|Qt\.GlobalColor\.(?!transparent)""")


def test_no_colour_literal_outside_the_palette_module() -> None:
    bad = []
    for f in sorted((ROOT / "desktop").glob("*.py")):
        if f.name == "palette.py":
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            if COLOUR.search(line):
                bad.append(f"{f.name}:{n}: {line.strip()}")
    assert bad == []


def test_the_colour_grep_sees_a_literal() -> None:
    assert COLOUR.search('label.setStyleSheet("color: #a00")')
    assert COLOUR.search("QColor('#b00020')")
    assert COLOUR.search("brush=Qt.GlobalColor.red")
    assert not COLOUR.search('f"<b>#{r.id}</b>"')


def test_tray_badge_counts_open_tickets_and_a_sound_is_optional(
        window: Any, run: Run, store: SqliteStore) -> None:
    from desktop.window import app_icon, badge_icon

    plain = app_icon().pixmap(64, 64).toImage()
    assert badge_icon(app_icon(), 0).pixmap(64, 64).toImage() == plain
    assert badge_icon(app_icon(), 3).pixmap(64, 64).toImage() != plain
    assert badge_icon(app_icon(), 3).pixmap(64, 64).toImage() != badge_icon(
        app_icon(), 12).pixmap(64, 64).toImage()
    # No sound unless chosen in Settings.
    store.submit(quick("pdd-1", params={"page": 1, "fake": "needs_human"}))
    run.until(lambda: any("New ticket" in n for n in window.notifications))
    assert window.beeps == 0
    QSettings().setValue("notify/sound", True)
    store.submit(quick("pdd-2", params={"page": 1, "fake": "needs_human"}))
    run.until(lambda: window.beeps == 1)
    # The notification says what happened in words, not in codes.
    assert any("needs a person" in n and "CAPTCHA" in n for n in window.notifications)
