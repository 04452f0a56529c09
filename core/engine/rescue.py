"""The rescue chain's engine side: what happens to a failed attempt.

In-attempt levels run in the executor (retry the step in place, then reload the flow's start
page and resume from the last checkpoint). When the attempt still fails, :func:`decide` picks,
by the error's type, the rules and the budgets:

* a rule for the failure's signature resolves it on its own (retry later / skip / a person);
* ``Blocked`` (a foreign origin, a credential where it must not go) → a ticket at once; no
  rule settles it and nothing retries it (retrying would try the same thing again);
* ``NeedsHuman`` (CAPTCHA, login rejected, a write of unknown outcome) → a ticket at once;
* ``BrowserCrashed`` → requeued for a fresh browser, or *quarantine* once the task has crashed
  ``quarantine_after`` times (a poison pill is not handed out again);
* ``PageChanged`` → a ticket (the in-attempt retries did not help; a person must look);
* site failures, timeouts, internal errors of the task alone → requeued with back-off while
  attempts are left, else a ticket (it failed on its own through all its attempts); when the
  rescue share is at its cap the requeue waits longer (:data:`CAP_WAIT_FACTOR`), it is not
  escalated.

Before :func:`decide`, the engine settles what is *the site's or the network's state*, not the
task's (:mod:`.attempts`): those never spend an attempt and never open a ticket —

* ``RateLimited`` (429, 503 + Retry-After) → the domain's gate is held for Retry-After, the
  task waits as long, the breaker is not told; a domain that keeps answering 429 gets a lower
  gate rate for a while (:class:`RateLimitMemory`);
* ``NetworkDown`` (DNS, refused, offline) → the domain's breaker opens at once: claims pause,
  after the back-off one probe task tries the path again; the task is due at that probe time
  (not a growing back-off of its own), so when the probe succeeds every task the outage held
  is claimable at once; only the probe's own outage backs the breaker off further;
* ``SiteFailed`` while the domain is in trouble (its breaker is not closed, or another task of
  the domain failed the same way within the breaker's window: :class:`SiteTrouble`) → counted
  by the breaker, the task waits for the next probe.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field

from ..clock import Clock
from ..config import RescueSettings
from ..errors import (
    Blocked,
    BrowserCrashed,
    NeedsHuman,
    PageChanged,
    TaskError,
    WriteOutcomeUnknown,
)
from ..store import ClaimedTask
from ..tickets import Rule, Signature, normalise_error

CAP_WAIT_FACTOR = 8.0
"""With the rescue share at its cap, a requeue waits this many times its usual back-off."""

SLOW_WINDOW_S = 120.0
"""Rate limits of a domain within this window make its gate slower; once this long passes
without one, the gate is back to its configured rate."""

SLOW_MAX_FACTOR = 8.0
"""The slowest an adaptive gate gets: its configured rate divided by this."""


class RateLimitMemory:
    """Remembers each domain's recent rate limits: the second within :data:`SLOW_WINDOW_S`
    halves the gate's rate, each further one halves it again (down to 1/:data:`SLOW_MAX_FACTOR`);
    :meth:`recovered` names the domains that have been quiet for the window."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}
        self.slowed: dict[str, float] = {}
        """Domain → the factor its gate's rate is divided by now."""

    def note(self, domain: str) -> float:
        """A rate limit from ``domain``; returns the factor to divide its rate by (1: none)."""
        now = self.clock.now()
        d = self._seen.setdefault(domain, deque())
        d.append(now)
        while d and d[0] <= now - SLOW_WINDOW_S:
            d.popleft()
        factor = min(SLOW_MAX_FACTOR, 2.0 ** (len(d) - 1))
        if factor > 1:
            self.slowed[domain] = factor
        return factor

    def recovered(self) -> list[str]:
        """Slowed domains without a rate limit for :data:`SLOW_WINDOW_S`: restore them."""
        now = self.clock.now()
        back = [dom for dom in self.slowed
                if not self._seen.get(dom) or self._seen[dom][-1] <= now - SLOW_WINDOW_S]
        for dom in back:
            del self.slowed[dom]
            self._seen.pop(dom, None)
        return back


@dataclass
class SiteTrouble:
    """Which tasks of each domain failed with a site failure, and when: a failure is the
    site's state (not the task's own) when *another* task of the domain failed within the
    breaker's window."""

    window_s: float
    clock: Clock
    _seen: dict[str, deque[tuple[float, int]]] = field(default_factory=dict)
    _ok: dict[str, tuple[float, int]] = field(default_factory=dict)

    def succeeded(self, domain: str, task_id: int) -> None:
        """A task of the domain finished: the domain works (for others than a failing task)."""
        self._ok[domain] = (self.clock.now(), task_id)

    def others_succeed(self, domain: str, task_id: int) -> bool:
        """Did another task of the domain finish within the window? (Then a task failing
        through all its attempts fails on its own, not because of the site.)"""
        ok = self._ok.get(domain)
        return ok is not None and ok[1] != task_id and ok[0] > self.clock.now() - self.window_s

    def note(self, domain: str, task_id: int) -> bool:
        """Record the failure; True if another task of the domain failed within the window."""
        now = self.clock.now()
        d = self._seen.setdefault(domain, deque())
        while d and d[0][0] <= now - self.window_s:
            d.popleft()
        shared = any(tid != task_id for _, tid in d)
        d.append((now, task_id))
        return shared


class Verdict(enum.StrEnum):
    REQUEUE = "requeue"
    TICKET = "ticket"
    QUARANTINE = "quarantine"
    RULE = "rule"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    rule: Rule | None = None
    wait_factor: float = 1.0
    """For a requeue: how many times its usual back-off it waits (the rescue cap)."""


def signature_of(task: ClaimedTask, exc: TaskError) -> Signature:
    step = exc.step_name or (f"step {exc.step}" if exc.step is not None else "")
    return Signature(task.platform, task.type, step, exc.error_class,
                     normalise_error(str(exc)))


class RescueBudget:
    """Caps rescue work at a share of all attempts in a sliding window."""

    def __init__(self, settings: RescueSettings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock
        self._attempts: deque[float] = deque()
        self._rescues: deque[float] = deque()

    def _trim(self) -> None:
        edge = self.clock.now() - self.settings.window_s
        for d in (self._attempts, self._rescues):
            while d and d[0] < edge:
                d.popleft()

    def attempt(self) -> None:
        self._attempts.append(self.clock.now())

    def rescue(self) -> None:
        self._rescues.append(self.clock.now())

    def allows(self) -> bool:
        """May one more rescue (retry, resume, requeue) happen now?"""
        self._trim()
        n = len(self._attempts)
        if n < self.settings.min_attempts_for_share:
            return True
        return (len(self._rescues) + 1) / n <= self.settings.share

    @property
    def share(self) -> float:
        self._trim()
        return len(self._rescues) / len(self._attempts) if self._attempts else 0.0


def decide(task: ClaimedTask, exc: TaskError, *, crashes: int, rule: Rule | None,
           settings: RescueSettings, budget: RescueBudget) -> Decision:
    if isinstance(exc, Blocked):
        return Decision(Verdict.TICKET, "the task crossed the trust boundary")
    if rule is not None and not isinstance(exc, WriteOutcomeUnknown):
        return Decision(Verdict.RULE, f"rule #{rule.id} ({rule.action.value})", rule)
    if isinstance(exc, NeedsHuman):
        return Decision(Verdict.TICKET, "a person is needed")
    if isinstance(exc, BrowserCrashed):
        if crashes + 1 >= settings.quarantine_after:
            return Decision(Verdict.QUARANTINE,
                            f"crashed its browser {crashes + 1} times: poison pill")
        return Decision(Verdict.REQUEUE, "browser crashed: retry on a fresh browser")
    if isinstance(exc, PageChanged):
        return Decision(Verdict.TICKET, "the page changed and retries did not help")
    if task.attempts >= task.max_attempts:
        return Decision(Verdict.TICKET, f"{task.attempts} attempts spent")
    if not budget.allows():
        return Decision(Verdict.REQUEUE,
                        f"rescue share {budget.share:.0%} is at its cap: waits longer",
                        wait_factor=CAP_WAIT_FACTOR)
    return Decision(Verdict.REQUEUE, "retry with back-off")
