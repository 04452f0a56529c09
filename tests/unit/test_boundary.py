"""The core/desktop boundary, checked by walking imports with ast (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import core

ROOT = Path(__file__).resolve().parents[2]
QT = {"PySide6", "shiboken6", "qasync", "desktop", "PyQt5", "PyQt6"}
DESKTOP_FORBIDDEN = {"sqlite3", "sqlite_utils", "playwright"}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def test_core_never_imports_qt_or_desktop() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}"
           for p in sorted((ROOT / "core").rglob("*.py"))
           for line, mod in _imports(p) if mod.split(".")[0] in QT]
    assert bad == []


def test_desktop_uses_core_only_through_its_facade() -> None:
    bad = []
    for p in sorted((ROOT / "desktop").rglob("*.py")):
        for line, mod in _imports(p):
            top = mod.split(".")[0]
            if top in DESKTOP_FORBIDDEN or (top == "core" and mod != "core"):
                bad.append(f"{p.relative_to(ROOT)}:{line} imports {mod}")
    assert bad == []


def test_the_walker_sees_a_violation(tmp_path: Path) -> None:
    f = tmp_path / "x.py"
    f.write_text("import os\nif True:\n    from PySide6.QtCore import QObject\n")
    assert (3, "PySide6.QtCore") in _imports(f)


PUBLIC = sorted(core.__all__)


def test_public_names_are_pinned() -> None:
    # Changing the facade is a decision: update this list in the same commit.
    assert sorted([
        "SYSTEM_CLOCK", "AsyncStore", "BacklogFull", "BrowserCrashed", "ClaimedTask", "Clock",
        "ConfigError", "EnvironmentProblem", "InvalidInput", "LeaseLost", "NeedsHuman",
        "PageChanged", "QueueStatus", "RateLimited", "Refused", "Settings", "ShopFleetError",
        "ShopRecord", "SiteFailed", "SpecError", "SqliteStore", "StepTimeout", "StoreClosed",
        "SystemClock", "TaskError", "TaskEvent", "TaskRecord", "TaskSpec", "TaskState",
        "UnknownTask", "__version__", "load_settings", "new_owner_id", "parse_specs",
        "settings_from_dict",
        # #18 schedules, shop groups
        "ScheduleFailed", "ScheduleFired", "ScheduleRecord", "ScheduleRow", "normalize_tags",
        "resume_schedule", "run_schedule_now", "schedule_rows", "select_shops",
        # engine, events, demo (engine issue)
        "BreakerState", "BreakerView", "Engine", "EngineStatistics", "GateLevel",
        "NoopExecutor", "Outcome", "TaskControl", "build_engine", "open_store", "EngineHost",
        "BreakerChanged", "Changes", "DomainPaused", "EngineProblem", "EngineStopped", "Event",
        "EventBus", "GateChanged", "GateHeld", "ShopPaused", "TaskBumped", "TaskProgress",
        "TasksSubmitted", "TaskStateChanged", "data_dir", "default_db_path", "resources_dir",
        "DemoSite", "demo_settings", "demo_specs", "register_demo_shops",
        # console queries, tickets, vault (rescue and console issues)
        "SORTS", "VIEWS", "FilterChoices", "ShopRow", "StepRow", "TaskDetail", "TaskFilter",
        "TaskPage", "TaskRow", "count_tasks", "filter_choices", "flow_names", "metrics_series",
        "read_json_file", "read_text_file", "shop_rows", "task_detail", "task_page",
        "task_rows", "Answer", "KbAnswer", "Rule", "RuleAction", "Ticket", "TicketBook",
        "TicketState", "Vault", "TicketOpened", "TicketAnswered",
        # packaging: browser check/install for the first-run wizard, the self-test
        "check_browser", "BrowserCheck", "install_browser", "BrowserInstallResult",
        "run_self_test",
        # the restructuring: the store protocol the desktop types with, settings written by core
        "Store", "save_settings", "gates_toml", "TaskPreempted",
        # desktop habits (#16): the pause-all switch
        "pause_all", "all_paused",
        # #21 recorder and flow editor
        "record_flow", "RecordedFlow", "ShopLogin", "write_flow_file", "FlowProblem",
        "FlowEntry", "STEP_ACTIONS", "validate_flow_dict", "flow_catalog", "read_flow_document",
        "save_flow_file", "flow_file_text", "user_flows_dir", "run_flow_once", "pick_locator",
        "record_shop_flow", "rename_params",
        # #19: results export, notifications (the console's Results view, targets' health)
        "FORMATS", "ResultFilter", "export_results", "make_filter", "open_notifier", "TargetHealth",
        # #15: what is left after until-idle, takeover, write safety, rules in words
        "Leftover", "TakeoverResult", "take_over", "check_write_safety", "default_answer",
        "describe_rule",
        # the console (#15): live counts from one read
        "view_counts", "RowError", "ShopImport", "ShopImportRow", "import_shops",
        "read_shop_list", "set_shop_password", "check_shop_table",
        # the ticket dialog (#15): rule previews and edits, takeover from a shop's row
        "answer_rule", "redescribe_rule", "take_over_shop", "HoldWords", "read_hold_words",
        "live_only",
        # shop profiles (#17): the shop dialog, shop-list import, takeover browser, proxy down
        "ContextOptions", "ProfileChange", "ProfileInput", "ProxyFailed", "ShopCheck",
        "ShopProfile", "ShopProxyChanged", "check_shop", "context_options_for",
        "exit_warnings", "load_context_options", "parse_profile_fields",
        "profile_input_from_row", "save_profile", "shop_json", "ExitWarning", "check_exits",
        "profile_input_from_form",
    ]) == PUBLIC
    for name in PUBLIC:
        assert hasattr(core, name), name


def _type_checking_imports() -> dict[str, str]:
    """What ``core/__init__.py`` imports under ``if TYPE_CHECKING:``: name -> module."""
    tree = ast.parse((ROOT / "core" / "__init__.py").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.unparse(imp)
                for alias in imp.names:
                    # ``X as X``: an explicit re-export, what mypy's no-implicit-reexport needs
                    assert alias.asname == alias.name, ast.unparse(imp)
                    out[alias.name] = "." * imp.level + (imp.module or "")
    return out


def test_the_facade_is_written_once() -> None:
    """``_WHERE`` is the list; ``__all__`` is made from it, and what type checkers see (the
    ``TYPE_CHECKING`` imports) names the same names from the same modules."""
    where: dict[str, str] = vars(core)["_WHERE"]
    assert sorted(core.__all__) == sorted(["__version__", *where])
    assert _type_checking_imports() == where
