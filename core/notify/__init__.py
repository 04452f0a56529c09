"""Alerts out: notification targets, messages, platform formats, delivery and the outbox.

The engine enqueues (:func:`route`); a :class:`Dispatcher` thread sends. See
:mod:`core.notify.outbox` for the protocol, :mod:`core.notify.platforms` for each platform's
format and signing, :mod:`core.notify.targets` for the ``[[notify]]`` settings.

The names are loaded when first used (#20): importing a message type must not import the
HTTP client behind delivery (every ``shopfleet`` command pays its imports at start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .delivery import backoff_s as backoff_s
    from .delivery import send as send
    from .messages import CountsSnapshot as CountsSnapshot
    from .messages import Message as Message
    from .messages import NotifyEvent as NotifyEvent
    from .messages import ShopCounts as ShopCounts
    from .messages import coalesce as coalesce
    from .messages import digest_event as digest_event
    from .messages import message_id as message_id
    from .messages import notify_test_message as notify_test_message
    from .messages import say as say
    from .outbox import Batch as Batch
    from .outbox import Dispatcher as Dispatcher
    from .outbox import MemoryOutbox as MemoryOutbox
    from .outbox import Outbox as Outbox
    from .outbox import Pending as Pending
    from .outbox import TargetHealth as TargetHealth
    from .outbox import route as route
    from .platforms import Request as Request
    from .platforms import Verdict as Verdict
    from .platforms import build_request as build_request
    from .platforms import judge as judge
    from .targets import EVENTS as EVENTS
    from .targets import KINDS as KINDS
    from .targets import QuietHours as QuietHours
    from .targets import Target as Target
    from .targets import parse_target as parse_target
    from .targets import parse_targets as parse_targets

_WHERE: dict[str, str] = {
    "Batch": ".outbox",
    "CountsSnapshot": ".messages",
    "Dispatcher": ".outbox",
    "EVENTS": ".targets",
    "KINDS": ".targets",
    "MemoryOutbox": ".outbox",
    "Message": ".messages",
    "NotifyEvent": ".messages",
    "Outbox": ".outbox",
    "Pending": ".outbox",
    "QuietHours": ".targets",
    "Request": ".platforms",
    "ShopCounts": ".messages",
    "Target": ".targets",
    "TargetHealth": ".outbox",
    "Verdict": ".platforms",
    "backoff_s": ".delivery",
    "build_request": ".platforms",
    "coalesce": ".messages",
    "digest_event": ".messages",
    "judge": ".platforms",
    "message_id": ".messages",
    "notify_test_message": ".messages",
    "parse_target": ".targets",
    "parse_targets": ".targets",
    "route": ".outbox",
    "say": ".messages",
    "send": ".delivery",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
