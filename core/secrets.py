"""Shop credentials at rest: encrypted with the vault key, decrypted only to fill a login form.

A password never appears in tasks, logs, events, evidence or the console; only the runner gets
it, through ``{shop.password}``, at the moment it types it.

The store keeps the vault key's fingerprint (meta ``vault_key_fingerprint``) once a password is
saved. :func:`open_vault_for` checks it: with encrypted passwords present and no key, or another
key, it stops with :class:`~core.errors.VaultKeyError` saying what to copy — it never makes a
new key then (a new key would make every password unreadable, and on a fleet a worker would
re-encrypt a shared password with a key no other machine has).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import EnvironmentProblem, Refused, VaultKeyError
from .paths import data_dir
from .vault import Vault

if TYPE_CHECKING:
    from .store.base import Store

FINGERPRINT_META = "vault_key_fingerprint"
"""The store's meta entry naming the vault key its passwords were encrypted with."""
MISMATCH = ("this database's passwords were encrypted with another vault.key: copy it from the "
            "machine that set them")


def open_vault(folder: Path | None = None) -> Vault:
    return Vault.open(folder or data_dir())


def open_vault_for(store: Store, folder: Path | None = None) -> Vault:
    """The vault key that can read ``store``'s passwords (made the first time only when the
    store holds none).

    Raises:
        VaultKeyError: passwords are stored and this machine's key is missing or another one.
    """
    folder = folder or data_dir()
    recorded = store.meta(FINGERPRINT_META)
    sample = _sample_password(store) if recorded is None else None
    vault = Vault.open(folder, create=recorded is None and sample is None)
    if recorded is not None:
        if vault.fingerprint != recorded:
            raise VaultKeyError(f"{MISMATCH} (the key in {vault.where} is not it)")
        return vault
    if sample is not None:
        # A database from before fingerprints: one password tells whether the key fits.
        try:
            vault.decrypt(sample)
        except EnvironmentProblem:
            raise VaultKeyError(f"{MISMATCH} (the key in {vault.where} is not it)") from None
        with contextlib.suppress(Refused):  # a read-only open records it next time
            store.set_meta(FINGERPRINT_META, vault.fingerprint)
    return vault


def _sample_password(store: Store) -> bytes | None:
    for shop in store.shops():
        if shop.has_password:
            token = store.shop_password_enc(shop.name)
            if token:
                return token
        if shop.has_proxy_password:  # --- #17 shop profiles
            token = store.shop_proxy_password_enc(shop.name)
            if token:
                return token
    return None


def save_password(store: Store, shop: str, password: str, *, vault: Vault | None = None,
                  folder: Path | None = None) -> None:
    """Encrypt ``password`` with the key that matches ``store`` (checked first) and save it,
    recording the key's fingerprint the first time."""
    vault = vault or open_vault_for(store, folder)
    recorded = store.meta(FINGERPRINT_META)
    if recorded is not None and recorded != vault.fingerprint:
        raise VaultKeyError(f"{MISMATCH} (the key in {vault.where} is not it)")
    store.update_shop(shop, password_enc=vault.encrypt(password.encode("utf-8")))
    if recorded is None:
        store.set_meta(FINGERPRINT_META, vault.fingerprint)


def encrypt_password(password: str, *, vault: Vault | None = None) -> bytes:
    return (vault or open_vault()).encrypt(password.encode("utf-8"))


def decrypt_password(token: bytes | None, *, vault: Vault | None = None) -> str:
    """The clear password, or ``""`` for a shop without one."""
    if not token:
        return ""
    return (vault or open_vault()).decrypt(token).decode("utf-8")
