"""Task priority: ``score = base(type) + aging + urgency + retry_bonus (+ operator bump)``.

Aging is linear in waiting time, so ordering by score *now* equals ordering by the
time-invariant key ``static − k·created`` (``static`` = base + urgency + retry bonus + bump,
``k`` = aging points per second). The store indexes that key, which serves the best task in
O(log n) with no rescan; only events that change ``static`` (an urgency threshold, a retry, a
bump) rewrite one task's key.

Keys are integers in **milli-points** (``KEY_SCALE`` = 1000 per point): SQLite compares 64-bit
integers exactly, so two tasks whose scores differ by at least 0.001 point are always ordered
correctly, at any distance from the epoch; closer than that they may tie and are served in
submission order. With the default aging of 0.2 points per minute, 0.001 point is 0.3 s of
waiting.

**Hard aging** is a band above the key: a task waiting longer than ``hard_aging_min`` moves to
band 1 (ahead of every band-0 task) and is no longer preemptible.
"""

from __future__ import annotations

KEY_SCALE = 1000
KEY_EPOCH = 1_735_689_600.0  # 2025-01-01T00:00:00Z: keeps the aging term small
"""Origin of the aging term; any fixed instant works, a recent one keeps keys readable."""


MAX_BUMP_POINTS = 1_000_000.0
"""The largest score (or score change) an operator may give: far above any real priority, far
below where milli-point keys lose precision or overflow 64 bits."""


def check_bump(to: float | None, by: float | None) -> None:
    """Refuse a bump target or delta that is NaN, infinite or absurdly large (names the
    option)."""
    import math

    from .errors import InvalidInput

    for name, value in (("--to", to), ("--by", by)):
        if value is None:
            continue
        if not math.isfinite(value):
            raise InvalidInput(name, f"{value!r} is not a finite number")
        if abs(value) > MAX_BUMP_POINTS:
            raise InvalidInput(name, f"{value!r} is out of range (at most ±{MAX_BUMP_POINTS:g} "
                               "points)")


def static_points(*, base: float, urgency: float, attempts: int, bump: float,
                  retry_bonus: float) -> float:
    """The part of the score that does not grow with time."""
    return base + urgency + retry_bonus * max(0, attempts) + bump


def index_key(static: float, created_at: float, aging_per_s: float) -> int:
    """Time-invariant ordering key in milli-points: higher is served first."""
    return round(static * KEY_SCALE) - round((created_at - KEY_EPOCH) * aging_per_s * KEY_SCALE)


def score_at(static: float, created_at: float, now: float, aging_per_s: float) -> float:
    """The score a person sees: static points plus aging so far."""
    return static + aging_per_s * max(0.0, now - created_at)


def score_from_key(key: int, now: float, aging_per_s: float) -> float:
    """The score at ``now`` of a task with index key ``key`` (exact to 0.001 point)."""
    return (key + round((now - KEY_EPOCH) * aging_per_s * KEY_SCALE)) / KEY_SCALE
