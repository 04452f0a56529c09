"""Alerts out: notification targets, messages, platform formats, delivery and the outbox.

The engine enqueues (:func:`route`); a :class:`Dispatcher` thread sends. See
:mod:`core.notify.outbox` for the protocol, :mod:`core.notify.platforms` for each platform's
format and signing, :mod:`core.notify.targets` for the ``[[notify]]`` settings.
"""

from core.notify.delivery import backoff_s, send
from core.notify.messages import (
    CountsSnapshot,
    Message,
    NotifyEvent,
    ShopCounts,
    coalesce,
    digest_event,
    message_id,
    notify_test_message,
    say,
)
from core.notify.outbox import (
    Batch,
    Dispatcher,
    MemoryOutbox,
    Outbox,
    Pending,
    TargetHealth,
    route,
)
from core.notify.platforms import Request, Verdict, build_request, judge
from core.notify.targets import EVENTS, KINDS, QuietHours, Target, parse_target, parse_targets

__all__ = [
    "EVENTS",
    "KINDS",
    "Batch",
    "CountsSnapshot",
    "Dispatcher",
    "MemoryOutbox",
    "Message",
    "NotifyEvent",
    "Outbox",
    "Pending",
    "QuietHours",
    "Request",
    "ShopCounts",
    "Target",
    "TargetHealth",
    "Verdict",
    "backoff_s",
    "build_request",
    "coalesce",
    "digest_event",
    "judge",
    "message_id",
    "notify_test_message",
    "parse_target",
    "parse_targets",
    "route",
    "say",
    "send",
]
