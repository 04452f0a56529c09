"""Read-only commands never create or change a database; foreign files are refused untouched;
a failed migration leaves the file as it was; ``user_version`` is written only on a change."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core.store import SqliteStore
from core.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

from .clirun import digest, json_error, one_error_line, run, run_proc, tree

READ_ONLY = [
    ["status"], ["tasks"], ["task", "1"], ["shops"], ["tickets"], ["ticket", "1"], ["kb"],
    ["rules"], ["quarantine"], ["workers"], ["run-flow", "collect_data", "--shop", "pdd-1"],
]
WRITING = [
    ["shop", "add", "x", "--platform", "pdd", "--base-url", "http://pdd.shopfleet.test/x"],
    ["cancel", "1"], ["bump", "1", "--by", "1"], ["workers", "--recover"],
]


@pytest.mark.parametrize("argv", READ_ONLY, ids=lambda a: " ".join(a))
def test_missing_database_is_an_error_and_nothing_is_created(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "mistyped" / "folder" / "shopfleet.db"
    code, out, err = run(capsys, *argv, "--db", str(db))
    assert code == 2 and out == ""
    line = one_error_line(err, "--db")
    assert f"no database at {db}" in line
    assert not (tmp_path / "mistyped").exists()
    code, _, err = run(capsys, "--db", str(db), *argv, "--json")
    assert code == 2
    assert json_error(err, "--db")["error"].endswith(f"no database at {db}")
    assert not (tmp_path / "mistyped").exists()


def test_fresh_machine_status_creates_no_data_folder(tmp_path: Path) -> None:
    """The console's first-run wizard shows when no database exists: `status` must not make
    one (nor the data folder)."""
    home = tmp_path / "fresh-home"
    proc = run_proc("status", env={"SHOPFLEET_HOME": str(home)})
    assert proc.returncode == 2, proc.stderr
    assert "no database at" in proc.stderr and "Traceback" not in proc.stderr
    assert not home.exists()


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                       "INSERT INTO customers (name) VALUES ('Ada'), ('Grace');")
    conn.close()


@pytest.mark.parametrize("argv", READ_ONLY + WRITING, ids=lambda a: " ".join(a))
def test_foreign_sqlite_file_is_refused_untouched(argv: list[str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "crm.sqlite"
    _foreign(db)
    before = tree(tmp_path)
    code, out, err = run(capsys, "--db", str(db), *argv, "--json")
    assert code == 2 and out == ""
    obj = json_error(err, "--db")
    assert "another program" in obj["error"]
    assert tree(tmp_path) == before  # same bytes, no -wal, no -journal
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")] \
        == ["customers"]
    conn.close()


@pytest.mark.parametrize("argv", [["status"], ["submit", "TASK"], ["shops"]],
                         ids=lambda a: " ".join(a))
def test_text_file_or_folder_as_db(argv: list[str], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    task = tmp_path / "t.json"
    task.write_text('{"type": "collect_data", "shop": "pdd-1", "flow": "collect_data", '
                    '"params": {"page": 1}}', encoding="utf-8")
    argv = [str(task) if a == "TASK" else a for a in argv]
    text = tmp_path / "notes.txt"
    text.write_text("these are my notes, not a database\n" * 20, encoding="utf-8")
    before = tree(tmp_path)
    code, out, err = run(capsys, *argv, "--db", str(text))
    assert code == 2 and out == ""
    assert "not a database" in one_error_line(err, "--db")
    code, out, err = run(capsys, *argv, "--db", str(tmp_path), "--json")
    assert code == 2
    assert "is a folder" in json_error(err, "--db")["error"]
    assert tree(tmp_path) == before


def _shopfleet_db(path: Path) -> None:
    with SqliteStore(path) as s:
        s.add_shop("pdd-1", platform="pdd", base_url="http://pdd.shopfleet.test/s")


@pytest.mark.parametrize("argv", READ_ONLY, ids=lambda a: " ".join(a))
def test_read_only_commands_leave_the_database_bytes_alone(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "q.db"
    _shopfleet_db(db)
    before = digest(db)
    code, _, err = run(capsys, *argv, "--db", str(db))
    assert code in (0, 2), err  # task 1 / ticket 1 do not exist: exit 2, said in one line
    assert "Traceback" not in err
    assert digest(db) == before


def test_user_version_is_written_only_when_it_changes(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    _shopfleet_db(db)
    before = digest(db)
    with SqliteStore(db):  # a writing open at the current version migrates nothing
        pass
    assert digest(db) == before


def test_failed_migration_leaves_the_file_unchanged(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A database at version 4 whose v5 step cannot apply (the column exists already)."""
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for sql in MIGRATIONS[:4]:
        conn.executescript(sql)
    conn.execute("ALTER TABLE tasks ADD COLUMN preempt_requested TEXT")  # makes v5 fail
    conn.execute("PRAGMA user_version = 4")
    conn.close()
    before = tree(tmp_path)
    code, out, err = run(capsys, "shop", "add", "x", "--platform", "pdd", "--base-url",
                         "http://pdd.shopfleet.test/x", "--db", str(db))
    assert code == 1 and out == ""
    line = one_error_line(err, str(db))
    assert f"schema version {SCHEMA_VERSION}" in line and "unchanged" in line
    assert tree(tmp_path) == before
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


def test_read_only_store_refuses_writes(tmp_path: Path) -> None:
    from core.errors import Refused

    db = tmp_path / "q.db"
    _shopfleet_db(db)
    before = digest(db)
    store = SqliteStore(db, readonly=True)
    try:
        assert [s.name for s in store.shops()] == ["pdd-1"]
        with pytest.raises(Refused):
            store.set_shop_paused("pdd-1", True)
    finally:
        store.close()
    assert digest(db) == before
