"""What the operator reads for core's codes: task types, platforms, states, error classes,
answers, breaker states, settings — in one place, in the operator's words.

Core speaks in codes (``reply_customer``, ``pdd``, ``waiting_human``, ``needs_human``); the
desktop shows their display names, translated when shown (the tables below are marked with
``QT_TR_NOOP`` so ``pyside6-lupdate`` finds them). A code without a name (a custom task type, a
platform the operator typed) shows as it is. The words follow ``docs/glossary.md``.

Errors are shown as a short translated headline chosen by the error's *class* (core's
``error_class`` or exception type — never by parsing the message); the message itself, which
is technical and untranslated, stays one click away (a tooltip, "Show details").
"""

from __future__ import annotations

from .i18n import QT_TR_NOOP, tr

TASK_TYPES: dict[str, str] = {
    "reply_customer": QT_TR_NOOP("Reply to customers"),
    "campaign_signup": QT_TR_NOOP("Campaign sign-up"),
    "upload_product": QT_TR_NOOP("Upload products"),
    "collect_data": QT_TR_NOOP("Collect data"),
}

PLATFORMS: dict[str, str] = {
    "pdd": QT_TR_NOOP("Pinduoduo"),
    "temu": "Temu",
    "tiktok": "TikTok Shop",
}
"""Brand names stay as the brands write them (Temu, TikTok Shop); Pinduoduo is 拼多多."""

STATES: dict[str, str] = {
    "queued": QT_TR_NOOP("Queued"),
    "scheduled": QT_TR_NOOP("Scheduled"),  # #18: waits for its time, then joins the queue
    "running": QT_TR_NOOP("Running"),
    "suspended": QT_TR_NOOP("Suspended"),
    "waiting_human": QT_TR_NOOP("Waiting for a person"),
    "quarantined": QT_TR_NOOP("Quarantined"),
    "done": QT_TR_NOOP("Done"),
    "failed": QT_TR_NOOP("Failed"),
    "cancelled": QT_TR_NOOP("Cancelled"),
    # step states (the flow in the detail pane, the ticket's step log)
    "todo": QT_TR_NOOP("To do"),
    "current": QT_TR_NOOP("Current"),
    "unknown": QT_TR_NOOP("Unknown"),
    "started": QT_TR_NOOP("Started"),
    "skipped": QT_TR_NOOP("Skipped"),
    "replayed": QT_TR_NOOP("Replayed"),
    "verified": QT_TR_NOOP("Verified"),
    # workers
    "alive": QT_TR_NOOP("Online"),
    "stopped": QT_TR_NOOP("Stopped"),
    "lost": QT_TR_NOOP("Lost"),
    # tickets
    "open": QT_TR_NOOP("Open"),
    "answered": QT_TR_NOOP("Answered"),
}

BREAKER_STATES: dict[str, str] = {
    "closed": QT_TR_NOOP("Normal"),
    "open": QT_TR_NOOP("Tripped"),
    "half_open": QT_TR_NOOP("Probing"),
}
"""A breaker's state as an operator reads it: 正常 / 已熔断 / 试探中 (never "open/closed",
which reads as "protection off/on")."""

ANSWERS: dict[str, str] = {
    "retry": QT_TR_NOOP("Retry"),
    "resume": QT_TR_NOOP("Resume"),
    "skip": QT_TR_NOOP("Skip step"),
    "done": QT_TR_NOOP("Mark done"),
    "cancel": QT_TR_NOOP("Cancel task"),
    "human": QT_TR_NOOP("Ask a person"),
    "retry_later": QT_TR_NOOP("Retry later"),
}
"""Ticket answers and rule actions."""

ERROR_HEADLINES: dict[str, str] = {
    "site_failed": QT_TR_NOOP("The site did not answer properly (server error or no "
                              "connection)"),
    "rate_limited": QT_TR_NOOP("The site asked to slow down (rate limited)"),
    "page_changed": QT_TR_NOOP("The page has changed: an element the flow needs is missing"),
    "needs_human": QT_TR_NOOP("A CAPTCHA or login check on the page needs a person"),
    "write_unknown": QT_TR_NOOP("A change was cut off: check on the site whether it went "
                                "through"),
    "browser_crashed": QT_TR_NOOP("The browser crashed"),
    "step_timeout": QT_TR_NOOP("A step took too long"),
    "task_error": QT_TR_NOOP("The task failed"),
    "blocked": QT_TR_NOOP("Stopped at the trust boundary"),
    "origin_blocked": QT_TR_NOOP("Stopped: the page went to a site the shop does not allow"),
    "credential_blocked": QT_TR_NOOP("Stopped: a password would have gone where it must not"),
}
"""Headline per core ``error_class`` (``core.errors.ERROR_CLASSES``)."""

REFUSALS: dict[str, str] = {
    "InvalidInput": QT_TR_NOOP("Some input is not valid"),
    "ConfigError": QT_TR_NOOP("The configuration is not valid"),
    "SpecError": QT_TR_NOOP("The task is not valid"),
    "UnknownTask": QT_TR_NOOP("There is no such task"),
    "VaultKeyError": QT_TR_NOOP("The vault key is missing or wrong"),
    "BacklogFull": QT_TR_NOOP("The queue is full; nothing was added"),
    "Refused": QT_TR_NOOP("This cannot be done right now"),
    "EnvironmentProblem": QT_TR_NOOP("This computer lacks something ShopFleet needs"),
    "DiskFull": QT_TR_NOOP("The disk is full; nothing was written"),
    "StoreClosed": QT_TR_NOOP("The database is closed"),
    "StoreUnavailable": QT_TR_NOOP("The shared queue cannot be reached; try again"),
    "LeaseLost": QT_TR_NOOP("Another worker took over the task"),
}
"""Headline per core exception type, for refused operator commands."""

SETTINGS_SECTIONS: dict[str, str] = {
    "queue": QT_TR_NOOP("Queue"),
    "priority": QT_TR_NOOP("Priority"),
    "pool": QT_TR_NOOP("Browser pool"),
    "breakers": QT_TR_NOOP("Breakers"),
    "browser": QT_TR_NOOP("Browser"),
    "store": QT_TR_NOOP("Database"),
}

SETTINGS_FIELDS: dict[str, tuple[str, str]] = {
    "queue.max_backlog": (QT_TR_NOOP("Most queued tasks"),
                          QT_TR_NOOP("Submissions beyond this many waiting tasks are refused "
                                     "(queued, scheduled for later or suspended).")),
    "queue.schedule_tick_s": (QT_TR_NOOP("Look for due schedules every (seconds)"),
                              QT_TR_NOOP("A schedule's firing starts at most this late "
                                         "(0.5 to 300).")),
    "queue.urgent_reserve": (QT_TR_NOOP("Extra room for urgent tasks (share)"),
                             QT_TR_NOOP("Beyond the most queued tasks, this share (0–1) more "
                                        "is kept for urgent tasks.")),
    "queue.max_tasks_per_shop": (QT_TR_NOOP("Tasks per shop at once"),
                                 QT_TR_NOOP("How many tasks of one shop may run at the same "
                                            "time.")),
    "queue.lease_s": (QT_TR_NOOP("Lease (seconds)"),
                      QT_TR_NOOP("How long a worker holds a task before others may take it "
                                 "over.")),
    "queue.recover_every_s": (QT_TR_NOOP("Look for lost tasks every (seconds)"),
                              QT_TR_NOOP("How often tasks of vanished workers are put back.")),
    "queue.heartbeat_s": (QT_TR_NOOP("Heartbeat (seconds)"),
                          QT_TR_NOOP("How often a worker says it is alive.")),
    "queue.worker_lost_after_s": (QT_TR_NOOP("Worker lost after (seconds)"),
                                  QT_TR_NOOP("A worker silent this long is shown as lost.")),
    "queue.max_attempts": (QT_TR_NOOP("Most attempts"),
                           QT_TR_NOOP("After this many failed attempts a task goes to "
                                      "quarantine.")),
    "queue.retry_backoff_s": (QT_TR_NOOP("First retry after (seconds)"),
                              QT_TR_NOOP("The wait before a failed task is tried again; it "
                                         "doubles each time.")),
    "queue.retry_backoff_max_s": (QT_TR_NOOP("Longest retry wait (seconds)"),
                                  QT_TR_NOOP("The retry wait never grows beyond this.")),
    "queue.max_task_bytes": (QT_TR_NOOP("Largest task (bytes)"),
                             QT_TR_NOOP("A task whose data is bigger is refused.")),
    "priority.aging_per_min": (QT_TR_NOOP("Priority gained per minute of waiting"),
                               QT_TR_NOOP("Waiting tasks move up by this much each minute, so "
                                          "none waits forever.")),
    "priority.hard_aging_min": (QT_TR_NOOP("Jump the queue after (minutes)"),
                                QT_TR_NOOP("A task waiting this long goes ahead of all normal "
                                           "work.")),
    "priority.retry_bonus": (QT_TR_NOOP("Bonus for retried tasks"),
                             QT_TR_NOOP("Added to the priority of a task being retried.")),
    "priority.preempt_threshold": (QT_TR_NOOP("Preempt when ahead by"),
                                   QT_TR_NOOP("A waiting task this much more urgent than a "
                                              "running one suspends it at a safe step.")),
    "priority.urgency_refresh_s": (QT_TR_NOOP("Re-rate urgency every (seconds)"),
                                   QT_TR_NOOP("How often deadlines and platform rules are "
                                              "re-evaluated.")),
    "pool.max_browsers": (QT_TR_NOOP("Most browsers"),
                          QT_TR_NOOP("How many browsers may run at the same time.")),
    "pool.warm": (QT_TR_NOOP("Browsers kept ready"),
                  QT_TR_NOOP("Browsers started ahead of work, so tasks start at once.")),
    "pool.tasks_per_browser": (QT_TR_NOOP("Tasks per browser before a restart"),
                               QT_TR_NOOP("A browser is replaced after this many tasks.")),
    "pool.idle_retire_s": (QT_TR_NOOP("Close idle browsers after (seconds)"),
                           QT_TR_NOOP("A browser with nothing to do this long is closed.")),
    "pool.close_timeout_s": (QT_TR_NOOP("Closing a browser may take (seconds)"),
                             QT_TR_NOOP("After this, a browser that does not close is "
                                        "killed.")),
    "pool.step_timeout_s": (QT_TR_NOOP("Step time limit (seconds)"),
                            QT_TR_NOOP("A step that takes longer fails with a time-out.")),
    "pool.contexts_per_browser": (QT_TR_NOOP("Shops per browser"),
                                  QT_TR_NOOP("How many shops share one browser, each in its "
                                             "own profile.")),
    "pool.prewarm_contexts": (QT_TR_NOOP("Prepare shop profiles ahead"),
                              QT_TR_NOOP("Open shop profiles before their tasks start.")),
    "breakers.failures": (QT_TR_NOOP("Failures before tripping"),
                          QT_TR_NOOP("This many site failures in the window trip the "
                                     "site's breaker: its tasks stop.")),
    "breakers.window_s": (QT_TR_NOOP("Counting window (seconds)"),
                          QT_TR_NOOP("Failures older than this no longer count.")),
    "breakers.backoff_s": (QT_TR_NOOP("First probe after (seconds)"),
                           QT_TR_NOOP("A tripped breaker tries one task after this long.")),
    "breakers.backoff_max_s": (QT_TR_NOOP("Longest wait between probes (seconds)"),
                               QT_TR_NOOP("The wait between probes never grows beyond "
                                          "this.")),
    "browser.executable_path": (QT_TR_NOOP("Browser program"),
                                QT_TR_NOOP("The browser to drive; empty: find Chrome or "
                                           "Edge.")),
    "browser.channel": (QT_TR_NOOP("Browser channel"),
                        QT_TR_NOOP("Which installed browser to use (chrome, msedge).")),
    "browser.headless": (QT_TR_NOOP("Hide browser windows"),
                         QT_TR_NOOP("Run browsers without showing their windows.")),
    "browser.extra_args": (QT_TR_NOOP("Extra browser arguments"),
                           QT_TR_NOOP("Command-line switches passed to the browser.")),
    "browser.host_resolver_rules": (QT_TR_NOOP("Host resolver rules"),
                                    QT_TR_NOOP("For testing: send site names to other "
                                               "addresses.")),
    "store.path": (QT_TR_NOOP("Database file"),
                   QT_TR_NOOP("The SQLite file holding the queue and history.")),
    "store.url": (QT_TR_NOOP("Shared queue address"),
                  QT_TR_NOOP("A Redis address shared by several computers; empty: this "
                             "computer only.")),
    "store.redis_prefix": (QT_TR_NOOP("Shared queue name prefix"),
                           QT_TR_NOOP("Keeps several fleets apart on one Redis.")),
    "store.synchronous": (QT_TR_NOOP("Write safety"),
                          QT_TR_NOOP("How carefully each write reaches the disk (FULL is "
                                     "safest).")),
    "store.group_commit_max": (QT_TR_NOOP("Writes per commit"),
                               QT_TR_NOOP("How many writes are saved together.")),
    "store.busy_timeout_s": (QT_TR_NOOP("Wait for a busy database (seconds)"),
                             QT_TR_NOOP("How long to wait when another program holds the "
                                        "database.")),
}
"""Each settings field's label and help (the raw key is shown only in its tooltip)."""


IN_TEXT: tuple[str, ...] = (
    QT_TR_NOOP("deadline"), QT_TR_NOOP("score"), QT_TR_NOOP("attempts"), QT_TR_NOOP("waited"),
    QT_TR_NOOP("step"), QT_TR_NOOP("open for"), QT_TR_NOOP("signature"), QT_TR_NOOP("System"),
    QT_TR_NOOP("%1 recent failures"))
"""Words translated inside composed texts (``tr(word)`` in an f-string, which lupdate does
not see): listed so they are extracted."""


def _name(table: dict[str, str], code: str | None) -> str:
    if not code:
        return ""
    text = table.get(code)
    return tr(text) if text is not None else code


def task_type(code: str | None) -> str:
    """回复客户 for ``reply_customer``; an unknown type as it is."""
    return _name(TASK_TYPES, code)


def platform(code: str | None) -> str:
    """拼多多 for ``pdd``; Temu and TikTok Shop as the brands write them."""
    return _name(PLATFORMS, code)


def state(code: str | None) -> str:
    """A task's, step's, worker's or ticket's state."""
    return _name(STATES, code)


def breaker_state(code: str | None) -> str:
    """正常 / 已熔断 / 试探中."""
    return _name(BREAKER_STATES, code)


def answer(code: str | None) -> str:
    return _name(ANSWERS, code)


def error_headline(error_class: str | None) -> str:
    """A short, translated headline for a task error's class ("" for none)."""
    if not error_class:
        return ""
    text = ERROR_HEADLINES.get(error_class)
    return tr(text) if text is not None else tr("The task failed (%1)", error_class)


def refusal_headline(exc: BaseException) -> str:
    """A short, translated headline for a refused command, by the exception's type."""
    for cls in type(exc).__mro__:
        text = REFUSALS.get(cls.__name__)
        if text is not None:
            return tr(text)
    return tr("This cannot be done right now")


def gate(name: str) -> str:
    return tr("All sites (global)") if name == "*" else name


def breaker(name: str) -> str:
    if name.startswith("proxy:"):  # #17: one shop's own proxy breaker
        return tr("proxy of shop %1", name[len("proxy:"):])
    return tr("Browser pool") if name == "*pool*" else name


def setting(key: str) -> tuple[str, str]:
    """(label, help) of a settings field ``section.field``, translated."""
    label, help_ = SETTINGS_FIELDS.get(key, ("", ""))
    return (tr(label) if label else key.split(".", 1)[-1]), (tr(help_) if help_ else "")


def section(name: str) -> str:
    return _name(SETTINGS_SECTIONS, name)


# -- numbers and durations per locale ---------------------------------------------------------


def duration(seconds: float | None) -> str:
    """A duration in the console's language: ``44m 49s`` / ``44分49秒``."""
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    if s < 60:
        return tr("%1s", s)
    if s < 3600:
        return tr("%1m %2s", s // 60, f"{s % 60:02d}")
    if s < 86400:
        return tr("%1h %2m", s // 3600, f"{s % 3600 // 60:02d}")
    return tr("%1d %2h", s // 86400, s % 86400 // 3600)


def count(n: int) -> str:
    """A count with the locale's grouping (1,234)."""
    return f"{n:,}"


def rows(n: int) -> str:
    """``12 rows`` / ``12 条``."""
    return tr("%1 rows", count(n))
