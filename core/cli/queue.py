"""Queue commands: ``submit``, ``status``, ``tasks``, ``task``, ``bump``, ``cancel``,
``preempt``."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..store import TaskRecord, TaskState
from .args import finite_float
from .context import Cli
from .times import ago, when


def cmd_submit(args: argparse.Namespace, cli: Cli) -> int:
    from ..specs import parse_specs

    if args.file == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        data = stdin.read() if stdin is not None else sys.stdin.read().encode(
            "utf-8", "surrogatepass")
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as exc:
            raise InvalidInput("FILE", f"cannot read {args.file}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("FILE", f"{args.file} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                           f"at offset {exc.start}); nothing was submitted") from None
    shops = None
    if args.shops is not None:  # #18: templates for every shop a selector picks
        from .shops import picked_shops
        shops = [s.name for s in picked_shops(cli, args.shops)]
    specs = parse_specs(text, max_bytes=cli.settings.queue.max_task_bytes, shops=shops)
    ids = cli.store.submit_many(specs)
    if cli.json:
        cli.out({"ids": ids})
    else:
        for i in ids:
            print(i)
    return 0


def cmd_status(args: argparse.Namespace, cli: Cli) -> int:
    st = cli.store.status()
    extra = _status_extra(cli)
    workers = Counter(w.state for w in cli.store.workers())
    if cli.json:
        cli.out({**st.to_json(), **{k: v for k, v in extra.items() if k != "lines"},
                 "workers": dict(workers)})
        return 0
    print(f"store:    {cli.where}")
    print("tasks:    " + (", ".join(f"{k} {v}" for k, v in st.counts.items() if v) or "none"))
    print(f"backlog:  {st.queued} queued of max {st.max_backlog}"
          f"{f', {st.hard_aged} hard-aged' if st.hard_aged else ''}")
    print(f"oldest:   waiting {ago(st.oldest_wait_s)}")
    if st.top_score is not None:
        print(f"scores:   {st.bottom_score:.3f} .. {st.top_score:.3f}")
    busy = ", ".join(f"{k} ({v})" for k, v in sorted(st.busy_shops.items())) or "none"
    print(f"busy:     {busy}")
    if workers:
        print("workers:  " + ", ".join(f"{n} {state}" for state, n in sorted(workers.items()))
              + "  (shopfleet workers)")
    for line in extra.get("lines", []):
        print(line)
    return 0


def _status_extra(cli: Cli) -> dict[str, Any]:
    """The last statistics snapshot a running engine stored (every 5 s), with its age."""
    raw = cli.store.meta("engine_snapshot")
    if not raw:
        return {}
    snap = json.loads(raw)
    age = max(0.0, cli.store.clock.now() - float(snap.get("at", 0)))
    lines = [f"engine:   snapshot {ago(age)} old from {snap.get('owner', '?')}: running "
             f"{snap.get('running')}/{snap.get('slots')}, done/min {snap.get('done_per_min')}, "
             f"failed/min {snap.get('failed_per_min')}, open tickets "
             f"{snap.get('open_tickets')}, preemptions/h {snap.get('preemptions_per_hour')}"]
    open_breakers = [b["name"] for b in snap.get("breakers", []) if b.get("state") != "closed"]
    if open_breakers:
        lines.append("breakers: open: " + ", ".join(open_breakers))
    return {"engine": {**snap, "age_s": age}, "lines": lines}


def _task_line(t: TaskRecord) -> str:
    mark = "!" if t.hard_aged else " "
    line = (f"{t.id:>7} {t.state.value:<13} {t.score:>8.3f}{mark} {t.type:<16} {t.shop:<12} "
            f"att {t.attempts}/{t.max_attempts}  {t.state_reason}")
    if t.state is TaskState.SCHEDULED:  # #18: when it joins the queue
        line += f"  (joins the queue {when(t.not_before)})"
    return line


def cmd_tasks(args: argparse.Namespace, cli: Cli) -> int:
    if args.shops is not None:  # #18: the tasks of every shop a selector picks
        if args.shop is not None:
            raise InvalidInput("--shops", "give --shop or --shops, not both")
        from .shops import picked_shops
        rows = []
        for shop in picked_shops(cli, args.shops):
            rows += cli.store.tasks(state=args.state, shop=shop.name, limit=args.limit)
        best_first = args.state == "queued"
        rows.sort(key=(lambda t: (-t.hard_aged, -t.score, t.id)) if best_first
                  else (lambda t: -t.id))
        rows = rows[:args.limit]
    else:
        rows = cli.store.tasks(state=args.state, shop=args.shop, limit=args.limit)
    if cli.json:
        cli.out([t.to_json() for t in rows])
        return 0
    if not rows:
        print("no tasks")
        return 0
    print(f"{'id':>7} {'state':<13} {'score':>8}  {'type':<16} {'shop':<12} attempts  reason")
    for t in rows:
        print(_task_line(t))
    return 0


def cmd_task(args: argparse.Namespace, cli: Cli) -> int:
    t = cli.store.task(args.id)
    events = cli.store.events(args.id)
    if cli.json:
        cli.out({**t.to_json(), "events": [e.__dict__ for e in events]})
        return 0
    print(_task_line(t))
    print(f"  created {when(t.created_at)}  deadline {when(t.deadline)}  flow {t.flow}")
    if t.state is TaskState.SCHEDULED:
        print(f"  scheduled: joins the queue at {when(t.not_before)}")
    if t.results:
        print(f"  results {json.dumps(t.results, ensure_ascii=False)[:500]}")
    if t.last_error:
        print(f"  last error ({t.error_class}): {t.last_error}")
    for e in events:
        print(f"  {when(e.at)}  {e.from_state or '-':>13} -> {e.to_state:<13} {e.reason}")
    return 0


def cmd_bump(args: argparse.Namespace, cli: Cli) -> int:
    from ..priority import check_bump

    check_bump(args.to, args.by)  # before the database is opened: nothing written
    score = cli.store.bump(args.id, to=args.to, by=args.by)
    if cli.json:
        cli.out({"id": args.id, "score": score})
    else:
        print(f"task {args.id} now scores {score:.3f}")
    return 0


def cmd_cancel(args: argparse.Namespace, cli: Cli) -> int:
    before = cli.store.cancel(args.id)
    if cli.json:
        cli.out({"id": args.id, "was": before.value, "state": "cancelled"})
    else:
        print(f"task {args.id} cancelled (was {before.value})")
    return 0


def cmd_preempt(args: argparse.Namespace, cli: Cli) -> int:
    """Ask the engine holding a running task to suspend it at its next safe step."""
    store = cli.store
    why = "by operator (CLI)" + (f" for #{args.for_task}" if args.for_task else "")
    if args.for_task is not None:
        top = store.status().top_score or 0.0
        store.bump(args.for_task, to=max(top + 1.0, cli.settings.priority.preempt_threshold))
    store.request_preempt(args.id, why)
    if cli.json:
        cli.out({"id": args.id, "requested": True, "for": args.for_task})
    else:
        extra = f"; task {args.for_task} moved to the front" if args.for_task else ""
        print(f"task {args.id}: preemption requested (it suspends at its next safe step; "
              f"a non-interruptible step finishes first){extra}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("submit", parents=[common],
                       help="submit tasks from a JSON object, array or JSON Lines file")
    p.add_argument("file", metavar="FILE|-", help="task file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--shops", metavar="SELECTOR",
                   help="the file holds templates without shop: submit each to every shop "
                        "the selector picks (platform:pdd, tag:north, pdd-*)")
    p.set_defaults(handler=cmd_submit)

    p = sub.add_parser("status", parents=[common],
                       help="counts per state, backlog, oldest wait, busy shops")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_status, readonly=True)

    p = sub.add_parser("tasks", parents=[common], help="list tasks (queued ones best first)")
    p.add_argument("--state", choices=[s.value for s in TaskState])
    p.add_argument("--shop")
    p.add_argument("--shops", metavar="SELECTOR", help="the tasks of the shops it picks")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_tasks, readonly=True)

    p = sub.add_parser("task", parents=[common], help="one task with its event history")
    p.add_argument("id", type=int)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_task, readonly=True)

    p = sub.add_parser("bump", parents=[common],
                       help="change a task's priority (it keeps aging from its new place)")
    p.add_argument("id", type=int)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--to", type=finite_float, metavar="S", help="set the score to S now")
    g.add_argument("--by", type=finite_float, metavar="D", help="add D points")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_bump)

    p = sub.add_parser("cancel", parents=[common], help="cancel a task that has not finished")
    p.add_argument("id", type=int)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_cancel)

    p = sub.add_parser("preempt", parents=[common],
                       help="suspend a running task at its next safe step")
    p.add_argument("id", type=int)
    p.add_argument("--for", dest="for_task", type=int, metavar="TASK_ID",
                   help="move this task to the front so it gets the freed slot")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_preempt)
