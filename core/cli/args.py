"""Argument handling shared by every command: the parser that reports a bad argument like any
other bad input, the options every command takes (``--db``, ``--config``, ``--store``, before
or after the command's name), and argparse types."""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

COMMON_OPTIONS = ("db", "config", "store")
"""Options every command takes, before or after its name (``--db X status`` = ``status --db
X``). Given before, argparse keeps them under ``top_*`` (a subcommand's own defaults would
otherwise overwrite them); :func:`merge_common` folds them in."""


class UsageError(Exception):
    """A bad command-line argument, reported like every other bad input (one line, exit 2)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument raises :class:`UsageError` instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        field = ""
        if message.startswith("argument "):
            field, _, message = message.removeprefix("argument ").partition(": ")
            field = field.split("/")[-1]
        elif message.startswith("the following arguments are required: "):
            field = message.split(": ", 1)[1].split(",")[0].split("/")[-1]
        raise UsageError(field or "arguments", f"{message} (see {self.prog} --help)")


def common_options(*, top: bool = False) -> argparse.ArgumentParser:
    """The parent parser of every command (``top``: the copy given before the command)."""
    p = argparse.ArgumentParser(add_help=False)
    pre = "top_" if top else ""
    p.add_argument("--db", dest=f"{pre}db", default=argparse.SUPPRESS, metavar="PATH",
                   help="SQLite database (default: shopfleet.db in the user data folder)")
    p.add_argument("--config", dest=f"{pre}config", default=argparse.SUPPRESS, metavar="FILE",
                   help="TOML configuration file")
    p.add_argument("--store", dest=f"{pre}store", default=argparse.SUPPRESS, metavar="URL",
                   help="shared store, e.g. redis://host:6379/0 (default: [store] url, else "
                        "the SQLite file)")
    return p


def merge_common(args: argparse.Namespace) -> argparse.Namespace:
    """Fold the common options given before the command into those given after it."""
    for name in COMMON_OPTIONS:
        before = getattr(args, f"top_{name}", None)
        after = getattr(args, name, None)
        if before is not None and after is not None and before != after:
            raise UsageError(f"--{name}", f"given twice with different values ({before!r} "
                             f"before the command, {after!r} after it)")
        setattr(args, name, after if after is not None else before)
        if hasattr(args, f"top_{name}"):
            delattr(args, f"top_{name}")
    return args


def finite_float(text: str) -> float:
    """argparse type: a finite number (no nan, inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def port_number(text: str) -> int:
    """argparse type: a TCP port, 0..65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0..65535)")
    return value
