"""#18 in SQLite: shop tags and schedules (definition, mark, paused, last error).

A firing is one writer op: the mark is compared with the one the scheduler read (another
process may have fired it meanwhile: then nothing is written), the firing's tasks are
submitted (their ``sched:…`` keys make a repeat harmless) and the mark moves, all in one
transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInput, Refused
from ...selectors import MAX_TAGS_PER_SHOP, normalize_tags
from ...specs import TaskSpec
from ..records import ScheduleRecord, ShopRecord

if TYPE_CHECKING:
    from ...clock import Clock

_COLUMNS = "name, definition, mark, paused, last_error, created_at, updated_at"


def _record(r: Sequence[Any]) -> ScheduleRecord:
    return ScheduleRecord(name=r[0], definition=json.loads(r[1]), mark=float(r[2]),
                          paused=bool(r[3]), last_error=r[4], created_at=float(r[5]),
                          updated_at=float(r[6]))


def unknown_schedule(name: str) -> InvalidInput:
    return InvalidInput("NAME", f"no schedule named {name!r} (see 'shopfleet schedule list')")


class SqliteGroups:
    """Mixed into :class:`core.store.sqlite.store.SqliteStore`."""

    if TYPE_CHECKING:  # the store's own (no stubs at run time: they would shadow them)
        clock: Clock

        def _call(self, op: Any) -> Any: ...
        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]: ...
        def shop(self, name: str) -> ShopRecord: ...
        def _prepare(self, specs: Sequence[TaskSpec]) -> list[Any]: ...
        def _op_submit(self, conn: sqlite3.Connection, prepared: list[Any]) -> list[int]: ...

    # -- tags ------------------------------------------------------------------------------

    def retag_shop(self, name: str, *, add: Iterable[str] = (), remove: Iterable[str] = ()
                   ) -> ShopRecord:
        """Add and remove tags of a shop in one transaction; returns the shop.

        Raises:
            SpecError: a bad tag (naming ``TAG``), or more than ``MAX_TAGS_PER_SHOP``.
            InvalidInput: no such shop.
        """
        plus = normalize_tags(add, field="TAG")
        minus = set(normalize_tags(remove, field="TAG"))
        self.shop(name)

        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT tags FROM shops WHERE name = ?", (name,)).fetchone()
            tags = (set(json.loads(row[0] or "[]")) | set(plus)) - minus
            if len(tags) > MAX_TAGS_PER_SHOP:
                from ...errors import SpecError
                raise SpecError("TAG", f"a shop has at most {MAX_TAGS_PER_SHOP} tags")
            conn.execute("UPDATE shops SET tags = ? WHERE name = ?",
                         (json.dumps(sorted(tags), ensure_ascii=False), name))
        self._call(op)
        return self.shop(name)

    # -- schedules -------------------------------------------------------------------------

    def add_schedule(self, name: str, definition: dict[str, Any], *, mark: float
                     ) -> ScheduleRecord:
        """Store a new schedule whose mark is ``mark`` (it fires only after it).

        Raises:
            Refused: a schedule of that name exists.
        """
        text = json.dumps(definition, ensure_ascii=False, sort_keys=True)

        def op(conn: sqlite3.Connection) -> None:
            now = self.clock.now()
            try:
                conn.execute(f"INSERT INTO schedules ({_COLUMNS}) VALUES (?, ?, ?, ?, '', ?, ?)",
                             (name, text, mark, int(bool(definition.get("paused"))), now, now))
            except sqlite3.IntegrityError:
                raise Refused(f"a schedule named {name!r} exists (delete it first, or pick "
                              "another name)") from None
        self._call(op)
        return self.schedule_record(name)

    def schedules(self) -> list[ScheduleRecord]:
        """Every schedule, by name."""
        rows = self._read(f"SELECT {_COLUMNS} FROM schedules ORDER BY name")
        return [_record(r) for r in rows]

    def schedule_record(self, name: str) -> ScheduleRecord:
        rows = self._read(f"SELECT {_COLUMNS} FROM schedules WHERE name = ?", (name,))
        if not rows:
            raise unknown_schedule(name)
        return _record(rows[0])

    def set_schedule_state(self, name: str, *, paused: bool, last_error: str | None = None,
                           mark: float | None = None) -> ScheduleRecord:
        """Pause or resume a schedule (with why it failed, and a new mark on resume)."""
        def op(conn: sqlite3.Connection) -> int:
            now = self.clock.now()
            return int(conn.execute(
                "UPDATE schedules SET paused = ?, last_error = coalesce(?, last_error), "
                "mark = coalesce(?, mark), updated_at = ? WHERE name = ?",
                (int(paused), last_error, mark, now, name)).rowcount)
        if not self._call(op):
            raise unknown_schedule(name)
        return self.schedule_record(name)

    def delete_schedule(self, name: str) -> None:
        """Delete a schedule (its tasks already submitted stay)."""
        n = self._call(lambda c: c.execute(
            "DELETE FROM schedules WHERE name = ?", (name,)).rowcount)
        if not n:
            raise unknown_schedule(name)

    def fire_schedule(self, name: str, *, expected_mark: float, mark: float,
                      specs: Sequence[TaskSpec]) -> list[int] | None:
        """Submit a firing's tasks and move the mark from ``expected_mark`` to ``mark``, in
        one transaction. ``None``: the mark was no longer ``expected_mark`` (another process
        handled it), nothing written.

        Raises:
            SpecError, BacklogFull: as :meth:`submit_many`; nothing written, mark unmoved.
        """
        prepared = self._prepare(specs) if specs else []

        def op(conn: sqlite3.Connection) -> list[int] | None:
            row = conn.execute("SELECT mark FROM schedules WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise unknown_schedule(name)
            if float(row[0]) != expected_mark:
                return None
            ids = self._op_submit(conn, prepared) if prepared else []
            conn.execute("UPDATE schedules SET mark = ?, updated_at = ? WHERE name = ?",
                         (mark, self.clock.now(), name))
            return ids
        out: list[int] | None = self._call(op)
        return out
