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
    p.add_argument("--keep", action="store_true", help="keep the demo database afterwards")
    p.set_defaults(handler=cmd_demo)


REGISTRATIONS: list[Registration] = [_demo]
