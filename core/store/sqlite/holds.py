"""Shop holds (#15 takeover) in SQLite: a ``hold:<shop>`` row of ``meta`` with the holder,
its expiry and its words (no schema change: a hold is small, rare and short-lived). The claim
reads the live ones with the paused shops (:meth:`SqliteQueue._blocked_shops`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..holds import check_hold, held_by_other, live_only
from ..records import ShopHold, ShopRecord
from . import sql

if TYPE_CHECKING:
    from ...clock import Clock


def hold_of(name: str, value: str | None) -> ShopHold | None:
    if not value:
        return None
    d = json.loads(value)
    return ShopHold(shop=name, owner=str(d["owner"]), until=float(d["until"]),
                    what=str(d.get("what", "")))


def live_hold(name: str, value: str | None, now: float) -> ShopHold | None:
    """The hold in a ``meta`` value when it has not run out at ``now``, else ``None``."""
    return live_only(hold_of(name, value), now)


def held_shop_ids(conn: sqlite3.Connection, now: float) -> set[int]:
    """Ids of the shops whose hold has not run out (in the claim's transaction)."""
    return {int(sid) for sid, value in conn.execute(sql.HELD_SHOPS)
            if live_only(hold_of("", value), now) is not None}


class SqliteHolds:
    """Mixed into :class:`core.store.sqlite.store.SqliteStore`."""

    if TYPE_CHECKING:  # the store's own
        clock: Clock

        def _call(self, op: Any) -> Any: ...
        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]: ...
        def shop(self, name: str) -> ShopRecord: ...

    def hold_shop(self, name: str, owner: str, *, lease_s: float, what: str = "") -> ShopHold:
        """Take or renew a hold on shop ``name`` for ``lease_s`` seconds.

        Raises:
            InvalidInput: unknown shop, or a bad ``owner``/``lease_s``/``what``.
            Refused: another holder's hold has not run out.
        """
        check_hold(owner, lease_s, what)
        self.shop(name)

        def op(conn: sqlite3.Connection) -> ShopHold:
            now = self.clock.now()
            row = conn.execute(sql.META_VALUE, (f"hold:{name}",)).fetchone()
            refusal = held_by_other(hold_of(name, row[0] if row else None), owner, now)
            if refusal is not None:
                raise refusal
            hold = ShopHold(shop=name, owner=owner, until=now + lease_s, what=what)
            conn.execute(sql.SET_META, (f"hold:{name}", json.dumps(
                {"owner": owner, "until": hold.until, "what": what})))
            return hold
        result: ShopHold = self._call(op)
        return result

    def release_shop_hold(self, name: str, owner: str) -> None:
        """End ``owner``'s hold on shop ``name`` (nothing when it holds none)."""
        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute(sql.META_VALUE, (f"hold:{name}",)).fetchone()
            hold = hold_of(name, row[0] if row else None)
            if hold is not None and hold.owner == owner:
                conn.execute(sql.DELETE_META, (f"hold:{name}",))
        self._call(op)

    def shop_hold(self, name: str) -> ShopHold | None:
        """The live hold on shop ``name`` (``None`` when none, or when it ran out)."""
        rows = self._read(sql.META_VALUE, (f"hold:{name}",))
        return live_hold(name, rows[0][0] if rows else None, self.clock.now())
