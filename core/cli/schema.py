"""``shopfleet schema flow|task``: print the JSON Schema of a flow file or a task spec."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .context import Cli


def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``flow`` or ``task``."""
    from ..flows.models import flow_json_schema, task_json_schema

    if kind == "flow":
        return flow_json_schema()
    from ..specs import TaskSpec  # the task model belongs to the spec module

    return task_json_schema(TaskSpec)


def cmd_schema(args: argparse.Namespace, cli: Cli) -> int:
    """Print the schema named by ``args.kind``."""
    json.dump(schema_for(args.kind), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    help_ = "print the JSON Schema of a flow file or a task spec"
    p = sub.add_parser(
        "schema", parents=[common], help=help_,
        description="Print the JSON Schema of a flow file (flow) or a task spec (task), for "
                    "editors and validators.")
    p.add_argument("kind", choices=["flow", "task"])
    p.set_defaults(handler=cmd_schema)
