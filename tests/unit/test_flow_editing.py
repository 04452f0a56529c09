"""Flow editing in core: validation naming every field, the catalog, saving safely, and the
renaming of recorded parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core import (
    FlowProblem,
    RecordedFlow,
    SpecError,
    flow_catalog,
    rename_params,
    resources_dir,
    save_flow_file,
    validate_flow_dict,
)
from core.flows import parse_flow


def doc(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": "my_flow", "start_url": "{shop.base_url}/x",
        "steps": [
            {"action": "navigate", "url": "{shop.base_url}/x"},
            {"action": "type_text", "locator": "#a", "text": "{params.reply}"},
            {"action": "click", "locator": "#send", "write": True},
        ],
    }
    d.update(over)
    return d


def test_a_valid_document_has_no_problems() -> None:
    assert validate_flow_dict(doc()) == []


def test_every_model_problem_is_named_with_its_step() -> None:
    d = doc()
    d["steps"][1] = {"action": "type_text", "text": "x"}             # no locator
    d["steps"][2] = {"action": "click", "locator": "", "timeout_s": -1}
    problems = validate_flow_dict(d)
    fields = {p.field: p.reason for p in problems}
    assert fields["steps[1].locator"] == "field required"
    assert "steps[2].locator" in fields and "steps[2].timeout_s" in fields
    assert {p.step for p in problems} == {1, 2}


def test_unknown_action_and_field_are_named() -> None:
    d = doc()
    d["steps"].append({"action": "hover", "locator": "#a"})
    d["steps"].append({"action": "click", "locator": "#a", "colour": "red"})
    fields = {p.field: p.reason for p in validate_flow_dict(d)}
    assert fields["steps[3].action"].startswith("unknown action 'hover'")
    assert fields["steps[4].colour"] == "unknown field"


def test_placeholder_problems_are_named_in_the_editors_terms() -> None:
    d = doc()
    d["steps"][1]["text"] = "{params.reply"
    assert validate_flow_dict(d) == [
        FlowProblem("steps[1].text", validate_flow_dict(d)[0].reason)]
    assert "unclosed" in validate_flow_dict(d)[0].reason
    d = doc()
    d["steps"][2]["locator"] = "{shop.password}"        # a password typed into a locator
    [p] = validate_flow_dict(d)
    assert p.field == "steps[2].locator" and "type_text" in p.reason
    d = doc()
    d["steps"][1]["text"] = "{shop.colour}"
    assert validate_flow_dict(d)[0].field == "steps[1].text"


def test_a_placeholder_typo_shows_while_another_field_is_still_missing() -> None:
    d = doc()
    d["steps"][1]["text"] = "{params.reply"
    d["steps"][2]["locator"] = ""
    fields = [p.field for p in validate_flow_dict(d)]
    assert fields == ["steps[2].locator", "steps[1].text"]


def test_not_an_object() -> None:
    assert validate_flow_dict([1]) == [FlowProblem("(flow)", "must be a JSON object")]


def test_save_writes_a_new_file_in_the_users_folder_and_replaces_only_its_own(
        tmp_path: Path) -> None:
    own = tmp_path / "mine"
    path = save_flow_file(doc(), configured=[own])
    assert path == own / "my_flow.json"
    assert parse_flow(json.loads(path.read_text(encoding="utf-8"))).name == "my_flow"
    changed = doc(description="second")
    assert save_flow_file(changed, configured=[own]) == path
    assert json.loads(path.read_text(encoding="utf-8"))["description"] == "second"
    assert [e.name for e in flow_catalog([own]) if not e.shipped] == ["my_flow"]
    assert not list(own.glob("*.tmp"))


def test_save_never_writes_over_a_shipped_flow_without_being_told(tmp_path: Path) -> None:
    shipped = resources_dir() / "flows" / "reply_customer.json"
    before = shipped.read_bytes()
    d = json.loads(before)
    d["description"] = "changed"
    with pytest.raises(SpecError) as exc:
        save_flow_file(d, configured=[tmp_path / "mine"])
    assert exc.value.field == "name" and "shipped" in exc.value.reason
    assert shipped.read_bytes() == before
    assert not (tmp_path / "mine").exists()
    entry = next(e for e in flow_catalog([]) if e.name == "reply_customer")
    assert entry.shipped


def test_save_refuses_an_invalid_document_and_writes_nothing(tmp_path: Path) -> None:
    d = doc()
    d["steps"][1].pop("locator")
    with pytest.raises(SpecError) as exc:
        save_flow_file(d, configured=[tmp_path])
    assert exc.value.field == "steps[1].locator"
    with pytest.raises(SpecError) as exc:
        save_flow_file(doc(name="../evil"), configured=[tmp_path])
    assert exc.value.field == "name"
    assert list(tmp_path.iterdir()) == []


def _recorded() -> RecordedFlow:
    flow = parse_flow(doc(steps=[
        {"action": "navigate", "url": "{shop.base_url}/m/{params.message_id}"},
        {"action": "type_text", "locator": "#a", "text": "{{literal}} {params.reply}"},
        {"action": "click", "locator": "#send", "write": True, "name": "reply"},
    ]))
    return RecordedFlow(flow, {"message_id": "42", "reply": "hi"})


def test_rename_params_renames_every_use_and_the_values() -> None:
    out = rename_params(_recorded(), {"reply": "answer"})
    text = out.to_json()
    assert "{params.answer}" in text and "{params.reply}" not in text
    assert "{{literal}}" in text                       # literal braces stay escaped
    assert out.flow.steps[2].name == "reply"           # names are not templates
    assert out.params == {"message_id": "42", "answer": "hi"}


@pytest.mark.parametrize(("names", "why"), [
    ({"nope": "x"}, "no parameter 'nope'"),
    ({"reply": "1bad name"}, "not a parameter name"),
    ({"reply": "message_id"}, "two parameters"),
])
def test_rename_params_refuses_with_the_field(names: dict[str, str], why: str) -> None:
    with pytest.raises(SpecError) as exc:
        rename_params(_recorded(), names)
    assert exc.value.field == "--param-name" and why in exc.value.reason


def test_record_asks_names_for_the_parameters_on_a_terminal(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from core.cli.record import _ask_names

    answers = iter(["msg", ""])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert _ask_names({"message_id": "42", "reply": "hi"}) == {"message_id": "msg"}
    assert "Enter keeps the suggestion" in capsys.readouterr().out
