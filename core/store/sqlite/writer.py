"""The one writer thread: owns the write connection and commits groups of changes together.

Callers hand it an operation (a function of the connection) and get a
``concurrent.futures.Future``; async callers await it with ``asyncio.wrap_future`` and never
block their loop. The thread takes every operation waiting at that moment (up to
``group_commit_max``), runs each inside its own SAVEPOINT — a failing operation rolls back alone
and its caller gets the exception — and commits them all with one ``COMMIT``: one fsync for the
group, which is what keeps ``synchronous=FULL`` fast under concurrency. A future resolves only
after the commit, so an acknowledged change is on disk.

A blocking caller (:meth:`Writer.run`: a thread or the command line, never an event loop) that
finds no batch running and nothing waiting runs its operation on its own thread instead of
handing it over: the same lock, transaction and commit, without two thread switches per call
(LevelDB's writers do the same: the first in line writes). Whenever a batch is running or
waiting, it queues like everyone else, so concurrent callers still share commits.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from ...errors import DiskFull, StoreClosed

T = TypeVar("T")
Op = Callable[[sqlite3.Connection], Any]
_STOP = object()


class Writer:
    """Serialises every write of one store onto one thread and connection."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, group_max: int,
                 name: str = "shopfleet-writer", where: str = "the database") -> None:
        self._connect = connect
        self._where = where
        self._group_max = group_max
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._ready: Future[None] = Future()
        self._lock = threading.Lock()
        """Held while a batch runs, on whichever thread runs it."""
        self._waiting = False
        """The writer thread holds a queued batch and waits for the lock (callers queue)."""
        self._conn: sqlite3.Connection | None = None
        self.commits = 0
        self.ops = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.result()  # surface connection errors to the opener

    def submit(self, op: Callable[[sqlite3.Connection], T]) -> Future[T]:
        """Queue ``op``; its future resolves after the transaction holding it has committed."""
        fut: Future[T] = Future()
        if self._closed:
            fut.set_exception(StoreClosed("the store is closed"))
            return fut
        self._queue.put((op, fut))
        return fut

    def run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` and return its result once committed, blocking the calling thread.

        Never call it on an event loop (use :meth:`submit` and await the future there). With
        no batch running or waiting, the op runs right here in its own transaction; else it
        joins the writer thread's next group.
        """
        fut: Future[T] = Future()
        if self._closed:
            raise StoreClosed("the store is closed")
        if not self._waiting and self._lock.acquire(blocking=False):
            try:
                if self._conn is None:
                    raise StoreClosed("the store is closed")
                self._run_batch(self._conn, [(op, fut)])
            finally:
                self._lock.release()
        else:
            self._queue.put((op, fut))
        return fut.result()

    def close(self, timeout: float = 30.0) -> None:
        """Commit what is queued, then stop the thread and close the connection."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._conn = conn
        self._ready.set_result(None)
        stopping = False
        try:
            while not stopping:
                first = self._queue.get()
                if first is _STOP:
                    break
                batch = [first]
                self._waiting = True
                with self._lock:
                    self._waiting = False
                    while len(batch) < self._group_max:
                        try:
                            item = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if item is _STOP:
                            stopping = True
                            break
                        batch.append(item)
                    self._run_batch(conn, batch)
        finally:
            # Anything still queued after the stop marker is refused, never silently dropped.
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    item[1].set_exception(StoreClosed("the store was closed"))
            with self._lock:  # a caller running its op right now finishes first
                self._conn = None
                conn.close()

    def _explain(self, exc: BaseException) -> BaseException:
        return disk_full(self._where) if is_disk_full(exc) else exc

    def _run_batch(self, conn: sqlite3.Connection, batch: list[tuple[Op, Future[Any]]]) -> None:
        live = [(op, fut) for op, fut in batch if fut.set_running_or_notify_cancel()]
        if not live:
            return
        outcomes: list[tuple[Future[Any], bool, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            for _, fut in live:
                fut.set_exception(self._explain(exc))
            return
        if len(live) == 1:
            self._run_one(conn, *live[0])
            return
        try:
            for op, fut in live:
                conn.execute("SAVEPOINT op")
                try:
                    result = op(conn)
                except BaseException as exc:
                    if not conn.in_transaction:
                        # SQLite rolled the whole transaction back itself (disk full, I/O
                        # error): nothing of this batch is kept, and this error says why.
                        raise
                    conn.execute("ROLLBACK TO op")
                    conn.execute("RELEASE op")
                    outcomes.append((fut, False, self._explain(exc)))
                else:
                    conn.execute("RELEASE op")
                    outcomes.append((fut, True, result))
            conn.execute("COMMIT")
        except BaseException as exc:
            _rollback(conn)
            err = self._explain(exc)
            for _, fut in live:
                if not fut.done():
                    fut.set_exception(err)
            return
        self.commits += 1
        self.ops += len(live)
        for fut, ok, value in outcomes:
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)


    def _run_one(self, conn: sqlite3.Connection, op: Op, fut: Future[Any]) -> None:
        """A batch of one op: its transaction is its savepoint (two statements fewer)."""
        try:
            result = op(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            _rollback(conn)
            fut.set_exception(self._explain(exc))
            return
        self.commits += 1
        self.ops += 1
        fut.set_result(result)


def disk_full(where: str) -> DiskFull:
    return DiskFull(f"the disk holding {where} is full: the last change was not written "
                    "(everything acknowledged before is kept); free some space and try again")


def is_disk_full(exc: BaseException) -> bool:
    return (isinstance(exc, sqlite3.Error)
            and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL)


class Checkpointer:
    """Copies the WAL back into the database file on its own thread and connection.

    With SQLite's automatic checkpoint, the commit that crosses 1000 WAL pages does the copy
    (and the database fsync) before it returns: about one claim in a hundred pays
    milliseconds. A PASSIVE checkpoint here never blocks the writer or the readers.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, interval_s: float = 0.5,
                 name: str = "shopfleet-checkpoint") -> None:
        self._connect = connect
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread (the last connection to close checkpoints what is left)."""
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        conn = self._connect()
        try:
            while not self._stop.wait(self._interval_s):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    pass  # busy or closing: the next round (or the backstop) catches up
        finally:
            conn.close()


def _rollback(conn: sqlite3.Connection) -> None:
    """Undo the open transaction, if any (an error in it is already being reported)."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
