"""#15 in the console: write safety in the ticket dialog (what is known, skip by default, a
second confirmation naming the task and the step before a resend), rules shown in words
before they are saved, rules edited / disabled / deleted, and taking over a shop's browser
off the GUI thread (a fake takeover here; the real headed one is
tests/integration/test_takeover_chromium.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from PySide6.QtWidgets import QMessageBox

from core import RuleAction, SqliteStore, TakeoverResult, TaskState, task_detail
from core.tickets import Signature, normalise_error
from tests.gui.conftest import Run
from tests.gui.test_console import quick, select, show, trigger

pytestmark = pytest.mark.gui


def open_dialog(window: Any, run: Run, ticket_id: int) -> Any:
    show(window, run, "tickets")
    select(window, run, "tickets", ticket_id)
    before = window.dialog
    trigger(window, "answer")
    run.until(lambda: window.dialog is not before and window.dialog is not None
              and window.dialog.objectName() == "ticket-dialog" and window.dialog.isVisible())
    return window.dialog


def ticket_of(store: SqliteStore, run: Run, task_id: int) -> int:
    run.until(lambda: store.task(task_id).state is TaskState.WAITING_HUMAN)
    (t,) = [t for t in store.ticket_book().tickets() if t.task_id == task_id]
    return t.id


def write_unknown(window: Any, run: Run, store: SqliteStore) -> tuple[int, int]:
    """A task whose write step was cut off (the fake executor's ``write_unknown``)."""
    tid = store.submit(quick("pdd-1", params={"page": 1, "fake": "write_unknown"}))
    return tid, ticket_of(store, run, tid)


# -- write safety ---------------------------------------------------------------------------


def test_a_write_of_unknown_outcome_shows_what_is_known_and_defaults_to_skip(
        window: Any, run: Run, store: SqliteStore) -> None:
    tid, k = write_unknown(window, run, store)
    assert store.ticket_book().ticket(k).kind == "write_unknown"
    # An earlier answer to the same failure was "resume": it is NOT offered first here.
    book = store.ticket_book()
    book.answer(k, "resume", note="sent it again last time")  # (core: no confirm needed here)
    k = ticket_of(store, run, tid)                            # it failed the same way again
    dlg = open_dialog(window, run, k)
    assert dlg.answers.topLevelItemCount() == 1
    assert dlg.action() == "skip" and dlg.buttons["skip"].isChecked()
    known = dlg.known
    assert known is not None and known.isVisibleTo(dlg)
    text = known.text()
    label = task_detail(store, tid).steps[1].label
    assert f"The write: step 2 “{label}”" in text             # the flow's step, 1-based
    assert "no check (verify)" in text                        # the flow's verify: none
    assert "Page where the task stopped" in text
    assert dlg.tabs.currentIndex() == 0                       # the screenshot first
    # A failure that is not a write keeps "resume" first.
    t2 = store.submit(quick("pdd-2", params={"page": 1, "fake": "needs_human"}))
    dlg.reject()
    dlg2 = open_dialog(window, run, ticket_of(store, run, t2))
    assert dlg2.action() == "resume" and dlg2.known is None
    # It fits a 1024×600 screen.
    hint = dlg.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 600, hint


def test_resending_an_unknown_write_needs_a_second_confirmation_naming_task_and_step(
        window: Any, run: Run, store: SqliteStore) -> None:
    tid, k = write_unknown(window, run, store)
    dlg = open_dialog(window, run, k)
    dlg.buttons["resume"].setChecked(True)
    dlg.accept()
    run.until(lambda: dlg.confirm is not None and dlg.confirm.isVisible())
    box = dlg.confirm
    assert box.objectName() == "confirm-resend"
    label = task_detail(store, tid).steps[1].label
    assert f"#{tid} (pdd-1" in box.text() and f"step 2 “{label}”" in box.text()
    assert box.defaultButton().text() == "Back"
    # "Back": nothing is sent, the dialog stays with its input.
    box.defaultButton().click()
    run.until(lambda: not box.isVisible())
    assert dlg.isVisible() and dlg.action() == "resume"
    assert store.ticket_book().ticket(k).state.value == "open"
    assert store.task(tid).state is TaskState.WAITING_HUMAN
    # Confirmed: the answer goes to core with the confirmation (core refuses it without).
    dlg.accept()
    run.until(lambda: dlg.confirm is not box and dlg.confirm.isVisible())
    yes = next(b for b in dlg.confirm.buttons() if b.text() == "Send it again")
    yes.click()
    run.until(lambda: store.ticket_book().ticket(k).state.value != "open")
    assert store.ticket_book().ticket(k).action == "resume"
    assert not dlg.isVisible()


def test_skip_on_an_unknown_write_is_sent_without_a_confirmation(
        window: Any, run: Run, store: SqliteStore) -> None:
    _, k = write_unknown(window, run, store)
    dlg = open_dialog(window, run, k)
    dlg.accept()                                  # the default: skip, it went through
    run.until(lambda: store.ticket_book().ticket(k).state.value != "open")
    assert dlg.confirm is None and store.ticket_book().ticket(k).action == "skip"


# -- rules in words -------------------------------------------------------------------------


def test_the_rule_is_shown_in_words_before_it_is_saved_and_saved_as_shown(
        window: Any, run: Run, store: SqliteStore) -> None:
    tid = store.submit(quick("pdd-1", params={"page": 1, "fake": "needs_human"}))
    dlg = open_dialog(window, run, ticket_of(store, run, tid))
    # Done and cancel make no rule: the box cannot be ticked, the words say why.
    dlg.buttons["done"].setChecked(True)
    assert not dlg.make_rule.isEnabled() and "makes no rule" in dlg.preview.text()
    dlg.buttons["resume"].setChecked(True)
    assert dlg.make_rule.isEnabled()
    dlg.make_rule.setChecked(True)
    dlg.delay.setValue(30)
    words = dlg.preview.text()
    for part in ("Rule: when a", "platform", "fails at", "needs_human",
                 "retry the task from its failed step after 30m", "without a ticket",
                 "Saved as: When a collect_data task of platform pdd"):
        assert part in words, (part, words)
    saved = words.split("Saved as: ", 1)[1]
    dlg.buttons["skip"].setChecked(True)                       # the words follow the answer
    assert "skip the failed step" in dlg.preview.text()
    assert not dlg.delay.isVisibleTo(dlg)
    dlg.buttons["resume"].setChecked(True)
    dlg.accept()
    run.until(lambda: len(store.ticket_book().rules()) == 1)
    (rule,) = store.ticket_book().rules()
    assert rule.action is RuleAction.RETRY_LATER and rule.delay_s == 1800
    assert rule.description == saved                           # what was shown is what is kept


# -- rules edited, disabled, deleted ----------------------------------------------------------


def test_a_rule_is_edited_disabled_and_deleted_in_the_console(
        window: Any, run: Run, store: SqliteStore) -> None:
    sig = Signature("pdd", "collect_data", "open", "page_changed", normalise_error("gone"))
    rule = store.ticket_book().add_rule(sig, "retry_later", delay_s=600, note="wait")
    show(window, run, "kb")
    model = window.models["rules"]
    run.until(lambda: model.rowCount() == 1)
    window.panels["rules"].select_ids([rule.id])
    trigger(window, "rule_edit")
    run.until(lambda: window.dialog is not None and window.dialog.objectName() == "rule-dialog"
              and window.dialog.isVisible())
    dlg = window.dialog
    assert "after 10m" in dlg.preview.text()
    dlg.action.setCurrentIndex(dlg.action.findData("skip"))
    assert "skip the failed step" in dlg.preview.text() and not dlg.delay.isEnabled()
    dlg.note.setText("skipping is fine")
    dlg.buttons.accepted.emit()
    run.until(lambda: store.ticket_book().rules()[0].action is RuleAction.SKIP)
    edited = store.ticket_book().rules()[0]
    assert edited.note == "skipping is fine" and edited.signature == rule.signature
    assert edited.description.endswith("skip the failed step and go on with the next one, "
                                       "without a ticket.")
    run.until(lambda: not dlg.isVisible())        # closed once core said yes
    run.until(lambda: model.snapshot(rule.id) is not None
              and model.snapshot(rule.id).action is RuleAction.SKIP)
    # A refusal stays in the dialog with the input (a retry must wait at least 1 s: the
    # spin box cannot go below a minute, so core's refusal is provoked directly).
    window.panels["rules"].select_ids([rule.id])
    trigger(window, "rule_edit")
    run.until(lambda: window.dialog is not dlg and window.dialog.isVisible())
    dlg2 = window.dialog
    dlg2.note.setText("x" * 2000)
    dlg2.values = lambda: ("retry_later", float("nan"), "x")  # type: ignore[method-assign]
    dlg2.buttons.accepted.emit()
    run.until(lambda: "delay_s" in dlg2.error.text())
    assert dlg2.isVisible() and dlg2.note.text() == "x" * 2000
    dlg2.reject()
    # Disable, then delete (after a confirmation).
    window.panels["rules"].select_ids([rule.id])
    trigger(window, "rule_disable")
    run.until(lambda: not store.ticket_book().rules()[0].enabled)
    window.panels["rules"].select_ids([rule.id])
    trigger(window, "rule_delete")
    run.until(lambda: isinstance(window.last_confirm, QMessageBox)
              and window.last_confirm.isVisible())
    window.last_confirm.button(QMessageBox.StandardButton.Yes).click()
    run.until(lambda: store.ticket_book().rules() == [])


# -- takeover -------------------------------------------------------------------------------


class FakeTakeover:
    """Core's takeover without a browser: records the thread it ran on and blocks it (as a
    person working in the browser would) until the test closes the "browser"."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.calls: list[tuple[str, Any]] = []
        self.threads: list[int] = []
        self.started = threading.Event()
        self.close = threading.Event()

    def impl(self) -> dict[str, Any]:
        return {"ticket": self.ticket, "shop": self.shop}

    async def ticket(self, store: Any, settings: Any, ticket_id: int, *, home: Any
                     ) -> TakeoverResult:
        self.calls.append(("ticket", ticket_id))
        self._work()
        t = store.ticket_book().ticket(ticket_id)
        return TakeoverResult(t.shop, t, "http://pdd.shopfleet.test/x", "person")

    async def shop(self, store: Any, settings: Any, name: str, *, home: Any
                   ) -> TakeoverResult:
        self.calls.append(("shop", name))
        self._work()
        return TakeoverResult(name, None, "http://pdd.shopfleet.test/", "person")

    def _work(self) -> None:
        self.threads.append(threading.get_ident())
        self.started.set()
        assert self.close.wait(60), "the test never closed the browser"


def test_takeover_from_a_ticket_runs_off_the_gui_thread_and_brings_the_answer_back(
        window: Any, run: Run, store: SqliteStore) -> None:
    fake = FakeTakeover(store)
    window.takeover_impl = fake.impl()
    tid = store.submit(quick("pdd-1", params={"page": 1, "fake": "needs_human"}))
    k = ticket_of(store, run, tid)
    dlg = open_dialog(window, run, k)
    dlg.takeover_btn.click()                     # the dialog's button
    run.until(fake.started.is_set)
    assert fake.calls == [("ticket", k)] and not dlg.isVisible()
    assert fake.threads[0] != threading.get_ident()
    # While the person works in the browser the console goes on: a table loads.
    store.set_shop_paused("temu-1", True)
    pending = store.submit(quick("temu-1"))
    show(window, run, "pending")
    assert window.models["pending"].row_of(pending) >= 0
    fake.close.set()                             # the person closes the browser
    run.until(lambda: window.dialog is not dlg and window.dialog is not None
              and window.dialog.objectName() == "ticket-dialog" and window.dialog.isVisible())
    back = window.dialog
    assert back.after_takeover and sorted(back.buttons) == ["done", "resume", "skip"]
    assert "session saved" in back.findChild(type(back.preview),
                                             "ticket-after-takeover").text()
    back.buttons["done"].setChecked(True)
    back.accept()
    run.until(lambda: store.task(tid).state is TaskState.DONE)


def test_takeover_from_a_shop_row_and_from_the_tickets_view(
        window: Any, run: Run, store: SqliteStore) -> None:
    fake = FakeTakeover(store)
    fake.close.set()
    window.takeover_impl = fake.impl()
    show(window, run, "shops")
    select(window, run, "shops", "temu-1")
    from desktop.action_table import CONTEXT_MENUS

    assert "takeover" in CONTEXT_MENUS["shops"] and "takeover" in CONTEXT_MENUS["tickets"]
    trigger(window, "takeover")
    run.until(lambda: fake.calls == [("shop", "temu-1")])
    run.until(lambda: "Browser of temu-1 closed" in window.statusBar().currentMessage())
    tid = store.submit(quick("pdd-2", params={"page": 1, "fake": "needs_human"}))
    k = ticket_of(store, run, tid)
    show(window, run, "tickets")
    select(window, run, "tickets", k)
    trigger(window, "takeover")
    run.until(lambda: ("ticket", k) in fake.calls)
    run.until(lambda: window.dialog is not None and getattr(window.dialog, "after_takeover",
                                                             False))
    assert all(t != threading.get_ident() for t in fake.threads)


def test_a_refused_takeover_is_shown_and_the_console_survives(
        window: Any, run: Run, store: SqliteStore) -> None:
    from core import Refused

    async def refused(*_a: Any, **_k: Any) -> TakeoverResult:
        raise Refused("shop temu-1 is held by takeover of ticket #9 on host-b for 100 s more")

    window.takeover_impl = {"ticket": refused, "shop": refused}
    show(window, run, "shops")
    select(window, run, "shops", "temu-1")
    trigger(window, "takeover")
    run.until(lambda: any("host-b" in m for m in window.presenter.messages))
