"""Urgency estimators: per-platform plugins that turn a deadline into priority points.

A platform adds a plugin, not a branch: an estimator is registered under the entry point group
``shopfleet.urgency`` with the platform's name (``pdd = "mypkg:PddEstimator"``). It answers
*how urgent now* and *when that changes next*; the queue rewrites a task's key only at those
moments, so urgency costs nothing between thresholds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Protocol

ENTRY_POINT_GROUP = "shopfleet.urgency"


@dataclass(frozen=True)
class Urgency:
    """Points to add now, and when (epoch seconds) to ask again; ``None``: never changes."""

    points: float
    next_change_at: float | None


class UrgencyEstimator(Protocol):
    def estimate(self, *, task_type: str, deadline: float | None, now: float) -> Urgency:
        """Urgency of a task of ``task_type`` whose deadline is ``deadline`` at time ``now``."""
        ...


@dataclass(frozen=True)
class Tier:
    """``points`` apply once less than ``within_s`` seconds are left before the deadline."""

    within_s: float
    points: float


class DeadlineEstimator:
    """Step-wise urgency from time left before the deadline, by task type.

    Args:
        tiers: per task type, tiers from the widest to the narrowest window. ``"*"`` applies to
            types not listed. ``overdue`` points apply once the deadline has passed.
    """

    def __init__(self, tiers: dict[str, tuple[Tier, ...]], *, overdue: float) -> None:
        self._tiers = {t: tuple(sorted(v, key=lambda x: -x.within_s)) for t, v in tiers.items()}
        self._overdue = overdue

    def estimate(self, *, task_type: str, deadline: float | None, now: float) -> Urgency:
        if deadline is None:
            return Urgency(0.0, None)
        tiers = self._tiers.get(task_type, self._tiers.get("*", ()))
        left = deadline - now
        if left <= 0:
            return Urgency(self._overdue if tiers else 0.0, None)
        points = 0.0
        next_at: float | None = deadline  # becomes overdue at the deadline
        for tier in tiers:
            if left < tier.within_s:
                points = tier.points
            else:
                next_at = deadline - tier.within_s
                break
        if not tiers:
            next_at = None
        return Urgency(points, next_at)


_HOUR = 3600.0

# Customer replies are the most time-critical on every platform (platforms rate a shop on its
# reply time); the windows differ. Reviews and campaign sign-ups have day-scale windows.
class PddEstimator(DeadlineEstimator):
    """Pinduoduo: rates shops on replies within minutes."""

    def __init__(self) -> None:
        super().__init__({
            "reply_customer": (Tier(3 * _HOUR, 2), Tier(_HOUR, 5), Tier(15 * 60, 8)),
            "reply_review": (Tier(24 * _HOUR, 2), Tier(4 * _HOUR, 4)),
            "*": (Tier(24 * _HOUR, 1), Tier(2 * _HOUR, 3)),
        }, overdue=10)


class TemuEstimator(DeadlineEstimator):
    """TEMU: replies within hours; campaign sign-ups close at a fixed time."""

    def __init__(self) -> None:
        super().__init__({
            "reply_customer": (Tier(6 * _HOUR, 2), Tier(_HOUR, 5), Tier(20 * 60, 7)),
            "campaign_signup": (Tier(24 * _HOUR, 2), Tier(2 * _HOUR, 5)),
            "*": (Tier(24 * _HOUR, 1), Tier(2 * _HOUR, 3)),
        }, overdue=9)


class TiktokEstimator(DeadlineEstimator):
    """TikTok Shop: a 12-hour reply window; reviews within two days."""

    def __init__(self) -> None:
        super().__init__({
            "reply_customer": (Tier(12 * _HOUR, 2), Tier(_HOUR, 5), Tier(10 * 60, 8)),
            "reply_review": (Tier(48 * _HOUR, 1), Tier(6 * _HOUR, 4)),
            "*": (Tier(24 * _HOUR, 1), Tier(2 * _HOUR, 3)),
        }, overdue=10)


GENERIC = DeadlineEstimator(
    {"reply_customer": (Tier(_HOUR, 5),), "*": (Tier(2 * _HOUR, 2),)}, overdue=6)


@cache
def estimator_for(platform: str) -> UrgencyEstimator:
    """The registered estimator of ``platform``, or a generic deadline estimator."""
    from importlib.metadata import entry_points  # only when a plugin is looked up (#20)

    for ep in entry_points(group=ENTRY_POINT_GROUP, name=platform):
        obj = ep.load()
        est = obj() if isinstance(obj, type) else obj
        if hasattr(est, "estimate"):
            return est  # type: ignore[no-any-return]
    builtin: dict[str, Callable[[], DeadlineEstimator]] = {
        "pdd": PddEstimator, "temu": TemuEstimator, "tiktok": TiktokEstimator}
    factory = builtin.get(platform)
    return factory() if factory else GENERIC
