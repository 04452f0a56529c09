"""The store: durable queue, shops and event log. SQLite by default."""

from __future__ import annotations

from .aio import AsyncStore
from .owners import new_owner_id
from .records import (
    ClaimedTask,
    QueueStatus,
    ShopRecord,
    TaskEvent,
    TaskRecord,
    TaskState,
    domain_of,
)
from .sqlite import SqliteStore, check_sqlite_version

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
