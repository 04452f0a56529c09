"""Shops' saved browser sessions (cookies, local storage), one encrypted file per shop."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ..errors import ShopFleetError
from ..paths import private_dir
from ..vault import Vault

log = logging.getLogger(__name__)


class SessionStore:
    """Shops' saved browser sessions, one encrypted file per shop.

    A session that cannot be read back (the vault key changed, a damaged file) is logged and
    treated as absent: the shop's flow logs in again and the next save replaces it.
    """

    def __init__(self, directory: Path, vault: Vault) -> None:
        self.directory = Path(directory)
        self._vault = vault

    def path_for(self, shop: str) -> Path:
        """The file of a shop's session (a readable stem plus a hash: any shop name is safe)."""
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", shop)[:40] or "shop"
        digest = hashlib.sha256(shop.encode("utf-8")).hexdigest()[:12]
        return self.directory / f"{stem}-{digest}.session"

    async def load(self, shop: str) -> dict[str, Any] | None:
        """The shop's saved storage state, or None."""
        return await asyncio.to_thread(self._load, shop)

    async def save(self, shop: str, state: dict[str, Any]) -> None:
        """Save (replace) the shop's storage state, encrypted, atomically."""
        await asyncio.to_thread(self._save, shop, state)

    def _load(self, shop: str) -> dict[str, Any] | None:
        path = self.path_for(shop)
        try:
            token = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            data = json.loads(self._vault.decrypt(token))
        except (ShopFleetError, ValueError) as exc:
            log.warning("saved session of shop %r is unreadable, starting without it: %s",
                        shop, exc)
            return None
        return data if isinstance(data, dict) else None

    def _save(self, shop: str, state: dict[str, Any]) -> None:
        private_dir(self.directory)  # mkstemp below makes the file itself 0600
        token = self._vault.encrypt(json.dumps(state, separators=(",", ":")).encode("utf-8"))
        path = self.path_for(shop)
        fd, tmp = tempfile.mkstemp(prefix=".session-", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(token)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


# --------------------------------------------------------------------------- the pool
