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
    """The data folder, created on first use, private to the user (0700 on POSIX)."""
    path = data_dir_path()
    if not path.is_dir():
        private_dir(path)
    return path


def data_dir_path() -> Path:
    """Where the data folder is, without creating it (read-only commands)."""
    env = os.environ.get("SHOPFLEET_HOME")
    return Path(env) if env else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_db_path() -> Path:
    """The default database file (its folder is not created here: whoever writes does)."""
    return data_dir_path() / "shopfleet.db"


def resources_dir() -> Path:
    """The shipped resources (flows, demo site pages, icons), also inside a frozen app."""
    import sys

    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        return Path(frozen) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) private to the user (0700 on POSIX)."""
    missing = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        if os.name == "posix":
            os.chmod(d, 0o700)  # mkdir's mode passes through the umask; say it exactly
