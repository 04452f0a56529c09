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
* site failures, timeouts, rate limits, internal errors → requeued with back-off while
  attempts are left and the engine's rescue share is not exceeded, else a ticket.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

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
        return Decision(Verdict.TICKET,
                        f"rescue share {budget.share:.0%} is at its cap: escalated")
    return Decision(Verdict.REQUEUE, "retry with back-off")
