"""The console's actions declared once: their words, shortcuts, where they appear (toolbar,
each tab's context menu) and when they are enabled. The window binds each key to a handler."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QKeySequence

from .i18n import tr

TASK_PANELS = ("pending", "in_flight", "suspended", "quarantine", "history")
"""Tabs whose rows are tasks (a selected row is a task id)."""

TOOLBAR: tuple[str | None, ...] = (
    "submit", "bump", "preempt", "cancel", "retry", "release", "answer", None,
    "pause_shop", "resume_shop", "pause_domain", "resume_domain", None,
    "gate_rate", "breaker_open", "breaker_close", None, "settings")
"""The toolbar, left to right (``None``: a separator)."""

CONTEXT_MENUS: dict[str, list[str | None]] = {
    "pending": ["bump", "cancel", None, "pause_shop", "resume_shop", "pause_domain"],
    "in_flight": ["preempt", "bump", "cancel", None, "pause_shop"],
    "suspended": ["bump", "cancel"],
    "quarantine": ["release", "bump", "cancel"],
    "tickets": ["answer", "cancel", None, "pause_shop"],
    "history": ["retry"],
    "shops": ["pause_shop", "resume_shop", "pause_domain", "resume_domain"],
    "gates": ["gate_rate"],
    "breakers": ["breaker_open", "breaker_close"],
}
"""Each table's right-click menu."""


def shortcuts() -> dict[str, QKeySequence]:
    """Every action key with its shortcut (empty: none); the window makes one action each."""
    return {
        "submit": QKeySequence("Ctrl+N"), "bump": QKeySequence("Ctrl+B"),
        "preempt": QKeySequence("Ctrl+P"),
        "cancel": QKeySequence(QKeySequence.StandardKey.Delete),
        "retry": QKeySequence("Ctrl+R"), "release": QKeySequence("Ctrl+L"),
        "answer": QKeySequence("Ctrl+Return"), "pause_shop": QKeySequence("Ctrl+Shift+P"),
        "resume_shop": QKeySequence("Ctrl+Shift+R"), "pause_domain": QKeySequence(),
        "resume_domain": QKeySequence(), "gate_rate": QKeySequence("Ctrl+G"),
        "breaker_open": QKeySequence(), "breaker_close": QKeySequence(),
        "settings": QKeySequence(QKeySequence.StandardKey.Preferences),
        "refresh": QKeySequence(QKeySequence.StandardKey.Refresh),
    }


def texts() -> dict[str, tuple[str, str]]:
    """Every action's label and tooltip, in the current language."""
    return {
        "submit": (tr("Submit…"), tr("Submit tasks from a form or a JSON/JSONL file")),
        "bump": (tr("Bump…"), tr("Change the priority of the selected tasks")),
        "preempt": (tr("Preempt"), tr("Suspend the selected running task at its next safe "
                                      "step")),
        "cancel": (tr("Cancel"), tr("Cancel the selected tasks")),
        "retry": (tr("Retry"), tr("Run the selected finished tasks again")),
        "release": (tr("Release"), tr("Requeue the selected quarantined tasks")),
        "answer": (tr("Answer ticket…"), tr("Answer the selected ticket")),
        "pause_shop": (tr("Pause shop"), tr("Stop starting tasks of the selected shop")),
        "resume_shop": (tr("Resume shop"), tr("Start tasks of the selected shop again")),
        "pause_domain": (tr("Pause domain"), tr("Stop starting tasks on the selected "
                                                "shop's site")),
        "resume_domain": (tr("Resume domain"), tr("Start tasks on the selected shop's "
                                                  "site again")),
        "gate_rate": (tr("Gate rate…"), tr("Change a rate gate")),
        "breaker_open": (tr("Open breaker"), tr("Stop a site's tasks by hand")),
        "breaker_close": (tr("Close breaker"), tr("Let a site's tasks run again")),
        "settings": (tr("Settings…"), tr("Configuration and language")),
        "refresh": (tr("Refresh"), tr("Read every table again")),
    }


@dataclass(frozen=True)
class Selection:
    """What the operator has in hand: the tab, an engine to command, what is selected."""

    tab: str
    engine: bool
    tasks: bool
    shops: bool
    breakers: bool


def enabled(s: Selection) -> dict[str, bool]:
    """Which actions make sense now (an action the core would refuse anyway stays enabled:
    the refusal tells the operator why)."""
    e = s.engine
    return {
        "submit": e,
        "bump": e and s.tab in ("pending", "suspended", "quarantine", "in_flight") and s.tasks,
        "preempt": e and s.tab == "in_flight" and s.tasks,
        "cancel": e and s.tasks and s.tab != "history",
        "retry": e and s.tab == "history" and s.tasks,
        "release": e and s.tab == "quarantine" and s.tasks,
        "answer": e and s.tab == "tickets" and s.tasks,
        "pause_shop": e and s.shops,
        "resume_shop": e and s.shops,
        "pause_domain": e and s.shops,
        "resume_domain": e and s.shops,
        "gate_rate": e,
        "breaker_open": e and s.tab == "gates" and s.breakers,
        "breaker_close": e and s.tab == "gates" and s.breakers,
        "settings": True, "refresh": True,
    }


def tab_names() -> dict[str, str]:
    """Each tab's name, in the current language (the window adds counts)."""
    return {"pending": tr("Pending"), "in_flight": tr("In flight"),
            "suspended": tr("Suspended"), "quarantine": tr("Quarantine"),
            "tickets": tr("Tickets"), "history": tr("History"), "shops": tr("Shops"),
            "gates": tr("Gates & breakers"), "kb": tr("Knowledge base & rules"),
            "dashboard": tr("Dashboard"), "workers": tr("Workers"),
            "results": tr("Results")}  # #19
