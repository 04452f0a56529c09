"""Browsers: finding one (:mod:`.discovery`), pooling them (:mod:`.pool`), faking them
(:mod:`.fake`)."""

from .discovery import (
    BrowserChoice,
    DoctorReport,
    Finding,
    discover,
    doctor,
    launch_args,
    register_cli,
)
from .pool import (
    BrowserHandle,
    BrowserPool,
    ContextHandle,
    Launcher,
    PlaywrightLauncher,
    PoolStats,
    SessionStore,
    TaskContext,
)

__all__ = [
    "BrowserChoice",
    "BrowserHandle",
    "BrowserPool",
    "ContextHandle",
    "DoctorReport",
    "Finding",
    "Launcher",
    "PlaywrightLauncher",
    "PoolStats",
    "SessionStore",
    "TaskContext",
    "discover",
    "doctor",
    "launch_args",
    "register_cli",
]
