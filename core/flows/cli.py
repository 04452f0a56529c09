"""``shopfleet schema flow|task``: print the JSON Schema of a flow file or a task spec.

:func:`register_cli` has the shape of ``core.cli_extra`` registrations (``(subparsers,
common)``); the handler is stored as ``handler`` (called ``handler(args, cli)``) and returns the
exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .models import flow_json_schema, task_json_schema


def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``flow`` or ``task``."""
    if kind == "flow":
        return flow_json_schema()
    from ..specs import TaskSpec  # the task model belongs to the spec module

    return task_json_schema(TaskSpec)


def cmd_schema(args: argparse.Namespace, cli: Any = None) -> int:
    """Print the schema named by ``args.kind``."""
    json.dump(schema_for(args.kind), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def register_cli(subparsers: Any, common: argparse.ArgumentParser | None = None) -> None:
    """Add ``schema`` to an ``argparse`` subparsers object."""
    help_ = "print the JSON Schema of a flow file or a task spec"
    p = subparsers.add_parser(
        "schema", parents=[common] if common is not None else [], help=help_,
        description="Print the JSON Schema of a flow file (flow) or a task spec (task), for "
                    "editors and validators.")
    p.add_argument("kind", choices=["flow", "task"])
    p.set_defaults(handler=cmd_schema)
