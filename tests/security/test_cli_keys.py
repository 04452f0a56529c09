"""The vault key: the store keeps its fingerprint; with passwords stored and no key, or
another key, every command that needs it stops with one line saying what to copy; nothing
makes a new key then; a dangling ``vault.key`` link is a clear error."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from core.secrets import FINGERPRINT_META
from core.store import SqliteStore
from core.vault import KEY_FILE, Vault

from .clirun import digest, json_error, one_error_line, run, run_proc

BASE_URL = "http://pdd.shopfleet.test/shop/pdd-1"


def home() -> Path:
    return Path(os.environ["SHOPFLEET_HOME"])


def set_password(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                 db: Path | None, password: str, *extra: str) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
    where = ["--db", str(db)] if db is not None else []
    return run(capsys, "shop", "set-password", "pdd-1", "--stdin", *where, *extra)


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str],
       monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database with one shop whose password was set with this machine's key."""
    path = tmp_path / "q.db"
    code, _, err = run(capsys, "shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                       BASE_URL, "--username", "u1", "--db", str(path))
    assert code == 0, err
    code, _, err = set_password(capsys, monkeypatch, path, "first-pw")
    assert code == 0, err
    return path


def other_key() -> None:
    key = home() / KEY_FILE
    key.unlink()
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, Fernet.generate_key() + b"\n")
    os.close(fd)


def test_fingerprint_is_recorded_with_the_first_password(db: Path) -> None:
    vault = Vault.open(home(), use_keyring=False)
    with SqliteStore(db, readonly=True) as s:
        assert s.meta(FINGERPRINT_META) == vault.fingerprint
    assert vault.fingerprint not in (home() / KEY_FILE).read_text()  # names, never reveals


def test_missing_key_is_not_replaced(db: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (home() / KEY_FILE).unlink()
    before = digest(db)
    code, out, err = set_password(capsys, monkeypatch, db, "second-pw")
    assert code == 2 and out == ""
    line = one_error_line(err, "vault.key")
    assert "copy it from the machine that set them" in line
    assert not (home() / KEY_FILE).exists()  # no new key was made
    code, _, err = set_password(capsys, monkeypatch, db, "second-pw", "--json")
    assert code == 2
    json_error(err, "vault.key")
    assert not (home() / KEY_FILE).exists()
    assert digest(db) == before


def test_another_key_is_refused_everywhere(db: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    other_key()
    key_before = digest(home() / KEY_FILE)
    before = digest(db)
    code, _, err = set_password(capsys, monkeypatch, db, "second-pw")
    assert code == 2
    line = one_error_line(err, "vault.key")
    assert ("this database's passwords were encrypted with another vault.key: copy it from "
            "the machine that set them") in line
    flow = tmp_path / "f.json"
    flow.write_text(json.dumps({"name": "f", "start_url": "{shop.base_url}/",
                                "steps": [{"action": "wait_element", "locator": "body"}]}))
    code, _, err = run(capsys, "run-flow", str(flow), "--shop", "pdd-1", "--db", str(db))
    assert code == 2, err
    one_error_line(err, "vault.key")
    assert digest(db) == before and digest(home() / KEY_FILE) == key_before


def test_worker_refuses_to_start_with_another_key(db: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Not a traceback per task and a ticket each: the worker does not start at all."""
    task = tmp_path / "t.json"
    task.write_text(json.dumps({"type": "collect_data", "shop": "pdd-1",
                                "steps": [{"action": "navigate", "url": "{shop.base_url}/"}]}))
    code, _, err = run(capsys, "submit", str(task), "--db", str(db))
    assert code == 0, err
    other_key()
    proc = run_proc("worker", "--until-idle", "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    line = one_error_line(proc.stderr, "vault.key")
    assert "another vault.key" in line
    assert "worker " not in proc.stdout  # it never announced itself
    with SqliteStore(db, readonly=True) as s:
        t = s.tasks()[0]
        assert t.state.value == "queued" and t.attempts == 0
        assert s.ticket_book().tickets() == []


def test_database_from_before_fingerprints(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Passwords but no fingerprint (an older ShopFleet): one password tells."""
    db = tmp_path / "old.db"
    vault = Vault.open(home(), use_keyring=False)
    with SqliteStore(db) as s:
        s.add_shop("pdd-1", platform="pdd", base_url=BASE_URL, username="u1")
        s.update_shop("pdd-1", password_enc=vault.encrypt(b"old-pw"))
    original = (home() / KEY_FILE).read_bytes()
    other_key()
    code, _, err = set_password(capsys, monkeypatch, db, "new-pw")
    assert code == 2
    assert "another vault.key" in one_error_line(err, "vault.key")
    with SqliteStore(db, readonly=True) as s:
        assert s.meta(FINGERPRINT_META) is None
        assert vault.decrypt(s.shop_password_enc("pdd-1") or b"") == b"old-pw"
    # the right key back: accepted, and the fingerprint recorded from now on
    (home() / KEY_FILE).write_bytes(original)
    code, _, err = set_password(capsys, monkeypatch, db, "new-pw")
    assert code == 0, err
    with SqliteStore(db, readonly=True) as s:
        assert s.meta(FINGERPRINT_META) == vault.fingerprint


@pytest.mark.parametrize("argv", [
    ["shop", "set-password", "pdd-1", "--stdin"],
    ["worker", "--until-idle"],
])
def test_dangling_vault_key_link(argv: list[str], db: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    key = home() / KEY_FILE
    key.unlink()
    target = tmp_path / "usb-stick" / "vault.key"
    key.symlink_to(target)
    monkeypatch.setattr("sys.stdin", io.StringIO("pw\n"))
    before = digest(db)
    code, _, err = run(capsys, *argv, "--db", str(db))
    assert code == 2, err
    line = one_error_line(err, "vault.key")
    assert str(target) in line and "does not exist" in line
    monkeypatch.setattr("sys.stdin", io.StringIO("pw\n"))
    code, _, err = run(capsys, *argv, "--db", str(db), "--json")
    assert code == 2
    json_error(err, "vault.key")
    assert key.is_symlink() and not target.exists() and not target.parent.exists()
    assert digest(db) == before


def test_dangling_link_on_a_fresh_machine_is_not_replaced(tmp_path: Path) -> None:
    from core.errors import VaultKeyError

    folder = tmp_path / "data"
    folder.mkdir()
    (folder / KEY_FILE).symlink_to(folder / "gone.key")
    with pytest.raises(VaultKeyError):
        Vault.open(folder, use_keyring=False)
    assert not (folder / "gone.key").exists()


def test_fresh_database_without_passwords_still_makes_a_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "new.db"
    code, _, err = run(capsys, "shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                       BASE_URL, "--db", str(db))
    assert code == 0, err
    assert not (home() / KEY_FILE).exists()
    code, _, err = set_password(capsys, monkeypatch, db, "pw")
    assert code == 0, err
    assert (home() / KEY_FILE).exists()


def test_fleet_set_password_checks_the_fingerprint_first(
        redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Machine B (no key, then another key) must not re-encrypt machine A's shared password
    with a key nobody else has; A's password stays readable by A."""
    from core.build import open_store
    from core.config import Settings

    machine_a, machine_b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("SHOPFLEET_HOME", str(machine_a))
    code, _, err = run(capsys, "shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                       BASE_URL, "--username", "u1", "--store", redis_url)
    assert code == 0, err
    monkeypatch.setattr("sys.stdin", io.StringIO("a-pw\n"))
    code, _, err = run(capsys, "--store", redis_url, "shop", "set-password", "pdd-1",
                       "--stdin")
    assert code == 0, err
    store = open_store(Settings(), url=redis_url)
    try:
        token = store.shop_password_enc("pdd-1")
    finally:
        store.close()

    monkeypatch.setenv("SHOPFLEET_HOME", str(machine_b))
    for attempt in ("no key", "another key"):
        if attempt == "another key":
            machine_b.mkdir(mode=0o700, exist_ok=True)
            (machine_b / KEY_FILE).write_bytes(Fernet.generate_key())
            os.chmod(machine_b / KEY_FILE, 0o600)
        monkeypatch.setattr("sys.stdin", io.StringIO("b-pw\n"))
        code, out, err = run(capsys, "shop", "set-password", "pdd-1", "--stdin", "--store",
                             redis_url)
        assert code == 2 and out == "", attempt
        assert "copy it from the machine that set them" in one_error_line(err, "vault.key")
        if attempt == "no key":
            assert not (machine_b / KEY_FILE).exists()
        proc = run_proc("worker", "--until-idle", "--store", redis_url,
                        env={"SHOPFLEET_HOME": str(machine_b)})
        assert proc.returncode == 2, proc.stderr
        one_error_line(proc.stderr, "vault.key")

    store = open_store(Settings(), url=redis_url)
    try:
        assert store.shop_password_enc("pdd-1") == token
        assert Vault.open(machine_a, use_keyring=False).decrypt(token or b"") == b"a-pw"
    finally:
        store.close()
