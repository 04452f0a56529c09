"""The console's actions, declared once in one registry: id, words, shortcut, menu, handler,
when it is enabled, and whether it sits on the toolbar or a table's right-click menu.

The window makes one ``QAction`` per :class:`ActionSpec`, puts it in its menu of the menu bar
(so every action is reachable from the menu bar, its shortcut shown there), on the toolbar
and in the context menus listed here. To add an action: append an :class:`ActionSpec` to
:data:`ACTIONS` (or call :func:`register` before the window is built) with a handler taking
the window, and add the view keys whose right-click menu should offer it to
:data:`CONTEXT_MENUS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtGui import QKeySequence

from . import shops
from .i18n import QT_TR_NOOP, tr

TASK_PANELS = ("pending", "in_flight", "suspended", "quarantine", "history", "scheduled")
"""Views whose rows are tasks (a selected row is a task id)."""

VIEWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (QT_TR_NOOP("Work"), ("pending", "in_flight", "tickets", "suspended", "quarantine",
                          "history")),
    (QT_TR_NOOP("Later"), ("scheduled", "schedules")),  # #18 delayed tasks and schedules
    (QT_TR_NOOP("Sites"), ("shops", "gates", "workers")),
    (QT_TR_NOOP("Overview"), ("dashboard", "results", "kb")),  # results: #19
)
"""The side list: groups of views, top to bottom. Ctrl+1…9 open the first nine."""

VIEW_ORDER: tuple[str, ...] = tuple(k for _, keys in VIEWS for k in keys)

MENUS: tuple[tuple[str, str], ...] = (
    ("file", QT_TR_NOOP("&File")), ("edit", QT_TR_NOOP("&Edit")),
    ("view", QT_TR_NOOP("&View")), ("tasks", QT_TR_NOOP("&Tasks")),
    ("tickets", QT_TR_NOOP("Tic&kets")), ("shops", QT_TR_NOOP("&Shops")),
    ("help", QT_TR_NOOP("&Help")))
"""The menu bar, left to right."""


@dataclass(frozen=True)
class Selection:
    """What the operator has in hand: the view, an engine to command, what is selected."""

    tab: str
    engine: bool
    tasks: bool = False
    shops: bool = False
    breakers: bool = False
    rows: bool = False
    """Any row selected in the current table."""
    table: bool = False
    """The current view has a table."""
    rules: bool = False


def _keys(*alternatives: QKeySequence.StandardKey | str) -> Callable[[], QKeySequence]:
    """The first non-empty of a platform's standard key and fallbacks (Preferences is
    empty on Windows and Linux, Quit on Windows)."""
    def make() -> QKeySequence:
        for a in alternatives:
            seq = QKeySequence(a)
            if not seq.isEmpty():
                return seq
        return QKeySequence()
    return make


def _none() -> QKeySequence:
    return QKeySequence()


def _always(_: Selection) -> bool:
    return True


@dataclass(frozen=True)
class ActionSpec:
    """One operator action.

    Args:
        id: stable key (``window.acts[id]``, object name ``act-<id>``).
        text, tip: source words (``QT_TR_NOOP``), translated when shown.
        menu: the menu-bar menu holding it (a key of :data:`MENUS`).
        handler: called with the window when triggered.
        shortcut: its key sequence (made when the window is built: platform-dependent).
        enabled: when it makes sense (an action core would refuse anyway stays enabled: the
            refusal tells the operator why).
        toolbar: shown on the toolbar.
        section: actions of one menu with different sections are separated by a line.
        checkable: a switch (pause all).
    """

    id: str
    text: str
    tip: str
    menu: str
    handler: Callable[[Any], object]
    shortcut: Callable[[], QKeySequence] = _none
    enabled: Callable[[Selection], bool] = _always
    toolbar: bool = False
    section: int = 0
    checkable: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _task_tabs(*tabs: str) -> Callable[[Selection], bool]:
    return lambda s: s.engine and s.tasks and s.tab in tabs


ACTIONS: list[ActionSpec] = [
    # File
    ActionSpec("export", QT_TR_NOOP("Export table…"),
               QT_TR_NOOP("Save the whole table as a CSV or Excel file"), "file",
               lambda w: w.export_dialog(selected_only=False), _keys("Ctrl+E"),
               lambda s: s.table),
    ActionSpec("export_selection", QT_TR_NOOP("Export selection…"),
               QT_TR_NOOP("Save the selected rows as a CSV or Excel file"), "file",
               lambda w: w.export_dialog(selected_only=True), _keys("Ctrl+Shift+E"),
               lambda s: s.table and s.rows),
    ActionSpec("settings", QT_TR_NOOP("Settings…"), QT_TR_NOOP("Configuration and language"),
               "file", lambda w: w.open_settings(),
               _keys(QKeySequence.StandardKey.Preferences, "Ctrl+,"), toolbar=True, section=1),
    ActionSpec("quit", QT_TR_NOOP("Quit"),
               QT_TR_NOOP("Stop the engine (running tasks save their place) and close"),
               "file", lambda w: w.quit(), _keys(QKeySequence.StandardKey.Quit, "Ctrl+Q"),
               section=2),
    # Edit
    ActionSpec("copy", QT_TR_NOOP("Copy"),
               QT_TR_NOOP("Copy the selected rows as text (tab-separated, pastes into a "
                          "spreadsheet)"), "edit", lambda w: w.copy_selection(),
               _keys(QKeySequence.StandardKey.Copy), lambda s: s.table and s.rows),
    ActionSpec("select_all", QT_TR_NOOP("Select all"), QT_TR_NOOP("Select every row"), "edit",
               lambda w: w.select_all(), _keys(QKeySequence.StandardKey.SelectAll),
               lambda s: s.table),
    ActionSpec("find", QT_TR_NOOP("Find…"), QT_TR_NOOP("Go to the filter of this table"),
               "edit", lambda w: w.focus_filter(), _keys(QKeySequence.StandardKey.Find),
               lambda s: s.table, section=1),
    # View (the views themselves are added by view_actions())
    ActionSpec("next_view", QT_TR_NOOP("Next view"), QT_TR_NOOP("Show the next view"), "view",
               lambda w: w.step_view(1), _keys("Ctrl+PgDown"), section=1),
    ActionSpec("previous_view", QT_TR_NOOP("Previous view"),
               QT_TR_NOOP("Show the previous view"), "view", lambda w: w.step_view(-1),
               _keys("Ctrl+PgUp"), section=1),
    ActionSpec("toggle_detail", QT_TR_NOOP("Task details"),
               QT_TR_NOOP("Show or hide the task details beside the table"), "view",
               lambda w: w.toggle_detail(), _keys("Ctrl+D"), section=2, checkable=True),
    ActionSpec("refresh", QT_TR_NOOP("Refresh"), QT_TR_NOOP("Read every table again"), "view",
               lambda w: w.refresh_all(), _keys(QKeySequence.StandardKey.Refresh, "F5"),
               section=2),
    # Tasks
    ActionSpec("submit", QT_TR_NOOP("Submit…"),
               QT_TR_NOOP("Submit tasks from a form or a JSON/JSONL file"), "tasks",
               lambda w: w.submit_tasks(), _keys(QKeySequence.StandardKey.New, "Ctrl+N"),
               lambda s: s.engine, toolbar=True),
    ActionSpec("bump", QT_TR_NOOP("Change priority…"),
               QT_TR_NOOP("Change the priority of the selected tasks"), "tasks",
               lambda w: w.bump_selected(), _keys("Ctrl+B"),
               _task_tabs("pending", "suspended", "quarantine", "in_flight", "scheduled"),
               toolbar=True,
               section=1),
    ActionSpec("preempt", QT_TR_NOOP("Preempt"),
               QT_TR_NOOP("Suspend the selected running task at its next safe step"), "tasks",
               lambda w: w.preempt_selected(), _keys("Ctrl+P"), _task_tabs("in_flight"),
               toolbar=True, section=1),
    ActionSpec("cancel", QT_TR_NOOP("Cancel task"), QT_TR_NOOP("Cancel the selected tasks"),
               "tasks", lambda w: w.cancel_selected(),
               _keys(QKeySequence.StandardKey.Delete, "Del"),
               lambda s: s.engine and s.tasks and s.tab != "history", toolbar=True, section=1),
    ActionSpec("retry", QT_TR_NOOP("Retry"), QT_TR_NOOP("Run the selected finished tasks "
                                                        "again"),
               "tasks", lambda w: w.retry_selected(), _keys("Ctrl+R"), _task_tabs("history"),
               toolbar=True, section=1),
    ActionSpec("release", QT_TR_NOOP("Release from quarantine"),
               QT_TR_NOOP("Requeue the selected quarantined tasks"), "tasks",
               lambda w: w.release_selected(), _keys("Ctrl+L"), _task_tabs("quarantine"),
               toolbar=True, section=1),
    ActionSpec("pause_all", QT_TR_NOOP("Pause all"),
               QT_TR_NOOP("Start no more tasks on this computer; running ones finish. "
                          "Press again to resume all."), "tasks",
               lambda w: w.toggle_pause_all(), _keys("Ctrl+Shift+S"), lambda s: s.engine,
               toolbar=True, section=2, checkable=True),
    # Tickets
    ActionSpec("answer", QT_TR_NOOP("Answer ticket…"),
               QT_TR_NOOP("Answer the selected tickets (several at once get the same answer)"),
               "tickets", lambda w: w.answer_selected(), _keys("Ctrl+Return"),
               lambda s: s.engine and s.tab == "tickets" and s.tasks, toolbar=True),
    ActionSpec("rule_enable", QT_TR_NOOP("Enable rule"),
               QT_TR_NOOP("Let the selected rules answer failures again"), "tickets",
               lambda w: w.set_rules_enabled(True), _keys("Ctrl+Alt+E"),
               lambda s: s.engine and s.rules, section=1),
    ActionSpec("rule_disable", QT_TR_NOOP("Disable rule"),
               QT_TR_NOOP("Stop the selected rules; their failures open tickets again"),
               "tickets", lambda w: w.set_rules_enabled(False), _keys("Ctrl+Alt+D"),
               lambda s: s.engine and s.rules, section=1),
    ActionSpec("rule_delete", QT_TR_NOOP("Delete rule…"), QT_TR_NOOP("Delete the selected "
                                                                     "rules"),
               "tickets", lambda w: w.delete_rules(), _keys("Ctrl+Shift+Del"),
               lambda s: s.engine and s.rules, section=1),
    # Shops (#15: add, edit, password, import)
    ActionSpec("add_shop", QT_TR_NOOP("Add shop…"),
               QT_TR_NOOP("Register a shop: platform, address, login name, password"), "shops",
               lambda w: shops.add_shop(w), _keys("Ctrl+Shift+N"), section=2),
    ActionSpec("edit_shop", QT_TR_NOOP("Edit shop…"),
               QT_TR_NOOP("Change the selected shop's login name, allowed origins or password"),
               "shops", lambda w: shops.edit_shop(w), _none,
               lambda s: s.tab == "shops" and s.shops, section=2),
    ActionSpec("set_password", QT_TR_NOOP("Set password…"),
               QT_TR_NOOP("Set or replace the selected shop's password (stored encrypted)"),
               "shops", lambda w: shops.set_password(w), _none,
               lambda s: s.tab == "shops" and s.shops, section=2),
    ActionSpec("import_shops", QT_TR_NOOP("Import shops…"),
               QT_TR_NOOP("Add the shops of a CSV or XLSX list (each row's errors shown first)"),
               "shops", lambda w: shops.import_file_dialog(w), _none, section=2),
    ActionSpec("pause_shop", QT_TR_NOOP("Pause shop"),
               QT_TR_NOOP("Stop starting tasks of the selected shop"), "shops",
               lambda w: w.pause_shops(True), _keys("Ctrl+Shift+P"),
               lambda s: s.engine and s.shops, toolbar=True),
    ActionSpec("resume_shop", QT_TR_NOOP("Resume shop"),
               QT_TR_NOOP("Start tasks of the selected shop again"), "shops",
               lambda w: w.pause_shops(False), _keys("Ctrl+Shift+R"),
               lambda s: s.engine and s.shops, toolbar=True),
    ActionSpec("pause_domain", QT_TR_NOOP("Pause site"),
               QT_TR_NOOP("Stop starting tasks on the selected shop's site"), "shops",
               lambda w: w.pause_domains(True), _keys("Ctrl+Alt+P"),
               lambda s: s.engine and s.shops),
    ActionSpec("resume_domain", QT_TR_NOOP("Resume site"),
               QT_TR_NOOP("Start tasks on the selected shop's site again"), "shops",
               lambda w: w.pause_domains(False), _keys("Ctrl+Alt+R"),
               lambda s: s.engine and s.shops),
    ActionSpec("gate_rate", QT_TR_NOOP("Rate limit…"),
               QT_TR_NOOP("Change how many requests per second a site gets"), "shops",
               lambda w: w.change_gate(), _keys("Ctrl+G"), lambda s: s.engine, toolbar=True,
               section=1),
    ActionSpec("breaker_open", QT_TR_NOOP("Trip breaker"),
               QT_TR_NOOP("Stop a site's tasks by hand"), "shops",
               lambda w: w.set_breakers("open"), _keys("Ctrl+Shift+B"),
               lambda s: s.engine and s.tab == "gates" and s.breakers, toolbar=True, section=1),
    ActionSpec("breaker_close", QT_TR_NOOP("Reset breaker"),
               QT_TR_NOOP("Let a site's tasks run again"), "shops",
               lambda w: w.set_breakers("closed"), _keys("Ctrl+Alt+B"),
               lambda s: s.engine and s.tab == "gates" and s.breakers, toolbar=True, section=1),
    # Help
    ActionSpec("shortcuts", QT_TR_NOOP("Keyboard shortcuts"),
               QT_TR_NOOP("Every action and its key"), "help", lambda w: w.show_shortcuts(),
               _keys(QKeySequence.StandardKey.HelpContents, "F1")),
    ActionSpec("about", QT_TR_NOOP("About ShopFleet"), QT_TR_NOOP("Version and data folder"),
               "help", lambda w: w.show_about()),
]


def register(spec: ActionSpec, *, context: tuple[str, ...] = ()) -> None:
    """Add an action (before the window is built), optionally to some views' context menus."""
    if any(a.id == spec.id for a in ACTIONS):
        raise ValueError(f"action {spec.id!r} exists")
    ACTIONS.append(spec)
    for view in context:
        CONTEXT_MENUS.setdefault(view, []).append(spec.id)


def _show(key: str) -> Callable[[Any], None]:
    def show(w: Any) -> None:
        w.show_tab(key)
    return show


def view_actions() -> list[ActionSpec]:
    """One action per view ("show the view"), Ctrl+1…9 for the first nine."""
    out = []
    for i, key in enumerate(VIEW_ORDER):
        seq = f"Ctrl+{i + 1}" if i < 9 else ""
        out.append(ActionSpec(f"view_{key}", VIEW_NAMES[key], QT_TR_NOOP("Show this view"),
                              "view", _show(key), _keys(seq) if seq else _none,
                              checkable=True))
    return out


def all_actions() -> list[ActionSpec]:
    return view_actions() + ACTIONS


TOOLBAR_SECTIONS = ("tasks", "tickets", "shops", "file")

COMMON: list[str | None] = [None, "copy", "export_selection", "export"]
"""Offered by every table's right-click menu."""

CONTEXT_MENUS: dict[str, list[str | None]] = {
    "pending": ["bump", "cancel", None, "pause_shop", "resume_shop", "pause_domain"],
    "in_flight": ["preempt", "bump", "cancel", None, "pause_shop"],
    "suspended": ["bump", "cancel"],
    "scheduled": ["bump", "cancel"],  # #18
    "quarantine": ["release", "bump", "cancel"],
    "tickets": ["answer", "cancel", None, "pause_shop"],
    "history": ["retry"],
    "shops": ["pause_shop", "resume_shop", "pause_domain", "resume_domain", None, "edit_shop",
              "set_password", "add_shop", "import_shops"],
    "gates": ["gate_rate"],
    "breakers": ["breaker_open", "breaker_close"],
    "kb": [],
    "rules": ["rule_enable", "rule_disable", "rule_delete"],
    "workers": [],
}
"""Each table's own right-click actions (the :data:`COMMON` ones follow)."""

VIEW_NAMES: dict[str, str] = {
    "pending": QT_TR_NOOP("Pending"), "in_flight": QT_TR_NOOP("In flight"),
    "suspended": QT_TR_NOOP("Suspended"), "quarantine": QT_TR_NOOP("Quarantine"),
    "tickets": QT_TR_NOOP("Tickets"), "history": QT_TR_NOOP("History"),
    "shops": QT_TR_NOOP("Shops"), "gates": QT_TR_NOOP("Rate limits & breakers"),
    "kb": QT_TR_NOOP("Knowledge base & rules"), "dashboard": QT_TR_NOOP("Dashboard"),
    "workers": QT_TR_NOOP("Workers"), "scheduled": QT_TR_NOOP("Scheduled"),
    "schedules": QT_TR_NOOP("Schedules"), "results": QT_TR_NOOP("Results")}


def tab_names() -> dict[str, str]:
    """Each view's name, in the current language (the window adds counts)."""
    return {k: tr(v) for k, v in VIEW_NAMES.items()}


def spec(action_id: str) -> ActionSpec:
    for a in all_actions():
        if a.id == action_id:
            return a
    raise KeyError(action_id)
