"""The data folder is private to its user: folder 0700; database, -wal, -shm, vault key and
saved sessions 0600 — whatever the umask says (POSIX)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.browser.sessions import SessionStore
from core.paths import data_dir
from core.store import SqliteStore
from core.vault import Vault

from .clirun import run

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest umask: whatever ShopFleet creates must still be private."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_data_folder_database_wal_shm_are_private(tmp_path: Path, open_umask: None,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home" / "ShopFleet"
    monkeypatch.setenv("SHOPFLEET_HOME", str(home))
    code, _, err = run(capsys, "shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                       "http://pdd.shopfleet.test/s")
    assert code == 0, err
    assert mode(home) == 0o700
    assert mode(tmp_path / "home") == 0o700  # every folder ShopFleet made
    db = home / "shopfleet.db"
    assert mode(db) == 0o600
    store = SqliteStore(db)  # open: -wal and -shm exist while a store is open
    try:
        store.add_shop("pdd-2", platform="pdd", base_url="http://pdd.shopfleet.test/t")
        for side in ("shopfleet.db-wal", "shopfleet.db-shm"):
            assert (home / side).exists()
            assert mode(home / side) == 0o600, side
    finally:
        store.close()


def test_db_in_a_new_folder_given_by_db(tmp_path: Path, open_umask: None,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "new" / "deeper" / "q.db"
    code, _, err = run(capsys, "shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                       "http://pdd.shopfleet.test/s", "--db", str(db))
    assert code == 0, err
    assert mode(tmp_path / "new") == 0o700 and mode(db.parent) == 0o700
    assert mode(db) == 0o600


def test_an_existing_loose_database_is_closed_when_opened_for_writing(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    SqliteStore(db).close()
    os.chmod(db, 0o644)  # as an older ShopFleet left it
    SqliteStore(db).close()
    assert mode(db) == 0o600


def test_data_dir_and_vault_key(tmp_path: Path, open_umask: None,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "h"
    monkeypatch.setenv("SHOPFLEET_HOME", str(home))
    assert data_dir() == home
    assert mode(home) == 0o700
    Vault.open(home, use_keyring=False)
    assert mode(home / "vault.key") == 0o600


def test_saved_sessions_are_private(tmp_path: Path, open_umask: None) -> None:
    vault = Vault.open(tmp_path, use_keyring=False)
    sessions = SessionStore(tmp_path / "sessions", vault)
    sessions._save("pdd-1", {"cookies": [{"name": "sid", "value": "abc"}], "origins": []})
    folder = tmp_path / "sessions"
    assert mode(folder) == 0o700
    files = [p for p in folder.iterdir() if p.is_file()]
    assert files and all(mode(p) == 0o600 for p in files)
