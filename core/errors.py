"""ShopFleet's exceptions: one tree, and the type tells the engine what to do.

::

    ShopFleetError
    ├── InvalidInput            bad input from a user, a file or the CLI; names the field (exit 2)
    │   ├── ConfigError         the configuration file is wrong
    │   ├── SpecError           a task spec, a batch or a flow is wrong
    │   ├── UnknownTask         no task with that id
    │   └── VaultKeyError       the vault key is missing, is another one than the data's, or
    │                           is a dangling link: copy the right key (exit 2)
    ├── BacklogFull             the queue is at max_backlog; nothing was written (exit 2)
    ├── Refused                 an operator command that cannot be done right now (e.g. cancel a
    │                           task that already finished)
    ├── EnvironmentProblem      the machine lacks something (SQLite too old, no browser found)
    │   └── DiskFull            the disk holding the database is full; nothing was written
    ├── StoreClosed             the store was closed while a call was waiting
    ├── StoreUnavailable        a shared store (Redis) cannot be reached right now: try again
    ├── LeaseLost               a worker's lease on a task expired and recovery took the task
    └── TaskError               an attempt of a task failed; the subclass says how to go on
        ├── SiteFailed          the site failed (5xx, timeout): retry later, counts for breakers
        ├── RateLimited         the site said 429/503 with Retry-After: hold the domain's gate
        ├── NetworkDown         the network path failed (DNS, refused, offline): pause, probe
        ├── PageChanged         a locator is gone: the flow needs a fix or a person
        ├── NeedsHuman          login rejected, CAPTCHA: straight to a person
        │   └── WriteOutcomeUnknown  a write was cut off mid-way and cannot be verified
        ├── BrowserCrashed      the browser or renderer died: retry on a fresh browser
        ├── StepTimeout         a step did not finish in time
        ├── ProxyFailed         the shop's proxy refused or timed out: the shop waits (its
        │                       proxy breaker), the attempt is given back, no ticket
        └── Blocked             the task tried to cross the trust boundary: a ticket, no retry
            ├── OriginBlocked       a page (or frame) of a foreign origin or scheme
            └── CredentialBlocked   a credential about to go where it must not
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any


class ShopFleetError(Exception):
    """Root of every error ShopFleet raises on purpose."""


class InvalidInput(ShopFleetError):
    """Input that cannot be accepted. ``field`` names where, the message says why."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}" if field else reason)


class ConfigError(InvalidInput):
    """The configuration file is invalid."""


class SpecError(InvalidInput):
    """A task spec, a batch of them or a flow is invalid. Nothing was written."""


def field_path(prefix: str, loc: Sequence[Any], *, tags: Collection[str] = (),
               whole: str = "(task)") -> str:
    """The field a validation error points at, as a user writes it: ``tasks[3].steps[2].url``.

    Args:
        prefix: where the validated object sits (``tasks[3]``, a file name), or "".
        loc: pydantic's location of the error (names and list indices).
        tags: the tags of a discriminated union of list items; pydantic puts the tag between
            the index and the field (``steps.2.click.locator``), and the path leaves it out.
        whole: what to name when the error is about the whole object.
    """
    parts = list(loc)
    for i in range(len(parts) - 1, 1, -1):
        if isinstance(parts[i - 1], int) and parts[i] in tags and parts[i - 2] == "steps":
            del parts[i]
    path = prefix
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or whole


class UnknownTask(InvalidInput):
    """No task has that id."""

    def __init__(self, task_id: int) -> None:
        super().__init__("task", f"no task with id {task_id}")
        self.task_id = task_id


class VaultKeyError(InvalidInput):
    """The vault key on this machine cannot read the data's passwords: it is missing, another
    key, or ``vault.key`` is a link to nothing. Nothing makes a new key then; the message says
    what to copy from where."""

    def __init__(self, reason: str) -> None:
        super().__init__("vault.key", reason)


class BacklogFull(ShopFleetError):
    """The backlog (tasks queued, scheduled for later or suspended) is at ``max_backlog``;
    the submission was refused whole."""

    def __init__(self, queued: int, limit: int, *, urgent: bool = False) -> None:
        self.queued = queued
        self.limit = limit
        kind = "urgent reserve" if urgent else "backlog"
        super().__init__(
            f"queue full: {queued} tasks waiting (queued, scheduled or suspended), {kind} "
            f"limit is {limit}; nothing was submitted "
            "(wait for the queue to drain or raise [queue] max_backlog)"
        )


class Refused(ShopFleetError):
    """An operator command that cannot be carried out now; the message says why."""


class EnvironmentProblem(ShopFleetError):
    """Something this machine lacks (an old SQLite, no usable browser), with the fix."""


class DiskFull(EnvironmentProblem):
    """The disk (or the quota) holding the database is full. The change that hit it was rolled
    back whole; everything acknowledged before is kept."""


class StoreClosed(ShopFleetError):
    """The store was closed while the call was pending."""


class StoreUnavailable(ShopFleetError):
    """A shared store cannot be reached right now (network, Redis restarting). Nothing was
    changed by the call that raised it, or the change is unknown: callers retry or leave the
    task to lease recovery, never assume it happened."""


class LeaseLost(ShopFleetError):
    """The worker no longer holds the task: its lease expired and the task was recovered."""


class TaskError(ShopFleetError):
    """An attempt of a task failed. Subclasses classify the failure for retries and breakers.

    Attributes:
        error_class: short stable name used in metrics and the knowledge base.
        counts_for_breaker: whether the failure says something about the *site* (and so
            trips the domain's breaker) rather than about this one task.
    """

    error_class = "task_error"
    counts_for_breaker = False
    step_name = ""
    """The failed step's name (set by the executor, for tickets and the knowledge base)."""

    def __init__(self, message: str, *, step: int | None = None,
                 evidence: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.evidence = evidence or {}


class SiteFailed(TaskError):
    """The site failed: HTTP 5xx, a navigation timeout, a connection error."""

    error_class = "site_failed"
    counts_for_breaker = True


class RateLimited(SiteFailed):
    """The site asked us to slow down (429, or 503 with Retry-After)."""

    error_class = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: float, domain: str = "",
                 step: int | None = None, evidence: dict[str, str] | None = None) -> None:
        super().__init__(message, step=step, evidence=evidence)
        self.retry_after_s = retry_after_s
        self.domain = domain


class NetworkDown(SiteFailed):
    """The network path to the site failed (name not resolved, connection refused, offline):
    not the task's fault and not the site's answer. Claims for the domain pause (a probe
    tries again later); the task waits without spending an attempt."""

    error_class = "network_down"
    counts_for_breaker = False


NETWORK_ERRORS: tuple[str, ...] = (
    "ERR_NAME_NOT_RESOLVED", "ERR_NAME_RESOLUTION_FAILED", "ERR_CONNECTION_REFUSED",
    "ERR_INTERNET_DISCONNECTED", "ERR_ADDRESS_UNREACHABLE", "ERR_NETWORK_CHANGED",
    "ERR_NETWORK_ACCESS_DENIED", "ERR_PROXY_CONNECTION_FAILED", "ERR_TUNNEL_CONNECTION_FAILED",
    "ERR_CONNECTION_RESET", "ERR_CONNECTION_CLOSED", "ERR_EMPTY_RESPONSE",
    "ERR_CONNECTION_TIMED_OUT", "ERR_DNS_TIMED_OUT",
)
"""Chromium's ``net::`` errors that mean the network path, not the site's answer."""


UNSENT_NETWORK_ERRORS: tuple[str, ...] = (
    "ERR_NAME_NOT_RESOLVED", "ERR_NAME_RESOLUTION_FAILED", "ERR_DNS_TIMED_OUT",
    "ERR_CONNECTION_REFUSED", "ERR_INTERNET_DISCONNECTED", "ERR_ADDRESS_UNREACHABLE",
    "ERR_NETWORK_ACCESS_DENIED", "ERR_PROXY_CONNECTION_FAILED",
)
"""The :data:`NETWORK_ERRORS` that stop a request before it is sent: no address for the name,
no connection to the site (or to its proxy), no network. The others — a connection reset or
closed, an empty response, a timed-out connection, a changed network, a failed tunnel — may
come after the request went out, so a write they cut off has an unknown outcome."""


def is_unsent_network_error(text: str) -> bool:
    """Does this browser error say the request never left (:data:`UNSENT_NETWORK_ERRORS`)?"""
    return any(f"net::{code}" in text for code in UNSENT_NETWORK_ERRORS)


def is_network_error(text: str) -> bool:
    """Does this browser error message name a network-path failure (:data:`NETWORK_ERRORS`)?"""
    return any(f"net::{code}" in text for code in NETWORK_ERRORS)


class PageChanged(TaskError):
    """A locator matched nothing: the page's layout changed under the flow."""

    error_class = "page_changed"


class NeedsHuman(TaskError):
    """The robot cannot go on alone: login rejected, CAPTCHA, a question only a person answers."""

    error_class = "needs_human"


class WriteOutcomeUnknown(NeedsHuman):
    """A write step was in flight when an attempt died and declares no ``verify``: only a
    person can tell whether it went through (it is never replayed blindly)."""

    error_class = "write_unknown"


class BrowserCrashed(TaskError):
    """The browser process or the page's renderer died during the attempt."""

    error_class = "browser_crashed"


class StepTimeout(SiteFailed):
    """A step did not finish within its timeout."""

    error_class = "step_timeout"


class ProxyFailed(TaskError):
    """The shop's own proxy refused the connection, failed to connect onwards or did not
    answer (#17). It is the shop's trouble, not the site's nor the task's: the engine gives the
    attempt back, opens the shop's proxy breaker (``proxy:<shop>``, half-open probe) so only
    that shop's tasks wait, and opens no ticket. Never recorded as a task's failure, so its
    class is not in :data:`ERROR_CLASSES`."""

    error_class = "proxy_failed"

    def __init__(self, message: str, *, shop: str, step: int | None = None) -> None:
        super().__init__(message, step=step)
        self.shop = shop


class Blocked(TaskError):
    """The task tried to cross the trust boundary (another site, a credential where it must
    not go). Never retried, never settled by a rule: a person sees it as a ticket, with the
    evidence, and may allow the origin (``shopfleet shop set NAME --allow-origin URL``) and
    retry, or cancel the task."""

    error_class = "blocked"


class OriginBlocked(Blocked):
    """A page or frame of an origin the shop does not allow (or a ``data:``/``file:`` page)
    was about to be loaded or was shown; the task stopped before any further step."""

    error_class = "origin_blocked"


class CredentialBlocked(Blocked):
    """A shop credential would have been typed on a foreign origin or, for the password, into
    anything but an ``<input type=password>``; nothing was typed."""

    error_class = "credential_blocked"


ERROR_CLASSES: tuple[str, ...] = (
    "site_failed", "rate_limited", "network_down", "page_changed", "needs_human", "write_unknown",
    "browser_crashed", "step_timeout", "task_error", "blocked", "origin_blocked",
    "credential_blocked",
)
