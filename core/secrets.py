"""Shop credentials at rest: encrypted with the vault key, decrypted only to fill a login form.

A password never appears in tasks, logs, events, evidence or the console; only the runner gets
it, through ``{shop.password}``, at the moment it types it.
"""

from __future__ import annotations

from pathlib import Path

from .paths import data_dir
from .vault import Vault


def open_vault(folder: Path | None = None) -> Vault:
    return Vault.open(folder or data_dir())


def encrypt_password(password: str, *, vault: Vault | None = None) -> bytes:
    return (vault or open_vault()).encrypt(password.encode("utf-8"))


def decrypt_password(token: bytes | None, *, vault: Vault | None = None) -> str:
    """The clear password, or ``""`` for a shop without one."""
    if not token:
        return ""
    return (vault or open_vault()).decrypt(token).decode("utf-8")

