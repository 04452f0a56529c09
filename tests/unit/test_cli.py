"""The shopfleet command: outputs, exit codes, errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import main
from tests.security.clirun import shop_db


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return shop_db(tmp_path, monkeypatch)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_submit_status_tasks_bump_cancel(db: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    f = tmp_path / "t.jsonl"
    f.write_text('{"type": "collect_data", "shop": "pdd-1", "flow": "collect_data", '
                 '"params": {"page": 1}}\n'
                 '{"type": "campaign_signup", "shop": "pdd-1", "flow": "campaign_signup", '
                 '"key": "r1", "params": {"campaign_id": 3}}\n')
    code, out, _ = run(capsys, "submit", str(f), "--db", db)
    assert code == 0 and out.split() == ["1", "2"]
    code, out, _ = run(capsys, "status", "--json", "--db", db)
    st = json.loads(out)
    assert st["queued"] == 2 and st["counts"]["queued"] == 2
    code, out, _ = run(capsys, "tasks", "--state", "queued", "--json", "--db", db)
    assert [t["id"] for t in json.loads(out)] == [2, 1]
    code, out, _ = run(capsys, "bump", "1", "--to", "50", "--db", db)
    assert code == 0 and "50.000" in out
    code, out, _ = run(capsys, "tasks", "--state", "queued", "--json", "--db", db)
    assert [t["id"] for t in json.loads(out)] == [1, 2]
    code, out, _ = run(capsys, "cancel", "2", "--db", db)
    assert code == 0 and "cancelled" in out
    code, _, err = run(capsys, "cancel", "2", "--db", db)
    assert code == 1 and "already cancelled" in err
    code, out, _ = run(capsys, "task", "1", "--db", db)
    assert "bumped" in out


def test_bad_input_exits_2_with_the_field(db: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    f = tmp_path / "bad.json"
    f.write_text('[{"type": "collect_data", "shop": "pdd-1", "flow": "collect_data", '
                 '"params": {"page": 1}},'
                 ' {"type": "collect_data", "shop": "nope", "flow": "collect_data"}]')
    code, out, err = run(capsys, "submit", str(f), "--db", db)
    assert code == 2 and out == ""
    assert err.strip() == ("shopfleet: error: tasks[1].shop: no shop named 'nope' "
                           "(add it with 'shopfleet shop add')")
    code, _, err = run(capsys, "submit", str(f), "--json", "--db", db)
    assert code == 2 and json.loads(err)["field"] == "tasks[1].shop"
    code, out, _ = run(capsys, "status", "--json", "--db", db)
    assert json.loads(out)["queued"] == 0     # nothing of the batch was written
    code, _, err = run(capsys, "shop", "add", "x", "--platform", "pdd", "--base-url", "ftp://x",
                       "--db", db)
    assert code == 2 and "base_url" in err
    code, _, err = run(capsys, "tasks", "--limit", "0", "--db", db)
    assert code == 2 and "--limit" in err
    f.write_text('{"type": "collect_data", "shop": "pdd-1", "flow": "reply_customer", '
                 '"params": {"message_id": 1}}')
    code, _, err = run(capsys, "submit", str(f), "--db", db)
    assert code == 2
    assert "steps[" in err and "{params.reply}" in err


def test_full_backlog_exits_2(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[queue]\nmax_backlog = 1\nurgent_reserve = 0\n")
    f = tmp_path / "t.json"
    f.write_text('{"type": "collect_data", "shop": "pdd-1", "flow": "collect_data", '
                 '"params": {"page": 1}}')
    assert run(capsys, "submit", str(f), "--db", db, "--config", str(cfg))[0] == 0
    code, _, err = run(capsys, "submit", str(f), "--db", db, "--config", str(cfg))
    assert code == 2 and "queue full" in err


def test_bad_config_exits_2_naming_the_key(db: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[queue]\nmax_backlogg = 5\n")
    code, _, err = run(capsys, "status", "--db", db, "--config", str(cfg))
    assert code == 2 and "queue.max_backlogg: unknown key" in err


def test_password_is_stored_encrypted(db: str) -> None:
    import sqlite3

    blob = sqlite3.connect(db).execute("SELECT password_enc FROM shops").fetchone()[0]
    assert blob and b"s3cret-pw" not in blob


def test_console_script_runs(tmp_path: Path) -> None:
    from core.store import SqliteStore

    SqliteStore(tmp_path / "s.db").close()  # a read-only command never creates a database
    exe = Path(sys.executable).parent / "shopfleet"
    proc = subprocess.run([str(exe), "shops", "--db", str(tmp_path / "s.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "no shops" in proc.stdout


def test_status_of_an_empty_queue_says_none(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "status", "--db", db)
    assert code == 0
    assert "tasks:    none\n" in out


def test_schema_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema", "flow")
    assert code == 0 and json.loads(out)["title"] == "ShopFleet flow"
    code, out, _ = run(capsys, "schema", "task")
    assert code == 0 and "shop" in json.loads(out)["properties"]


def test_the_registration_list_gives_every_command_once() -> None:
    import argparse

    from core.cli.parser import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert sorted(sub.choices) == sorted([
        "submit", "status", "tasks", "task", "bump", "cancel", "preempt", "shops", "shop",
        "tickets", "ticket", "answer", "quarantine", "release", "kb", "rules", "worker",
        "workers", "demo", "demo-site", "console", "run-flow", "record", "schema", "doctor",
        "self-test", "migrate", "schedule", "results", "search", "notify", "takeover"])
    # every command answers: a handler, and --json for its errors
    for name, command in sub.choices.items():
        assert "--json" in command._option_string_actions, name
        assert command.description, name


def test_times_print_one_way() -> None:
    from core.cli.times import ago, when

    assert [ago(s) for s in (0, 59.9, 119, 120, 7199, 7200, 3 * 3600 + 5 * 60)] == [
        "0s", "59s", "119s", "2m", "119m", "2h00m", "3h05m"]
    assert when(None) == "-"
    assert len(when(0.0)) == len("1970-01-01 00:00:00")
