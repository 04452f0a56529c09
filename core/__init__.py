"""ShopFleet's core: the queue, the browser pool, the engine. No Qt here, ever.

The desktop and every other caller use only the names exported here; a test pins them, so a
change to this facade is a visible decision.
"""

from __future__ import annotations

from .clock import SYSTEM_CLOCK, Clock, SystemClock
from .config import Settings, load_settings, settings_from_dict
from .errors import (
    BacklogFull,
    BrowserCrashed,
    ConfigError,
    EnvironmentProblem,
    InvalidInput,
    LeaseLost,
    NeedsHuman,
    PageChanged,
    RateLimited,
    Refused,
    ShopFleetError,
    SiteFailed,
    SpecError,
    StepTimeout,
    StoreClosed,
    TaskError,
    UnknownTask,
)
from .specs import TaskSpec, parse_specs
from .store import (
    AsyncStore,
    ClaimedTask,
    QueueStatus,
    ShopRecord,
    SqliteStore,
    TaskEvent,
    TaskRecord,
    TaskState,
    new_owner_id,
)

__version__ = "0.1.0"

__all__ = [
    "SYSTEM_CLOCK",
    "AsyncStore",
    "BacklogFull",
    "BrowserCrashed",
    "ClaimedTask",
    "Clock",
    "ConfigError",
    "EnvironmentProblem",
    "InvalidInput",
    "LeaseLost",
    "NeedsHuman",
    "PageChanged",
    "QueueStatus",
    "RateLimited",
    "Refused",
    "Settings",
    "ShopFleetError",
    "ShopRecord",
    "SiteFailed",
    "SpecError",
    "SqliteStore",
    "StepTimeout",
    "StoreClosed",
    "SystemClock",
    "TaskError",
    "TaskEvent",
    "TaskRecord",
    "TaskSpec",
    "TaskState",
    "UnknownTask",
    "__version__",
    "load_settings",
    "new_owner_id",
    "parse_specs",
    "settings_from_dict",
]
