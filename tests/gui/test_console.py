"""The console offscreen: every operator action through the UI changes the engine and store;
tables update in place; refused actions and bugs show a message and the window survives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from core import (
    Changes,
    Engine,
    EngineHost,
    EventBus,
    Refused,
    SqliteStore,
    TaskState,
    TaskStateChanged,
    open_store,
)
from core.events import TicketOpened
from desktop import operations
from desktop.bridge import EngineBridge
from desktop.models import ListTableModel, TaskTableModel
from tests.gui.conftest import Run
from tests.helpers import spec

pytestmark = pytest.mark.gui


def slow(shop: str, steps: int = 400, **params: Any) -> Any:
    """A task that stays in flight for a while (FakeExecutor: steps of 0.05 s)."""
    return spec(shop=shop, params={"page": 1, "steps": steps, "step_s": 0.05, **params})


def quick(shop: str = "pdd-1", params: dict[str, Any] | None = None, **kw: Any) -> Any:
    return spec(shop=shop, params=params or {"page": 1}, **kw)


def show(window: Any, run: Run, tab: str) -> None:
    window.show_tab(tab)
    m = window.models[tab]
    m.mark_stale()
    run.until(lambda: not m.stale and not getattr(m, "_busy", False))


def settle(run: Run, model: Any) -> None:
    """Wait until a refresh asked for has been read and applied."""
    run.until(lambda: not model.stale and not model._busy)


def select(window: Any, run: Run, tab: str, key: Any) -> None:
    panel = window.panels[tab]
    run.until(lambda: panel.model.row_of(key) >= 0)
    panel.select_ids([key])
    assert panel.selected_ids() == [key]


def trigger(window: Any, name: str) -> None:
    act = window.acts[name]
    window._update_actions()
    assert act.isEnabled(), f"{name} is disabled"
    act.trigger()


def pause_all_but(store: SqliteStore, keep: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    for s in store.shops():
        if s.name not in keep:
            store.set_shop_paused(s.name, True)


# -- models ------------------------------------------------------------------------------


def test_task_model_passes_qtmodeltester_through_changes(
        qtmodeltester: Any, window: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)  # keep everything queued
    ids = store.submit_many([quick(s) for s in ("pdd-1", "pdd-2", "temu-1")] * 3)
    model = window.models["pending"]
    show(window, run, "pending")
    assert len(model.ids) == len(ids)
    qtmodeltester.check(model)
    # Changes while the tester watches: removals, a new top row, re-ordering.
    store.cancel(ids[0])
    store.bump(ids[-1], by=50)
    store.submit(quick("tiktok-1", priority=99))
    settle(run, model)
    run(model.refresh())
    assert model.rowCount() == len(ids)
    assert model.row_at(0).shop == "tiktok-1"
    assert model.row_at(1).id == ids[-1]
    assert ids[0] not in model.ids


def test_list_model_passes_qtmodeltester(qtmodeltester: Any, window: Any, run: Run) -> None:
    show(window, run, "shops")
    model = window.models["shops"]
    assert isinstance(model, ListTableModel)
    assert [model.row_at(i).name for i in range(model.rowCount())] == [
        "pdd-1", "pdd-2", "temu-1", "tiktok-1"]
    qtmodeltester.check(model)
    qtmodeltester.check(window.panels["shops"].proxy)


def test_pending_table_pages_and_keeps_selection_and_scroll(
        window: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    ids = store.submit_many([quick("pdd-1") for _ in range(450)])
    show(window, run, "pending")
    model: TaskTableModel = window.models["pending"]
    assert model.rowCount() == 200  # one page, not the table
    assert model.total == 450
    view = window.panels["pending"].view
    view.scrollToBottom()  # the view asks for the next page
    run.until(lambda: model.rowCount() == 400)
    chosen = model.row_at(250).id
    select(window, run, "pending", chosen)
    scroll = view.verticalScrollBar().value()
    # A more urgent task arrives and another finishes: rows move, the selection follows.
    store.submit(quick("pdd-2", priority=50))
    store.cancel(ids[-1])
    model.mark_stale()
    run.until(lambda: not model.stale and model.row_at(0).shop == "pdd-2")
    assert window.panels["pending"].selected_ids() == [chosen]
    assert view.verticalScrollBar().value() == scroll
    assert model.rowCount() == 400


def test_filters_and_sort_happen_in_the_store_query(
        window: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    store.submit_many([quick("pdd-1"), quick("temu-1"), quick("temu-1", priority=30)])
    show(window, run, "pending")
    panel = window.panels["pending"]
    model = window.models["pending"]
    run.until(lambda: panel.platform.findData("temu") >= 0)
    panel.platform.setCurrentIndex(panel.platform.findData("temu"))
    run.until(lambda: model.rowCount() == 2 and not model._busy)
    assert {model.row_at(i).platform for i in range(2)} == {"temu"}
    assert model.row_at(0).score > model.row_at(1).score
    # Oldest first: sort by the ID column.
    panel.view.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)
    run.until(lambda: model.sort_name == "id" and not model._busy and model.rowCount() == 2)
    assert model.row_at(0).id < model.row_at(1).id
    panel.text.setText("no such thing")
    run.until(lambda: model.rowCount() == 0 and not model._busy)


# -- operator actions --------------------------------------------------------------------


def test_bump_from_the_toolbar_moves_the_task(window: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    ids = store.submit_many([quick("pdd-1") for _ in range(3)])
    show(window, run, "pending")
    select(window, run, "pending", ids[2])
    trigger(window, "bump")
    dlg = window.dialog
    dlg.to.setChecked(True)
    dlg.value.setValue(77)
    dlg.accept()
    run.until(lambda: store.task(ids[2]).score >= 77)
    model = window.models["pending"]
    run.until(lambda: model.row_at(0) is not None and model.row_at(0).id == ids[2])


def test_cancel_with_confirmation_and_multi_select(
        window: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    ids = store.submit_many([quick("pdd-1") for _ in range(3)])
    show(window, run, "pending")
    panel = window.panels["pending"]
    run.until(lambda: window.models["pending"].rowCount() == 3)
    panel.view.selectAll()
    assert sorted(window.selected_task_ids()) == sorted(ids)
    trigger(window, "cancel")
    window.last_confirm.button(QMessageBox.StandardButton.Yes).click()
    run.until(lambda: all(store.task(i).state is TaskState.CANCELLED for i in ids))
    run.until(lambda: window.models["pending"].rowCount() == 0)


def test_pause_and_resume_shop_and_domain(window: Any, run: Run, store: SqliteStore) -> None:
    show(window, run, "shops")
    select(window, run, "shops", "temu-1")
    trigger(window, "pause_shop")
    run.until(lambda: store.shop("temu-1").paused)
    run.until(lambda: window.models["shops"].snapshot("temu-1").paused)
    trigger(window, "resume_shop")
    run.until(lambda: not store.shop("temu-1").paused)
    trigger(window, "pause_domain")
    run.until(lambda: store.paused_domains() == ["temu.shopfleet.test"])
    trigger(window, "resume_domain")
    run.until(lambda: store.paused_domains() == [])


def test_gate_rate_and_breakers(window: Any, run: Run, host: EngineHost) -> None:
    window.show_tab("gates")
    run.until(lambda: window.models["gates"].rowCount() >= 1)
    trigger(window, "gate_rate")
    dlg = window.dialog
    dlg.name.setCurrentIndex(dlg.name.findData("*"))
    dlg.rate.setValue(3.5)
    dlg.burst.setValue(7)
    dlg.accept()

    def global_gate() -> Any:
        st = host.call_soon(lambda e: e.statistics()).result(60)
        return next(g for g in st.gates if g.name == "*")

    run.until(lambda: global_gate().rate_per_s == 3.5 and global_gate().burst == 7)
    run.until(lambda: window.models["breakers"].rowCount() >= 1)
    name = window.models["breakers"].ids[0]
    select(window, run, "breakers", name)
    trigger(window, "breaker_open")

    def state() -> str:
        st = host.call_soon(lambda e: e.statistics()).result(60)
        return next(b.state.value for b in st.breakers if b.name == name)

    run.until(lambda: state() == "open")
    # A site's breaker reads "tripped"; the pool's, tripped by hand, is "pause all".
    run.until(lambda: "tripped" in window.status_alert.text()
              or "ALL PAUSED" in window.status_alert.text())
    trigger(window, "breaker_close")
    run.until(lambda: state() == "closed")


def test_submit_from_the_form_and_from_a_file(
        window: Any, run: Run, store: SqliteStore, tmp_path: Path) -> None:
    pause_all_but(store)
    run.until(lambda: hasattr(window, "choices"))
    trigger(window, "submit")
    dlg = window.dialog
    dlg.type.setCurrentText("collect_data")
    dlg.shop.setCurrentText("pdd-2")
    dlg.params.setPlainText('{"page": 3}')
    dlg.count.setValue(2)
    dlg.accept()
    run.until(lambda: store.counts()["queued"] == 2)
    assert {t.params["page"] for t in store.tasks(state="queued")} == {3}
    f = tmp_path / "tasks.jsonl"
    f.write_text("\n".join(json.dumps({"type": "collect_data", "shop": "temu-1",
                                       "flow": "collect_data", "params": {"page": p}})
                           for p in (7, 8, 9)), encoding="utf-8")
    trigger(window, "submit")
    dlg = window.dialog
    dlg.tabs.setCurrentIndex(1)
    dlg.path.setText(str(f))
    dlg.accept()
    run.until(lambda: store.counts()["queued"] == 5)


def test_submit_refuses_a_bad_task_naming_the_field(
        window: Any, run: Run, store: SqliteStore) -> None:
    run.until(lambda: hasattr(window, "choices"))
    trigger(window, "submit")
    dlg = window.dialog
    dlg.type.setCurrentText("collect_data")
    dlg.deadline.setText("tomorrow")
    dlg.accept()
    assert dlg.isVisible()
    assert "deadline" in dlg.error.text()
    assert store.counts()["queued"] == 0
    dlg.reject()


async def refusing_preempt(engine: Engine, task_id: int) -> Changes:
    raise Refused(f"task {task_id} is inside a non-interruptible step")


def test_refused_action_shows_a_message_and_the_window_goes_on(
        window: Any, run: Run, store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operations, "preempt", refusing_preempt)
    tid = store.submit(slow("pdd-1", until_released=True))  # in flight until cancelled
    show(window, run, "in_flight")
    select(window, run, "in_flight", tid)
    trigger(window, "preempt")
    window.last_confirm.button(QMessageBox.StandardButton.Yes).click()
    run.until(lambda: window.presenter.last_box is not None
              and window.presenter.last_box.isVisible())
    box = window.presenter.last_box
    assert "cannot be done right now" in box.text()          # the translated headline
    assert "non-interruptible" in box.detailedText()         # core's words, one click away
    assert "Traceback" not in box.detailedText()             # a known refusal: no traceback
    box.close()
    # The window still works: cancel the same task.
    trigger(window, "cancel")
    window.last_confirm.button(QMessageBox.StandardButton.Yes).click()
    run.until(lambda: store.task(tid).state is TaskState.CANCELLED)


async def broken_preempt(engine: Engine, task_id: int) -> Changes:
    raise RuntimeError("a bug")


def test_a_bug_shows_its_traceback(window: Any, run: Run, store: SqliteStore,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operations, "preempt", broken_preempt)
    tid = store.submit(slow("pdd-1"))
    show(window, run, "in_flight")
    select(window, run, "in_flight", tid)
    trigger(window, "preempt")
    window.last_confirm.button(QMessageBox.StandardButton.Yes).click()
    run.until(lambda: window.presenter.last_box is not None
              and window.presenter.last_box.isVisible())
    assert "RuntimeError: a bug" in window.presenter.last_box.detailedText()
    window.presenter.last_box.close()


def test_retry_from_history_runs_the_task_again(
        window: Any, run: Run, store: SqliteStore) -> None:
    tid = store.submit(slow("pdd-1", page=2))
    store.cancel(tid)
    show(window, run, "history")
    select(window, run, "history", tid)
    trigger(window, "retry")
    run.until(lambda: len(store.tasks(shop="pdd-1", limit=10)) == 2)
    again = store.tasks(shop="pdd-1", limit=10)[0]
    assert again.id != tid and again.params == store.task(tid).params
    assert again.state is not TaskState.CANCELLED


# -- detail ------------------------------------------------------------------------------


def test_detail_shows_flow_steps_with_write_marks(
        window: Any, run: Run, store: SqliteStore) -> None:
    # Two steps done, then the page changed: the task fails at step 3 of reply_customer.
    # (#15: the domain works for another task, so the failure is the task's own: a ticket.)
    fine = store.submit(spec("collect_data", "pdd-2", params={"page": 1}))
    run.until(lambda: store.task(fine).state is TaskState.DONE)
    tid = store.submit(spec("reply_customer", "pdd-1", params={
        "message_id": 1, "reply": "hi", "steps": 2, "fake": "site_failed"}, max_attempts=1))
    run.until(lambda: store.task(tid).state is TaskState.WAITING_HUMAN)
    show(window, run, "tickets")
    model = window.models["tickets"]
    run.until(lambda: model.rowCount() == 1)
    select(window, run, "tickets", model.row_at(0).id)
    run.until(lambda: window.detail.task_id == tid)
    states = window.detail.step_states()
    assert [s for _, s, _ in states[:3]] == ["done", "done", "current"]
    assert all(s == "todo" for _, s, _ in states[3:])
    assert [name for name, _, w in states if w] == ["send the reply"]
    assert "did not answer properly" in window.detail.header.text()  # the headline
    assert "site_failed" in window.detail.header.toolTip()           # the detail, a hover away
    assert window.detail.events.topLevelItemCount() >= 3  # queued → running → waiting


# -- tickets, notifications ---------------------------------------------------------------


def test_a_new_ticket_notifies(window: Any, run: Run, host: EngineHost) -> None:
    host.bus.publish(TicketOpened(0.0, 3, 5, "pdd-1", "needs_human", "CAPTCHA on the page"))
    run.until(lambda: window.notifications)
    assert "CAPTCHA" in window.notifications[0]


def test_bridge_buffers_events_until_the_window_is_ready(run: Run) -> None:
    bus = EventBus()
    bridge = EngineBridge(bus)
    got: list[Any] = []
    bridge.task_state_changed.connect(got.append)
    bus.publish(TaskStateChanged(0.0, 1, "pdd-1", "done", "finished"))
    QApplication.processEvents()
    assert got == []
    bridge.ready()
    assert [e.task_id for e in got] == [1]
    bridge.close()


# -- settings, language, layout, shutdown ---------------------------------------------------


def test_settings_dialog_names_the_bad_field(window: Any, run: Run) -> None:
    trigger(window, "settings")
    dlg = window.dialog
    dlg.widgets["queue.max_backlog"].setValue(0)
    dlg.accept()
    assert dlg.isVisible()
    assert dlg.error.text().startswith("queue.max_backlog:")
    dlg.widgets["queue.max_backlog"].setValue(5000)
    dlg.accept()
    assert not dlg.isVisible()
    path = window.ctx.config_path
    run.until(lambda: path.exists())
    assert "max_backlog = 5000" in path.read_text(encoding="utf-8")


def test_chinese_ui_and_switching_back(window: Any, run: Run) -> None:
    from desktop.i18n import install_language

    try:
        assert install_language("zh_CN") == "zh_CN"
        run.until(lambda: window.view_title("pending").startswith("待处理"))
        assert window.acts["cancel"].text() == "取消任务"
        assert window.menus["tasks"].title() == "任务(&T)"
    finally:
        install_language("en")
    run.until(lambda: window.view_title("pending").startswith("Pending"))


def test_column_widths_are_remembered(window: Any, run: Run) -> None:
    header = window.panels["pending"].view.horizontalHeader()
    header.resizeSection(2, 233)
    window.save_layout()
    state = QSettings().value("columns/pending")
    assert state is not None
    header.resizeSection(2, 50)
    window.panels["pending"].restore_state(QSettings())
    assert header.sectionSize(2) == 233


def test_closing_puts_running_tasks_back_in_the_queue(
        window: Any, run: Run, store: SqliteStore, host: EngineHost) -> None:
    ids = store.submit_many([slow("pdd-1", until_released=True),
                             slow("temu-1", until_released=True)])
    # In flight with a step done (a claim whose attempt has not begun goes back as it was).
    run.until(lambda: all(store.task(i).checkpoint for i in ids))
    assert store.counts()["running"] == 2
    window.close()  # the close event starts the ordered shutdown
    run.until(lambda: window._closed, timeout_ms=30_000)
    assert not host._thread.is_alive()  # engine stopped, store closed after it
    again = open_store(store.settings, store.path)
    try:
        assert again.counts()["running"] == 0
        assert {again.task(i).state for i in ids} == {TaskState.QUEUED}
        assert all(again.task(i).checkpoint for i in ids)  # they resume where they were
    finally:
        again.close()


def test_real_ticket_answered_in_the_dialog_requeues_its_task_and_feeds_the_kb(
        window: Any, run: Run, store: SqliteStore) -> None:
    tid = store.submit(quick("pdd-1", params={"page": 1, "fake": "needs_human"}))
    run.until(lambda: store.task(tid).state is TaskState.WAITING_HUMAN)
    show(window, run, "tickets")
    model = window.models["tickets"]
    run.until(lambda: model.rowCount() == 1)
    ticket = model.row_at(0)
    assert ticket.task_id == tid and ticket.error_class == "needs_human"
    select(window, run, "tickets", ticket.id)
    trigger(window, "answer")
    run.until(lambda: window.dialog is not None and window.dialog.objectName() == "ticket-dialog"
              and window.dialog.isVisible())
    dlg = window.dialog
    dlg.buttons["resume"].setChecked(True)
    dlg.note.setPlainText("solved the captcha by hand")
    dlg.accept()
    # The task goes back to work (and, the fake site still asking for a person, comes back
    # with a new ticket).
    run.until(lambda: model.rowCount() == 1 and model.row_at(0).id != ticket.id)
    show(window, run, "kb")
    run.until(lambda: window.models["kb"].rowCount() == 1)
    assert window.models["kb"].row_at(0).note == "solved the captcha by hand"
    # The next ticket for the same failure shows that answer.
    show(window, run, "tickets")
    run.until(lambda: model.rowCount() == 1 and model.row_at(0).id != ticket.id)
    select(window, run, "tickets", model.row_at(0).id)
    trigger(window, "answer")
    run.until(lambda: window.dialog is not dlg and window.dialog.isVisible())
    assert window.dialog.answers.topLevelItemCount() == 1
    window.dialog.buttons["cancel"].setChecked(True)
    window.dialog.accept()
    run.until(lambda: store.task(tid).state is TaskState.CANCELLED)
