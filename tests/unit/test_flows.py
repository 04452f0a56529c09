"""The flow format, placeholders, upload paths and the registry."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from core.errors import SpecError
from core.flows import (
    Flow,
    FlowRegistry,
    check_flow,
    check_upload_path,
    flow_json_schema,
    inline_flow,
    parse_flow,
    resolve,
    task_json_schema,
)
from core.flows.models import ClickStep, ExtractStep, WaitElementStep

SHOP = {"name": "pdd-1", "platform": "pdd", "base_url": "https://seller.test",
        "username": "alice", "password": "hunter2"}

REPLY = {
    "name": "reply_customer",
    "start_url": "{shop.base_url}/messages",
    "steps": [
        {"action": "navigate", "url": "{shop.base_url}/messages/{params.message_id}"},
        {"action": "type_text", "locator": "#reply", "text": "{params.reply}"},
        {"action": "click", "locator": "#submit-btn", "write": True, "interruptible": False},
        {"action": "wait_element", "locator": ".success-msg"},
    ],
}


def flow_of(*steps: dict[str, Any], start_url: str = "https://seller.test/") -> Flow:
    return parse_flow({"name": "t", "start_url": start_url, "steps": list(steps)})


def spec_error(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(SpecError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# -- the format --------------------------------------------------------------------------------


def test_design_example_parses_with_defaults() -> None:
    flow = parse_flow(REPLY)
    assert [s.action for s in flow.steps] == ["navigate", "type_text", "click", "wait_element"]
    wait = flow.steps[3]
    assert isinstance(wait, WaitElementStep) and wait.state == "visible"
    assert wait.interruptible is True and wait.write is False


def test_write_steps_are_uninterruptible_unless_they_say_so() -> None:
    flow = flow_of({"action": "click", "locator": "#a", "write": True},
                   {"action": "click", "locator": "#b", "write": True, "interruptible": True},
                   {"action": "click", "locator": "#c"})
    assert [s.interruptible for s in flow.steps] == [False, True, True]


def test_extract_defaults() -> None:
    step = flow_of({"action": "extract", "locator": ".price", "into": "price"}).steps[0]
    assert isinstance(step, ExtractStep)
    assert (step.attribute, step.all) == ("text", False)


@pytest.mark.parametrize(("steps", "expected"), [
    ([{"action": "navigate", "url": "u"}, {"action": "click"}],
     "steps[1].locator: field required"),
    ([{"action": "click", "locator": "#a", "colour": "red"}], "steps[0].colour: unknown field"),
    ([{"locator": "#a"}], "steps[0].action: field required"),
    ([{"action": "eval", "code": "1"}], "steps[0].action: unknown action 'eval'"),
    ([{"action": "wait_element", "locator": "#a", "state": "gone"}], "steps[0].state:"),
    ([{"action": "click", "locator": ""}], "steps[0].locator:"),
    ([{"action": "click", "locator": "#a", "timeout_s": -1}], "steps[0].timeout_s:"),
    ([{"action": "click", "locator": "#a", "verify": {"locator": "#ok"}}],
     "verify is only for write steps"),
    ([], "steps:"),
])
def test_bad_steps_are_refused_naming_the_field(steps: list[dict[str, Any]], expected: str) -> None:
    msg = spec_error(parse_flow, {"name": "t", "start_url": "u", "steps": steps},
                     source="reply.json")
    assert msg.startswith("reply.json: ")
    assert expected in msg


def test_write_step_can_declare_how_to_verify_it() -> None:
    step = flow_of({"action": "click", "locator": "#send", "write": True,
                    "verify": {"locator": ".thread", "text": "{params.reply}"}}).steps[0]
    assert isinstance(step, ClickStep) and step.verify is not None
    assert step.verify.text == "{params.reply}"


def test_inline_steps_become_a_flow_starting_at_the_first_navigate() -> None:
    flow = inline_flow([{"action": "wait_element", "locator": "body"},
                        {"action": "navigate", "url": "https://seller.test/a"},
                        {"action": "navigate", "url": "https://seller.test/b"}])
    assert (flow.name, flow.start_url) == ("inline", "https://seller.test/a")


def test_inline_steps_errors() -> None:
    assert "navigate step" in spec_error(inline_flow, [{"action": "click", "locator": "#a"}])
    assert spec_error(inline_flow, [{"action": "navigate", "url": "u"}, {"action": "click"}]) == (
        "steps[1].locator: field required")


def test_flow_schema_lists_every_action() -> None:
    text = json.dumps(flow_json_schema())
    for action in ("navigate", "click", "type_text", "select_option", "upload_file",
                   "wait_element", "extract", "assert_text", "screenshot", "press_key"):
        assert f'"{action}"' in text


def test_task_schema_spells_out_inline_steps() -> None:
    from core.specs import TaskSpec

    schema = task_json_schema(TaskSpec)
    assert "flow" in schema["properties"] and "params" in schema["properties"]
    assert "press_key" in json.dumps(schema["properties"]["steps"]) + json.dumps(schema["$defs"])


# -- placeholders ------------------------------------------------------------------------------


def test_resolve_substitutes_params_and_shop_once() -> None:
    params = {"id": 7, "reply": "{shop.password}", "ok": True}
    assert resolve("{shop.base_url}/m/{params.id}?ok={params.ok}", params, SHOP) == (
        "https://seller.test/m/7?ok=true")
    # A parameter's value is inserted as it is: it cannot pull in the shop's password.
    assert resolve("{params.reply}", params, SHOP) == "{shop.password}"


def test_doubled_braces_are_literal() -> None:
    assert resolve('{{"a": "{params.x}"}}', {"x": "1"}, SHOP) == '{"a": "1"}'


def test_check_flow_names_step_and_placeholder() -> None:
    flow = parse_flow(REPLY)
    msg = spec_error(check_flow, flow, params={"message_id": "8"}, shop_fields=set(SHOP))
    assert msg == ("steps[1] (type_text).text: placeholder {params.reply} is not given by "
                   "the task")
    check_flow(flow, params={"message_id": "8", "reply": "hi"}, shop_fields=set(SHOP))


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("url", "{env.HOME}", "unknown namespace 'env'"),
    ("url", "{shop.token}", "shops have no field 'token'"),
    ("url", "{shop.base_url", "unclosed"),
    ("url", "a}b", "lone '}'"),
    ("url", "{params}", "not a placeholder"),
    ("url", "https://x/?p={shop.password}", "may only be used as the text of a type_text"),
])
def test_check_flow_refuses_bad_placeholders(field: str, value: str, expected: str) -> None:
    flow = flow_of({"action": "navigate", field: value})
    msg = spec_error(check_flow, flow, params={}, shop_fields=set(SHOP))
    assert msg.startswith("steps[0] (navigate).url: ")
    assert expected in msg


def test_check_flow_covers_start_url_locators_and_verify() -> None:
    flow = flow_of({"action": "click", "locator": "#m-{params.id}", "write": True,
                    "if_visible": "{params.gate}",
                    "verify": {"locator": ".t", "text": "{params.reply}"}},
                   start_url="{shop.base_url}/{params.page}")
    assert spec_error(check_flow, flow, params={"id": 1, "gate": "x", "reply": "r"},
                      shop_fields=set(SHOP)).startswith("start_url: placeholder {params.page}")
    msg = spec_error(check_flow, flow, params={"page": 1, "gate": "x", "reply": "r"},
                     shop_fields=set(SHOP))
    assert msg.startswith("steps[0] (click).locator: placeholder {params.id}")
    msg = spec_error(check_flow, flow, params={"page": 1, "id": 1, "gate": "x"},
                     shop_fields=set(SHOP))
    assert msg.startswith("steps[0] (click).verify.text: placeholder {params.reply}")


def test_password_may_be_typed_and_a_missing_shop_field_is_named() -> None:
    flow = flow_of({"action": "type_text", "locator": "#pw", "text": "{shop.password}"})
    check_flow(flow, params={}, shop_fields=set(SHOP))
    msg = spec_error(check_flow, flow, params={}, shop_fields={"name", "base_url"})
    assert msg == "steps[0] (type_text).text: placeholder {shop.password}: the shop has no password"


# -- upload paths ------------------------------------------------------------------------------


@pytest.fixture
def assets(tmp_path: Path) -> Path:
    root = tmp_path / "assets"
    (root / "img").mkdir(parents=True)
    (root / "img" / "p.png").write_bytes(b"png")
    (tmp_path / "secret.txt").write_text("s")
    return root


def test_upload_path_inside_an_asset_folder(assets: Path) -> None:
    assert check_upload_path("img/p.png", [assets]) == (assets / "img" / "p.png").resolve()
    assert check_upload_path(str(assets / "img" / "p.png"), [assets]).name == "p.png"


@pytest.mark.parametrize("path", ["../secret.txt", "img/../../secret.txt"])
def test_upload_path_cannot_climb_out(assets: Path, path: str) -> None:
    assert "outside the asset folders" in spec_error(check_upload_path, path, [assets])


def test_upload_path_absolute_elsewhere_is_refused(assets: Path) -> None:
    msg = spec_error(check_upload_path, str(assets.parent / "secret.txt"), [assets])
    assert "outside the asset folders" in msg


def test_upload_path_symlink_escape_is_refused(assets: Path) -> None:
    (assets / "link.txt").symlink_to(assets.parent / "secret.txt")
    assert "outside the asset folders" in spec_error(check_upload_path, "link.txt", [assets])


def test_upload_path_missing_file(assets: Path) -> None:
    assert "no file 'img/nope.png'" in spec_error(check_upload_path, "img/nope.png", [assets])


def test_check_flow_checks_upload_paths_with_params(assets: Path) -> None:
    flow = flow_of({"action": "upload_file", "locator": "#f", "path": "img/{params.file}"})
    check_flow(flow, params={"file": "p.png"}, shop_fields=set(SHOP), asset_dirs=[assets])
    msg = spec_error(check_flow, flow, params={"file": "../../secret.txt"},
                     shop_fields=set(SHOP), asset_dirs=[assets])
    assert msg.startswith("steps[0] (upload_file).path: ")
    assert "outside the asset folders" in msg


# -- the registry ------------------------------------------------------------------------------


def write_flow(folder: Path, name: str, data: dict[str, Any] | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_registry_reads_configured_folders(tmp_path: Path) -> None:
    write_flow(tmp_path / "flows", "reply", REPLY)
    write_flow(tmp_path / "flows", "collect", {**REPLY, "name": "collect_data"})
    reg = FlowRegistry.load([tmp_path / "flows"], builtin=False, plugins=False)
    assert reg.names() == ["collect_data", "reply_customer"]
    assert reg.get("reply_customer").steps[2].write is True
    assert reg.source("reply_customer").endswith("reply.json")


def test_registry_includes_shipped_flows(tmp_path: Path) -> None:
    from core.paths import resources_dir

    shipped = sorted((resources_dir() / "flows").glob("*.json"))
    reg = FlowRegistry.load([], plugins=False)
    assert len(reg) == len(shipped)


def test_registry_bad_file_names_file_and_field(tmp_path: Path) -> None:
    bad = {**REPLY, "steps": [{"action": "click"}]}
    path = write_flow(tmp_path / "flows", "bad", bad)
    msg = spec_error(FlowRegistry.load, [tmp_path / "flows"], builtin=False, plugins=False)
    assert msg == f"{path}: steps[0].locator: field required"


def test_registry_bad_json_and_missing_folder(tmp_path: Path) -> None:
    write_flow(tmp_path / "flows", "broken", "{not json")
    assert "not JSON" in spec_error(FlowRegistry.load, [tmp_path / "flows"], builtin=False,
                                    plugins=False)
    assert "no such folder" in spec_error(FlowRegistry.load, [tmp_path / "nope"], builtin=False,
                                          plugins=False)


def test_registry_refuses_a_name_defined_twice(tmp_path: Path) -> None:
    write_flow(tmp_path / "a", "reply", REPLY)
    write_flow(tmp_path / "b", "reply_copy", REPLY)
    msg = spec_error(FlowRegistry.load, [tmp_path / "a", tmp_path / "b"], builtin=False,
                     plugins=False)
    assert "'reply_customer' is already defined by" in msg and "reply_copy.json" in msg


def test_registry_unknown_flow_lists_the_known_ones(tmp_path: Path) -> None:
    write_flow(tmp_path / "flows", "reply", REPLY)
    reg = FlowRegistry.load([tmp_path / "flows"], builtin=False, plugins=False)
    assert spec_error(reg.get, "nope") == "flow: no flow named 'nope' (known: reply_customer)"


PLUGIN_FLOW = Flow.model_validate({**REPLY, "name": "plugin_flow"})


def make_plugin_flow() -> Flow:
    return Flow.model_validate({**REPLY, "name": "made_by_plugin"})


def test_registry_loads_python_flows_from_entry_points() -> None:
    eps = [EntryPoint("a", f"{__name__}:PLUGIN_FLOW", "shopfleet.flows"),
           EntryPoint("b", f"{__name__}:make_plugin_flow", "shopfleet.flows")]
    reg = FlowRegistry.load([], builtin=False, entry_point_list=eps)
    assert reg.names() == ["made_by_plugin", "plugin_flow"]
    assert reg.source("plugin_flow") == "plugin shopfleet.flows:a"


def test_registry_broken_plugin_names_itself() -> None:
    eps = [EntryPoint("broken", "no_such_module_xyz:thing", "shopfleet.flows")]
    msg = spec_error(FlowRegistry.load, [], builtin=False, entry_point_list=eps)
    assert msg.startswith("plugin shopfleet.flows:broken: failed to load")
    eps = [EntryPoint("wrong", "json:dumps", "shopfleet.flows")]
    assert "failed to load" in spec_error(FlowRegistry.load, [], builtin=False,
                                          entry_point_list=eps)


def test_flow_for_task(tmp_path: Path) -> None:
    write_flow(tmp_path / "flows", "reply", REPLY)
    reg = FlowRegistry.load([tmp_path / "flows"], builtin=False, plugins=False)
    assert reg.flow_for("reply_customer", None).name == "reply_customer"
    assert reg.flow_for(None, [{"action": "navigate", "url": "https://s.test/"}]).name == "inline"
    assert "not both" in spec_error(reg.flow_for, "reply_customer",
                                    [{"action": "navigate", "url": "u"}])
