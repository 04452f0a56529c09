"""ShopFleet's core: the queue, the browser pool, the engine. No Qt here, ever.

The desktop and every other caller use only the names exported here; a test pins them, so a
change to this facade is a visible decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_names

if TYPE_CHECKING:
    # What type checkers see (the names re-exported explicitly): a test checks that it names
    # exactly the names and modules of ``_WHERE``.
    from .browser.install import BrowserCheck as BrowserCheck
    from .browser.install import BrowserInstallResult as BrowserInstallResult
    from .browser.install import check_browser as check_browser
    from .browser.install import install_browser as install_browser
    from .build import build_engine as build_engine
    from .build import open_notifier as open_notifier
    from .build import open_store as open_store
    from .clock import SYSTEM_CLOCK as SYSTEM_CLOCK
    from .clock import Clock as Clock
    from .clock import SystemClock as SystemClock
    from .config import Settings as Settings
    from .config import load_settings as load_settings
    from .config import settings_from_dict as settings_from_dict
    from .config_file import gates_toml as gates_toml
    from .config_file import save_settings as save_settings
    from .demo import demo_settings as demo_settings
    from .demo import demo_specs as demo_specs
    from .demo import register_demo_shops as register_demo_shops
    from .demosite import DemoSite as DemoSite
    from .engine import BreakerState as BreakerState
    from .engine import BreakerView as BreakerView
    from .engine import Engine as Engine
    from .engine import EngineStatistics as EngineStatistics
    from .engine import GateLevel as GateLevel
    from .engine import Leftover as Leftover
    from .engine import NoopExecutor as NoopExecutor
    from .engine import Outcome as Outcome
    from .engine import TaskControl as TaskControl
    from .engine.host import EngineHost as EngineHost
    from .errors import BacklogFull as BacklogFull
    from .errors import BrowserCrashed as BrowserCrashed
    from .errors import ConfigError as ConfigError
    from .errors import EnvironmentProblem as EnvironmentProblem
    from .errors import InvalidInput as InvalidInput
    from .errors import LeaseLost as LeaseLost
    from .errors import NeedsHuman as NeedsHuman
    from .errors import PageChanged as PageChanged
    from .errors import ProxyFailed as ProxyFailed
    from .errors import RateLimited as RateLimited
    from .errors import Refused as Refused
    from .errors import ShopFleetError as ShopFleetError
    from .errors import SiteFailed as SiteFailed
    from .errors import SpecError as SpecError
    from .errors import StepTimeout as StepTimeout
    from .errors import StoreClosed as StoreClosed
    from .errors import TaskError as TaskError
    from .errors import UnknownTask as UnknownTask
    from .events import BreakerChanged as BreakerChanged
    from .events import Changes as Changes
    from .events import DomainPaused as DomainPaused
    from .events import EngineProblem as EngineProblem
    from .events import EngineStopped as EngineStopped
    from .events import Event as Event
    from .events import EventBus as EventBus
    from .events import GateChanged as GateChanged
    from .events import GateHeld as GateHeld
    from .events import ScheduleFailed as ScheduleFailed
    from .events import ScheduleFired as ScheduleFired
    from .events import ShopPaused as ShopPaused
    from .events import ShopProxyChanged as ShopProxyChanged
    from .events import TaskBumped as TaskBumped
    from .events import TaskPreempted as TaskPreempted
    from .events import TaskProgress as TaskProgress
    from .events import TasksSubmitted as TasksSubmitted
    from .events import TaskStateChanged as TaskStateChanged
    from .events import TicketAnswered as TicketAnswered
    from .events import TicketOpened as TicketOpened
    from .export import FORMATS as FORMATS
    from .export import ResultFilter as ResultFilter
    from .export import export_results as export_results
    from .export import make_filter as make_filter
    from .flows.editing import STEP_ACTIONS as STEP_ACTIONS
    from .flows.editing import FlowEntry as FlowEntry
    from .flows.editing import FlowProblem as FlowProblem
    from .flows.editing import flow_catalog as flow_catalog
    from .flows.editing import flow_file_text as flow_file_text
    from .flows.editing import read_flow_document as read_flow_document
    from .flows.editing import save_flow_file as save_flow_file
    from .flows.editing import user_flows_dir as user_flows_dir
    from .flows.editing import validate_flow_dict as validate_flow_dict
    from .notify import TargetHealth as TargetHealth
    from .paths import data_dir as data_dir
    from .paths import default_db_path as default_db_path
    from .paths import resources_dir as resources_dir
    from .pause import all_paused as all_paused
    from .pause import pause_all as pause_all
    from .profile_store import load_context_options as load_context_options
    from .profile_store import save_profile as save_profile
    from .profiles import ContextOptions as ContextOptions
    from .profiles import ExitWarning as ExitWarning
    from .profiles import ProfileChange as ProfileChange
    from .profiles import ProfileInput as ProfileInput
    from .profiles import ShopProfile as ShopProfile
    from .profiles import check_exits as check_exits
    from .profiles import context_options_for as context_options_for
    from .profiles import exit_warnings as exit_warnings
    from .profiles import parse_profile_fields as parse_profile_fields
    from .profiles import profile_input_from_form as profile_input_from_form
    from .profiles import profile_input_from_row as profile_input_from_row
    from .profiles import shop_json as shop_json
    from .queries import SORTS as SORTS
    from .queries import VIEWS as VIEWS
    from .queries import FilterChoices as FilterChoices
    from .queries import ShopRow as ShopRow
    from .queries import StepRow as StepRow
    from .queries import TaskDetail as TaskDetail
    from .queries import TaskFilter as TaskFilter
    from .queries import TaskPage as TaskPage
    from .queries import TaskRow as TaskRow
    from .queries import count_tasks as count_tasks
    from .queries import filter_choices as filter_choices
    from .queries import flow_names as flow_names
    from .queries import metrics_series as metrics_series
    from .queries import read_json_file as read_json_file
    from .queries import read_text_file as read_text_file
    from .queries import shop_rows as shop_rows
    from .queries import task_detail as task_detail
    from .queries import task_page as task_page
    from .queries import task_rows as task_rows
    from .queries import view_counts as view_counts
    from .recorder import RecordedFlow as RecordedFlow
    from .recorder import ShopLogin as ShopLogin
    from .recorder import record_flow as record_flow
    from .recorder import write_flow_file as write_flow_file
    from .scheduler import ScheduleRow as ScheduleRow
    from .scheduler import resume_schedule as resume_schedule
    from .scheduler import run_schedule_now as run_schedule_now
    from .scheduler import schedule_rows as schedule_rows
    from .selectors import normalize_tags as normalize_tags
    from .selectors import select_shops as select_shops
    from .selftest import run_self_test as run_self_test
    from .shop_check import ShopCheck as ShopCheck
    from .shop_check import check_shop as check_shop
    from .shop_import import RowError as RowError
    from .shop_import import ShopImport as ShopImport
    from .shop_import import ShopImportRow as ShopImportRow
    from .shop_import import check_shop_table as check_shop_table
    from .shop_import import import_shops as import_shops
    from .shop_import import read_shop_list as read_shop_list
    from .shop_import import set_shop_password as set_shop_password
    from .specs import TaskSpec as TaskSpec
    from .specs import parse_specs as parse_specs
    from .store import AsyncStore as AsyncStore
    from .store import ClaimedTask as ClaimedTask
    from .store import QueueStatus as QueueStatus
    from .store import ShopRecord as ShopRecord
    from .store import SqliteStore as SqliteStore
    from .store import TaskEvent as TaskEvent
    from .store import TaskRecord as TaskRecord
    from .store import TaskState as TaskState
    from .store import new_owner_id as new_owner_id
    from .store.base import Store as Store
    from .store.base import TicketBook as TicketBook
    from .store.holds import live_only as live_only
    from .store.records import ScheduleRecord as ScheduleRecord
    from .takeover import HoldWords as HoldWords
    from .takeover import TakeoverResult as TakeoverResult
    from .takeover import read_hold_words as read_hold_words
    from .takeover import take_over as take_over
    from .takeover import take_over_shop as take_over_shop
    from .tickets import Answer as Answer
    from .tickets import KbAnswer as KbAnswer
    from .tickets import Rule as Rule
    from .tickets import RuleAction as RuleAction
    from .tickets import Ticket as Ticket
    from .tickets import TicketState as TicketState
    from .tickets import answer_rule as answer_rule
    from .tickets import check_write_safety as check_write_safety
    from .tickets import default_answer as default_answer
    from .tickets import describe_rule as describe_rule
    from .tickets import redescribe_rule as redescribe_rule
    from .vault import Vault as Vault
    from .workbench import pick_locator as pick_locator
    from .workbench import record_shop_flow as record_shop_flow
    from .workbench import rename_params as rename_params
    from .workbench import run_flow_once as run_flow_once

_WHERE: dict[str, str] = {
    # The facade: each public name and the module it comes from. The one list of it: ``__all__``
    # is made from it, the ``TYPE_CHECKING`` imports above are checked against it, and
    # tests/unit/test_boundary.py pins it (changing it is a decision).
    "Answer": ".tickets",
    "AsyncStore": ".store",
    "BacklogFull": ".errors",
    "BreakerChanged": ".events",
    "BreakerState": ".engine",
    "BreakerView": ".engine",
    "BrowserCheck": ".browser.install",
    "BrowserCrashed": ".errors",
    "BrowserInstallResult": ".browser.install",
    "Changes": ".events",
    "ClaimedTask": ".store",
    "Clock": ".clock",
    "ConfigError": ".errors",
    "DemoSite": ".demosite",
    "DomainPaused": ".events",
    "Engine": ".engine",
    "EngineHost": ".engine.host",
    "EngineProblem": ".events",
    "EngineStatistics": ".engine",
    "EngineStopped": ".events",
    "EnvironmentProblem": ".errors",
    "Event": ".events",
    "EventBus": ".events",
    "FilterChoices": ".queries",
    "GateChanged": ".events",
    "GateHeld": ".events",
    "GateLevel": ".engine",
    "InvalidInput": ".errors",
    "KbAnswer": ".tickets",
    "LeaseLost": ".errors",
    "NeedsHuman": ".errors",
    "NoopExecutor": ".engine",
    "Outcome": ".engine",
    "PageChanged": ".errors",
    "QueueStatus": ".store",
    "RateLimited": ".errors",
    "Refused": ".errors",
    "Rule": ".tickets",
    "RuleAction": ".tickets",
    "SORTS": ".queries",
    "SYSTEM_CLOCK": ".clock",
    "Settings": ".config",
    "ShopFleetError": ".errors",
    "ShopPaused": ".events",
    "ShopRecord": ".store",
    "ShopRow": ".queries",
    "SiteFailed": ".errors",
    "SpecError": ".errors",
    "SqliteStore": ".store",
    "StepRow": ".queries",
    "StepTimeout": ".errors",
    "StoreClosed": ".errors",
    "SystemClock": ".clock",
    "TaskBumped": ".events",
    "TaskControl": ".engine",
    "TaskDetail": ".queries",
    "TaskError": ".errors",
    "TaskEvent": ".store",
    "TaskFilter": ".queries",
    "TaskPage": ".queries",
    "TaskPreempted": ".events",
    "TaskProgress": ".events",
    "TaskRecord": ".store",
    "TaskRow": ".queries",
    "TaskSpec": ".specs",
    "TaskState": ".store",
    "TaskStateChanged": ".events",
    "TasksSubmitted": ".events",
    "Ticket": ".tickets",
    "TicketAnswered": ".events",
    "TicketBook": ".store.base",
    "TicketOpened": ".events",
    "TicketState": ".tickets",
    "UnknownTask": ".errors",
    "Store": ".store.base",
    "VIEWS": ".queries",
    "Vault": ".vault",
    "build_engine": ".build",
    "check_browser": ".browser.install",
    "count_tasks": ".queries",
    "data_dir": ".paths",
    "default_db_path": ".paths",
    "demo_settings": ".demo",
    "demo_specs": ".demo",
    "filter_choices": ".queries",
    "flow_names": ".queries",
    "install_browser": ".browser.install",
    "load_settings": ".config",
    "metrics_series": ".queries",
    "new_owner_id": ".store",
    "open_store": ".build",
    "pause_all": ".pause",
    "all_paused": ".pause",
    "parse_specs": ".specs",
    "read_json_file": ".queries",
    "read_text_file": ".queries",
    "register_demo_shops": ".demo",
    "resources_dir": ".paths",
    "save_settings": ".config_file",
    "gates_toml": ".config_file",
    "run_self_test": ".selftest",
    "settings_from_dict": ".config",
    "shop_rows": ".queries",
    "task_detail": ".queries",
    "task_page": ".queries",
    "task_rows": ".queries",
    # --- #21 recorder and flow editor
    "record_flow": ".recorder",
    "RecordedFlow": ".recorder",
    "ShopLogin": ".recorder",
    "write_flow_file": ".recorder",
    "FlowProblem": ".flows.editing",
    "FlowEntry": ".flows.editing",
    "STEP_ACTIONS": ".flows.editing",
    "validate_flow_dict": ".flows.editing",
    "flow_catalog": ".flows.editing",
    "read_flow_document": ".flows.editing",
    "save_flow_file": ".flows.editing",
    "flow_file_text": ".flows.editing",
    "user_flows_dir": ".flows.editing",
    "run_flow_once": ".workbench",
    "pick_locator": ".workbench",
    "record_shop_flow": ".workbench",
    "rename_params": ".workbench",
    # --- #18 schedules, shop groups
    "ScheduleFailed": ".events",
    "ScheduleFired": ".events",
    "ScheduleRecord": ".store.records",
    "ScheduleRow": ".scheduler",
    "normalize_tags": ".selectors",
    "resume_schedule": ".scheduler",
    "run_schedule_now": ".scheduler",
    "schedule_rows": ".scheduler",
    "select_shops": ".selectors",
    # --- #19 results export, notifications
    "open_notifier": ".build",
    "FORMATS": ".export",
    "ResultFilter": ".export",
    "export_results": ".export",
    "make_filter": ".export",
    "TargetHealth": ".notify",
    # --- #15 rescue semantics, write safety, rules in words, takeover
    "Leftover": ".engine",
    "TakeoverResult": ".takeover",
    "take_over": ".takeover",
    "check_write_safety": ".tickets",
    "default_answer": ".tickets",
    "describe_rule": ".tickets",
    # --- #15 ticket dialog: rule previews, rule edits, takeover from a shop's row
    "answer_rule": ".tickets",
    "redescribe_rule": ".tickets",
    "take_over_shop": ".takeover",
    "HoldWords": ".takeover",
    "read_hold_words": ".takeover",
    "live_only": ".store.holds",
    # --- #15 console: live counts, shop import
    "view_counts": ".queries",
    "RowError": ".shop_import",
    "ShopImport": ".shop_import",
    "ShopImportRow": ".shop_import",
    "check_shop_table": ".shop_import",
    "import_shops": ".shop_import",
    "read_shop_list": ".shop_import",
    "set_shop_password": ".shop_import",
    # --- #17 shop profiles: the console's shop dialog and the takeover browser use these
    "ContextOptions": ".profiles",
    "ProfileChange": ".profiles",
    "ProfileInput": ".profiles",
    "ProxyFailed": ".errors",
    "ShopCheck": ".shop_check",
    "ShopProfile": ".profiles",
    "ShopProxyChanged": ".events",
    "check_shop": ".shop_check",
    "context_options_for": ".profiles",
    "exit_warnings": ".profiles",
    "load_context_options": ".profile_store",
    "parse_profile_fields": ".profiles",
    "profile_input_from_row": ".profiles",
    "save_profile": ".profile_store",
    "shop_json": ".profiles",
    "ExitWarning": ".profiles",
    "check_exits": ".profiles",
    "profile_input_from_form": ".profiles",
}

from .version import __version__  # noqa: E402  (one place, also for the self-test)

__all__ = ["__version__", *sorted(_WHERE)]


__getattr__ = lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
