"""``shopfleet console``: the operator window, found through the ``shopfleet.gui`` entry points
(core never imports the desktop package), and what the demo command asks of it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from ..errors import EnvironmentProblem
from .context import Cli


def gui_entry(name: str) -> Callable[[list[str]], int] | None:
    """The window's entry point ``name`` (``console``, ``demo``), registered by the desktop
    package under the entry point group ``shopfleet.gui``; None when it is not installed.
    (The frozen app, which has no package metadata, replaces this function.)"""
    from importlib.metadata import entry_points

    for ep in entry_points(group="shopfleet.gui", name=name):
        fn: Callable[[list[str]], int] = ep.load()
        return fn
    return None


def has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return os.environ["QT_QPA_PLATFORM"] not in ("offscreen", "minimal")
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True  # Windows and macOS always have a desktop


def _passthrough(args: argparse.Namespace) -> list[str]:
    argv: list[str] = []
    if args.db:
        argv += ["--db", str(args.db)]
    if args.config:
        argv += ["--config", str(args.config)]
    if args.store:
        argv += ["--store", str(args.store)]
    return argv


def cmd_console(args: argparse.Namespace, cli: Cli) -> int:
    entry = gui_entry("console")
    if entry is None:
        raise EnvironmentProblem("the console is not installed: pip install 'shopfleet[desktop]'")
    return entry(_passthrough(args) + (["--lang", args.lang] if args.lang else []))


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("console", parents=[common], help="open the operator console")
    p.add_argument("--lang", choices=["en", "zh_CN"], help="interface language")
    p.set_defaults(handler=cmd_console)
