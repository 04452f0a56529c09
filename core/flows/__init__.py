"""Flows: the step format, the registry of named flows and the step runner.

The runner (:mod:`.runner`, its rules in that docstring) is built in layers: :mod:`.records`
(what a run takes and gives back), :mod:`.run_state`, :mod:`.guards` (origins, credentials),
:mod:`.failures` (what a failure means), :mod:`.actions` (what a step does to the page) and the
loop with checkpoints and resume in :mod:`.runner`.

Public names::

    Flow, Step, Verify, parse_flow, inline_flow, flow_json_schema, task_json_schema
    check_flow, resolve, check_upload_path, default_asset_dirs, SHOP_FIELDS
    FlowRegistry
    run_flow, ShopInfo, Checkpoint, RunResult, StepEvent, DEFAULT_HUMAN_MARKERS

The fake page for tests lives in :mod:`core.flows.fakepage` (imported explicitly).
"""

from __future__ import annotations

from .models import (
    ACTIONS,
    Flow,
    Step,
    Verify,
    flow_json_schema,
    inline_flow,
    parse_flow,
    task_json_schema,
)
from .placeholders import SHOP_FIELDS, check_flow, check_upload_path, default_asset_dirs, resolve
from .records import Checkpoint, RunResult, ShopInfo, StepEvent
from .registry import ENTRY_POINT_GROUP, FlowRegistry
from .runner import DEFAULT_HUMAN_MARKERS, run_flow

__all__ = [
    "ACTIONS",
    "DEFAULT_HUMAN_MARKERS",
    "ENTRY_POINT_GROUP",
    "SHOP_FIELDS",
    "Checkpoint",
    "Flow",
    "FlowRegistry",
    "RunResult",
    "ShopInfo",
    "Step",
    "StepEvent",
    "Verify",
    "check_flow",
    "check_upload_path",
    "default_asset_dirs",
    "flow_json_schema",
    "inline_flow",
    "parse_flow",
    "resolve",
    "run_flow",
    "task_json_schema",
]
