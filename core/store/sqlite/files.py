"""The database file itself: the SQLite version, what a file holds, owner-only modes."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path

from ...errors import (
    EnvironmentProblem,
    InvalidInput,
)

MIN_SQLITE = (3, 35, 0)  # RETURNING


def check_sqlite_version(version: str = sqlite3.sqlite_version) -> None:
    """Refuse to run on an SQLite older than 3.35 (no ``RETURNING``), saying what to do."""
    parts = tuple(int(p) for p in version.split(".")[:3])
    if parts < MIN_SQLITE:
        raise EnvironmentProblem(
            f"SQLite {version} is too old: ShopFleet needs {'.'.join(map(str, MIN_SQLITE))} or "
            "newer (for UPDATE … RETURNING). Use a Python built with a newer SQLite "
            "(python.org builds and Python 3.12+ from most distributions have one).")


SHOPFLEET_TABLES = ("meta", "shops", "tasks", "task_events")
"""Tables every ShopFleet database has had since schema version 1."""


def inspect_database(path: Path, *, field: str = "database") -> int | None:
    """What is at ``path``: None when nothing (or an empty file) is there, else the schema
    version of the ShopFleet database there. Opens it read-only and changes nothing.

    Raises:
        InvalidInput: ``path`` is a folder, not an SQLite file, or an SQLite file of some other
            program (ShopFleet never adds its tables to a foreign database).
    """
    if path.is_dir():
        raise InvalidInput(field, f"{path} is a folder, not a database file")
    if not path.exists():
        if path.is_symlink():
            raise InvalidInput(field, f"{path} is a link to a file that does not exist")
        return None
    if path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise InvalidInput(field, f"cannot open {path}: {exc}") from None
    try:
        names = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
            raise InvalidInput(field, f"{path} is not a database (not an SQLite file); "
                               "nothing was written") from None
        raise InvalidInput(field, f"cannot read {path}: {exc}") from None
    finally:
        conn.close()
    if not names:
        return None  # an SQLite file with nothing in it yet
    if not set(SHOPFLEET_TABLES) <= names or version < 1:
        raise InvalidInput(field, f"{path} is an SQLite database of another program, not "
                           "ShopFleet's; it was left untouched (give --db a ShopFleet database "
                           "or a new file name)")
    return version


def private_file(path: Path) -> None:
    """Make sure the database file exists owner-only before SQLite opens it: SQLite gives its
    -wal and -shm files the database file's mode, so they are private too."""
    if os.name != "posix":
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077 and path.stat().st_uid == os.getuid():
            os.chmod(path, 0o600)  # an older ShopFleet made it 0644: close it now
            for side in ("-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.chmod(f"{path}{side}", 0o600)
        return
    os.fchmod(fd, 0o600)
    os.close(fd)
