"""The store: durable queue, shops and event log. SQLite by default.

The names below are loaded when first used (#20): importing ``core.store.records`` for a
record type must not import the SQLite store, sqlite-utils and the pydantic schemas behind it
(every ``shopfleet`` command pays its imports at start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .aio import AsyncStore as AsyncStore
    from .owners import new_owner_id as new_owner_id
    from .records import ClaimedTask as ClaimedTask
    from .records import QueueStatus as QueueStatus
    from .records import ShopRecord as ShopRecord
    from .records import TaskEvent as TaskEvent
    from .records import TaskRecord as TaskRecord
    from .records import TaskState as TaskState
    from .records import domain_of as domain_of
    from .sqlite import SqliteStore as SqliteStore
    from .sqlite import check_sqlite_version as check_sqlite_version

_WHERE: dict[str, str] = {
    "AsyncStore": ".aio",
    "ClaimedTask": ".records",
    "QueueStatus": ".records",
    "ShopRecord": ".records",
    "SqliteStore": ".sqlite",
    "TaskEvent": ".records",
    "TaskRecord": ".records",
    "TaskState": ".records",
    "check_sqlite_version": ".sqlite",
    "domain_of": ".records",
    "new_owner_id": ".owners",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
