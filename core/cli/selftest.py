"""``shopfleet self-test``, and the frozen app's ``shopfleet --self-test``: run one demo task in
the browser and say whether ShopFleet works. The checks are :mod:`core.selftest`'s."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from .context import Cli


def _parser() -> argparse.ArgumentParser:
    from ..selftest import TIMEOUT_S

    p = argparse.ArgumentParser(
        prog="shopfleet --self-test",
        description="Check that ShopFleet works on this computer: run one demo task in the "
                    "browser, without a window, in a temporary folder.")
    p.add_argument("--config", metavar="FILE",
                   help="use this configuration's [browser] section (default: the user's)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S, metavar="S",
                   help=f"seconds the demo task may take (default {TIMEOUT_S:g})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """``shopfleet --self-test [--config FILE] [--keep] [--timeout S]`` (the frozen app)."""
    from ..selftest import run_self_test

    args = _parser().parse_args(list(argv) if argv is not None else None)
    return run_self_test(config=args.config, keep=args.keep, timeout_s=args.timeout)


def cmd_self_test(args: argparse.Namespace, cli: Cli) -> int:
    from ..selftest import TIMEOUT_S, run_self_test

    return run_self_test(config=args.config, keep=args.keep,
                         timeout_s=TIMEOUT_S if args.timeout is None else args.timeout)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("self-test", parents=[common],
                       help="run one demo task in the browser and say whether ShopFleet works")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="seconds the demo task may take (default: the self-test's own)")
    p.set_defaults(handler=cmd_self_test)

