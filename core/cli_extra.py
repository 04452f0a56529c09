"""Commands that live with their parts, registered into the ``shopfleet`` parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

Registration = Callable[[Any, argparse.ArgumentParser], None]


def _demo(sub: Any, common: argparse.ArgumentParser) -> None:
    from .demo import cmd_demo

    p = sub.add_parser("demo", parents=[common],
                       help="run the demo on a fresh database (the main job, end to end)")
    p.add_argument("--keep", action="store_true", help="keep the demo folder afterwards")
    p.add_argument("--tasks", type=int, default=30, help="how many demo tasks (default 30)")
    p.set_defaults(handler=cmd_demo)


def _worker(sub: Any, common: argparse.ArgumentParser) -> None:
    from .worker import cmd_worker

    p = sub.add_parser("worker", parents=[common],
                       help="run the engine without a window (Ctrl-C stops gracefully)")
    p.add_argument("--until-idle", action="store_true",
                   help="stop when nothing is running and nothing can be claimed")
    p.add_argument("--slots", type=int, help="tasks at once (default: the pool's capacity)")
    p.set_defaults(handler=cmd_worker)


def _doctor(sub: Any, common: argparse.ArgumentParser) -> None:
    from .browser.discovery import _cmd_doctor

    p = sub.add_parser("doctor", parents=[common],
                       help="check which browser ShopFleet can drive, and what to fix if none")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=lambda args, cli: _cmd_doctor(args))


def _demo_site(sub: Any, common: argparse.ArgumentParser) -> None:
    from .demosite import register_cli

    register_cli(sub, common)


def _schema(sub: Any, common: argparse.ArgumentParser) -> None:
    from .flows.cli import register_cli

    register_cli(sub, common)


REGISTRATIONS: list[Registration] = [_demo, _worker, _doctor, _demo_site, _schema]
