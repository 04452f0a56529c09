"""#18 in Redis: shop tags and schedules (keys in :mod:`core.store.redis.keys`).

A firing runs one Lua script (``fire`` in :mod:`core.store.redis.lua`): compare the mark with
the one the scheduler read, submit the tasks as ``submit`` does, move the mark. Of several
workers that plan the same firing, only the first script sees the mark it expects; the others
find it moved and write nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import redis

from ...errors import Refused, SpecError
from ...selectors import MAX_TAGS_PER_SHOP, normalize_tags
from ...specs import TaskSpec
from ..records import ScheduleRecord, ShopRecord

if TYPE_CHECKING:
    from ...clock import Clock
from ..sqlite.groups import unknown_schedule


def _record(name: str, h: dict[str, str]) -> ScheduleRecord:
    return ScheduleRecord(name=name, definition=json.loads(h["definition"]),
                          mark=float(h["mark"]), paused=h.get("paused") == "1",
                          last_error=h.get("last_error", ""),
                          created_at=float(h["created_at"]), updated_at=float(h["updated_at"]))


class RedisGroups:
    """Mixed into :class:`core.store.redis.store.RedisStore`."""

    if TYPE_CHECKING:  # the store's own
        clock: Clock
        prefix: str
        _r: Any
        _q: Any

        def _run(self, name: str, *args: Any, now: float | None = None) -> Any: ...
        def _shop_id(self, name: str) -> int: ...
        def shop(self, name: str) -> ShopRecord: ...
        def _prepare(self, specs: Sequence[TaskSpec], now: float) -> list[dict[str, Any]]: ...

    def _schedule_key(self, name: str) -> str:
        return f"{self.prefix}:schedule:{name}"

    # -- tags ------------------------------------------------------------------------------

    def retag_shop(self, name: str, *, add: Iterable[str] = (), remove: Iterable[str] = ()
                   ) -> ShopRecord:
        """Add and remove tags of a shop atomically (one script); returns the shop."""
        plus = normalize_tags(add, field="TAG")
        minus = normalize_tags(remove, field="TAG")
        sid = self._shop_id(name)
        try:
            self._run("retag", str(sid), json.dumps(list(plus), ensure_ascii=False),
                      json.dumps(list(minus), ensure_ascii=False), str(MAX_TAGS_PER_SHOP))
        except Exception as exc:
            if getattr(exc, "field", None) == "TAG":
                raise SpecError("TAG", str(getattr(exc, "reason", exc))) from None
            raise
        return self.shop(name)

    # -- schedules -------------------------------------------------------------------------

    def add_schedule(self, name: str, definition: dict[str, Any], *, mark: float
                     ) -> ScheduleRecord:
        """Store a new schedule (see :meth:`SqliteStore.add_schedule`)."""
        now = self.clock.now()
        fields = {"definition": json.dumps(definition, ensure_ascii=False, sort_keys=True),
                  "mark": repr(float(mark)), "paused": "1" if definition.get("paused") else "0",
                  "last_error": "", "created_at": repr(now), "updated_at": repr(now)}
        key = self._schedule_key(name)
        # HSETNX on the definition claims the name; only its winner writes the rest
        if not self._r.hsetnx(key, "definition", fields["definition"]):
            raise Refused(f"a schedule named {name!r} exists (delete it first, or pick "
                          "another name)")
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(key, mapping=fields)
        pipe.zadd(f"{self.prefix}:schedules", {name: 0})
        pipe.execute()
        return self.schedule_record(name)

    def schedules(self) -> list[ScheduleRecord]:
        names = self._r.zrange(f"{self.prefix}:schedules", 0, -1)
        pipe = self._r.pipeline(transaction=False)
        for n in names:
            pipe.hgetall(self._schedule_key(n))
        return [_record(n, h) for n, h in zip(names, pipe.execute(), strict=True)
                if h and "mark" in h]

    def schedule_record(self, name: str) -> ScheduleRecord:
        h = self._r.hgetall(self._schedule_key(name))
        if not h or "mark" not in h:
            raise unknown_schedule(name)
        return _record(name, h)

    def set_schedule_state(self, name: str, *, paused: bool, last_error: str | None = None,
                           mark: float | None = None) -> ScheduleRecord:
        key = self._schedule_key(name)
        if not self._r.hexists(key, "mark"):
            raise unknown_schedule(name)
        fields = {"paused": "1" if paused else "0", "updated_at": repr(self.clock.now())}
        if last_error is not None:
            fields["last_error"] = last_error
        if mark is not None:
            fields["mark"] = repr(float(mark))
        self._r.hset(key, mapping=fields)
        return self.schedule_record(name)

    def delete_schedule(self, name: str) -> None:
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(self._schedule_key(name))
        pipe.zrem(f"{self.prefix}:schedules", name)
        gone, _ = pipe.execute()
        if not gone:
            raise unknown_schedule(name)

    def fire_schedule(self, name: str, *, expected_mark: float, mark: float,
                      specs: Sequence[TaskSpec]) -> list[int] | None:
        """Submit a firing's tasks and move the mark, in one script (see the module doc)."""
        now = self.clock.now()
        prepared = self._prepare(specs, now) if specs else []
        limit = self._q.max_backlog
        reserve = limit + int(limit * self._q.urgent_reserve)
        try:
            out = self._run("fire", json.dumps(prepared, ensure_ascii=False), limit, reserve,
                            name, repr(float(expected_mark)), repr(float(mark)), now=now)
        except redis.ResponseError as exc:
            msg = str(exc)
            at = msg.find("SF:idem:")
            if at < 0:
                raise
            i, _, tid = msg[at + 8:].split(" ")[0].partition("|")
            key = prepared[int(i) - 1].get("key")
            raise SpecError("key", f"{key!r} was already used for a different task "
                            f"(#{tid})") from None
        if out == "moved":
            return None
        return [int(x) for x in out]
