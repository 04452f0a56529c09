"""Every bad input: one line naming the field or argument, exit 2, nothing written, and one
JSON object under --json. NaN and Infinity are refused anywhere in a task, so ``tasks --json``
is always JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.specs import MAX_DEPTH, TaskSpec, validate_spec
from core.store import SqliteStore

from .clirun import digest, json_error, one_error_line, run

BASE = {"type": "collect_data", "shop": "pdd-1",
        "steps": [{"action": "navigate", "url": "{shop.base_url}/orders"}]}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "q.db"
    with SqliteStore(path) as s:
        s.add_shop("pdd-1", platform="pdd", base_url="http://pdd.shopfleet.test/shop/pdd-1")
    return path


def _task_count(db: Path) -> int:
    with SqliteStore(db, readonly=True) as s:
        return sum(s.status().counts.values())


def _refused(capsys: pytest.CaptureFixture[str], db: Path, argv: list[str],
             field: str) -> str:
    """Run ``argv`` plain and with --json: both refused, naming ``field``, nothing written."""
    before = digest(db)
    code, out, err = run(capsys, *argv, "--db", str(db))
    assert code == 2 and out == "", (code, out, err)
    line = one_error_line(err, field)
    code, out, err = run(capsys, *argv, "--db", str(db), "--json")
    assert code == 2 and out == ""
    obj = json_error(err, field)
    assert obj["error"] and obj["kind"]
    assert digest(db) == before
    assert _task_count(db) == 0
    return line


def _file(tmp_path: Path, data: bytes | str) -> Path:
    f = tmp_path / "task.json"
    f.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return f


def test_non_utf8_task_file(db: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    f = _file(tmp_path, json.dumps(BASE).encode()[:-1] + b', "params": {"x": "caf\xe9"}}')
    line = _refused(capsys, db, ["submit", str(f)], "FILE")
    assert "not UTF-8" in line and "0xe9" in line


@pytest.mark.parametrize("depth,field", [(MAX_DEPTH + 5, "params.x"), (5_000, "(input)"),
                                         (200_000, "(input)")])
def test_params_nested_too_deep(depth: int, field: str, db: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """Deeper than the limit: refused naming the field; deeper than the JSON parser can go
    (RecursionError): refused naming the input."""
    params = "[" * depth + "]" * depth
    f = _file(tmp_path, json.dumps(BASE)[:-1] + f', "params": {{"x": {params}}}}}')
    line = _refused(capsys, db, ["submit", str(f)], field)
    assert "nest" in line and len(line) < 300


def test_deep_nesting_in_json_lines(db: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    deep = json.dumps(BASE)[:-1] + ', "params": {"x": ' + "[" * 50_000 + "]" * 50_000 + "}}"
    f = _file(tmp_path, json.dumps(BASE) + "\n" + deep + "\n")
    assert "nest" in _refused(capsys, db, ["submit", str(f)], "line 2")


@pytest.mark.parametrize("where", ["params", "key", "steps", "shop"])
def test_lone_surrogate(where: str, db: Path, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    task = dict(BASE)
    if where == "params":
        task["params"] = {"reply": "ok \\ud800 then"}
        field = "params.reply"
    elif where == "key":
        task["key"] = "k-\\udfff"
        field = "key"
    elif where == "steps":
        task["steps"] = [{"action": "navigate", "url": "{shop.base_url}/\\ud83d"}]
        field = "steps[0].url"
    else:
        task["shop"] = "pdd-\\udc80"
        field = "shop"
    # json.dumps would escape the backslash: write the \\u escape as JSON text
    text = json.dumps(task).replace("\\\\u", "\\u")
    line = _refused(capsys, db, ["submit", str(_file(tmp_path, text))], field)
    assert "surrogate" in line


def test_nul_in_upload_path(db: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    task = {**BASE, "steps": [{"action": "upload_file", "locator": "#file",
                               "path": "products/a\u0000.png"}]}
    line = _refused(capsys, db, ["submit", str(_file(tmp_path, json.dumps(task)))],
                    "steps[0].path")
    assert "NUL" in line


@pytest.mark.parametrize("text,field", [
    ('"params": {"x": NaN}', "params.x"),
    ('"params": {"x": [1, Infinity]}', "params.x[1]"),
    ('"params": {"x": {"y": -Infinity}}', "params.x.y"),
    ('"params": {"x": 1e999}', "params.x"),
    ('"priority": NaN', "priority"),
    ('"urgency": -1e400', "urgency"),
])
def test_nan_and_infinity_anywhere(text: str, field: str, db: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.dumps(BASE)[:-1] + ", " + text + "}"
    line = _refused(capsys, db, ["submit", str(_file(tmp_path, doc))], field)
    assert "finite" in line or "not a JSON number" in line
    # and the whole batch with it: a good task next to it is not submitted either
    batch = "[" + json.dumps(BASE) + ", " + doc + "]"
    _refused(capsys, db, ["submit", str(_file(tmp_path, batch))], f"tasks[1].{field}")


def test_nan_through_the_python_api_is_refused() -> None:
    from core.errors import SpecError

    for bad in ({**BASE, "params": {"x": float("nan")}}, {**BASE, "priority": float("inf")}):
        with pytest.raises(SpecError):
            validate_spec(bad)
    with pytest.raises(ValueError):
        TaskSpec.model_validate({**BASE, "priority": float("nan")})


def test_tasks_json_stays_json(db: Path, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    ok = {**BASE, "params": {"x": 1.5, "y": [1e300, -0.0]}}
    code, _, err = run(capsys, "submit", str(_file(tmp_path, json.dumps(ok))), "--db", str(db))
    assert code == 0, err
    code, out, _ = run(capsys, "tasks", "--json", "--db", str(db))
    assert code == 0
    json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in tasks --json"))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "NaN", "-1e7"])
@pytest.mark.parametrize("option", ["--to", "--by"])
def test_bump_refuses_non_finite_and_huge(option: str, value: str, db: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "submit", str(_file(tmp_path, json.dumps(BASE))), "--json",
                         "--db", str(db))
    assert code == 0, err
    task_id = json.loads(out)["ids"][0]
    before = digest(db)
    code, out, err = run(capsys, "bump", str(task_id), f"{option}={value}", "--db", str(db))
    assert code == 2 and out == ""
    one_error_line(err, option)
    code, out, err = run(capsys, "bump", str(task_id), option, value, "--json", "--db", str(db))
    assert code == 2
    json_error(err, option)
    assert digest(db) == before


def test_store_bump_refuses_too(db: Path) -> None:
    from core.errors import InvalidInput

    with SqliteStore(db) as s:
        for kw in ({"to": float("nan")}, {"by": float("inf")}, {"to": 1e300}):
            with pytest.raises(InvalidInput):
                s.bump(1, **kw)


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_metrics_port_out_of_range(port: str, db: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(db)
    code, out, err = run(capsys, "worker", "--until-idle", "--executor", "noop",
                         "--metrics-port", port, "--db", str(db))
    assert code == 2 and out == ""
    one_error_line(err, "--metrics-port")
    code, out, err = run(capsys, "worker", "--metrics-port", port, "--json", "--db", str(db))
    assert code == 2
    json_error(err, "--metrics-port")
    assert digest(db) == before


def test_metrics_port_out_of_range_in_config(db: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[metrics]\nport = 70000\n", encoding="utf-8")
    code, _, err = run(capsys, "worker", "--until-idle", "--executor", "noop", "--config",
                       str(cfg), "--db", str(db))
    assert code == 2
    one_error_line(err, "metrics.port")
