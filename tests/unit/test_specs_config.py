"""Task specs and configuration: bad input names the field and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import Settings, load_settings
from core.errors import ConfigError, SpecError, field_path
from core.flows import ACTIONS
from core.specs import parse_specs

OK = '{"type": "collect_data", "shop": "pdd-1", "flow": "collect_data"}'


@pytest.mark.parametrize(("text", "field", "reason"), [
    ('{"type": "x", "shop": "s", "flow": "f", "deadline": "2026-11-29T15:00"}',
     "deadline", "no time zone"),
    ('{"type": "x", "shop": "s", "flow": "f", "deadline": "tomorrow"}',
     "deadline", "not an ISO-8601"),
    ('{"type": "x", "shop": "s", "flow": "f", "colour": "red"}', "colour", "unknown field"),
    ('{"type": 5, "shop": "s", "flow": "f"}', "type", "valid string"),
    ('{"type": "x", "shop": "s", "flow": "f", "params": []}', "params", "dictionary"),
    ('{"type": "x", "shop": "s"}', "(task)", "flow"),
    ('{"shop": "s", "flow": "f"}', "type", "required"),
    ('[' + OK + ', {"type": "x", "shop": "s", "flow": "f", "priority": "high"}]',
     "tasks[1].priority", "valid number"),
    (OK + '\n{"type": "x", "shop": "s", "flow": "f", "key": ""}', "line 2.key", "at least 1"),
    ('[1]', "tasks[0]", "JSON object"),
    ('{"type": ', "(input)", "not JSON"),
])
def test_bad_specs_name_the_field(text: str, field: str, reason: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_specs(text)
    assert err.value.field == field
    assert reason in err.value.reason


def test_one_field_path_for_tasks_and_flows() -> None:
    # A discriminated union's tag (the action) sits between the index and the field in
    # pydantic's location; the path a user reads leaves it out.
    loc = ("steps", 2, "click", "locator")
    assert field_path("tasks[0]", loc, tags=ACTIONS) == "tasks[0].steps[2].locator"
    assert field_path("", loc, tags=ACTIONS) == "steps[2].locator"
    assert field_path("", ()) == "(task)" and field_path("", (), whole="(flow)") == "(flow)"
    assert field_path("tasks[1]", ("params", "x", 0)) == "tasks[1].params.x[0]"


def test_oversize_task_is_rejected() -> None:
    big = '{"type": "x", "shop": "s", "flow": "f", "params": {"blob": "' + "a" * 300_000 + '"}}'
    with pytest.raises(SpecError, match="more than the limit of 262144 bytes"):
        parse_specs(big)


def test_object_array_and_json_lines_all_parse() -> None:
    assert len(parse_specs(OK)) == 1
    assert len(parse_specs(f"[{OK}, {OK}]")) == 2
    assert len(parse_specs(f"{OK}\n\n{OK}\n{OK}\n")) == 3


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[queue]\nmax_backlog = -1\n")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg)
    assert err.value.field == "queue.max_backlog"
    cfg.write_text("[gates.domains.\"a.test\"]\nrate_per_s = 1\nburst = 0\n")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg)
    assert err.value.field == "gates.domains.a.test.burst"
    cfg.write_text("[pool]\nmax_browsers = 1\nwarm = 3\n")
    with pytest.raises(ConfigError, match="warm"):
        load_settings(cfg)
    cfg.write_text("[queue\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(cfg)
    with pytest.raises(ConfigError, match="no such file"):
        load_settings(tmp_path / "missing.toml")


def test_config_values_are_used(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[priority.types]\nreply_customer = 12\n[gates.global]\nrate_per_s = 3\n'
                   'burst = 6\n')
    s = load_settings(cfg)
    assert s.priority.types == {"reply_customer": 12}
    assert s.gates.global_.rate_per_s == 3
    assert Settings().queue.max_backlog == 100_000
