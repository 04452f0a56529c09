"""A ShopFleet SQLite file opened read-only to be copied elsewhere (``shopfleet migrate``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...clock import Clock
from ...config import Settings
from .store import SqliteStore


class SqliteSource:
    """Rows of a ShopFleet database, read-only: the file is never changed (nor put in WAL).

    Args:
        path: the database file.
        settings: the configuration (the store opens with it).
        clock: the store's clock.
        field: the option named when the file is refused (e.g. ``--from``).
    """

    def __init__(self, path: Path, *, settings: Settings, clock: Clock,
                 field: str = "database") -> None:
        self._store = SqliteStore(path, settings=settings, clock=clock, readonly=True,
                                  field=field)
        self.url = self._store.url

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run one read-only statement (see :mod:`core.store.sqlite.sql`)."""
        return self._store._read(sql, params)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: every read inside it sees the same instant."""
        self._store._read("BEGIN")
        try:
            yield
        finally:
            self._store._read("COMMIT")

    def close(self) -> None:
        self._store.close()
