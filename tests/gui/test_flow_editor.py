"""The flow editor: edit the steps, validation as you type with the field named, save into the
user's folder (never over a shipped flow unless confirmed), run step by step stopping at the
first failing step, pick a locator, load a recording."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from core import RecordedFlow, SqliteStore, resources_dir
from core.errors import PageChanged
from core.flows import StepEvent, parse_flow
from desktop import palette
from desktop.flow_editor import FlowEditor

DOC: dict[str, Any] = {
    "name": "my_reply", "start_url": "{shop.base_url}/messages/{params.message_id}",
    "steps": [
        {"action": "navigate", "url": "{shop.base_url}/messages/{params.message_id}"},
        {"action": "type_text", "locator": "#reply", "text": "{params.reply}"},
        {"action": "click", "locator": "#send", "write": True, "name": "send"},
    ],
}


class Calls:
    def __init__(self) -> None:
        self.runs: list[tuple[Any, ...]] = []
        self.picks: list[tuple[Any, ...]] = []
        self.confirms: list[str] = []
        self.answer = False
        self.fail_at: int | None = None

    def runner(self, settings: Any, store: Any, doc: Any, params: Any, shop: str, *,
               headed: bool, on_step: Any) -> Any:
        self.runs.append((doc, params, shop, headed))
        for i, step in enumerate(doc["steps"]):
            on_step(StepEvent(i, step["action"], step.get("name", ""), "started"))
            if i == self.fail_at:
                on_step(StepEvent(i, step["action"], step.get("name", ""), "failed",
                                  error="locator not found"))
                raise PageChanged("locator #send not found", step=i,
                                  evidence={"screenshot": "/evidence/shot.png"})
            on_step(StepEvent(i, step["action"], step.get("name", ""), "done", 12))
        return {"ok": True}

    def picker(self, settings: Any, store: Any, shop: str, url: str, *, lang: str,
               headed: bool) -> str:
        self.picks.append((shop, url, lang, headed))
        return 'internal:role=button[name="Send reply"i]'

    def recorder(self, settings: Any, store: Any, shop: str, name: str, *, lang: str,
                 headed: bool) -> RecordedFlow:
        return RecordedFlow(parse_flow({**DOC, "name": name}),
                            {"message_id": "42", "reply": "hi"}, ("a note",))

    def confirm(self, title: str, text: str) -> bool:
        self.confirms.append(text)
        return self.answer


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def editor(qtbot: Any, store: SqliteStore, tmp_path: Path, calls: Calls) -> Iterator[FlowEditor]:
    flows = tmp_path / "flows"
    flows.mkdir()
    settings = store.settings.with_changes(flows={"dirs": [str(flows)]})
    ed = FlowEditor(settings, store, shops=["temu-1", "pdd-1"], doc=DOC, runner=calls.runner,
                    picker=calls.picker, recorder=calls.recorder, confirm=calls.confirm,
                    headed=False)
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitUntil(lambda: ed.open_combo.count() > 0)   # the catalog came back
    yield ed


def _retype(qtbot: Any, edit: Any, text: str) -> None:
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    if text:
        qtbot.keyClicks(edit, text)


def test_edit_insert_reorder_delete(qtbot: Any, editor: FlowEditor) -> None:
    assert editor.problems == [] and editor.save_btn.isEnabled()
    editor.steps_list.setCurrentRow(1)
    qtbot.mouseClick(editor.insert_btn, Qt.MouseButton.LeftButton)
    assert editor.current_row() == 2
    assert [s["action"] for s in editor.document()["steps"]] == [
        "navigate", "type_text", "click", "click"]
    # The new step has no locator yet: named, and nothing can be saved or run.
    assert "steps[2].locator" in editor.problems_label.text()
    assert not editor.save_btn.isEnabled() and not editor.run_btn.isEnabled()
    qtbot.keyClicks(editor.locator_edit, "#agree")
    qtbot.keyClicks(editor.step_name_edit, "agree")
    assert editor.problems == [] and editor.save_btn.isEnabled()
    qtbot.mouseClick(editor.up_btn, Qt.MouseButton.LeftButton)
    steps = editor.document()["steps"]
    assert steps[1] == {"action": "click", "locator": "#agree", "name": "agree"}
    assert editor.current_row() == 1 and editor.locator_edit.text() == "#agree"
    qtbot.mouseClick(editor.down_btn, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(editor.down_btn, Qt.MouseButton.LeftButton)
    assert [s.get("name") for s in editor.document()["steps"]] == [None, None, "send", "agree"]
    qtbot.mouseClick(editor.delete_btn, Qt.MouseButton.LeftButton)
    assert editor.document()["steps"] == DOC["steps"]
    assert editor.steps_list.count() == 3


def test_flags_timeout_and_if_visible_write_the_step(qtbot: Any, editor: FlowEditor) -> None:
    editor.steps_list.setCurrentRow(1)
    qtbot.mouseClick(editor.write_check, Qt.MouseButton.LeftButton)
    step = editor.document()["steps"][1]
    # A write is not interruptible by default: the box follows, the file stays minimal.
    assert step["write"] is True and "interruptible" not in step
    assert editor.interruptible_check.isChecked() is False
    editor.interruptible_check.setChecked(True)
    assert editor.document()["steps"][1]["interruptible"] is True
    editor.timeout_spin.setValue(12.5)
    qtbot.keyClicks(editor.if_visible_edit, "#reply")
    step = editor.document()["steps"][1]
    assert step["timeout_s"] == 12.5 and step["if_visible"] == "#reply"
    editor.timeout_spin.setValue(0)
    assert "timeout_s" not in editor.document()["steps"][1]


def test_validation_as_you_type_names_and_marks_the_field(qtbot: Any,
                                                          editor: FlowEditor) -> None:
    editor.steps_list.setCurrentRow(1)
    _retype(qtbot, editor.locator_edit, "")
    assert "steps[1].locator:" in editor.problems_label.text()
    assert editor.marked_fields() == ["steps[1].locator"]
    assert editor.locator_edit.toolTip()
    assert editor.steps_list.item(1).foreground().color() == palette.signal("error")
    assert editor.steps_list.item(0).foreground().color() != palette.signal("error")
    assert not editor.save_btn.isEnabled()
    qtbot.keyClicks(editor.locator_edit, "#reply")
    assert editor.problems == [] and editor.marked_fields() == []
    # A placeholder typo is named in the value field.
    _retype(qtbot, editor.value_edit, "{params.reply")
    assert editor.marked_fields() == ["steps[1].text"]
    assert "unclosed" in editor.problems_label.text()
    # Another action: the value box edits its field (navigate → URL), still checked.
    editor.action_combo.setCurrentText("navigate")
    assert editor.value_label.text() == "URL" and not editor.locator_edit.isEnabled()
    assert "steps[1].url" in editor.marked_fields()
    qtbot.keyClicks(editor.value_edit, "{shop.base_url}/x")
    assert editor.problems == []
    # The flow's own fields too.
    _retype(qtbot, editor.name_edit, "")
    assert editor.marked_fields() == ["name"]


def test_save_writes_the_users_folder(qtbot: Any, editor: FlowEditor, tmp_path: Path) -> None:
    with qtbot.waitSignal(editor.saved) as sig:
        qtbot.mouseClick(editor.save_btn, Qt.MouseButton.LeftButton)
    path = tmp_path / "flows" / "my_reply.json"
    assert sig.args == [str(path)]
    assert parse_flow(json.loads(path.read_text(encoding="utf-8"))) == parse_flow(DOC)
    # Edit and save again: the user's own file is replaced.
    editor.steps_list.setCurrentRow(2)
    _retype(qtbot, editor.locator_edit, "#send-reply")
    with qtbot.waitSignal(editor.saved):
        qtbot.mouseClick(editor.save_btn, Qt.MouseButton.LeftButton)
    assert json.loads(path.read_text(encoding="utf-8"))["steps"][2]["locator"] == "#send-reply"
    assert sorted(p.name for p in (tmp_path / "flows").iterdir()) == ["my_reply.json"]


def test_save_asks_before_replacing_a_shipped_flow(qtbot: Any, editor: FlowEditor,
                                                   calls: Calls) -> None:
    shipped = resources_dir() / "flows" / "reply_customer.json"
    before = shipped.read_bytes()
    editor.open_combo.setCurrentText("reply_customer")
    with qtbot.waitSignal(editor.loaded):
        qtbot.mouseClick(editor.open_btn, Qt.MouseButton.LeftButton)
    assert editor.document() == json.loads(before)
    editor.steps_list.setCurrentRow(1)
    _retype(qtbot, editor.step_name_edit, "changed")
    calls.answer = False
    qtbot.mouseClick(editor.save_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not editor.busy and bool(calls.confirms))
    assert "shipped" in calls.confirms[0]
    assert "Not saved" in editor.log.toPlainText()
    assert shipped.read_bytes() == before


def test_run_marks_each_step_and_stops_at_the_first_failure(qtbot: Any, editor: FlowEditor,
                                                            calls: Calls) -> None:
    editor.shop_combo.setCurrentText("pdd-1")
    editor.params_edit.setPlainText("message_id=42\nreply=hello")
    with qtbot.waitSignal(editor.run_finished) as sig:
        qtbot.mouseClick(editor.run_btn, Qt.MouseButton.LeftButton)
    assert sig.args == [True]
    assert calls.runs[0] == (DOC, {"message_id": "42", "reply": "hello"}, "pdd-1", False)
    assert all(editor.steps_list.item(i).text().startswith("✓") for i in range(3))

    calls.fail_at = 2
    editor.steps_list.setCurrentRow(0)
    with qtbot.waitSignal(editor.run_finished) as sig:
        qtbot.mouseClick(editor.run_btn, Qt.MouseButton.LeftButton)
    assert sig.args == [False]
    texts = [editor.steps_list.item(i).text() for i in range(3)]
    assert texts[0].startswith("✓") and texts[1].startswith("✓") and texts[2].startswith("✗")
    assert editor.current_row() == 2                      # the failing step, selected
    log = editor.log.toPlainText()
    assert "FAILED at step 3: locator #send not found" in log
    assert "evidence screenshot: /evidence/shot.png" in log
    assert editor.run_btn.isEnabled()


def test_a_bad_flow_is_not_run(qtbot: Any, editor: FlowEditor, calls: Calls) -> None:
    editor.steps_list.setCurrentRow(1)
    _retype(qtbot, editor.locator_edit, "")
    editor.run()
    assert calls.runs == [] and not editor.busy


def test_pick_puts_playwrights_locator_into_the_step(qtbot: Any, editor: FlowEditor,
                                                     calls: Calls) -> None:
    editor.steps_list.setCurrentRow(2)
    with qtbot.waitSignal(editor.picked):
        qtbot.mouseClick(editor.pick_btn, Qt.MouseButton.LeftButton)
    # The page the step acts on: the last navigate before it.
    assert calls.picks == [("temu-1", DOC["steps"][0]["url"], "en", False)]
    assert editor.document()["steps"][2]["locator"] == 'internal:role=button[name="Send reply"i]'
    assert editor.problems == []


def test_record_loads_the_recorded_flow_with_its_values(qtbot: Any,
                                                        editor: FlowEditor) -> None:
    editor.set_document({"name": "new_one", "start_url": "", "steps": []})
    assert editor.problems                                   # an empty flow is not valid
    with qtbot.waitSignal(editor.loaded):
        qtbot.mouseClick(editor.record_btn, Qt.MouseButton.LeftButton)
    assert parse_flow(editor.document()) == parse_flow({**DOC, "name": "new_one"})
    assert editor.params() == {"message_id": "42", "reply": "hi"}
    assert "a note" in editor.log.toPlainText() and editor.problems == []


def test_the_console_window_opens_the_editor(qtbot: Any, window: Any) -> None:
    acts = window.flow_editor_actions
    assert acts.open_act in window.toolbar.actions()
    assert acts.record_act in window.toolbar.actions()
    acts.open_act.trigger()
    win = acts.windows[-1]
    qtbot.addWidget(win)
    assert win.isVisible()
    qtbot.waitUntil(lambda: win.editor.shop_combo.count() == 4)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(600)
def test_run_on_a_shop_with_real_chromium_stops_at_the_broken_step(
        qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core import Settings, demo_settings, open_store, read_flow_document
    from core.demosite import DemoSite
    from core.flows.editing import flow_catalog
    from tests.integration.test_run_flow_cli import setup_shop

    db = tmp_path / "e.db"
    with DemoSite() as site:
        setup_shop(str(db), site, monkeypatch)
        store = open_store(demo_settings(Settings()), db)
        try:
            entry = next(e for e in flow_catalog([]) if e.name == "reply_customer")
            doc = {**read_flow_document(entry), "name": "my_reply"}
            ed = FlowEditor(store.settings, store, shops=["temu-2"], doc=doc, headed=False)
            qtbot.addWidget(ed)
            ed.params_edit.setPlainText("message_id=1\nreply=hello from the editor")
            with qtbot.waitSignal(ed.run_finished, timeout=180_000) as sig:
                ed.run()
            assert sig.args == [True], ed.log.toPlainText()
            assert [r["text"] for r in site.records(kind="reply")] == [
                "hello from the editor"]
            # Break the write step's locator: the run stops there, with its evidence.
            send = next(i for i, s in enumerate(ed.steps) if s.get("write"))
            ed.steps_list.setCurrentRow(send)
            _retype(qtbot, ed.locator_edit, "#no-such-button")
            ed.steps_list.setCurrentRow(0)
            with qtbot.waitSignal(ed.run_finished, timeout=180_000) as sig:
                ed.run()
            assert sig.args == [False]
            assert ed.current_row() == send
            assert ed.steps_list.item(send).text().startswith("✗")
            shot = next(line.split(": ", 1)[1] for line in ed.log.toPlainText().splitlines()
                        if "evidence screenshot" in line)
            assert Path(shot).read_bytes()[:4] == b"\x89PNG"
            assert len(site.records(kind="reply")) == 1       # nothing written twice
        finally:
            store.close()

