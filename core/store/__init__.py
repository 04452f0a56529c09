"""The store: durable queue, shops and event log. SQLite by default."""

from __future__ import annotations

from .aio import AsyncStore
from .records import ClaimedTask, QueueStatus, ShopRecord, TaskEvent, TaskRecord, TaskState
from .sqlite import SqliteStore, check_sqlite_version, domain_of, new_owner_id

__all__ = [
    "AsyncStore",
    "ClaimedTask",
    "QueueStatus",
    "ShopRecord",
    "SqliteStore",
    "TaskEvent",
    "TaskRecord",
    "TaskState",
    "check_sqlite_version",
    "domain_of",
    "new_owner_id",
]
