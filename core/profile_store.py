"""Reading and writing a shop's profile with its proxy password (#17): the blocking half of
:mod:`core.profiles`, which stays free of the store and the vault (they import it)."""

from __future__ import annotations

from typing import Any

from .config import Settings
from .profiles import ContextOptions, ProfileChange, context_options_for
from .store.base import Store
from .store.records import ShopRecord


def load_context_options(store: Store, name: str, settings: Settings | None,
                         vault: Any) -> ContextOptions:
    """Read the shop and decrypt its proxy password, then :func:`context_options_for`.

    Blocking (store reads, decryption): call it in a thread from an event loop.
    """
    from .secrets import decrypt_password

    shop = store.shop(name)
    password = ""
    if shop.profile.proxy and shop.has_proxy_password:
        password = decrypt_password(store.shop_proxy_password_enc(name), vault=vault)
    return context_options_for(shop, settings, proxy_password=password)


def save_profile(store: Store, name: str, change: ProfileChange, *, vault: Any = None,
                 folder: Any = None) -> ShopRecord:
    """Write a validated change: the profile, and the proxy password encrypted with the key
    that matches the store (checked first, as for the shop's own password). A proxy left
    unchanged keeps its stored password. Blocking."""
    from .errors import VaultKeyError
    from .secrets import FINGERPRINT_META, MISMATCH, open_vault_for

    if not change.proxy_changed:
        token = store.shop_proxy_password_enc(name) if change.profile.proxy else None
        return store.set_shop_profile(name, change.profile, proxy_password_enc=token)
    if not change.proxy_password:
        return store.set_shop_profile(name, change.profile, proxy_password_enc=None)
    vault = vault or open_vault_for(store, folder)
    recorded = store.meta(FINGERPRINT_META)
    if recorded is not None and recorded != vault.fingerprint:
        raise VaultKeyError(f"{MISMATCH} (the key in {vault.where} is not it)")
    token = vault.encrypt(change.proxy_password.encode("utf-8"))
    rec = store.set_shop_profile(name, change.profile, proxy_password_enc=token)
    if recorded is None:
        store.set_meta(FINGERPRINT_META, vault.fingerprint)
    return rec
