"""The SQLite store: one desktop's queue, shops, tickets and event log in one file.

:class:`SqliteStore` is the store; the modules behind it are this package's own: ``sql``
(every statement, by name), ``schema`` (numbered migrations), ``writer`` (the writer thread
and its group commit), ``queue`` (a task's life cycle), ``tickets`` and ``pages``.
"""

from __future__ import annotations

from .files import check_sqlite_version
from .store import SqliteStore

__all__ = ["SqliteStore", "check_sqlite_version"]
