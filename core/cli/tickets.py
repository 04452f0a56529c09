"""Ticket commands, for humans in the loop: tickets, answers, quarantine, the knowledge base
and rules.

These work on the database directly (one transaction each), so they work while a worker runs
in another process: a requeued task is picked up at the worker's next look at the queue.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InvalidInput
from ..store.base import TicketStore
from ..tickets import (
    Answer,
    RuleAction,
    Signature,
    Ticket,
    check_write_safety,
    describe_rule,
    normalise_error,
    parse_answer,
)
from .context import Cli
from .times import ago, when


def _book(cli: Cli) -> TicketStore:
    return cli.store.ticket_book()


def cmd_tickets(args: argparse.Namespace, cli: Cli) -> int:
    book = _book(cli)
    state = None if args.all else "open"
    older = args.older_than_min * 60 if args.older_than_min is not None else None
    rows = book.tickets(state=state, shop=args.shop, platform=args.platform,
                        task_type=args.type, older_than_s=older, limit=args.limit)
    now = cli.store.clock.now()
    sla = cli.settings.rescue.ticket_sla_min * 60
    if cli.json:
        cli.out([{**t.to_json(), "age_s": t.age_s(now), "over_sla": t.age_s(now) > sla}
                 for t in rows])
        return 0
    if not rows:
        print("no tickets" if args.all else "no open tickets")
        return 0
    print(f"{'ticket':>6} {'task':>6} {'state':<9} {'age':>6} {'shop':<10} {'type':<16} error")
    for t in rows:
        over = "!" if t.age_s(now) > sla and t.state == "open" else " "
        print(f"{t.id:>6} {t.task_id:>6} {t.state.value:<9} {ago(t.age_s(now)):>6}{over}"
              f"{t.shop:<10} {t.task_type:<16} {t.error_class}: {t.error[:70]}")
    return 0


def _show_ticket(t: Ticket, book: TicketStore, now: float, sla: float) -> None:
    print(f"ticket {t.id} ({t.state.value}, {t.kind}) for task {t.task_id}: {t.task_type} "
          f"on {t.shop} ({t.platform})")
    print(f"  opened {when(t.opened_at)}, age {ago(t.age_s(now))}"
          f"{' — over its SLA' if t.age_s(now) > sla and t.state == 'open' else ''}")
    print(f"  step:  {t.step_name or 'start'}")
    print(f"  error: {t.error_class}: {t.error}")
    for name, path in sorted(t.evidence.items()):
        print(f"  evidence {name}: {path}")
    if t.action:
        print(f"  answered {t.action} at {when(t.answered_at)}: {t.note}")
    earlier = [a for a in book.earlier_answers(t.signature) if a.ticket_id != t.id]
    if earlier:
        print("  earlier answers to the same failure:")
        for a in earlier:
            print(f"    {when(a.at)}  {a.action:<7} {a.note}")
    rule = [r for r in book.rules() if r.signature == t.signature and r.enabled]
    for r in rule:
        print(f"  rule #{r.id} applies: {r.action.value}")


def cmd_ticket(args: argparse.Namespace, cli: Cli) -> int:
    book = _book(cli)
    t = book.ticket(args.id)
    now = cli.store.clock.now()
    if cli.json:
        cli.out({**t.to_json(), "age_s": t.age_s(now),
                 "earlier_answers": [a.__dict__ for a in book.earlier_answers(t.signature)
                                     if a.ticket_id != t.id]})
        return 0
    _show_ticket(t, book, now, cli.settings.rescue.ticket_sla_min * 60)
    return 0


def cmd_answer(args: argparse.Namespace, cli: Cli) -> int:
    book = _book(cli)
    act, rule_act = parse_answer(args.action, args.rule)
    before = book.ticket(args.id)
    check_write_safety(before.kind, act, confirm_resend=args.confirm_resend)
    if args.rule_delay_s < 0 or args.rule_delay_s != args.rule_delay_s:
        raise InvalidInput("--rule-delay-s", "must be a number of seconds of at least 0")
    words = ""
    if rule_act is not None:
        sig = Signature(before.platform, before.task_type, before.step_name,
                        before.error_class, normalise_error(before.error))
        words = describe_rule(rule_act, args.rule_delay_s, sig)
    t = book.answer(args.id, act, note=args.note or "", make_rule=rule_act,
                    rule_delay_s=args.rule_delay_s)
    if cli.json:
        cli.out(t.to_json())
    else:
        extra = f"\nrule made: {words}" if words else ""
        print(f"ticket {t.id} answered {args.action}: task {t.task_id} is "
              f"{cli.store.task(t.task_id).state.value}{extra}")
    return 0


def cmd_quarantine(args: argparse.Namespace, cli: Cli) -> int:
    rows = _book(cli).quarantined(limit=args.limit)
    if cli.json:
        cli.out([t.to_json() for t in rows])
        return 0
    if not rows:
        print("quarantine is empty")
    for t in rows:
        print(f"{t.id:>7} {t.type:<16} {t.shop:<10} {t.state_reason}  ({t.last_error})")
        for name, path in sorted((t.evidence or {}).items()):
            print(f"          evidence {name}: {path}")
    return 0


def cmd_release(args: argparse.Namespace, cli: Cli) -> int:
    _book(cli).release(args.id)
    print(f"task {args.id} released from quarantine (queued again)")
    return 0


def cmd_kb(args: argparse.Namespace, cli: Cli) -> int:
    rows = _book(cli).knowledge_base(limit=args.limit)
    if cli.json:
        cli.out([a.__dict__ for a in rows])
        return 0
    if not rows:
        print("the knowledge base is empty (answers to tickets are kept here)")
    for a in rows:
        print(f"{when(a.at)}  {a.platform}/{a.task_type}/{a.step_name or 'start'} "
              f"{a.error_class}: {a.error_norm[:60]}  → {a.action}  {a.note}")
    return 0


def cmd_rules(args: argparse.Namespace, cli: Cli) -> int:
    book = _book(cli)
    if args.rules_cmd in ("disable", "enable"):
        book.set_rule_enabled(args.id, args.rules_cmd == "enable")
        print(f"rule {args.id} {args.rules_cmd}d")
        return 0
    if args.rules_cmd == "delete":
        book.delete_rule(args.id)
        print(f"rule {args.id} deleted")
        return 0
    rules = book.rules()
    if cli.json:
        cli.out([{**r.__dict__, "action": r.action.value} for r in rules])
        return 0
    if not rules:
        print("no rules (make one when answering: shopfleet answer ID --action … --rule …)")
    for r in rules:
        state = "on " if r.enabled else "off"
        delay = f" after {r.delay_s:.0f}s" if r.action is RuleAction.RETRY_LATER else ""
        print(f"#{r.id:<4} {state} {r.action.value}{delay:<14} hits {r.hits:<4} "
              f"{r.description}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("tickets", parents=[common], help="exception tickets waiting for a person")
    p.add_argument("--all", action="store_true", help="answered and closed ones too")
    p.add_argument("--shop")
    p.add_argument("--platform")
    p.add_argument("--type", help="task type")
    p.add_argument("--older-than-min", type=float, metavar="M")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_tickets, readonly=True)

    p = sub.add_parser("ticket", parents=[common], help="one ticket with its evidence and "
                       "the earlier answers to the same failure")
    p.add_argument("id", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_ticket, readonly=True)

    p = sub.add_parser("answer", parents=[common], help="answer a ticket")
    p.add_argument("id", type=int)
    p.add_argument("--action", required=True, choices=[a.value for a in Answer])
    p.add_argument("--note", default="")
    p.add_argument("--rule", choices=[a.value for a in RuleAction],
                   help="also make a rule that resolves this failure on its own next time")
    p.add_argument("--rule-delay-s", type=float, default=600.0,
                   help="for --rule retry_later: how long to wait (default 600)")
    p.add_argument("--confirm-resend", action="store_true",
                   help="for a write of unknown outcome: yes, run the write again with retry "
                        "or resume (it may have gone through already)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_answer)

    p = sub.add_parser("quarantine", parents=[common], help="poison-pill tasks")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_quarantine, readonly=True)

    p = sub.add_parser("release", parents=[common], help="requeue a quarantined task")
    p.add_argument("id", type=int)
    p.set_defaults(handler=cmd_release)

    p = sub.add_parser("kb", parents=[common], help="the knowledge base of answers")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_kb, readonly=True)

    p = sub.add_parser("rules", parents=[common], help="list, enable, disable or delete rules")
    p.add_argument("--json", action="store_true")
    rsub = p.add_subparsers(dest="rules_cmd", metavar="ACTION")
    for verb in ("enable", "disable", "delete"):
        r = rsub.add_parser(verb, parents=[common], help=f"{verb} a rule")
        r.add_argument("id", type=int)
    p.set_defaults(handler=cmd_rules, readonly=lambda a: a.rules_cmd is None)
