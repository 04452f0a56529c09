"""#18 on the command line: shop tags, --shops selectors, delayed tasks, schedule commands.
Bad input: one line naming the field, exit 2, nothing written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from core.cli import main

TEMPLATE = {"type": "collect_data", "flow": "collect_data", "params": {"page": 1}}


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "cli.db")
    for name, platform in (("pdd-1", "pdd"), ("pdd-2", "pdd"), ("temu-1", "temu")):
        assert main(["shop", "add", name, "--platform", platform, "--base-url",
                     f"http://{platform}.shopfleet.test/shop/{name}", "--username", name,
                     "--db", path]) == 0
        monkeypatch.setattr("sys.stdin", io.StringIO("s3cret-pw\n"))
        assert main(["shop", "set-password", name, "--stdin", "--db", path]) == 0
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tpl(tmp_path: Path) -> str:
    f = tmp_path / "tpl.json"
    f.write_text(json.dumps(TEMPLATE))
    return str(f)


def test_tags_and_selectors(db: str, tpl: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "shop", "tag", "pdd-1", "North", "华北", "--db", db)[0] == 0
    assert run(capsys, "shop", "tag", "temu-1", "north", "--db", db)[0] == 0
    code, out, _ = run(capsys, "shops", "--json", "--db", db)
    assert {s["name"]: s["tags"] for s in json.loads(out)} == {
        "pdd-1": ["north", "华北"], "pdd-2": [], "temu-1": ["north"]}
    code, out, _ = run(capsys, "shops", "--shops", "platform:pdd tag:north", "--db", db)
    assert code == 0 and out.split()[0] == "pdd-1" and "temu-1" not in out
    assert run(capsys, "shop", "untag", "pdd-1", "华北", "--db", db)[0] == 0
    code, out, _ = run(capsys, "submit", tpl, "--shops", "tag:north", "--json", "--db", db)
    assert code == 0 and len(json.loads(out)["ids"]) == 2
    code, out, _ = run(capsys, "tasks", "--shops", "temu-*", "--json", "--db", db)
    assert [t["shop"] for t in json.loads(out)] == ["temu-1"]
    code, out, _ = run(capsys, "shop", "pause", "--shops", "tag:north", "--db", db)
    assert out.splitlines() == ["shop pdd-1 paused", "shop temu-1 paused"]


@pytest.mark.parametrize(("argv", "field"), [
    (["shop", "tag", "pdd-1", "no spaces"], "TAG[0]"),
    (["shops", "--shops", "tag:"], "--shops"),
    (["shops", "--shops", "tag:nobody"], "--shops"),
    (["tasks", "--shops", ""], "--shops"),
])
def test_bad_tags_and_selectors_name_the_field(db: str, capsys: pytest.CaptureFixture[str],
                                               argv: list[str], field: str) -> None:
    code, _, err = run(capsys, *argv, "--json", "--db", db)
    assert code == 2 and json.loads(err)["field"] == field


def test_a_template_with_a_shop_is_refused_by_submit_shops(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({**TEMPLATE, "shop": "pdd-1"}))
    code, _, err = run(capsys, "submit", str(f), "--shops", "*", "--db", db)
    assert code == 2 and "shop" in err
    assert "no tasks" in run(capsys, "tasks", "--db", db)[1]


def test_a_delayed_task_shows_as_scheduled_with_its_time(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({**TEMPLATE, "shop": "pdd-1", "delay_s": 3600}))
    assert run(capsys, "submit", str(f), "--db", db)[0] == 0
    _, out, _ = run(capsys, "tasks", "--state", "scheduled", "--db", db)
    assert "scheduled" in out and "joins the queue" in out
    _, out, _ = run(capsys, "task", "1", "--db", db)
    assert "scheduled: joins the queue at" in out


def test_schedule_commands(db: str, tpl: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "schedule", "add", "morning", "--cron", "0 8 * * *", "--tz",
                         "Asia/Shanghai", "--shops", "platform:pdd", "--task", tpl,
                         "--jitter", "10m", "--db", db)
    assert code == 0, err
    assert "2 shop(s)" in out and "08:00 CST" in out
    code, out, _ = run(capsys, "schedule", "list", "--json", "--db", db)
    (rec,) = json.loads(out)
    assert rec["name"] == "morning" and rec["definition"]["cron"] == "0 8 * * *"
    assert rec["next"][0].endswith("08:00:00+08:00")
    code, out, _ = run(capsys, "schedule", "show", "morning", "--next", "3", "--db", db)
    assert out.count("next") == 3
    code, out, _ = run(capsys, "schedule", "run-now", "morning", "--json", "--db", db)
    assert code == 0 and len(json.loads(out)["ids"]) == 2
    code, out, _ = run(capsys, "tasks", "--json", "--db", db)
    assert all(t["key"].startswith("sched:morning:") for t in json.loads(out))
    assert run(capsys, "schedule", "pause", "morning", "--db", db)[1].strip() == \
        "schedule morning paused"
    code, out, _ = run(capsys, "schedule", "list", "--db", db)
    assert "paused" in out
    assert run(capsys, "schedule", "resume", "morning", "--db", db)[0] == 0
    assert run(capsys, "schedule", "delete", "morning", "--db", db)[0] == 0
    code, _, err = run(capsys, "schedule", "show", "morning", "--json", "--db", db)
    assert code == 2 and json.loads(err)["field"] == "NAME"


@pytest.mark.parametrize(("opts", "task", "field"), [
    (["--cron", "0 8 * *"], TEMPLATE, "--cron"),
    (["--cron", "0 8 * * *", "--tz", "Mars/Base"], TEMPLATE, "--tz"),
    (["--every", "15m", "--between", "9-21"], TEMPLATE, "--between"),
    (["--every", "15m", "--shops", ""], TEMPLATE, "--shops"),
    (["--every", "15m", "--shops", "tag:nobody"], TEMPLATE, "--shops"),
    (["--every", "15m"], {**TEMPLATE, "shop": "pdd-1"}, "--task.shop"),
    (["--every", "15m"], {**TEMPLATE, "flow": "renamed"}, "--task.flow"),
    (["--every", "15m", "--jitter", "20m"], TEMPLATE, "--jitter"),
    (["--every", "15m", "--catch-up", "sometimes"], TEMPLATE, "--catch-up"),
    (["--every", "15m", "--until", "soon"], TEMPLATE, "--until"),
])
def test_schedule_add_bad_input_names_the_field_and_writes_nothing(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], opts: list[str],
        task: dict[str, object], field: str) -> None:
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(task))
    base = {"--tz": "UTC", "--shops": "*"}
    args = list(opts)
    for k, v in base.items():
        if k not in args:
            args += [k, v]
    code, _, err = run(capsys, "schedule", "add", "s", *args, "--task", str(f), "--json",
                       "--db", db)
    assert code == 2, err
    assert json.loads(err)["field"] == field
    assert json.loads(run(capsys, "schedule", "list", "--json", "--db", db)[1]) == []
