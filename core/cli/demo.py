"""``shopfleet demo`` (the console on the demo site, or its headless text version) and
``shopfleet demo-site`` (the demo seller site alone). The demo itself is :mod:`core.demo`."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..demo import run_headless_demo
from ..demosite import register_cli as register_demo_site
from . import console
from .context import Cli


def cmd_demo(args: argparse.Namespace, cli: Cli) -> int:
    entry = None if args.headless else console.gui_entry("demo")
    if entry is not None and console.has_display():
        return entry(["--tasks", str(args.tasks), *(["--keep"] if args.keep else [])])
    if not args.headless:
        why = "no display" if entry is not None else "the console is not installed"
        print(f"({why}: running the headless demo; 'shopfleet console' needs a desktop)\n")
    folder = Path(tempfile.mkdtemp(prefix="shopfleet-demo-"))
    try:
        return asyncio.run(run_headless_demo(cli.settings, folder, n=args.tasks))
    finally:
        if args.keep:
            print(f"kept the demo folder: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("demo", parents=[common],
                       help="the console on the demo seller site (headless without a display)")
    p.add_argument("--keep", action="store_true", help="keep the demo folder afterwards")
    p.add_argument("--tasks", type=int, default=30, help="how many demo tasks (default 30)")
    p.add_argument("--headless", action="store_true", help="no window: a text summary")
    p.set_defaults(handler=cmd_demo)
    register_demo_site(sub, common)
