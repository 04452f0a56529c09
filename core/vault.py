"""Secrets at rest: one symmetric key, kept in the OS keychain when there is one.

The key is a Fernet key (AES-128-CBC + HMAC-SHA256, from ``cryptography``). Where it lives:

1. the OS keychain through ``keyring`` (service ``ShopFleet``, name ``vault-key``) when a real
   backend is available (macOS Keychain, Windows Credential Locker, Secret Service);
2. otherwise ``<data_dir>/vault.key``, created owner-only (0o600) in one atomic step. A key file
   that other users can read is refused, not silently used.

An existing key is always found before a new one is made (keychain first, then the file), so a
machine that gains a keychain later keeps reading what it wrote before. Losing the key makes the
encrypted data unreadable; decrypting then raises :class:`~core.errors.EnvironmentProblem`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import tempfile
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from .errors import EnvironmentProblem, VaultKeyError

log = logging.getLogger(__name__)

KEYRING_SERVICE = "ShopFleet"
KEYRING_NAME = "vault-key"
KEY_FILE = "vault.key"


def _keyring_usable() -> bool:
    """True when keyring has a backend that really stores secrets."""
    try:
        import keyring
        from keyring.backends import fail, null

        kr = keyring.get_keyring()
        if isinstance(kr, (fail.Keyring, null.Keyring)):
            return False
        # A chainer with nothing behind it stores nothing.
        backends = getattr(kr, "backends", None)
        return not (backends is not None and not backends)
    except Exception:  # keyring can raise anything from a broken backend's import
        return False


def _keyring_get() -> str | None:
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, KEYRING_NAME)
    except Exception as exc:  # a locked or broken keychain must not stop ShopFleet
        log.warning("OS keychain could not be read (%s); using the key file", exc)
        return None


def _keyring_set(key: str) -> bool:
    try:
        import keyring

        keyring.set_password(KEYRING_SERVICE, KEYRING_NAME, key)
        # Read it back: some backends accept a write they cannot keep.
        return keyring.get_password(KEYRING_SERVICE, KEYRING_NAME) == key
    except Exception as exc:
        log.warning("OS keychain could not store the vault key (%s); using a key file", exc)
        return False


def _check_key_file_private(path: Path) -> None:
    if os.name != "posix":
        return  # Windows ACLs: the file lives in the user's own profile folder
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise EnvironmentProblem(
            f"the vault key file {path} can be read by other users (mode {stat.S_IMODE(mode):o}); "
            f"ShopFleet will not use it. Run `chmod 600 {path}` and start again.")


def _read_key_file(path: Path) -> bytes:
    _check_key_file_private(path)
    key = path.read_bytes().strip()
    try:
        Fernet(key)
    except ValueError:
        raise EnvironmentProblem(
            f"the vault key file {path} is damaged (not a valid key). Restore it from a backup; "
            "deleting it makes saved sessions and shop credentials unreadable.") from None
    return key


def _check_not_dangling(path: Path) -> None:
    if path.is_symlink() and not path.exists():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise VaultKeyError(
            f"{path} is a link to {target}, which does not exist: restore the key file it points "
            "to (or remove the link); ShopFleet will not make a new key in its place")


def _create_key_file(path: Path) -> bytes:
    """Write a new key owner-only, atomically; if another process won the race, use its key."""
    from .paths import private_dir

    private_dir(path.parent)
    key = Fernet.generate_key()
    fd, tmp = tempfile.mkstemp(prefix=".vault-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if os.name == "posix":
                os.fchmod(f.fileno(), 0o600)
            f.write(key + b"\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            # A hard link never replaces an existing file: two processes starting at once end
            # up with the same key instead of one silently overwriting the other's.
            os.link(tmp, path)
        except FileExistsError:
            return _read_key_file(path)
        except OSError:
            os.replace(tmp, path)  # file systems without hard links
            tmp = ""
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return key


class Vault:
    """Encrypts and decrypts small secrets (sessions, shop credentials) with the machine's key.

    Open with :meth:`Vault.open`.
    """

    def __init__(self, key: bytes, *, where: str) -> None:
        self._fernet = Fernet(key)
        self.fingerprint = hashlib.sha256(b"ShopFleet vault key\0" + key.strip()).hexdigest()[:32]
        """Names the key without revealing it: the store keeps it to tell a wrong key."""
        self.where = where
        """Where the key lives, for the doctor and logs: ``keychain`` or the key file's path."""

    @classmethod
    def open(cls, data_dir: Path, *, use_keyring: bool = True, create: bool = True) -> Vault:
        """Find the vault key (making one the first time, unless ``create`` is false).

        Args:
            data_dir: the data folder holding ``vault.key`` when there is no keychain.
            use_keyring: False skips the OS keychain (tests, portable installs).
            create: False when data encrypted with a key exists: a missing key is then an
                error, never replaced by a new one.

        Raises:
            EnvironmentProblem: the key file is readable by others or damaged.
            VaultKeyError: ``vault.key`` is a dangling link, or there is no key and ``create``
                is false.
        """
        path = Path(data_dir) / KEY_FILE
        _check_not_dangling(path)
        # The data folder's own key file wins when it exists: two processes on one folder
        # (a worker and the CLI, a console and its engine) then always agree, even when only
        # one of them can reach the keychain.
        if path.exists():
            return cls(_read_key_file(path), where=str(path))
        if os.environ.get("SHOPFLEET_KEYCHAIN", "1") == "0":
            use_keyring = False  # tests and portable installs: a key file only
        keychain = use_keyring and _keyring_usable()
        if keychain:
            stored = _keyring_get()
            if stored:
                try:
                    return cls(stored.encode("ascii"), where="keychain")
                except ValueError:
                    log.warning("the vault key in the OS keychain is damaged; ignoring it")
        if not create:
            raise VaultKeyError(
                f"this database's passwords were encrypted with a vault.key that is not on this "
                f"machine (no {path}{' and none in the OS keychain' if keychain else ''}): copy "
                f"it from the machine that set them to {path}")
        if keychain:
            key = Fernet.generate_key()
            if _keyring_set(key.decode("ascii")):
                return cls(key, where="keychain")
        return cls(_create_key_file(path), where=str(path))

    def encrypt(self, data: bytes) -> bytes:
        """The data encrypted and authenticated (a Fernet token)."""
        return self._fernet.encrypt(data)

    def decrypt(self, token: bytes) -> bytes:
        """The data back.

        Raises:
            EnvironmentProblem: the token was made with another key (the vault key changed) or
                was altered.
        """
        try:
            return self._fernet.decrypt(token)
        except InvalidToken:
            raise EnvironmentProblem(
                "cannot decrypt saved data: the vault key changed since it was written "
                f"(key now in {self.where}), or the data was altered. Restore the previous key, "
                "or log the shops in again to save fresh sessions.") from None
