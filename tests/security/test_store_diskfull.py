"""A full disk: one line saying so, exit 1, and nothing acknowledged is lost.

Two ways to fill it: SQLite's own page limit (``PRAGMA max_page_count`` on every connection
of the store: the same SQLITE_FULL a full disk gives, anywhere), and a real tiny tmpfs where
this machine lets the test mount one (root in a container or CI runner)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.store import SqliteStore

from .clirun import json_error, one_error_line, run, run_proc

TASK = {"type": "collect_data", "shop": "pdd-1",
        "steps": [{"action": "navigate", "url": "{shop.base_url}/orders"}],
        "params": {"page": 1, "note": "x" * 6000}}


def _batch(tmp_path: Path, n: int = 3) -> Path:
    f = tmp_path / "batch.json"
    f.write_text(json.dumps([TASK] * n), encoding="utf-8")
    return f


def _new_db(path: Path) -> None:
    with SqliteStore(path) as s:
        s.add_shop("pdd-1", platform="pdd", base_url="http://pdd.shopfleet.test/shop/pdd-1",
                   username="pdd-1-user")


def _ids_in(path: Path) -> set[int]:
    with SqliteStore(path, readonly=True) as s:
        return {t.id for t in s.tasks(limit=100_000)}


def test_page_limit_disk_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "q.db"
    _new_db(db)
    connect = SqliteStore._connect
    conn = sqlite3.connect(db)
    limit = conn.execute("PRAGMA page_count").fetchone()[0] + 40  # the "disk": 40 pages more
    conn.close()

    def limited(self: SqliteStore) -> sqlite3.Connection:
        conn = connect(self)
        conn.execute(f"PRAGMA max_page_count = {limit}")
        return conn

    monkeypatch.setattr(SqliteStore, "_connect", limited)
    batch = _batch(tmp_path)
    acknowledged: set[int] = set()
    for _ in range(50):
        code, out, err = run(capsys, "submit", str(batch), "--db", str(db), "--json")
        if code != 0:
            break
        acknowledged |= set(json.loads(out)["ids"])
    else:
        pytest.fail("the page limit never filled")
    assert code == 1 and out == ""
    obj = json_error(err)
    assert obj["kind"] == "DiskFull" and "is full" in obj["error"]
    assert "cannot rollback" not in err
    code, out, err = run(capsys, "submit", str(batch), "--db", str(db))
    assert code == 1
    assert "disk holding" in one_error_line(err, str(db))
    monkeypatch.setattr(SqliteStore, "_connect", connect)
    assert acknowledged and _ids_in(db) == acknowledged  # all kept, the refused batch whole out


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    mount = shutil.which("mount")
    proc = subprocess.run([mount or "mount", "-t", "tmpfs", "-o", "size=640k", "tmpfs",
                           str(mnt)], capture_output=True) if mount else None
    if proc is None or proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); the page-limit test covers it")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_real_full_disk(tmp_path: Path, tiny_disk: Path) -> None:
    db = tiny_disk / "q.db"
    _new_db(db)
    batch = _batch(tmp_path)
    acknowledged: set[int] = set()
    for _ in range(200):
        proc = run_proc("submit", str(batch), "--db", str(db), "--json")
        if proc.returncode != 0:
            break
        acknowledged |= set(json.loads(proc.stdout)["ids"])
    else:
        pytest.fail("the tmpfs never filled")
    assert proc.returncode == 1, proc.stderr
    obj = json_error(proc.stderr)
    assert obj["kind"] == "DiskFull", obj
    assert "cannot rollback" not in proc.stderr
    # every other command still says the same one line, not a traceback
    proc = run_proc("cancel", str(min(acknowledged)), "--db", str(db))
    assert proc.returncode == 1 and "is full" in one_error_line(proc.stderr, str(db))
    # reading still works on the full disk, and everything acknowledged is there
    proc = run_proc("status", "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["queued"] == len(acknowledged)
    assert acknowledged and _ids_in(db) == acknowledged
