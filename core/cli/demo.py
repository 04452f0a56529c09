"""``shopfleet demo`` (the console on the demo site, or its headless text version) and
``shopfleet demo-site`` (the demo seller site alone). The demo itself is :mod:`core.demo`."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import console
from .context import Cli

DEMO_SITE_PORT = 8765
"""``demo-site --port``'s default: :data:`core.demosite._cli.DEFAULT_PORT` (a test pins the
two equal; the demo site is imported only when it runs)."""


def cmd_demo(args: argparse.Namespace, cli: Cli) -> int:
    entry = None if args.headless else console.gui_entry("demo")
    if entry is not None and console.has_display():
        return entry(["--tasks", str(args.tasks), *(["--keep"] if args.keep else [])])
    if not args.headless:
        why = "no display" if entry is not None else "the console is not installed"
        print(f"({why}: running the headless demo; 'shopfleet console' needs a desktop)\n")
    import asyncio

    from ..demo import run_headless_demo

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
    # ``core.demosite.register_cli`` would import the site (an HTTP server) at every start.
    p = sub.add_parser("demo-site", parents=[common],
                       help="serve the local demo seller platforms (pdd, temu, tiktok)",
                       description="Serve the local demo seller platforms until Ctrl-C.")
    p.add_argument("--port", type=int, default=DEMO_SITE_PORT,
                   help=f"TCP port on 127.0.0.1 (default {DEMO_SITE_PORT}; 0 picks a free one)")
    p.set_defaults(handler=cmd_demo_site)


def cmd_demo_site(args: argparse.Namespace, cli: Cli) -> int:
    from ..demosite._cli import run

    return run(args, cli)
