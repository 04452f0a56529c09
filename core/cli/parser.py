"""The ``shopfleet`` parser, built from ONE list of command groups: :data:`GROUPS`.

Each group is a module of this package with ``register(subparsers, common)``: it adds its
commands, each with ``handler=`` (``handler(args, cli) -> exit code``) and, for a command that
only reads, ``readonly=True`` (or a function of its arguments).

Start-up (#20): a command line that names a known command registers only the group (or
groups) that define it, so ``shopfleet status`` imports :mod:`.queue` and not the other
seventeen modules; ``--help``, no command or an unknown one registers every group (the full
list, argparse's "invalid choice" naming every command). :data:`GROUPS` says which top-level
commands each module adds; ``tests/unit/test_cli_startup.py`` registers each module alone
and checks the list, so it cannot drift from the modules.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

from .args import COMMON_OPTIONS, Parser, common_options

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("queue", ("submit", "status", "tasks", "task", "bump", "cancel", "preempt")),
    ("shops", ("shops", "shop")),          # shops, shop add|set|set-password|pause|resume|tag|untag
    ("shop_import", ("shop",)),            # shop import (#15): joins the shop group, after it
    ("tickets", ("tickets", "ticket", "answer", "quarantine", "release", "kb", "rules")),
    ("worker", ("worker", "workers")),
    ("demo", ("demo", "demo-site")),
    ("console", ("console",)),
    ("run_flow", ("run-flow",)),
    ("record", ("record",)),               # (#21)
    ("takeover", ("takeover",)),           # (#15)
    ("schema", ("schema",)),
    ("doctor", ("doctor",)),
    ("selftest", ("self-test",)),
    ("migrate", ("migrate",)),
    ("schedules", ("schedule",)),          # schedule add|list|show|pause|resume|delete|run-now
    ("results", ("results",)),             # (#19)
    ("notify", ("notify",)),               # notify add|list|test|remove (#19)
    ("search", ("search",)),               # (#19)
)
"""Every command group (a module of this package) and the top-level commands it adds (or
joins), in the order ``shopfleet --help`` lists them."""

VALUE_OPTIONS = frozenset(f"--{name}" for name in COMMON_OPTIONS)
"""Options before the command that take a value (:func:`.args.common_options`)."""


def command_word(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is not an option or an
    option's value (``--db X status`` → ``status``); None when there is none or a help
    option comes first (``shopfleet -h status`` lists every command)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in ("--", "-h", "--help"):
            return None
        elif word.startswith("-"):
            skip = word in VALUE_OPTIONS
        else:
            return word
    return None


def groups_for(argv: Sequence[str] | None) -> list[str]:
    """The modules to register for ``argv``: those adding its command, else every one."""
    word = None if argv is None else command_word(argv)
    picked = [module for module, commands in GROUPS if word in commands]
    return picked or [module for module, _ in GROUPS]


def register_group(module: str, sub: Any, common: argparse.ArgumentParser) -> None:
    importlib.import_module(f"{__package__}.{module}").register(sub, common)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the command line, only with the groups its command needs."""
    common = common_options()
    parser = Parser(
        prog="shopfleet", parents=[common_options(top=True)],
        description="ShopFleet: run many shops' browser work in the right order, safely.")
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in groups_for(argv):
        register_group(module, sub, common)
    for choice in sub._choices_actions:  # ``shopfleet X --help`` opens with X's one-liner
        command = sub.choices[choice.dest]
        command.description = command.description or choice.help
    _json_everywhere(parser)
    return parser


def _json_everywhere(parser: argparse.ArgumentParser) -> None:
    """Every command takes ``--json``: at least its errors come as one JSON object."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                if "--json" not in child._option_string_actions:
                    child.add_argument("--json", action="store_true",
                                       help="errors as one JSON object on stderr")
                _json_everywhere(child)
