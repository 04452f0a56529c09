"""Browsers: finding one (:mod:`.discovery`), installing one (:mod:`.install`), pooling them
(:mod:`.pool`, over the protocols in :mod:`.base`), driving Chromium (:mod:`.playwright`), the
shops' saved sessions (:mod:`.sessions`), faking them (:mod:`.fake`)."""

from .base import BrowserHandle, ContextHandle, Launcher
from .discovery import (
    BrowserChoice,
    DoctorReport,
    Finding,
    discover,
    doctor,
    launch_args,
)
from .playwright import PlaywrightLauncher
from .pool import BrowserPool, PoolStats, TaskContext
from .sessions import SessionStore

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
]
