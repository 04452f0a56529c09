"""The ``shopfleet`` command (entry point ``core.cli:main``; also ``python -m core.cli``).

Exit codes: 0 ok, 2 bad input (the message names the field), 1 any other failure. Errors go
to stderr as one readable line; with ``--json`` as one JSON object ``{"error": …}`` — also for
a bad argument, which argparse would otherwise answer with its usage text.
Every command takes ``--db PATH``, ``--config FILE`` and ``--store URL``, before or after the
command's name. Read-only commands (``status``, ``tasks``, ``shops``, ``tickets`` …) never
create or change a database: a missing file is an error (exit 2), not a new empty database.

The package: :mod:`.parser` (the one list of command groups), :mod:`.context` (the
:class:`~.context.Cli` a handler gets), :mod:`.args` (shared argument handling),
:mod:`.times` (how times print), and one module per command group. Only the entry point and
this package import ``core.cli``; what a command runs lives in core outside it.

Start-up (#20): operators script the command line and every call pays its imports, so a
command imports only what it uses. The parser registers only the group that defines the
command given (:data:`.parser.GROUPS`; every group for ``--help``), and the group modules
import nothing heavy at their top: a handler imports what it needs when it runs.
``tests/unit/test_cli_startup.py`` pins what ``--help`` and ``status`` may import.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import BacklogFull, InvalidInput, ShopFleetError

if TYPE_CHECKING:
    from .context import Cli as Cli
    from .parser import build_parser as build_parser

__all__ = ["Cli", "build_parser", "main"]


SELECTOR_OPTIONS = ("--shops",)
"""Options whose value is a shop selector, which may start with "-" (``-tag:test``)."""


def negations_as_values(argv: list[str]) -> list[str]:
    """``--shops -tag:test`` as ``--shops=-tag:test``: argparse would read a value that starts
    with "-" as an option, and a selector's NOT is a leading "-" (core.selectors). Short
    options ("-h", "-o") stay options: a selector atom is longer than two characters."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if a in SELECTOR_OPTIONS and nxt.startswith("-") and not nxt.startswith("--") \
                and len(nxt) > 2:
            out.append(f"{a}={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def __getattr__(name: str) -> Any:
    # ``core.cli.Cli`` and ``core.cli.build_parser`` without importing them for a submodule.
    if name == "Cli":
        from .context import Cli
        return Cli
    if name == "build_parser":
        from .parser import build_parser
        return build_parser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also used as the console script)."""
    from .args import UsageError, merge_common
    from .context import Cli
    from .parser import build_parser

    argv = negations_as_values(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(argv)
    try:
        args = merge_common(parser.parse_args(argv))
    except UsageError as exc:
        return _error(Cli(argparse.Namespace(json="--json" in argv)),
                      InvalidInput(exc.field, exc.reason), 2)
    cli = Cli(args)
    try:
        return int(args.handler(args, cli))
    except (InvalidInput, BacklogFull) as exc:
        return _error(cli, exc, 2)
    except ShopFleetError as exc:
        return _error(cli, exc, 1)
    except sqlite3.OperationalError as exc:
        from ..store.sqlite.writer import disk_full, is_disk_full

        if is_disk_full(exc):  # a read or a pragma outside the writer met a full disk
            return _error(cli, disk_full(cli.where), 1)
        raise
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    finally:
        cli.close()


def _error(cli: Cli, exc: ShopFleetError, code: int) -> int:
    if cli.json:
        err: dict[str, Any] = {"error": str(exc), "kind": type(exc).__name__}
        if isinstance(exc, InvalidInput):
            err["field"] = exc.field
        print(json.dumps(err, ensure_ascii=False), file=sys.stderr)
    else:
        print(f"shopfleet: error: {exc}", file=sys.stderr)
    return code
