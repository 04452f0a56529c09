"""``shopfleet notify add|list|test|remove``: where alerts go (#19; :mod:`core.notify`).

Targets come from ``[[notify]]`` in the configuration and from ``notify add``, which keeps
them in the store with the secret encrypted by the vault key (read from standard input, never
from the command line, never printed). Every field is checked before anything is written: a
bad one is one line naming it (``notify.url: …``), exit 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidInput
from ..notify import EVENTS, KINDS, notify_test_message
from ..notify.delivery import send
from ..notify.host import add_target, all_targets, remove_target, stored_raw
from ..notify.platforms import build_request
from ..notify.targets import LANGS, Target
from .context import Cli
from .times import when


def _vault(cli: Cli) -> Any:
    from ..secrets import open_vault_for

    return open_vault_for(cli.store)


def _where(url: str) -> str:
    """Scheme and host only: a webhook's path and query often carry its token."""
    p = urlsplit(url)
    return f"{p.scheme}://{p.hostname}" + (f":{p.port}" if p.port else "")


def cmd_notify_add(args: argparse.Namespace, cli: Cli) -> int:
    raw: dict[str, Any] = {"name": args.name, "kind": args.kind, "url": args.url}
    if args.events is not None:
        raw["events"] = [e.strip() for e in args.events.split(",") if e.strip()]
    options = {"shops": args.shops, "quiet_hours": args.quiet_hours, "tz": args.tz,
               "rate_per_min": args.rate_per_min, "batch_window_s": args.batch_window_s,
               "lang": args.lang}
    raw.update({k: v for k, v in options.items() if v is not None})
    if args.secret_stdin:
        secret = sys.stdin.readline().rstrip("\r\n")
        if not secret:
            raise InvalidInput("notify.secret", "empty on standard input")
        raw["secret"] = secret
    vault = _vault(cli) if raw.get("secret") else None
    target = add_target(cli.store, raw, config=cli.settings.notify, vault=vault)
    if cli.json:
        cli.out({"name": target.name, "kind": target.kind, "added": True})
    else:
        print(f"notification target {target.name} added ({target.kind} to "
              f"{_where(target.url)}{', signed' if target.secret else ''})")
    return 0


def cmd_notify_list(args: argparse.Namespace, cli: Cli) -> int:
    store = cli.store
    kept = {str(r.get("name")) for r in stored_raw(store)}
    needs_vault = any(r.get("secret_enc") for r in stored_raw(store))
    targets = all_targets(cli.settings.notify, store, _vault(cli) if needs_vault else None)
    health = {h.target: h for h in store.outbox().health()}
    rows: list[dict[str, Any]] = []
    for t in targets:
        h = health.get(t.name)
        rows.append({
            "name": t.name, "kind": t.kind, "where": _where(t.url),
            "source": "store" if t.name in kept else "config", "signed": bool(t.secret),
            "events": sorted(t.events), "pending": h.pending if h else 0,
            "failing_since": h.failing_since if h else None,
            "last_error": h.last_error if h else "", "given_up": h.given_up if h else 0,
            "last_sent_at": h.last_sent_at if h else None})
    if cli.json:
        cli.out(rows)
        return 0
    if not rows:
        print("no notification targets (add one with 'shopfleet notify add NAME --kind K "
              "--url URL', or [[notify]] in the configuration)")
    for r in rows:
        state = (f"FAILING since {when(r['failing_since'])}: {r['last_error']}"
                 if r["failing_since"] else
                 f"ok, last sent {when(r['last_sent_at'])}" if r["last_sent_at"] else "ok")
        print(f"{r['name']:<16} {r['kind']:<8} {r['where']:<32} {r['source']:<6} "
              f"pending {r['pending']}, given up {r['given_up']} · {state}")
        print(f"{'':<16} events: {', '.join(r['events'])}")
    return 0


def _target(cli: Cli, name: str) -> Target:
    store = cli.store
    needs_vault = any(r.get("secret_enc") for r in stored_raw(store))
    for t in all_targets(cli.settings.notify, store, _vault(cli) if needs_vault else None):
        if t.name == name:
            return t
    raise InvalidInput("NAME", f"no notification target named {name!r}")


def cmd_notify_test(args: argparse.Namespace, cli: Cli) -> int:
    target = _target(cli, args.name)
    now = time.time()
    msg = notify_test_message(target.name, target.lang, at=now)
    verdict = send(target.kind, build_request(target, msg, now=now))
    if cli.json:
        cli.out({"name": target.name, "ok": verdict.ok, "reason": verdict.reason,
                 "message_id": msg.id})
    elif verdict.ok:
        print(f"test message {msg.id} delivered to {target.name}")
    else:
        print(f"{target.name}: not delivered: {verdict.reason}", file=sys.stderr)
    return 0 if verdict.ok else 1


def cmd_notify_remove(args: argparse.Namespace, cli: Cli) -> int:
    if not remove_target(cli.store, args.name):
        if any(c.get("name") == args.name for c in cli.settings.notify):
            raise InvalidInput("NAME", f"{args.name!r} is defined in the configuration file; "
                                       "remove its [[notify]] entry there")
        raise InvalidInput("NAME", f"no notification target named {args.name!r}")
    print(f"notification target {args.name} removed")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("notify", parents=[common],
                       help="notification targets: add, list, test, remove")
    cmds = p.add_subparsers(dest="notify_cmd", metavar="COMMAND", required=True)

    a = cmds.add_parser("add", parents=[common], help="add a target (kept in the store)")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--kind", required=True, help=f"one of {', '.join(KINDS)}")
    a.add_argument("--url", required=True, help="the robot's webhook URL (http or https)")
    a.add_argument("--secret-stdin", action="store_true",
                   help="read the signing secret from standard input (stored encrypted)")
    a.add_argument("--events", metavar="E,E", help=f"comma-separated: {', '.join(EVENTS)}")
    a.add_argument("--shops", metavar="SELECTOR", help="only events about these shops")
    a.add_argument("--quiet-hours", dest="quiet_hours", metavar="HH:MM-HH:MM")
    a.add_argument("--tz", help="time zone of the quiet hours (default UTC)")
    a.add_argument("--rate-per-min", dest="rate_per_min", type=int, metavar="N")
    a.add_argument("--batch-window-s", dest="batch_window_s", type=float, metavar="S")
    a.add_argument("--lang", choices=LANGS)
    a.add_argument("--json", action="store_true", help="print JSON")
    a.set_defaults(handler=cmd_notify_add)

    ls = cmds.add_parser("list", parents=[common], help="targets and how they fare")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(handler=cmd_notify_list, readonly=True)

    t = cmds.add_parser("test", parents=[common], help="send a test message now")
    t.add_argument("name", metavar="NAME")
    t.add_argument("--json", action="store_true", help="print JSON")
    t.set_defaults(handler=cmd_notify_test, readonly=True)

    r = cmds.add_parser("remove", parents=[common], help="remove a target added here")
    r.add_argument("name", metavar="NAME")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(handler=cmd_notify_remove)
