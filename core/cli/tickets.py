"""Ticket commands, for humans in the loop: tickets, answers, quarantine, the knowledge base
and rules.

These work on the database directly (one transaction each), so they work while a worker runs
in another process: a requeued task is picked up at the worker's next look at the queue.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
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

if TYPE_CHECKING:
    from ..store.base import TicketStore


def _book(cli: Cli) -> TicketStore:
    return cli.store.ticket_book()


def _shop_names(cli: Cli, args: argparse.Namespace) -> list[str | None]:
    """The shops ``--shop NAME`` or ``--shops SELECTOR`` (#18) name; ``[None]``: all shops."""
    if args.shops is None:
        return [args.shop]
    if args.shop is not None:
        raise InvalidInput("--shops", "give --shop or --shops, not both")
    from .shops import picked_shops

    return [s.name for s in picked_shops(cli, args.shops)]


def _open_tickets(cli: Cli, args: argparse.Namespace, *, state: str | None = "open",
                  older_than_s: float | None = None, limit: int = 100) -> list[Ticket]:
    """The tickets of the shops the options name, by id like the store (one read per shop)."""
    book = _book(cli)
    rows: list[Ticket] = []
    for name in _shop_names(cli, args):
        rows += book.tickets(state=state, shop=name, platform=getattr(args, "platform", None),
                             task_type=getattr(args, "type", None),
                             older_than_s=older_than_s, limit=limit)
    rows.sort(key=lambda t: t.id)
    return rows[:limit]


def cmd_tickets(args: argparse.Namespace, cli: Cli) -> int:
    if args.limit < 1:
        raise InvalidInput("--limit", "must be at least 1")
    state = None if args.all else "open"
    older = args.older_than_min * 60 if args.older_than_min is not None else None
    rows = _open_tickets(cli, args, state=state, older_than_s=older, limit=args.limit)
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
    if args.shops is not None:
        return _answer_many(args, cli)
    if args.id is None:
        raise InvalidInput("ID", "give a ticket's id, or --shops SELECTOR to answer every open "
                                 "ticket of the shops it picks")
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


def _answer_many(args: argparse.Namespace, cli: Cli) -> int:
    """``answer --shops SELECTOR --action A [--note N]``: every open ticket of the picked shops
    gets the same answer (#18). Every ticket is checked before the first answer is written: one
    that would resend a write of unknown outcome without ``--confirm-resend`` refuses the
    whole batch, nothing answered."""
    if args.id is not None:
        raise InvalidInput("--shops", "give a ticket's id or --shops, not both")
    if args.rule is not None:
        raise InvalidInput("--rule", "a rule is made from one ticket's failure: answer that "
                                     "ticket by its id to make one")
    act, _ = parse_answer(args.action, None)
    args.shop = None
    tickets = _open_tickets(cli, args, limit=10_000)
    for t in tickets:
        try:
            check_write_safety(t.kind, act, confirm_resend=args.confirm_resend)
        except InvalidInput as exc:
            raise InvalidInput(exc.field, f"ticket {t.id} ({t.shop}): {exc.reason}; "
                                          "no ticket was answered") from None
    book = _book(cli)
    done = [book.answer(t.id, act, note=args.note or "") for t in tickets]
    if cli.json:
        cli.out([t.to_json() for t in done])
    elif not done:
        print("no open tickets for these shops")
    else:
        for t in done:
            print(f"ticket {t.id} ({t.shop}) answered {args.action}: task {t.task_id} is "
                  f"{cli.store.task(t.task_id).state.value}")
    return 0


def _quarantined(cli: Cli, args: argparse.Namespace) -> list[Any]:
    """Quarantined tasks of the shops ``--shops`` picks (all without it), newest first."""
    if args.shops is None:
        return _book(cli).quarantined(limit=args.limit)
    from .shops import picked_shops

    rows: list[Any] = []
    for shop in picked_shops(cli, args.shops):
        rows += cli.store.tasks(state="quarantined", shop=shop.name, limit=args.limit)
    rows.sort(key=lambda t: -t.id)
    return rows[:args.limit]


def cmd_quarantine(args: argparse.Namespace, cli: Cli) -> int:
    rows = _quarantined(cli, args)
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
    if (args.id is None) == (args.shops is None):
        raise InvalidInput("ID", "give a quarantined task's id or --shops SELECTOR (not both)")
    if args.id is not None:
        ids = [args.id]
    else:
        args.limit = 10_000
        ids = [t.id for t in _quarantined(cli, args)]
        if not ids:
            print("no quarantined tasks for these shops")
    for task_id in ids:
        _book(cli).release(task_id)
        print(f"task {task_id} released from quarantine (queued again)")
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
    if args.rules_cmd == "edit":
        old = next((r for r in book.rules() if r.id == args.id), None)
        if old is None:
            raise InvalidInput("id", f"no rule with id {args.id}")
        rule = book.edit_rule(
            args.id, action=args.action or old.action.value,
            delay_s=args.delay_s if args.delay_s is not None else old.delay_s,
            note=args.note if args.note is not None else old.note)
        print(f"rule {rule.id}: {rule.description}")
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
    p.add_argument("--shops", metavar="SELECTOR",
                   help="the tickets of the shops it picks (platform:pdd, tag:north, pdd-*)")
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

    p = sub.add_parser("answer", parents=[common],
                       help="answer a ticket (or, with --shops, every open ticket of some shops)")
    p.add_argument("id", type=int, nargs="?")
    p.add_argument("--shops", metavar="SELECTOR",
                   help="answer every open ticket of the shops it picks the same way "
                        "(no --rule; checked as a whole before anything is written)")
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
    p.add_argument("--shops", metavar="SELECTOR", help="those of the shops it picks")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_quarantine, readonly=True)

    p = sub.add_parser("release", parents=[common],
                       help="requeue a quarantined task (or those of the shops --shops picks)")
    p.add_argument("id", type=int, nargs="?")
    p.add_argument("--shops", metavar="SELECTOR",
                   help="release every quarantined task of the shops it picks")
    p.add_argument("--json", action="store_true")
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
    r = rsub.add_parser("edit", parents=[common],
                        help="change what a rule does (its scope stays); unset options keep "
                             "their value")
    r.add_argument("id", type=int)
    r.add_argument("--action", choices=[a.value for a in RuleAction])
    r.add_argument("--delay-s", type=float, default=None, metavar="SECONDS",
                   help="for retry_later: how long to wait before the retry")
    r.add_argument("--note", default=None)
    p.set_defaults(handler=cmd_rules, readonly=lambda a: a.rules_cmd is None)
