"""Shop holds (#15 takeover) in Redis: ``hold_owner``, ``hold_until`` and ``hold_what`` fields
of the shop's hash, taken with a compare-and-set (WATCH) so two consoles of a fleet cannot
both hold a shop. The claim script skips a shop whose ``hold_until`` is ahead of ``now``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redis.exceptions import WatchError

from ...errors import Refused
from ..holds import check_hold, held_by_other, live_only
from ..records import ShopHold

if TYPE_CHECKING:
    from ...clock import Clock
    from .keys import Keys

_TRIES = 100
HOLD_FIELDS = ("hold_owner", "hold_until", "hold_what")
"""The shop hash's fields a hold lives in (read with a shop's row: :func:`live_hold`)."""


def _fields(values: list[str | None]) -> dict[str, str]:
    return {k: v for k, v in zip(HOLD_FIELDS, values, strict=True) if v is not None}


def live_hold(name: str, values: list[Any], now: float) -> ShopHold | None:
    """The hold in ``HMGET shop HOLD_FIELDS`` when it has not run out at ``now``."""
    return live_only(_hold(name, _fields(values)), now)


def _hold(name: str, h: dict[str, str]) -> ShopHold | None:
    if not h.get("hold_owner"):
        return None
    return ShopHold(shop=name, owner=h["hold_owner"], until=float(h.get("hold_until") or 0),
                    what=h.get("hold_what", ""))


class RedisHolds:
    """Mixed into :class:`core.store.redis.store.RedisStore`."""

    if TYPE_CHECKING:  # the store's own
        clock: Clock
        keys: Keys
        _r: Any

        def _shop_id(self, name: str) -> int: ...

    def hold_shop(self, name: str, owner: str, *, lease_s: float, what: str = "") -> ShopHold:
        """Take or renew a hold on shop ``name`` for ``lease_s`` seconds.

        Raises:
            InvalidInput: unknown shop, or a bad ``owner``/``lease_s``/``what``.
            Refused: another holder's hold has not run out.
        """
        check_hold(owner, lease_s, what)
        key = self.keys.shop(self._shop_id(name))
        with self._r.pipeline(transaction=True) as pipe:
            for _ in range(_TRIES):
                try:
                    pipe.watch(key)
                    now = self.clock.now()
                    old = _hold(name, _fields(pipe.hmget(key, *HOLD_FIELDS)))
                    refusal = held_by_other(old, owner, now)
                    if refusal is not None:
                        raise refusal
                    hold = ShopHold(shop=name, owner=owner, until=now + lease_s, what=what)
                    pipe.multi()
                    pipe.hset(key, mapping={"hold_owner": owner, "hold_until": repr(hold.until),
                                            "hold_what": what})
                    pipe.execute()
                    return hold
                except WatchError:
                    continue
        raise Refused(f"shop {name}: its hold keeps changing; try again")

    def release_shop_hold(self, name: str, owner: str) -> None:
        """End ``owner``'s hold on shop ``name`` (nothing when it holds none)."""
        key = self.keys.shop(self._shop_id(name))
        with self._r.pipeline(transaction=True) as pipe:
            for _ in range(_TRIES):
                try:
                    pipe.watch(key)
                    if pipe.hget(key, "hold_owner") != owner:
                        return
                    pipe.multi()
                    pipe.hdel(key, "hold_owner", "hold_until", "hold_what")
                    pipe.execute()
                    return
                except WatchError:
                    continue
        raise Refused(f"shop {name}: its hold keeps changing; try again")

    def shop_hold(self, name: str) -> ShopHold | None:
        """The live hold on shop ``name`` (``None`` when none, or when it ran out)."""
        return live_hold(name, self._r.hmget(self.keys.shop(self._shop_id(name)), *HOLD_FIELDS),
                         self.clock.now())
