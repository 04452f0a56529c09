"""Schedule commands (#18): ``schedule add|list|show|pause|resume|delete|run-now``.

``add`` checks everything before it writes: the rule (``--cron`` or ``--every`` with
``--between``), ``--tz``, ``--jitter``, ``--catch-up``, ``--until``, the template
(``--task FILE``: a task without ``shop``) against the flows, and the selector against the
stored shops (a selector that picks none is refused). Bad input: one line naming the field,
exit 2, nothing written. The engine fires schedules (:mod:`core.scheduler`); ``run-now``
submits one firing at once without moving the mark.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..scheduler import resume_schedule, run_schedule_now
from ..schedules import Schedule, define_schedule, expand, next_firings
from ..specs import validate_spec
from ..store.prepare import prepare_specs
from ..store.records import ScheduleRecord
from .context import Cli

NEXT_SHOWN = 5


def _read_template(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput("--task", f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInput("--task", f"{path} is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput("--task", f"{path} is not JSON: {exc.msg} at line {exc.lineno}"
                           ) from None


def _schedule_of(rec: ScheduleRecord) -> Schedule | None:
    try:
        return Schedule.from_dict({**rec.definition, "paused": rec.paused})
    except InvalidInput:
        return None


def _local(ts: datetime, s: Schedule) -> str:
    return ts.astimezone(s.zone).strftime("%Y-%m-%d %H:%M %Z")


def _json(rec: ScheduleRecord, n: int) -> dict[str, Any]:
    s = _schedule_of(rec)
    out = rec.to_json()
    out["describe"] = s.describe() if s else None
    out["next"] = ([f.astimezone(s.zone).isoformat() for f in next_firings(s, rec.mark, n)]
                   if s and not rec.paused else [])
    return out


def cmd_schedule_add(args: argparse.Namespace, cli: Cli) -> int:
    template = _read_template(args.task)
    sched = define_schedule(args.name, tz=args.tz, shops=args.shops, task=template,
                            cron=args.cron, every=args.every, between=args.between,
                            jitter=args.jitter, catch_up=args.catch_up, until=args.until)
    store = cli.store
    now = store.clock.now()
    # The selector must pick stored shops, and the template must pass the flow checks the
    # store applies at submission, for every picked shop (a sample firing: now).
    shops = {s.name: s for s in store.shops()}
    planned = expand(sched, datetime.fromtimestamp(now, UTC), shops.values())
    specs = [validate_spec(p.to_dict(), where="--task") for p in planned]
    try:
        prepare_specs(specs, shops, cli.settings.priority, getattr(store, "validator", None),
                      now)
    except InvalidInput as exc:
        field = exc.field.split(".", 1)[-1] if exc.field.startswith("tasks[") else exc.field
        raise InvalidInput(f"--task.{field}", exc.reason) from None
    rec = store.add_schedule(sched.name, sched.to_dict(), mark=now)
    if cli.json:
        cli.out(_json(rec, NEXT_SHOWN))
    else:
        nxt = next_firings(sched, now, 1)
        print(f"schedule {sched.name} added: {sched.describe()}, {len(planned)} shop(s); "
              f"next {_local(nxt[0], sched) if nxt else 'never'}")
    return 0


def cmd_schedule_list(args: argparse.Namespace, cli: Cli) -> int:
    recs = cli.store.schedules()
    if cli.json:
        cli.out([_json(r, 1) for r in recs])
        return 0
    if not recs:
        print("no schedules (add one with 'shopfleet schedule add')")
    for r in recs:
        s = _schedule_of(r)
        if s is None:
            print(f"{r.name:<20} (definition no longer valid)  {r.last_error}")
            continue
        nxt = next_firings(s, max(r.mark, cli.store.clock.now()), 1)
        state = "paused" if r.paused else ("next " + (_local(nxt[0], s) if nxt else "never"))
        err = f"  last error: {r.last_error}" if r.last_error else ""
        print(f"{r.name:<20} {state:<32} {s.describe()}  shops {s.shops}{err}")
    return 0


def cmd_schedule_show(args: argparse.Namespace, cli: Cli) -> int:
    rec = cli.store.schedule_record(args.name)
    if cli.json:
        cli.out(_json(rec, args.next))
        return 0
    s = _schedule_of(rec)
    print(f"schedule {rec.name}{' (paused)' if rec.paused else ''}")
    if s is not None:
        print(f"  when     {s.describe()}")
        print(f"  shops    {s.shops}")
        print(f"  catch-up {s.catch_up}, jitter {rec.definition.get('jitter')}")
        print(f"  task     {json.dumps(s.template, ensure_ascii=False)}")
        print(f"  last     {_local(datetime.fromtimestamp(rec.mark, UTC), s)}")
        if not rec.paused:
            for f in next_firings(s, max(rec.mark, cli.store.clock.now()), args.next):
                print(f"  next     {_local(f, s)}")
    if rec.last_error:
        print(f"  last error: {rec.last_error}")
    return 0


def cmd_schedule_pause(args: argparse.Namespace, cli: Cli) -> int:
    store = cli.store
    if args.cmd == "pause":
        rec = store.set_schedule_state(args.name, paused=True)
    else:
        rec = resume_schedule(store, args.name)
    if cli.json:
        cli.out(_json(rec, 1))
    else:
        print(f"schedule {rec.name} {'paused' if rec.paused else 'resumed'}")
    return 0


def cmd_schedule_delete(args: argparse.Namespace, cli: Cli) -> int:
    cli.store.delete_schedule(args.name)
    if cli.json:
        cli.out({"deleted": args.name})
    else:
        print(f"schedule {args.name} deleted (its tasks already submitted stay)")
    return 0


def cmd_schedule_run_now(args: argparse.Namespace, cli: Cli) -> int:
    ids = run_schedule_now(cli.store, args.name)
    if cli.json:
        cli.out({"name": args.name, "ids": ids})
    else:
        print(f"schedule {args.name} fired now: {len(ids)} task(s) " +
              " ".join(str(i) for i in ids))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    sched = sub.add_parser("schedule", parents=[common],
                           help="recurring work: add, list, show, pause, resume, delete, "
                                "run-now")
    ss = sched.add_subparsers(dest="cmd", metavar="ACTION", required=True)
    p = ss.add_parser("add", parents=[common], help="add a schedule")
    p.add_argument("name")
    p.add_argument("--cron", help="five-field cron expression, e.g. '0 8 * * *'")
    p.add_argument("--every", help="an interval, e.g. 15m (instead of --cron)")
    p.add_argument("--between", help="with --every: a daily window, e.g. 09:00-21:00")
    p.add_argument("--tz", required=True, help="IANA time zone, e.g. Asia/Shanghai")
    p.add_argument("--shops", required=True, metavar="SELECTOR",
                   help="which shops (platform:pdd, tag:north, pdd-*, combinations)")
    p.add_argument("--task", required=True, metavar="TEMPLATE.json",
                   help="a task without shop ({fire.date} and the like allowed)")
    p.add_argument("--jitter", help="spread each firing's tasks over [0, jitter), e.g. 10m")
    p.add_argument("--catch-up", default="skip", help="skip (default), once or all")
    p.add_argument("--until", help="last date it fires (YYYY-MM-DD, in --tz)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_schedule_add)
    p = ss.add_parser("list", parents=[common], help="every schedule with its next run")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_schedule_list, readonly=True)
    p = ss.add_parser("show", parents=[common], help="one schedule with its next runs")
    p.add_argument("name")
    p.add_argument("--next", type=int, default=NEXT_SHOWN, help="how many next runs")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_schedule_show, readonly=True)
    for verb, handler, what in (
            ("pause", cmd_schedule_pause, "stop firing (missed firings are declined)"),
            ("resume", cmd_schedule_pause, "fire again from now (clears the last error)"),
            ("delete", cmd_schedule_delete, "delete a schedule"),
            ("run-now", cmd_schedule_run_now, "submit one firing now (the mark stays)")):
        p = ss.add_parser(verb, parents=[common], help=what)
        p.add_argument("name")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(handler=handler)
