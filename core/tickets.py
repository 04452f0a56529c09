"""Humans in the loop: exception tickets, the knowledge base of answers, and rules.

A task the robot cannot finish becomes a **ticket** carrying its evidence. The operator answers
it with one of five actions (:class:`Answer`) and a note; the answer is written to the
**knowledge base** under the failure's **signature** (platform, task type, step, error class and
a normalised error text), so the next ticket with the same signature shows what was decided
before. An answer can be promoted to a **rule** that resolves matching failures on its own;
every automatic resolution is logged in the task's event history with the rule that made it.

Ticket life cycle (:class:`TicketState`)::

    open ──answer retry/resume/skip──▶ answered ──task finishes──▶ closed
      │ ──answer done─────────────────────────────────────────────▶ closed
      └──answer cancel / task cancelled───────────────────────────▶ cancelled
"""

from __future__ import annotations

import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput


class TicketState(enum.StrEnum):
    OPEN = "open"
    """Waiting for an operator."""
    ANSWERED = "answered"
    """Answered; the task is back in the queue to act on the answer."""
    CLOSED = "closed"
    """The task finished after the answer (or the operator finished it by hand)."""
    CANCELLED = "cancelled"
    """The operator cancelled the task."""


class Answer(enum.StrEnum):
    RETRY = "retry"
    """Run the task again from the start (completed writes are still never repeated)."""
    RESUME = "resume"
    """Run it again from the failed step."""
    SKIP = "skip"
    """Treat the failed step as done and continue after it."""
    DONE = "done"
    """The operator finished the task by hand."""
    CANCEL = "cancel"
    """Give the task up."""

    def as_rule(self) -> RuleAction | None:
        """The rule this answer becomes when the operator makes it one; None when no rule
        can do what the answer does (a person finishing or cancelling a task is not
        something the engine repeats on its own)."""
        return _RULE_FOR_ANSWER.get(self)

    @property
    def resends(self) -> bool:
        """Does this answer run a write that was in flight again (retry, resume)?"""
        return self in (Answer.RETRY, Answer.RESUME)


class RuleAction(enum.StrEnum):
    RETRY_LATER = "retry_later"
    """Requeue the task after ``delay_s`` (no ticket)."""
    SKIP = "skip"
    """Skip the failed step and continue (no ticket)."""
    HUMAN = "human"
    """Send it to a person at once (a ticket, no retries)."""


_RULE_FOR_ANSWER = {Answer.RETRY: RuleAction.RETRY_LATER, Answer.RESUME: RuleAction.RETRY_LATER,
                    Answer.SKIP: RuleAction.SKIP}

WRITE_UNKNOWN = "write_unknown"
"""A ticket's kind for a write whose outcome is unknown."""


def default_answer(kind: str) -> Answer:
    """The answer a ticket of this kind offers first. A write of unknown outcome never
    defaults to an answer that sends it again: skip (it went through; check the shop first,
    the ticket shows the page after the write and the flow's verify result)."""
    return Answer.SKIP if kind == WRITE_UNKNOWN else Answer.RESUME


def check_write_safety(kind: str, action: Answer, *, confirm_resend: bool) -> None:
    """Refuse an answer that would send a write of unknown outcome again unless confirmed.

    Raises:
        InvalidInput: naming ``confirm_resend`` (the CLI's ``--confirm-resend``).
    """
    if kind == WRITE_UNKNOWN and action.resends and not confirm_resend:
        raise InvalidInput("confirm_resend", f"'{action.value}' runs a write of unknown outcome "
                           "again: it may already have gone through (a reply sent twice). Check "
                           "the shop; answer skip if it went through, or confirm the resend")


def describe_rule(action: RuleAction, delay_s: float, sig: Signature) -> str:
    """A rule in words, as the operator sees it before saving: what it does, after how long,
    and to which failures (platform, task type, step, error)."""
    if action is RuleAction.RETRY_LATER:
        mins = delay_s / 60
        wait = (f"{delay_s:.0f} s" if delay_s < 120 else
                f"{mins:.0f} min" if mins < 120 else f"{mins / 60:.1f} h")
        what = f"retry the task from its failed step after {wait}, without a ticket"
    elif action is RuleAction.SKIP:
        what = "skip the failed step and go on with the next one, without a ticket"
    else:
        what = "open a ticket at once, without retrying"
    step = f"step '{sig.step_name}'" if sig.step_name else "the start page"
    return (f"When a {sig.task_type} task of platform {sig.platform} fails at {step} with "
            f"{sig.error_class} ('{sig.error_norm[:80]}'): {what}.")

_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_URL = re.compile(r"https?://[^\s'\"]+")


def normalise_error(text: str) -> str:
    """The error text without what changes between occurrences (numbers, URLs, spacing)."""
    t = _URL.sub("<url>", text.lower())
    t = _DIGITS.sub("#", t)
    return _SPACE.sub(" ", t).strip()[:200]


@dataclass(frozen=True)
class Signature:
    platform: str
    task_type: str
    step_name: str
    error_class: str
    error_norm: str

    @property
    def key(self) -> str:
        raw = "|".join((self.platform, self.task_type, self.step_name, self.error_class,
                        self.error_norm))
        return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]

    def describe(self) -> str:
        return (f"{self.platform} / {self.task_type} / {self.step_name or 'start'} / "
                f"{self.error_class}: {self.error_norm}")


@dataclass(frozen=True)
class Ticket:
    id: int
    task_id: int
    state: TicketState
    kind: str
    opened_at: float
    answered_at: float | None
    closed_at: float | None
    shop: str
    platform: str
    domain: str
    task_type: str
    step: int | None
    step_name: str
    error_class: str
    error: str
    signature: str
    evidence: dict[str, str]
    action: str | None
    note: str

    def age_s(self, now: float) -> float:
        return max(0.0, (self.closed_at or now) - self.opened_at)

    def to_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["state"] = self.state.value
        return d


@dataclass(frozen=True)
class KbAnswer:
    id: int
    signature: str
    ticket_id: int
    at: float
    platform: str
    task_type: str
    step_name: str
    error_class: str
    error_norm: str
    action: str
    note: str

    def describe(self) -> str:
        """The failure it answered, as the console lists it."""
        return (f"{self.platform} / {self.task_type} / {self.step_name or 'start'} / "
                f"{self.error_class}")


@dataclass(frozen=True)
class Rule:
    id: int
    signature: str
    action: RuleAction
    delay_s: float
    note: str
    enabled: bool
    created_at: float
    from_answer: int | None
    hits: int
    description: str


def parse_answer(action: Answer | str, make_rule: RuleAction | str | None
                 ) -> tuple[Answer, RuleAction | None]:
    """An operator's answer and optional rule, checked (errors name the field)."""
    try:
        act = Answer(action)
    except ValueError:
        raise InvalidInput("action", f"{action!r} is not one of "
                           f"{', '.join(a.value for a in Answer)}") from None
    rule_act: RuleAction | None = None
    if make_rule is not None:
        try:
            rule_act = RuleAction(make_rule)
        except ValueError:
            raise InvalidInput("rule", f"{make_rule!r} is not one of "
                               f"{', '.join(a.value for a in RuleAction)}") from None
    return act, rule_act


def answer_checkpoint(act: Answer, step: int | None, cp: dict[str, Any]) -> dict[str, Any]:
    """Where a task goes on after an answer (retry / skip / resume), from its checkpoint.

    Writes already done stay done on every path: nothing is submitted twice.
    """
    if act is Answer.RETRY:
        return {"next_step": 0, "results": {}, "writes_done": cp.get("writes_done", []),
                "write_in_flight": None}
    if act is Answer.SKIP:
        at = step if step is not None else int(cp.get("next_step", 0))
        writes = list(cp.get("writes_done", []))
        if cp.get("write_in_flight") == at:
            writes.append(at)  # the operator says it went through
        return {"next_step": at + 1, "results": cp.get("results", {}),
                "writes_done": writes, "write_in_flight": None}
    if act is Answer.RESUME and cp.get("write_in_flight") is not None:
        # The operator checked: the write did not go through; run it again.
        return {**cp, "write_in_flight": None}
    return cp


def rule_checkpoint(rule: Rule, step: int | None, cp: dict[str, Any]
                    ) -> tuple[dict[str, Any], float]:
    """A rule's resolution of a failure at ``step``: (checkpoint to go on from, delay)."""
    if rule.action is RuleAction.SKIP and step is not None:
        return ({"next_step": step + 1, "results": cp.get("results", {}),
                 "writes_done": list(cp.get("writes_done", [])), "write_in_flight": None},
                0.0)
    if rule.action is RuleAction.RETRY_LATER:
        return cp, rule.delay_s
    return cp, 0.0
