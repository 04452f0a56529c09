"""ShopFleet's core: the queue, the browser pool, the engine. No Qt here, ever.

The desktop and every other caller use only the names exported here; a test pins them, so a
change to this facade is a visible decision.
"""

from __future__ import annotations

from .clock import SYSTEM_CLOCK, Clock, SystemClock
from .config import Settings, load_settings, settings_from_dict
from .demo import demo_settings, demo_specs, register_demo_shops
from .demosite import DemoSite
from .engine import (
    BreakerState,
    BreakerView,
    Engine,
    EngineStatistics,
    GateLevel,
    NoopExecutor,
    Outcome,
    TaskControl,
)
from .engine.build import build_engine, open_store
from .engine.host import EngineHost
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
from .events import (
    BreakerChanged,
    Changes,
    DomainPaused,
    EngineProblem,
    EngineStopped,
    Event,
    EventBus,
    GateChanged,
    GateHeld,
    ShopPaused,
    TaskBumped,
    TaskProgress,
    TasksSubmitted,
    TaskStateChanged,
)
from .paths import data_dir, default_db_path, resources_dir
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
    "BreakerChanged",
    "BreakerState",
    "BreakerView",
    "BrowserCrashed",
    "Changes",
    "ClaimedTask",
    "Clock",
    "ConfigError",
    "DemoSite",
    "DomainPaused",
    "Engine",
    "EngineHost",
    "EngineProblem",
    "EngineStatistics",
    "EngineStopped",
    "EnvironmentProblem",
    "Event",
    "EventBus",
    "GateChanged",
    "GateHeld",
    "GateLevel",
    "InvalidInput",
    "LeaseLost",
    "NeedsHuman",
    "NoopExecutor",
    "Outcome",
    "PageChanged",
    "QueueStatus",
    "RateLimited",
    "Refused",
    "Settings",
    "ShopFleetError",
    "ShopPaused",
    "ShopRecord",
    "SiteFailed",
    "SpecError",
    "SqliteStore",
    "StepTimeout",
    "StoreClosed",
    "SystemClock",
    "TaskBumped",
    "TaskControl",
    "TaskError",
    "TaskEvent",
    "TaskProgress",
    "TaskRecord",
    "TaskSpec",
    "TaskState",
    "TaskStateChanged",
    "TasksSubmitted",
    "UnknownTask",
    "__version__",
    "build_engine",
    "data_dir",
    "default_db_path",
    "demo_settings",
    "demo_specs",
    "load_settings",
    "new_owner_id",
    "open_store",
    "parse_specs",
    "register_demo_shops",
    "resources_dir",
    "settings_from_dict",
]
