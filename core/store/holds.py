"""What both stores decide alike about shop holds (#15 takeover): the checks and the refusal.

A hold is a lease on a shop: an owner, an expiry from the store's clock, a few words. The
stores keep it (SQLite: a ``hold:<shop>`` row of ``meta``; Redis: fields of the shop's hash)
and their claim skips a shop whose hold has not run out.
"""

from __future__ import annotations

import math

from ..errors import InvalidInput, Refused
from .records import ShopHold

HOLD_LEASE_MAX_S = 3600.0
"""The longest a hold may be taken or renewed for at once (its holder renews it)."""


def check_hold(owner: str, lease_s: float, what: str) -> None:
    """Refuse a hold request with a field named.

    Raises:
        InvalidInput: ``owner`` empty, ``lease_s`` not in (0, an hour], ``what`` too long.
    """
    if not owner:
        raise InvalidInput("owner", "must not be empty")
    if not isinstance(lease_s, int | float) or not math.isfinite(lease_s) or \
            not 0 < lease_s <= HOLD_LEASE_MAX_S:
        raise InvalidInput("lease_s", f"{lease_s!r} must be more than 0 and at most "
                           f"{HOLD_LEASE_MAX_S:.0f} seconds")
    if len(what) > 200:
        raise InvalidInput("what", "must be at most 200 characters")


def live_only(hold: ShopHold | None, now: float) -> ShopHold | None:
    """``hold`` while it has not run out at ``now`` (:meth:`ShopHold.live_at`), else None:
    what both stores' readers and the claim's held-shop filter call."""
    return hold if hold is not None and hold.live_at(now) else None


def held_by_other(hold: ShopHold | None, owner: str, now: float) -> Refused | None:
    """The refusal for ``owner`` when another live holder has the shop, else ``None``."""
    if (hold := live_only(hold, now)) is not None and hold.owner != owner:
        return Refused(f"shop {hold.shop} is held by {hold.what or hold.owner} for "
                       f"{hold.until - now:.0f} s more")
    return None
