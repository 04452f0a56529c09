"""``shopfleet takeover TICKET``: open the shop's browser (headed, with its session) at the page
where the ticket's task stopped; when the person closes it, ask the ticket's answer (or take
``--answer`` for scripts). See :mod:`core.takeover`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from ..errors import InvalidInput
from ..paths import data_dir
from ..takeover import take_over
from ..tickets import Answer, check_write_safety, default_answer
from .context import Cli

ANSWERS = (Answer.DONE.value, Answer.RESUME.value, Answer.SKIP.value)


def cmd_takeover(args: argparse.Namespace, cli: Cli) -> int:
    store = cli.store
    if args.answer is not None:  # checked before the browser opens: nothing to redo later
        check_write_safety(store.ticket_book().ticket(args.id).kind, Answer(args.answer),
                           confirm_resend=args.confirm_resend)
    result = asyncio.run(take_over(store, cli.settings, args.id, home=data_dir(),
                                   max_s=args.max_s))
    t = result.ticket
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
                       help="open a ticket's shop in a browser at the page where it stopped; "
                            "answer when you close it")
    p.add_argument("id", type=int, help="the ticket")
    p.add_argument("--answer", choices=ANSWERS,
                   help="answer given when the browser closes (default: ask)")
    p.add_argument("--confirm-resend", action="store_true",
                   help="for a write of unknown outcome: yes, resume may send it again")
    p.add_argument("--max-s", type=float, default=None, metavar="SECONDS",
                   help="close the browser after this long (default: when you close it)")
    p.set_defaults(handler=cmd_takeover)
