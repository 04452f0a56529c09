"""The :class:`Cli` context a command handler gets: settings, then the store, opened lazily.

Imported by every command module at start-up, so it imports nothing heavy itself (#20)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..config import Settings
    from ..store.base import Store

Handler = Callable[[argparse.Namespace, "Cli"], int]
"""A command: ``handler(args, cli)`` returns the exit code."""


@dataclass
class Cli:
    """What a command handler needs, opened lazily: settings, then the store."""

    args: argparse.Namespace
    _settings: Settings | None = None
    _store: Store | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            # Imported here, as everything a command needs (#20: `shopfleet --help` and a
            # bad argument pay for no settings, store or flows).
            from ..config import load_settings
            from ..paths import data_dir_path

            config = getattr(self.args, "config", None)
            if config is None:  # the console's settings dialog saves here
                default = data_dir_path() / "shopfleet.toml"
                config = default if default.exists() else None
            self._settings = load_settings(config)
        return self._settings

    @property
    def db_path(self) -> Path:
        from ..paths import default_db_path

        db = getattr(self.args, "db", None) or self.settings.store.path
        return Path(db).expanduser() if db else default_db_path()

    @property
    def store_url(self) -> str:
        """``--store URL`` or ``[store] url`` (empty: the SQLite file at ``db_path``)."""
        return str(getattr(self.args, "store", None) or self.settings.store.url or "")

    @property
    def where(self) -> str:
        """Where the queue is, for messages (no password)."""
        from ..urls import public_url

        return public_url(self.store.url if self._store is not None else (
            self.store_url or str(self.db_path)))

    @property
    def readonly(self) -> bool:
        """The command only reads: it must not create, migrate or change a database."""
        ro = getattr(self.args, "readonly", False)
        return bool(ro(self.args) if callable(ro) else ro)

    @property
    def store(self) -> Store:
        if self._store is None:
            from ..build import open_store

            via = "--store" if getattr(self.args, "store", None) else "store.url"
            try:
                self._store = open_store(self.settings, self.db_path, url=self.store_url,
                                         readonly=self.readonly, field="--db")
            except InvalidInput as exc:
                if exc.field == "store.url" and via == "--store":
                    raise InvalidInput("--store", exc.reason) from None
                raise
        return self._store

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    def out(self, obj: Any) -> None:
        print(json.dumps(obj, ensure_ascii=False, indent=None, default=str))

    def close(self) -> None:
        for closer in reversed(self.closers):
            closer()
        if self._store is not None:
            self._store.close()
