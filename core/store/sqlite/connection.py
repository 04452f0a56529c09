"""The SQLite store's connections: one writer thread, one reader per calling thread.

Writes go through one writer thread (:mod:`core.store.sqlite.writer`) that commits groups of
operations in ``BEGIN IMMEDIATE`` transactions; reads use a connection per calling thread.
:class:`SqliteConnections` opens and closes them, turns priority parts into queue keys, and
wakes submitters waiting for room; :mod:`core.store.sqlite.queue` and
:mod:`core.store.sqlite.store` build the store's methods on it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

from ...clock import SYSTEM_CLOCK, Clock
from ...config import Settings
from ...errors import (
    EnvironmentProblem,
    InvalidInput,
    Refused,
)
from ...paths import private_dir
from ...priority import (
    index_key,
    static_points,
)
from ..prepare import Validator
from . import sql
from .files import check_sqlite_version, inspect_database, private_file
from .schema import SCHEMA_VERSION, migrate
from .writer import Checkpointer, Writer, disk_full, is_disk_full

WAL_BACKSTOP_PAGES = 10_000
"""WAL size (pages) at which the writer checkpoints itself if the checkpointer falls behind."""


class SqliteConnections:
    """An SQLite store file's connections and writer thread (WAL mode).

    Opened with the arguments of :class:`core.store.sqlite.store.SqliteStore`, which is the
    one class built on it that anything outside this package uses.
    """

    def __init__(self, path: str | Path, *, settings: Settings | None = None,
                 clock: Clock = SYSTEM_CLOCK, validator: Validator | None = None,
                 readonly: bool = False, field: str = "database") -> None:
        check_sqlite_version()
        self.path = Path(path)
        version = inspect_database(self.path, field=field)
        if readonly and version is None:
            raise InvalidInput(field, f"no database at {self.path}")
        # An older schema still needs its migration, which only a writing open does.
        self.readonly = readonly and version is not None and version >= SCHEMA_VERSION
        if not self.readonly:
            private_dir(self.path.parent)
            private_file(self.path)
        self.url = f"sqlite:{self.path}"
        self.settings = settings or Settings()
        self.clock = clock
        self.validator = validator
        self._q = self.settings.queue
        self._p = self.settings.priority
        self._aging_per_s = self._p.aging_per_min / 60.0
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._room = threading.Condition()
        self._closed = False
        self._writer: Writer | None = None
        self._checkpointer: Checkpointer | None = None
        if self.readonly:
            return
        self._writer = Writer(self._connect_writer, group_max=self.settings.store.group_commit_max,
                              where=str(self.path))
        self._checkpointer = Checkpointer(self._connect)
        self._call(self._op_init)

    # -- connections --------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        target: str | Path = self.path
        if self.readonly:
            target = f"{self.path.resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False,
                               timeout=self.settings.store.busy_timeout_s,
                               uri=self.readonly)
        conn.execute(f"PRAGMA busy_timeout = {int(self.settings.store.busy_timeout_s * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _connect_writer(self) -> sqlite3.Connection:
        conn = self._connect()
        # Migrate before switching to WAL: a migration that fails leaves the file exactly as
        # it was (its transaction rolls back; the journal mode would not).
        try:
            migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            if is_disk_full(exc):
                raise disk_full(str(self.path)) from None
            raise EnvironmentProblem(
                f"cannot bring {self.path} to schema version {SCHEMA_VERSION}: {exc}; the file "
                "was left unchanged") from None
        except BaseException:
            conn.close()
            raise
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise EnvironmentProblem(f"cannot put {self.path} in WAL mode (got {mode}); "
                                     "is it on a network drive?")
        conn.execute(f"PRAGMA synchronous = {self.settings.store.synchronous}")
        # The checkpointer thread copies the WAL back off the commit path; this is only the
        # backstop (about 40 MB of WAL) should it fall behind.
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_BACKSTOP_PAGES}")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = 1")
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _call(self, op: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run a write op and wait for its commit (blocking: never on an event loop)."""
        return self._writer_or_refuse().run(op)

    def submit_op(self, op: Callable[[sqlite3.Connection], Any]) -> Any:
        """Queue a write operation; returns its ``concurrent.futures.Future``."""
        return self._writer_or_refuse().submit(op)

    def _writer_or_refuse(self) -> Writer:
        if self._writer is None:
            raise Refused(f"{self.path} is open read-only")
        return self._writer

    def close(self) -> None:
        """Commit what is pending, stop the writer and close every connection."""
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            self._writer.close()
        if self._checkpointer is not None:
            self._checkpointer.close()
        with self._readers_lock:
            for conn in self._readers:
                try:
                    conn.close()
                except sqlite3.ProgrammingError:
                    pass  # created in another thread that already closed it
            self._readers.clear()
        with self._room:
            self._room.notify_all()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- settings that keys depend on ------------------------------------------------------

    def _op_init(self, conn: sqlite3.Connection) -> None:
        """Rewrite queued keys if the aging rate changed since they were computed."""
        row = conn.execute(sql.AGING_RATE).fetchone()
        current = repr(self._p.aging_per_min)
        if row is None or row[0] != current:
            if row is not None:
                self._rekey(conn, "state IN ('queued', 'scheduled')")
            conn.execute(sql.SET_AGING_RATE, (current,))

    def _rekey(self, conn: sqlite3.Connection, where: str, params: Sequence[Any] = ()) -> int:
        rows = conn.execute(
            f"SELECT id, base, urgency, attempts, bump, queued_at FROM tasks WHERE {where}",
            params).fetchall()
        for tid, base, urg, attempts, bump, created in rows:
            conn.execute(sql.SET_TASK_KEY,
                         (self._key(base, urg, attempts, bump, created), tid))
        return len(rows)

    def _static(self, base: float, urgency: float, attempts: int, bump: float) -> float:
        return static_points(base=base, urgency=urgency, attempts=attempts, bump=bump,
                             retry_bonus=self._p.retry_bonus)

    def _key(self, base: float, urgency: float, attempts: int, bump: float,
             created: float) -> int:
        return index_key(self._static(base, urgency, attempts, bump), created, self._aging_per_s)

    def wait_for_room(self, timeout: float) -> bool:
        """Block until a task leaves the queue in this process, or ``timeout`` passes."""
        with self._room:
            return self._room.wait(timeout)

    def _room_freed(self) -> None:
        with self._room:
            self._room.notify_all()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read-only query on this thread's reader connection (blocking: call it off
        any event loop). Internal to this package (ticket book, pages, :class:`SqliteSource`);
        writes are refused by SQLite."""
        return self._reader().execute(sql, params).fetchall()

    def room_freed(self) -> None:
        self._room_freed()
