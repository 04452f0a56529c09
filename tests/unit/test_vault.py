"""The vault: secrets encrypted with a key kept in the OS keychain or an owner-only file."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail

from core.errors import EnvironmentProblem
from core.vault import KEY_FILE, KEYRING_NAME, KEYRING_SERVICE, Vault

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


class BrokenKeyring(MemoryKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        raise RuntimeError("keychain is locked")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise RuntimeError("keychain is locked")


@pytest.fixture
def restore_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("SHOPFLEET_KEYCHAIN", raising=False)  # these tests use a keychain
    before = keyring.get_keyring()
    yield
    keyring.set_keyring(before)


def test_roundtrip_and_the_same_key_next_time(tmp_path: Path) -> None:
    v = Vault.open(tmp_path, use_keyring=False)
    token = v.encrypt(b"password=hunter2")
    assert b"hunter2" not in token
    assert Vault.open(tmp_path, use_keyring=False).decrypt(token) == b"password=hunter2"


@posix_only
def test_key_file_is_owner_only_and_no_temp_file_is_left(tmp_path: Path) -> None:
    Vault.open(tmp_path, use_keyring=False)
    key = tmp_path / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE]


def test_wrong_key_says_the_vault_key_changed(tmp_path: Path) -> None:
    token = Vault.open(tmp_path / "a", use_keyring=False).encrypt(b"secret")
    other = Vault.open(tmp_path / "b", use_keyring=False)
    with pytest.raises(EnvironmentProblem, match="vault key changed"):
        other.decrypt(token)


def test_tampered_data_is_refused(tmp_path: Path) -> None:
    v = Vault.open(tmp_path, use_keyring=False)
    token = bytearray(v.encrypt(b"secret"))
    token[-5] ^= 1
    with pytest.raises(EnvironmentProblem):
        v.decrypt(bytes(token))


@posix_only
def test_key_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    Vault.open(tmp_path, use_keyring=False)
    (tmp_path / KEY_FILE).chmod(0o644)
    with pytest.raises(EnvironmentProblem, match="chmod 600"):
        Vault.open(tmp_path, use_keyring=False)


def test_damaged_key_file_is_refused_not_replaced(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_bytes(b"not a key")
    if os.name == "posix":
        (tmp_path / KEY_FILE).chmod(0o600)
    with pytest.raises(EnvironmentProblem, match="damaged"):
        Vault.open(tmp_path, use_keyring=False)
    assert (tmp_path / KEY_FILE).read_bytes() == b"not a key"


def test_key_lives_in_the_keychain_when_there_is_one(tmp_path: Path,
                                                     restore_keyring: None) -> None:
    kr = MemoryKeyring()
    keyring.set_keyring(kr)
    v = Vault.open(tmp_path)
    assert v.where == "keychain"
    assert (KEYRING_SERVICE, KEYRING_NAME) in kr.store
    assert not (tmp_path / KEY_FILE).exists()
    assert Vault.open(tmp_path).decrypt(v.encrypt(b"x")) == b"x"


def test_the_folders_key_file_wins_over_the_keychain(tmp_path: Path,
                                                     restore_keyring: None) -> None:
    """A worker without keychain access and a console with it, on one data folder: both
    must use the same key (the one in the folder)."""
    without = Vault.open(tmp_path, use_keyring=False)          # writes the key file
    keyring.set_keyring(MemoryKeyring())
    with_keychain = Vault.open(tmp_path)
    assert with_keychain.where == str(tmp_path / KEY_FILE)
    assert with_keychain.decrypt(without.encrypt(b"pw")) == b"pw"


def test_fail_backend_and_broken_keychain_fall_back_to_the_file(
        tmp_path: Path, restore_keyring: None) -> None:
    keyring.set_keyring(fail.Keyring())
    v1 = Vault.open(tmp_path)
    assert v1.where == str(tmp_path / KEY_FILE)
    keyring.set_keyring(BrokenKeyring())
    v2 = Vault.open(tmp_path)
    assert v2.decrypt(v1.encrypt(b"x")) == b"x"


def test_a_key_file_made_before_a_keychain_existed_is_still_used(
        tmp_path: Path, restore_keyring: None) -> None:
    token = Vault.open(tmp_path, use_keyring=False).encrypt(b"old session")
    keyring.set_keyring(MemoryKeyring())
    assert Vault.open(tmp_path).decrypt(token) == b"old session"
