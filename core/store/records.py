"""Frozen records the store hands out: snapshots, never live objects."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidInput
from ..profiles import ShopProfile


class TaskState(enum.StrEnum):
    """Where a task is in its life."""

    QUEUED = "queued"
    """Waiting to be claimed (possibly not before ``not_before``, a retry's back-off)."""
    SCHEDULED = "scheduled"
    """Delayed (``not_before``/``delay_s``, a schedule's jitter): joins the queue at
    ``not_before``; not in the claim index until then."""
    RUNNING = "running"
    """Claimed by a worker under a lease."""
    SUSPENDED = "suspended"
    """Preempted at a safe step; waits to resume from its checkpoint."""
    WAITING_HUMAN = "waiting_human"
    """An exception ticket is open; an operator decides how it goes on."""
    QUARANTINED = "quarantined"
    """A poison pill: it crashed its browser too often and is not handed out again."""
    DONE = "done"
    """Finished successfully."""
    FAILED = "failed"
    """Gave up after its attempts."""
    CANCELLED = "cancelled"
    """Cancelled by an operator."""

    @property
    def is_final(self) -> bool:
        return self in (TaskState.DONE, TaskState.FAILED, TaskState.CANCELLED)


@dataclass(frozen=True)
class ShopRecord:
    id: int
    name: str
    platform: str
    base_url: str
    domain: str
    username: str
    has_password: bool
    paused: bool
    allowed_origins: tuple[str, ...] = ()
    """Origins (``scheme://host:port``) its tasks may load besides the shop's own."""
    tags: tuple[str, ...] = ()
    """#18: the shop's tags (normalised, sorted), for selectors such as ``tag:north``."""
    profile: ShopProfile = field(default_factory=ShopProfile)
    """Its network identity (#17): proxy (no password), locale, time zone, user agent…"""
    has_proxy_password: bool = False
    """Whether an (encrypted) proxy password is stored with it."""


@dataclass(frozen=True)
class ShopHold:
    """A lease on a shop (#15 takeover): while ``until`` is ahead, no task of the shop is
    claimed, by any worker sharing the store. Its holder renews it; when the holder dies it
    runs out on its own (nothing stays blocked without a live holder)."""

    shop: str
    owner: str
    until: float
    what: str = ""
    """Who holds it, in words (``"alice@host-a (ticket #12)"``)."""

    def live_at(self, now: float) -> bool:
        """Has it not run out at ``now`` (epoch seconds)? A holder that stopped renewing
        holds nothing from ``until`` on, whatever the store still has written."""
        return self.until > now


@dataclass(frozen=True)
class ScheduleRecord:
    """A stored schedule (#18): its definition (:meth:`core.schedules.Schedule.to_dict`), its
    mark (the last firing handled, epoch seconds), whether it is paused and why it last
    failed ("" when it did not)."""

    name: str
    definition: dict[str, Any]
    mark: float
    paused: bool
    last_error: str
    created_at: float
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class TaskRecord:
    """A task as a person would look at it (no secrets: shop credentials live with the shop)."""

    id: int
    key: str | None
    type: str
    shop: str
    platform: str
    domain: str
    state: TaskState
    state_reason: str
    score: float
    hard_aged: bool
    preemptible: bool
    created_at: float
    updated_at: float
    not_before: float
    deadline: float | None
    attempts: int
    max_attempts: int
    lease_owner: str | None
    lease_until: float | None
    started_at: float | None
    finished_at: float | None
    flow: str | None
    params: dict[str, Any]
    steps: list[dict[str, Any]] | None
    checkpoint: dict[str, Any] | None
    results: dict[str, Any] | None
    error_class: str | None
    last_error: str | None
    evidence: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["state"] = self.state.value
        return d


@dataclass(frozen=True)
class ClaimedTask:
    """What a worker gets from a claim: enough to run the task and to prove its lease."""

    id: int
    type: str
    shop: str
    shop_id: int
    platform: str
    base_url: str
    domain: str
    lease_owner: str
    lease_until: float
    attempts: int
    max_attempts: int
    score: float
    preemptible: bool
    flow: str | None
    params: dict[str, Any]
    steps: list[dict[str, Any]] | None
    checkpoint: dict[str, Any] | None
    resumed: bool = False
    """It was suspended (preempted) and now resumes from its checkpoint."""
    created_at: float = 0.0


@dataclass(frozen=True)
class TaskEvent:
    id: int
    task_id: int
    at: float
    from_state: str | None
    to_state: str
    reason: str


BACKLOG_STATES = ("queued", "scheduled", "suspended")
"""The states ``[queue] max_backlog`` bounds (the stores' submit checks count these)."""


def backlog_of(counts: dict[str, int]) -> int:
    """Tasks the backlog bound counts, from counts per state."""
    return sum(int(counts.get(s, 0)) for s in BACKLOG_STATES)


@dataclass(frozen=True)
class QueueStatus:
    """Counts and backlog at one instant.

    The backlog bound (``[queue] max_backlog``, DESIGN's "bounded (backpressure)") counts every
    task that waits for a slot: queued, scheduled for later (``not_before``, a schedule's
    firing) and suspended (preempted, back in line). A delayed task holds its place in the
    bound from its submission, or a million tasks "for later" would flood the queue at their
    time past the bound. ``backlog`` is that count; ``queued`` the tasks claimable now,
    ``scheduled`` those waiting for their time (#18).
    """

    at: float
    counts: dict[str, int]
    queued: int
    max_backlog: int
    oldest_wait_s: float
    hard_aged: int
    busy_shops: dict[str, int] = field(default_factory=dict)
    top_score: float | None = None
    bottom_score: float | None = None
    backlog: int = 0
    """Tasks the bound counts (:data:`BACKLOG_STATES`), what a submission is refused at."""
    scheduled: int = 0
    """Tasks waiting for their ``not_before`` (part of ``backlog``, not of ``queued``)."""
    next_scheduled_at: float | None = None
    """When the first scheduled task joins the queue (``None``: none is scheduled)."""

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def domain_of(url: str) -> str:
    """A shop's domain (what its gates and breakers are keyed by): the host of its URL."""
    host = urlsplit(url).hostname
    if not host:
        raise InvalidInput("base_url", f"{url!r} has no host name (e.g. https://seller.example)")
    return host.lower()
