"""``shopfleet takeover TICKET``: open the shop's browser (headed, with its session) at the page
where the ticket's task stopped; when the person closes it, ask the ticket's answer (or take
``--answer`` for scripts). ``shopfleet takeover --shop NAME``: the same browser for a shop, at
the page where its latest stopped task stopped (else its address), nothing to answer. Both
hold the shop while the browser is open. See :mod:`core.takeover`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import InvalidInput
from ..tickets import Answer, check_write_safety, default_answer
from .args import finite_float
from .context import Cli

ANSWERS = (Answer.DONE.value, Answer.RESUME.value, Answer.SKIP.value)


def cmd_takeover(args: argparse.Namespace, cli: Cli) -> int:
    if (args.id is None) == (args.shop is None):
        both = ", not both" if args.id is not None else ""
        raise InvalidInput("ticket", f"name a ticket (TICKET) or a shop (--shop NAME){both}")
    if args.wait_running_s < 0:
        raise InvalidInput("--wait-running-s", "must not be negative")
    if args.shop is not None:
        return _takeover_shop(args, cli)
    return _takeover_ticket(args, cli)


def _takeover_shop(args: argparse.Namespace, cli: Cli) -> int:
    """``--shop NAME``: the shop's browser at its latest stopped page (or its address), held
    like a ticket's takeover; nothing to answer afterwards."""
    import asyncio

    from ..paths import data_dir
    from ..takeover import VIA_COMMAND_LINE, take_over_shop

    if args.answer is not None or args.confirm_resend:
        raise InvalidInput("answer", "--answer and --confirm-resend are for a ticket's "
                                     "takeover, not --shop")
    # An unknown shop: take_over_shop says so (field "shop") before any hold or browser.
    result = asyncio.run(take_over_shop(cli.store, cli.settings, args.shop, home=data_dir(),
                                        max_s=args.max_s, via=VIA_COMMAND_LINE,
                                        wait_running_s=args.wait_running_s))
    print(f"browser of {result.shop} closed ({result.closed_by}) at {result.url}; its session "
          "is saved and its tasks run again", flush=True)
    return 0


def _takeover_ticket(args: argparse.Namespace, cli: Cli) -> int:
    import asyncio

    from ..paths import data_dir
    from ..takeover import take_over

    store = cli.store
    if args.answer is not None:  # checked before the browser opens: nothing to redo later
        check_write_safety(store.ticket_book().ticket(args.id).kind, Answer(args.answer),
                           confirm_resend=args.confirm_resend)
    result = asyncio.run(take_over(store, cli.settings, args.id, home=data_dir(),
                                   max_s=args.max_s, wait_running_s=args.wait_running_s))
    t = result.ticket
    assert t is not None  # a ticket's takeover
    print(f"browser of {t.shop} closed ({result.closed_by}); its session is saved", flush=True)
    answer = args.answer
    if answer is None:
        suggested = default_answer(t.kind).value
        if suggested not in ANSWERS:
            suggested = Answer.SKIP.value
        print(f"answer for ticket {t.id} ({' / '.join(ANSWERS)}) [{suggested}]: ", end="",
              flush=True)
        line = sys.stdin.readline().strip().lower()
        answer = line or suggested
        if answer not in ANSWERS:
            raise InvalidInput("answer", f"{answer!r} is not one of {', '.join(ANSWERS)}")
    act = Answer(answer)
    check_write_safety(t.kind, act, confirm_resend=args.confirm_resend)
    done = store.ticket_book().answer(t.id, act, note="after takeover")
    print(f"ticket {done.id} answered {act.value}: task {done.task_id} is "
          f"{store.task(done.task_id).state.value}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("takeover", parents=[common],
                       help="open a ticket's shop (or a shop, --shop) in a browser at the page "
                            "where it stopped; answer when you close it")
    p.add_argument("id", type=int, nargs="?", default=None, metavar="TICKET",
                   help="the ticket")
    p.add_argument("--shop", metavar="NAME", default=None,
                   help="take over this shop instead of a ticket's: its browser at the page "
                        "where its latest stopped task stopped, else at its address")
    p.add_argument("--answer", choices=ANSWERS,
                   help="answer given when the browser closes (default: ask)")
    p.add_argument("--confirm-resend", action="store_true",
                   help="for a write of unknown outcome: yes, resume may send it again")
    p.add_argument("--max-s", type=finite_float, default=None, metavar="SECONDS",
                   help="close the browser after this long (default: when you close it)")
    p.add_argument("--wait-running-s", type=finite_float, default=60.0, metavar="SECONDS",
                   help="how long to wait for a task of the shop that is running to end "
                        "before refusing (default: 60)")
    p.set_defaults(handler=cmd_takeover)
