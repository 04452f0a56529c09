"""#15 item 5: live counts from one read (hidden views included), a selection that follows
the task, tables held still under the pointer, confirmations that name the tasks, and
notifications for quarantine, breakers and lost workers."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from core import BreakerChanged, EngineHost, SqliteStore, TaskState, TaskStateChanged
from tests.gui.conftest import Run
from tests.gui.test_console import pause_all_but, quick, select, show

pytestmark = pytest.mark.gui


def quarantine_one(store: SqliteStore) -> int:
    tid = store.submit(quick("temu-1"))
    c = store.claim("test-worker")
    assert c is not None and c.id == tid
    store.record_crash(tid, "test-worker", error_class="browser_crashed", message="boom",
                       quarantine=True, evidence=None)
    return tid


def test_hidden_view_counts_are_live_and_match_the_status_bar(
        console: Any, run: Run, store: SqliteStore) -> None:
    show(console, run, "shops")  # pending and quarantine stay hidden throughout
    pause_all_but(store)
    store.submit_many([quick("pdd-1") for _ in range(5)])
    run.until(lambda: console.view_title("pending").endswith("(5)"))
    assert console.models["pending"].stale  # never read: the count came from the counts read
    store.set_shop_paused("temu-1", False)
    quarantine_one(store)
    run.until(lambda: console.view_title("quarantine").endswith("(1)"))
    assert console.view_title("pending").endswith("(5)")
    assert console.attention()["quarantine"] == 1   # the badge counts it
    assert "quarantine 1" in console.tray_tooltip()
    assert "queued 5" in console.tray_tooltip()


def test_status_bar_and_titles_come_from_one_counts_read(
        window: Any, run: Run, store: SqliteStore) -> None:
    show(window, run, "shops")
    pause_all_but(store)
    store.submit_many([quick("pdd-1") for _ in range(7)])
    run.until(lambda: window.view_title("pending").endswith("(7)")
              and "queued 7 " in window.status_counts.text())


def test_selection_follows_the_task_when_rows_reorder(
        console: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    a, b, c = store.submit_many([quick("pdd-1", priority=s) for s in (30, 20, 10)])
    show(console, run, "pending")
    model = console.models["pending"]
    assert [model.row_at(i).id for i in range(3)] == [a, b, c]
    select(console, run, "pending", b)
    store.bump(c, to=99)            # c jumps to the top: b's row index changes
    model.mark_stale()
    run.until(lambda: model.row_at(0).id == c)
    assert console.selected_task_ids() == [b]
    # A command now acts on b, and names it.
    console.cancel_selected()  # (no engine: the action is disabled; its handler runs)
    assert f"#{b} (pdd-1, " in console.last_confirm.text()
    console.last_confirm.button(QMessageBox.StandardButton.No).click()


def test_a_table_under_the_pointer_does_not_reorder(
        console: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    a, b = store.submit_many([quick("pdd-1", priority=s) for s in (30, 20)])
    show(console, run, "pending")
    model = console.models["pending"]
    viewport = console.panels["pending"].view.viewport()
    QApplication.sendEvent(viewport, QEvent(QEvent.Type.Enter))
    console._refresh_visible()
    assert console.live_button.text() == "held under the pointer"
    store.bump(b, to=99)
    model.mark_stale()
    for _ in range(3):
        console._refresh_visible()
    assert not model._busy and model.stale            # held: not read, not reordered
    assert [model.row_at(i).id for i in range(2)] == [a, b]
    QApplication.sendEvent(viewport, QEvent(QEvent.Type.Leave))
    run.until(lambda: model.row_at(0).id == b)        # the hold ends: the new order shows
    assert console.live_button.text() == "live"
    # A table never read loads even under the pointer (the hold is against reordering).
    shops_view = console.panels["shops"].view.viewport()
    console.show_tab("shops")
    QApplication.sendEvent(shops_view, QEvent(QEvent.Type.Enter))
    run.until(lambda: console.models["shops"].rowCount() > 0)
    QApplication.sendEvent(shops_view, QEvent(QEvent.Type.Leave))
    console.show_tab("pending")
    # The operator's own pause holds it too, with the toggle saying so.
    console.live_button.setChecked(False)
    assert console.live_button.text() == "paused"
    store.bump(a, to=150)
    model.mark_stale()
    console._refresh_visible()
    assert model.stale and model.row_at(0).id == b
    console.live_button.setChecked(True)
    run.until(lambda: model.row_at(0).id == a)


def test_confirmation_and_result_name_the_tasks(
        console: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    ids = store.submit_many([quick("pdd-1"), quick("temu-1"), quick("pdd-1"), quick("pdd-1")])
    show(console, run, "pending")
    console.panels["pending"].select_ids(ids[:2])
    assert console.tasks_label(ids[:2]).count("#") == 2
    console.cancel_selected()  # (no engine: the action is disabled; its handler runs)
    text = console.last_confirm.text()
    assert f"#{ids[0]} (pdd-1, " in text and f"#{ids[1]} (temu-1, " in text
    assert "task(s)" not in text
    console.panels["pending"].select_ids(ids)
    console.cancel_selected()  # (no engine: the action is disabled; its handler runs)
    assert "and 1 more" in console.last_confirm.text()


def test_quarantine_breakers_and_lost_workers_notify(
        window: Any, run: Run, host: EngineHost) -> None:
    bus = host.bus
    bus.publish(TaskStateChanged(0.0, 41, "pdd-3", "quarantined", "browser crashed twice"))
    run.until(lambda: any("Task quarantined" in n and "#41" in n
                          for n in window.notifications))
    bus.publish(BreakerChanged(0.0, "pdd.shopfleet.test", "open", "5 failures", None))
    run.until(lambda: any("Breaker tripped" in n for n in window.notifications))

    class Lost:
        owner, state, host = "far-host:1", "lost", "far-host"

    window._notify_lost([Lost()])
    assert any("Worker lost" in n and "far-host:1" in n for n in window.notifications)
    before = len(window.notifications)
    window._notify_lost([Lost()])                     # told once, not at every read
    assert len(window.notifications) == before
    assert window.attention()["lost"] == 0            # (the workers table is the store's)
    assert TaskState.QUARANTINED.value == "quarantined"
