"""``shopfleet doctor``: which browser ShopFleet can drive, and what to fix if none."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .context import Cli


def cmd_doctor(args: argparse.Namespace, cli: Cli) -> int:
    from ..browser.discovery import doctor
    from ..config import load_settings

    # ``--config`` or the defaults, as ever: not the data folder's file (unlike ``cli.settings``)
    settings = load_settings(args.config)
    report = doctor(settings.browser)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.to_text())
    return 0 if report.ok else 1


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("doctor", parents=[common],
                       help="check which browser ShopFleet can drive, and what to fix if none")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=cmd_doctor)
