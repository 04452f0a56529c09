"""The columns of every table, declared once: title, text, sort key.

Every column of a task table (pending, scheduled, parked, history) names the store sort it
selects (``sort=``, one of :data:`core.SORTS` for its view): clicking a header re-reads the
view in that order from the store, in keyset pages. Types, platforms, states and errors sort by
their stored code, not by the translated words shown (the store cannot sort by a translation);
rows of one kind still come together.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from . import names, shops
from .i18n import QT_TR_NOOP, tr
from .models import Column, fmt_duration, fmt_in, fmt_time
from .tickets import rule_signature


def _now() -> float:
    return time.time()


def _id(r: Any) -> str:
    return f"#{r.id}"


def _attempts(r: Any) -> str:
    return f"{r.attempts}/{r.max_attempts}"


def _hard(r: Any) -> str:
    return tr("hard-aged") if r.hard_aged else ""


def _err(r: Any) -> str:
    """The error's translated headline; the technical message is in the tooltip."""
    if getattr(r, "error_class", None):
        return names.error_headline(r.error_class)
    return (r.last_error or "").splitlines()[0][:200] if r.last_error else ""


def _worker_text(r: Any) -> str:
    """Who runs an in-flight task: this console, another worker on this computer (a headless
    ``shopfleet worker``), or another host by name; "elsewhere" only for another host whose
    name is unknown."""
    if not r.remote:
        return tr("this console")
    if r.worker and r.worker == socket.gethostname():
        return tr("another worker on this computer")
    return str(r.worker) or tr("elsewhere")


def _reason(r: Any) -> str:
    """Why the task is where it is: the error's headline when it failed, else core's words."""
    if getattr(r, "error_class", None) and r.state in ("waiting_human", "quarantined",
                                                       "failed", "queued"):
        return names.error_headline(r.error_class)
    return str(r.state_reason or "")


ID = Column("id", QT_TR_NOOP("ID"), _id, raw=lambda r: r.id, sort="id", right=True)
SCORE = Column("score", QT_TR_NOOP("Score"), lambda r: f"{r.score:.2f}",
               raw=lambda r: (r.band, r.prio_key), sort="score", right=True)
TYPE = Column("type", QT_TR_NOOP("Type"), lambda r: names.task_type(r.type), tip=lambda r: r.type,
              sort="type")
SHOP = Column("shop", QT_TR_NOOP("Shop"), lambda r: r.shop, sort="shop")
PLATFORM = Column("platform", QT_TR_NOOP("Platform"), lambda r: names.platform(r.platform),
                  sort="platform")
WAITED = Column("waited", QT_TR_NOOP("Waited"), lambda r: fmt_duration(_now() - r.created_at),
                raw=lambda r: -r.created_at, live=True, right=True, sort="waited")
DEADLINE = Column("deadline", QT_TR_NOOP("Deadline"), lambda r: fmt_in(r.deadline),
                  raw=lambda r: r.deadline or 0, live=True,
                  tip=lambda r: fmt_time(r.deadline), sort="deadline")
ATTEMPTS = Column("attempts", QT_TR_NOOP("Attempts"), _attempts, raw=lambda r: r.attempts,
                  right=True, sort="attempts")
HARD = Column("hard", QT_TR_NOOP("Hard-aged"), _hard, sort="hard")
REASON = Column("reason", QT_TR_NOOP("Reason"), _reason,
                tip=lambda r: str(r.state_reason or "") + (f"\n{r.last_error}"
                                                         if r.last_error else ""),
                sort="reason")
SINCE = Column("since", QT_TR_NOOP("Since"), lambda r: fmt_duration(_now() - r.updated_at),
               raw=lambda r: -r.updated_at, live=True, right=True,
               tip=lambda r: fmt_time(r.updated_at), sort="since")
ERROR_CLASS = Column("error_class", QT_TR_NOOP("Error"),
                     lambda r: names.error_headline(r.error_class),
                     tip=lambda r: r.error_class or "", sort="error_class")
ERROR = Column("error", QT_TR_NOOP("Details"),
               lambda r: (r.last_error or "").splitlines()[0][:200] if r.last_error else "",
               tip=lambda r: r.last_error or "", sort="error")
STATE = Column("state", QT_TR_NOOP("State"), lambda r: names.state(r.state), sort="state")
FINISHED = Column("finished", QT_TR_NOOP("Finished"), lambda r: fmt_time(r.finished_at),
                  raw=lambda r: r.finished_at or 0, sort="finished")
TOOK = Column("took", QT_TR_NOOP("Took"),
              lambda r: fmt_duration((r.finished_at or 0) - (r.started_at or r.created_at))
              if r.finished_at else "", right=True, sort="took")

PENDING = [ID, SCORE, TYPE, SHOP, PLATFORM, WAITED, DEADLINE, ATTEMPTS, HARD, REASON]
JOINS = Column("joins", QT_TR_NOOP("Joins the queue"), lambda r: fmt_in(r.not_before),
               raw=lambda r: r.not_before, live=True, right=True,
               tip=lambda r: fmt_time(r.not_before), sort="joins")
SCHEDULED = [ID, TYPE, SHOP, PLATFORM, JOINS, DEADLINE, REASON]  # #18 delayed tasks
PARKED = [ID, SCORE, TYPE, SHOP, PLATFORM, SINCE, ATTEMPTS, ERROR_CLASS, ERROR]
HISTORY = [ID, TYPE, SHOP, PLATFORM, STATE, FINISHED, TOOK, ATTEMPTS, ERROR_CLASS, ERROR]

# In flight: rows are InFlightRow (desktop/window.py), read from the engine.
IN_FLIGHT = [
    Column("id", QT_TR_NOOP("ID"), _id, raw=lambda r: r.id, right=True),
    Column("type", QT_TR_NOOP("Type"), lambda r: names.task_type(r.type)),
    Column("shop", QT_TR_NOOP("Shop"), lambda r: r.shop),
    Column("platform", QT_TR_NOOP("Platform"), lambda r: names.platform(r.platform)),
    Column("worker", QT_TR_NOOP("Worker"),
           _worker_text,
           tip=lambda r: r.owner),
    Column("step", QT_TR_NOOP("Step"),
           # 1-based as in the detail pane; a flow's last progress report is its end
           lambda r: (tr("%1 of %2", min(r.step + 1, r.steps), r.steps) + (f" · {r.step_name}"
                                                             if r.step_name else ""))
           if r.steps else ("" if r.remote else tr("starting")),
           raw=lambda r: (r.step, r.steps)),
    Column("elapsed", QT_TR_NOOP("Elapsed"), lambda r: fmt_duration(_now() - r.started_at),
           raw=lambda r: -r.started_at, live=True, right=True),
    Column("browser", QT_TR_NOOP("Browser"),
           lambda r: f"#{r.browser_id}" if r.browser_id is not None else "",
           raw=lambda r: r.browser_id or 0),
    Column("score", QT_TR_NOOP("Score"), lambda r: f"{r.score:.2f}", raw=lambda r: r.score,
           right=True),
    Column("preemptible", QT_TR_NOOP("Preemptible"),
           lambda r: tr("yes") if r.preemptible else tr("no")),
]


def short_owner(w: Any) -> str:
    """A worker's owner id without its host (shown in its own column): ``pid/nonce``."""
    owner = str(w.owner)
    return owner.removeprefix(f"{w.host}/") if w.host else owner


def _heartbeat_age(w: Any) -> str:
    return tr("%1 ago", fmt_duration(_now() - w.heartbeat_at)) if w.heartbeat_at else ""


# Workers: rows are core WorkerInfo records (store.workers()), one per engine of the fleet.
WORKERS = [
    Column("host", QT_TR_NOOP("Host"), lambda r: r.host),
    Column("owner", QT_TR_NOOP("Worker"), short_owner, tip=lambda r: r.owner),
    Column("state", QT_TR_NOOP("State"), lambda r: names.state(r.state),
           raw=lambda r: {"lost": 0, "alive": 1, "stopped": 2}.get(r.state, 3)),
    Column("slots", QT_TR_NOOP("Pool size"), lambda r: str(r.slots), raw=lambda r: r.slots,
           right=True),
    Column("running", QT_TR_NOOP("Running"), lambda r: str(r.running),
           raw=lambda r: r.running, right=True),
    Column("heartbeat", QT_TR_NOOP("Last heartbeat"), _heartbeat_age,
           raw=lambda r: -r.heartbeat_at, live=True, right=True,
           tip=lambda r: fmt_time(r.heartbeat_at)),
    Column("started", QT_TR_NOOP("Started"), lambda r: fmt_time(r.started_at),
           raw=lambda r: r.started_at, tip=lambda r: fmt_duration(_now() - r.started_at)),
    Column("done", QT_TR_NOOP("Tasks done"), lambda r: f"{int(r.detail.get('done', 0) or 0):,}",
           raw=lambda r: int(r.detail.get("done", 0) or 0), right=True),
    Column("browsers", QT_TR_NOOP("Browsers"),
           lambda r: str(r.detail.get("browsers", "")), raw=lambda r: r.detail.get(
               "browsers", 0) or 0, right=True),
]

SHOPS = [
    Column("name", QT_TR_NOOP("Shop"), lambda r: r.name),
    # #15: a shop a person has taken over, where it is seen first (who, from where, until
    # when; elided on a small screen, whole in the tooltip)
    Column("takeover", QT_TR_NOOP("Takeover"), lambda r: shops.hold_text(r),
           tip=lambda r: shops.hold_tip(r), icon=lambda r: shops.hold_icon(r), live=True,
           width=290),
    Column("platform", QT_TR_NOOP("Platform"), lambda r: names.platform(r.platform)),
    Column("domain", QT_TR_NOOP("Site"), lambda r: r.domain),
    Column("tags", QT_TR_NOOP("Tags"), lambda r: " ".join(r.tags)),  # #18
    Column("login", QT_TR_NOOP("Login name"), lambda r: getattr(r, "username", "")),
    Column("password", QT_TR_NOOP("Password"), lambda r: shops.password_text(r),
           tip=lambda r: shops.password_tip(r), icon=lambda r: shops.password_icon(r)),
    Column("network", QT_TR_NOOP("Network"), lambda r: shops.network_text(r),  # #17
           tip=lambda r: shops.network_tip(r), icon=lambda r: shops.network_icon(r)),
    Column("paused", QT_TR_NOOP("Shop paused"), lambda r: tr("paused") if r.paused else ""),
    Column("dpaused", QT_TR_NOOP("Site paused"),
           lambda r: tr("paused") if r.domain_paused else ""),
    Column("queued", QT_TR_NOOP("Queued"), lambda r: f"{r.queued:,}", raw=lambda r: r.queued,
           right=True),
    Column("running", QT_TR_NOOP("Running"), lambda r: str(r.running),
           raw=lambda r: r.running, right=True),
    Column("waiting", QT_TR_NOOP("Waiting for a person"), lambda r: str(r.waiting),
           raw=lambda r: r.waiting, right=True),
]

GATES = [
    Column("name", QT_TR_NOOP("Rate limit"), lambda r: names.gate(r.name)),
    Column("rate", QT_TR_NOOP("Requests per second"), lambda r: f"{r.rate_per_s:g}",
           raw=lambda r: r.rate_per_s, right=True),
    Column("burst", QT_TR_NOOP("Burst"), lambda r: f"{r.burst:g}", raw=lambda r: r.burst,
           right=True),
    Column("tokens", QT_TR_NOOP("Tokens"), lambda r: f"{r.tokens:.1f}", raw=lambda r: r.tokens,
           right=True),
    Column("waiting", QT_TR_NOOP("Waiting"), lambda r: str(r.waiting), raw=lambda r: r.waiting,
           right=True),
    Column("held", QT_TR_NOOP("Held"), lambda r: fmt_in(r.held_until) if r.held_until
           and r.held_until > _now() else "", live=True),
    Column("issued", QT_TR_NOOP("Issued"), lambda r: f"{r.issued:,}", raw=lambda r: r.issued,
           right=True),
]

BREAKERS = [
    Column("name", QT_TR_NOOP("Breaker"), lambda r: names.breaker(r.name)),
    Column("state", QT_TR_NOOP("State"), lambda r: names.breaker_state(str(r.state.value))),
    Column("failures", QT_TR_NOOP("Recent failures"), lambda r: str(r.recent_failures),
           raw=lambda r: r.recent_failures, right=True),
    Column("trips", QT_TR_NOOP("Trips"), lambda r: str(r.trips), raw=lambda r: r.trips,
           right=True),
    Column("probe", QT_TR_NOOP("Next probe"), lambda r: fmt_in(r.next_probe_at)
           if r.next_probe_at else "", live=True),
    Column("manual", QT_TR_NOOP("By hand"), lambda r: tr("yes") if r.manual else ""),
]

TICKETS = [
    Column("id", QT_TR_NOOP("Ticket"), lambda r: f"#{r.id}", raw=lambda r: r.id, right=True),
    Column("task", QT_TR_NOOP("Task"), lambda r: f"#{r.task_id}", raw=lambda r: r.task_id,
           right=True),
    Column("shop", QT_TR_NOOP("Shop"), lambda r: r.shop),
    Column("platform", QT_TR_NOOP("Platform"), lambda r: names.platform(r.platform)),
    Column("type", QT_TR_NOOP("Type"), lambda r: names.task_type(r.task_type)),
    Column("age", QT_TR_NOOP("Open for"), lambda r: fmt_duration(r.age_s(_now())),
           raw=lambda r: -r.opened_at, live=True, right=True),
    Column("step", QT_TR_NOOP("Step"), lambda r: (str(r.step + 1) if r.step is not None else "")
           + (f" · {r.step_name}" if r.step_name else "")),
    Column("error_class", QT_TR_NOOP("Problem"), lambda r: names.error_headline(r.error_class),
           tip=lambda r: r.error_class),
    Column("error", QT_TR_NOOP("Details"), lambda r: r.error.splitlines()[0][:200]
           if r.error else "", tip=lambda r: r.error),
]

KB = [
    Column("signature", QT_TR_NOOP("Failure"), lambda r: " / ".join(
        x for x in (names.platform(r.platform), names.task_type(r.task_type), r.step_name,
                    names.error_headline(r.error_class)) if x),
           tip=lambda r: f"{r.describe()}\n{r.error_norm}"),
    Column("action", QT_TR_NOOP("Answer"), lambda r: names.answer(r.action)),
    Column("note", QT_TR_NOOP("Note"), lambda r: r.note),
    Column("when", QT_TR_NOOP("When"), lambda r: fmt_time(r.at), raw=lambda r: r.at),
    Column("ticket", QT_TR_NOOP("Ticket"), lambda r: f"#{r.ticket_id}", raw=lambda r: r.ticket_id,
           right=True),
]

RULES = [
    Column("id", QT_TR_NOOP("Rule"), lambda r: f"#{r.id}", raw=lambda r: r.id, right=True),
    Column("signature", QT_TR_NOOP("Signature"), lambda r: rule_signature(r)),
    Column("action", QT_TR_NOOP("Action"), lambda r: names.answer(r.action)),
    Column("enabled", QT_TR_NOOP("Enabled"), lambda r: tr("yes") if r.enabled else tr("no")),
    Column("hits", QT_TR_NOOP("Hits"), lambda r: str(r.hits), raw=lambda r: r.hits,
           right=True),
]
