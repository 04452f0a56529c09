"""Where ShopFleet keeps its files: the user's data directory (platformdirs).

``SHOPFLEET_HOME`` overrides it (tests, portable installs). Layout::

    <data>/shopfleet.db      the store (tasks, shops, events, checkpoints, tickets)
    <data>/evidence/         screenshots, DOM snapshots and step logs of failed attempts
    <data>/sessions/         shops' saved browser sessions, encrypted
    <data>/vault.key         the encryption key where the OS has no keychain (owner-only)
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "ShopFleet"


def data_dir() -> Path:
    """The data folder, created on first use."""
    env = os.environ.get("SHOPFLEET_HOME")
    path = Path(env) if env else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_db_path() -> Path:
    return data_dir() / "shopfleet.db"


def resources_dir() -> Path:
    """The shipped resources (flows, demo site pages, icons), also inside a frozen app."""
    import sys

    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        return Path(frozen) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"
