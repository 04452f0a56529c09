"""The ``shopfleet`` parser, built from ONE list of command groups: :data:`GROUPS`.

Each group is a module of this package with ``register(subparsers, common)``: it adds its
commands, each with ``handler=`` (``handler(args, cli) -> exit code``) and, for a command that
only reads, ``readonly=True`` (or a function of its arguments).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from . import (
    console,
    demo,
    doctor,
    migrate,
    notify,
    queue,
    record,
    results,
    run_flow,
    schedules,
    schema,
    search,
    selftest,
    shop_import,
    shops,
    takeover,
    tickets,
    worker,
)
from .args import Parser, common_options

Registration = Callable[[Any, argparse.ArgumentParser], None]

GROUPS: tuple[Registration, ...] = (
    queue.register,      # submit, status, tasks, task, bump, cancel, preempt
    shops.register,      # shops, shop add|set|set-password|pause|resume|tag|untag
    shop_import.register,  # shop import (#15): after shops, whose group it joins
    tickets.register,    # tickets, ticket, answer, quarantine, release, kb, rules
    worker.register,     # worker, workers
    demo.register,       # demo, demo-site
    console.register,    # console
    run_flow.register,   # run-flow
    record.register,     # record (#21)
    takeover.register,   # takeover (#15)
    schema.register,     # schema
    doctor.register,     # doctor
    selftest.register,   # self-test
    migrate.register,    # migrate
    schedules.register,  # schedule add|list|show|pause|resume|delete|run-now (#18)
    results.register,    # results (#19)
    notify.register,     # notify add|list|test|remove (#19)
    search.register,     # search (#19)
)
"""Every command group, in the order ``shopfleet --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = Parser(
        prog="shopfleet", parents=[common_options(top=True)],
        description="ShopFleet: run many shops' browser work in the right order, safely.")
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in GROUPS:
        register(sub, common)
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
