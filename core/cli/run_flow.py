"""``shopfleet run-flow FLOW --shop NAME --param k=v … [--headed]``: run one flow now.

The tool an operator uses to write and debug a flow: no queue, one browser, every step printed
as it goes, the extracted results at the end, and on failure the error and where its evidence
(screenshot, redacted DOM, console log, step log) was saved — exit code 1. The running itself
is :func:`core.workbench.run_flow_once`, which the console's flow editor runs too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, TaskError
from .context import Cli


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``k=v`` pairs; a value that parses as JSON (numbers, true, lists) is taken as such."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput("--param", f"{pair!r} is not KEY=VALUE")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def cmd_run_flow(args: argparse.Namespace, cli: Cli) -> int:
    from ..flows import FlowRegistry
    from ..flows.registry import read_flow_file

    settings = cli.settings
    path = Path(args.flow)
    if path.suffix == ".json" and path.exists():
        flow = read_flow_file(path)
    else:
        flow = FlowRegistry.load([Path(d) for d in settings.flows.dirs]).get(args.flow)
    params = parse_params(args.param or [])
    return asyncio.run(_run(cli, settings, flow, params, args.shop, headed=args.headed))


async def _run(cli: Cli, settings: Any, flow: Any, params: dict[str, Any], shop_name: str, *,
               headed: bool) -> int:
    from ..flows import StepEvent
    from ..workbench import run_flow_once

    out = sys.stdout
    started = False

    def on_step(ev: StepEvent) -> None:
        nonlocal started
        if not started:  # the flow passed its checks and the browser is open
            started = True
            out.write(f"running flow {flow.name!r} ({len(flow.steps)} steps) for shop "
                      f"{shop_name}\n")
        if ev.index is None:
            if ev.status == "failed":
                out.write(f"  start page: failed: {ev.error}\n")
            return
        label = ev.name or ev.action
        if ev.status == "started":
            return
        extra = f" ({ev.duration_ms} ms)" if ev.duration_ms else ""
        err = f": {ev.error}" if ev.error else ""
        out.write(f"  {ev.index + 1:>2}. {label:<32} {ev.status}{extra}{err}\n")
        out.flush()

    try:
        results = await run_flow_once(settings, cli.store, flow, params, shop_name,
                                      headed=headed, on_step=on_step)
    except TaskError as exc:
        out.write(f"FAILED ({exc.error_class}): {exc}\n")
        for name, p in sorted(exc.evidence.items()):
            out.write(f"  evidence {name}: {p}\n")
        return 1
    out.write("done; results:\n")
    out.write(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("run-flow", parents=[common],
                       help="run one flow now, step by step (to write and debug flows)")
    p.add_argument("flow", help="a registered flow's name, or a path to a flow .json file")
    p.add_argument("--shop", required=True)
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a flow parameter (repeat for more)")
    p.add_argument("--headed", action="store_true", help="show the browser window")
    p.set_defaults(handler=cmd_run_flow, readonly=True)
