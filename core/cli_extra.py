"""Commands that live with their parts, registered into the ``shopfleet`` parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

Registration = Callable[[Any, argparse.ArgumentParser], None]


def gui_entry(name: str) -> Callable[[list[str]], int] | None:
    """The window's entry point ``name`` (``console``, ``demo``), registered by the desktop
    package under the entry point group ``shopfleet.gui``; None when it is not installed."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="shopfleet.gui", name=name):
        fn: Callable[[list[str]], int] = ep.load()
        return fn
    return None


def has_display() -> bool:
    import os
    import sys

    if os.environ.get("QT_QPA_PLATFORM"):
        return os.environ["QT_QPA_PLATFORM"] not in ("offscreen", "minimal")
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True  # Windows and macOS always have a desktop


def _passthrough(args: argparse.Namespace) -> list[str]:
    argv: list[str] = []
    if getattr(args, "db", None):
        argv += ["--db", str(args.db)]
    if getattr(args, "config", None):
        argv += ["--config", str(args.config)]
    if getattr(args, "store", None):
        argv += ["--store", str(args.store)]
    return argv


def cmd_console(args: argparse.Namespace, cli: Any) -> int:
    from .errors import EnvironmentProblem

    entry = gui_entry("console")
    if entry is None:
        raise EnvironmentProblem("the console is not installed: pip install 'shopfleet[desktop]'")
    return entry(_passthrough(args) + (["--lang", args.lang] if args.lang else []))


def cmd_demo_any(args: argparse.Namespace, cli: Any) -> int:
    entry = None if args.headless else gui_entry("demo")
    if entry is not None and has_display():
        return entry(["--tasks", str(args.tasks)])
    if not args.headless:
        why = "no display" if entry is not None else "the console is not installed"
        print(f"({why}: running the headless demo; 'shopfleet console' needs a desktop)\n")
    from .demo import cmd_demo

    return cmd_demo(args, cli)


def _demo(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("demo", parents=[common],
                       help="the console on the demo seller site (headless without a display)")
    p.add_argument("--keep", action="store_true", help="keep the demo folder afterwards")
    p.add_argument("--tasks", type=int, default=30, help="how many demo tasks (default 30)")
    p.add_argument("--headless", action="store_true", help="no window: a text summary")
    p.set_defaults(handler=cmd_demo_any)


def _console(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("console", parents=[common], help="open the operator console")
    p.add_argument("--lang", choices=["en", "zh_CN"], help="interface language")
    p.set_defaults(handler=cmd_console)


def _worker(sub: Any, common: argparse.ArgumentParser) -> None:
    from .worker import cmd_worker

    p = sub.add_parser("worker", parents=[common],
                       help="run the engine without a window (Ctrl-C stops gracefully)")
    p.add_argument("--until-idle", action="store_true",
                   help="stop when nothing is running and nothing can be claimed")
    p.add_argument("--slots", type=int, help="tasks at once (default: the pool's capacity)")
    p.add_argument("--executor", choices=["browser", "noop"], default="browser",
                   help="noop: finish each task without a browser (fleet tests, benchmarks)")
    p.add_argument("--hold-ms", type=float, default=0.0, metavar="MS",
                   help="with --executor noop: hold each task this long (browser time)")
    from .cli import port_number

    p.add_argument("--metrics-port", type=port_number, metavar="PORT",
                   help="serve Prometheus /metrics on this port (default: [metrics] port; "
                        "0 = off); loopback unless [metrics] host says otherwise")
    p.add_argument("--quiet", action="store_true", help="no per-task lines")
    p.add_argument("--exec-log", metavar="FILE",
                   help="with --executor noop: append 'task domain time owner' per execution")
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


def _tickets(sub: Any, common: argparse.ArgumentParser) -> None:
    from .cli_tickets import register

    register(sub, common)


def _run_flow(sub: Any, common: argparse.ArgumentParser) -> None:
    from .run_flow_cli import register

    register(sub, common)


def _self_test(sub: Any, common: argparse.ArgumentParser) -> None:
    from .selftest import register_cli

    register_cli(sub, common)


def _migrate(sub: Any, common: argparse.ArgumentParser) -> None:
    from .migrate import add_parser

    add_parser(sub, common)


REGISTRATIONS: list[Registration] = [
    _demo, _console, _worker, _run_flow, _doctor, _demo_site, _schema, _tickets, _self_test,
    _migrate]
