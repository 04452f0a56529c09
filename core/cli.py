"""The ``shopfleet`` command.

Exit codes: 0 ok, 2 bad input (the message names the field), 1 any other failure. Errors go
to stderr as one readable line; with ``--json`` as one JSON object ``{"error": …}`` — also for
a bad argument, which argparse would otherwise answer with its usage text.
Every command takes ``--db PATH``, ``--config FILE`` and ``--store URL``, before or after the
command's name. Read-only commands (``status``, ``tasks``, ``shops``, ``tickets`` …) never
create or change a database: a missing file is an error (exit 2), not a new empty database.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from .config import Settings, load_settings
from .errors import BacklogFull, InvalidInput, ShopFleetError
from .origins import normalise_origins
from .paths import data_dir_path, default_db_path
from .store import TaskRecord, TaskState
from .store.base import Store

Handler = Callable[[argparse.Namespace, "Cli"], int]


@dataclass
class Cli:
    """What a command handler needs, opened lazily: settings, then the store."""

    args: argparse.Namespace
    _settings: Settings | None = None
    _store: Store | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            config = getattr(self.args, "config", None)
            if config is None:  # the console's settings dialog saves here
                default = data_dir_path() / "shopfleet.toml"
                config = default if default.exists() else None
            self._settings = load_settings(config)
        return self._settings

    @property
    def db_path(self) -> Path:
        db = getattr(self.args, "db", None) or self.settings.store.path
        return Path(db).expanduser() if db else default_db_path()

    @property
    def store_url(self) -> str:
        """``--store URL`` or ``[store] url`` (empty: the SQLite file at ``db_path``)."""
        return str(getattr(self.args, "store", None) or self.settings.store.url or "")

    @property
    def where(self) -> str:
        """Where the queue is, for messages (no password)."""
        from .urls import public_url

        return public_url(self.store.url if self._store is not None else (
            self.store_url or str(self.db_path)))

    @property
    def readonly(self) -> bool:
        """The command only reads: it must not create, migrate or change a database."""
        ro = getattr(self.args, "readonly", False)
        return bool(ro(self.args) if callable(ro) else ro)

    @property
    def store(self) -> Store:
        if self._store is None:
            from .engine.build import open_store

            via = "--store" if getattr(self.args, "store", None) else "store.url"
            try:
                self._store = open_store(self.settings, self.db_path, url=self.store_url,
                                         readonly=self.readonly, field="--db")
            except InvalidInput as exc:
                if exc.field == "store.url" and via == "--store":
                    raise InvalidInput("--store", exc.reason) from None
                raise
        return self._store

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    def out(self, obj: Any) -> None:
        print(json.dumps(obj, ensure_ascii=False, indent=None, default=str))

    def close(self) -> None:
        for closer in reversed(self.closers):
            closer()
        if self._store is not None:
            self._store.close()


COMMON_OPTIONS = ("db", "config", "store")
"""Options every command takes, before or after its name (``--db X status`` = ``status --db
X``). Given before, argparse keeps them under ``top_*`` (a subcommand's own defaults would
otherwise overwrite them); :func:`_merge_common` folds them in."""


class UsageError(Exception):
    """A bad command-line argument, reported like every other bad input (one line, exit 2)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument raises :class:`UsageError` instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        field = ""
        if message.startswith("argument "):
            field, _, message = message.removeprefix("argument ").partition(": ")
            field = field.split("/")[-1]
        elif message.startswith("the following arguments are required: "):
            field = message.split(": ", 1)[1].split(",")[0].split("/")[-1]
        raise UsageError(field or "arguments", f"{message} (see {self.prog} --help)")


def _common(*, top: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    pre = "top_" if top else ""
    p.add_argument("--db", dest=f"{pre}db", default=argparse.SUPPRESS, metavar="PATH",
                   help="SQLite database (default: shopfleet.db in the user data folder)")
    p.add_argument("--config", dest=f"{pre}config", default=argparse.SUPPRESS, metavar="FILE",
                   help="TOML configuration file")
    p.add_argument("--store", dest=f"{pre}store", default=argparse.SUPPRESS, metavar="URL",
                   help="shared store, e.g. redis://host:6379/0 (default: [store] url, else "
                        "the SQLite file)")
    return p


def _merge_common(args: argparse.Namespace) -> argparse.Namespace:
    for name in COMMON_OPTIONS:
        before = getattr(args, f"top_{name}", None)
        after = getattr(args, name, None)
        if before is not None and after is not None and before != after:
            raise UsageError(f"--{name}", f"given twice with different values ({before!r} "
                             f"before the command, {after!r} after it)")
        setattr(args, name, after if after is not None else before)
        if hasattr(args, f"top_{name}"):
            delattr(args, f"top_{name}")
    return args


def finite_float(text: str) -> float:
    """argparse type: a finite number (no nan, inf)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def port_number(text: str) -> int:
    """argparse type: a TCP port, 0..65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0..65535)")
    return value


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _ago(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


# -- commands ------------------------------------------------------------------------------

def cmd_submit(args: argparse.Namespace, cli: Cli) -> int:
    from .specs import parse_specs

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
    specs = parse_specs(text, max_bytes=cli.settings.queue.max_task_bytes)
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
    print("tasks:    " + ", ".join(f"{k} {v}" for k, v in st.counts.items() if v) or "none")
    print(f"backlog:  {st.queued} queued of max {st.max_backlog}"
          f"{f', {st.hard_aged} hard-aged' if st.hard_aged else ''}")
    print(f"oldest:   waiting {_ago(st.oldest_wait_s)}")
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


def cmd_workers(args: argparse.Namespace, cli: Cli) -> int:
    """Every worker on this store: host, pool size, running tasks, last heartbeat."""
    store = cli.store
    if args.recover:
        ids = store.recover_lost_workers(cli.settings.queue.worker_lost_after_s)
        if not cli.json:
            print(f"requeued {len(ids)} tasks of lost workers" if ids else
                  "no worker is lost")
    now = store.clock.now()
    workers = store.workers()
    if cli.json:
        cli.out([{**w.to_json(), "heartbeat_age_s": max(0.0, now - w.heartbeat_at)}
                 for w in workers])
        return 0
    if not workers:
        print(f"no worker has run on {cli.where}")
        return 0
    print(f"{'host':<20} {'pid':>7} {'slots':>5} {'running':>7} {'heartbeat':>9}  "
          f"{'state':<7} owner")
    for w in workers:
        print(f"{w.host[:20]:<20} {w.pid:>7} {w.slots:>5} {w.running:>7} "
              f"{_ago(max(0.0, now - w.heartbeat_at)):>9}  {w.state:<7} {w.owner}")
    return 0


def _status_extra(cli: Cli) -> dict[str, Any]:
    """The last statistics snapshot a running engine stored (every 5 s), with its age."""
    raw = cli.store.meta("engine_snapshot")
    if not raw:
        return {}
    snap = json.loads(raw)
    age = max(0.0, cli.store.clock.now() - float(snap.get("at", 0)))
    lines = [f"engine:   snapshot {_ago(age)} old from {snap.get('owner', '?')}: running "
             f"{snap.get('running')}/{snap.get('slots')}, done/min {snap.get('done_per_min')}, "
             f"failed/min {snap.get('failed_per_min')}, open tickets "
             f"{snap.get('open_tickets')}, preemptions/h {snap.get('preemptions_per_hour')}"]
    open_breakers = [b["name"] for b in snap.get("breakers", []) if b.get("state") != "closed"]
    if open_breakers:
        lines.append("breakers: open: " + ", ".join(open_breakers))
    return {"engine": {**snap, "age_s": age}, "lines": lines}


def _task_line(t: TaskRecord) -> str:
    mark = "!" if t.hard_aged else " "
    return (f"{t.id:>7} {t.state.value:<13} {t.score:>8.3f}{mark} {t.type:<16} {t.shop:<12} "
            f"att {t.attempts}/{t.max_attempts}  {t.state_reason}")


def cmd_tasks(args: argparse.Namespace, cli: Cli) -> int:
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
    print(f"  created {_when(t.created_at)}  deadline {_when(t.deadline)}  flow {t.flow}")
    if t.results:
        print(f"  results {json.dumps(t.results, ensure_ascii=False)[:500]}")
    if t.last_error:
        print(f"  last error ({t.error_class}): {t.last_error}")
    for e in events:
        print(f"  {_when(e.at)}  {e.from_state or '-':>13} -> {e.to_state:<13} {e.reason}")
    return 0


def cmd_bump(args: argparse.Namespace, cli: Cli) -> int:
    from .priority import check_bump

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


def cmd_shops(args: argparse.Namespace, cli: Cli) -> int:
    shops = cli.store.shops()
    if cli.json:
        cli.out([s.__dict__ for s in shops])
        return 0
    if not shops:
        print("no shops (add one with 'shopfleet shop add NAME --platform P --base-url URL')")
    for s in shops:
        flags = " paused" if s.paused else ""
        login = f"user {s.username}" if s.username else "no login"
        pw = ", password set" if s.has_password else ""
        print(f"{s.name:<16} {s.platform:<8} {s.base_url}  ({login}{pw}){flags}")
    return 0


def cmd_shop_add(args: argparse.Namespace, cli: Cli) -> int:
    origins = normalise_origins(args.allow_origin or [], field="--allow-origin")
    shop = cli.store.add_shop(args.name, platform=args.platform, base_url=args.base_url,
                              username=args.username or "")
    if origins:
        shop = cli.store.set_shop_origins(args.name, origins)
    if cli.json:
        cli.out(shop.__dict__)
    else:
        print(f"shop {shop.name} added ({shop.platform}, domain {shop.domain})")
    return 0


def cmd_shop_set(args: argparse.Namespace, cli: Cli) -> int:
    """``shop set NAME --allow-origin URL…``: the origins its tasks may load besides its own
    (replaces the list; ``--allow-origin`` with no URL clears it)."""
    origins = normalise_origins(args.allow_origin, field="--allow-origin")
    shop = cli.store.set_shop_origins(args.name, origins)
    if cli.json:
        cli.out(shop.__dict__)
    else:
        print(f"shop {shop.name} may load: its own origin"
              + "".join(f", {o}" for o in shop.allowed_origins))
    return 0


def cmd_shop_pause(args: argparse.Namespace, cli: Cli) -> int:
    shop = cli.store.set_shop_paused(args.name, args.cmd == "pause")
    print(f"shop {shop.name} {'paused' if shop.paused else 'resumed'}")
    return 0


def cmd_shop_set_password(args: argparse.Namespace, cli: Cli) -> int:
    from .secrets import open_vault_for, save_password

    store = cli.store
    store.shop(args.name)
    # The key is checked against the store's before a password is read: on a fleet, a
    # machine without the right key must not encrypt a shared password with another one.
    vault = open_vault_for(store)
    if args.stdin or not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        import getpass

        password = getpass.getpass(f"password for shop {args.name}: ")
    if not password:
        raise InvalidInput("password", "is empty")
    save_password(store, args.name, password, vault=vault)
    print(f"password of shop {args.name} saved (encrypted)")
    return 0


# -- parser ---------------------------------------------------------------------------------

EXTRA_COMMANDS: list[Callable[[Any, argparse.ArgumentParser], None]] = []
"""Registrations of commands that live with their parts (``register(subparsers, common)``)."""


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = _Parser(
        prog="shopfleet", parents=[_common(top=True)],
        description="ShopFleet: run many shops' browser work in the right order, safely.")
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, handler: Handler, help_: str, **kw: Any) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help_,
                                                    description=help_, **kw)
        p.set_defaults(handler=handler)
        return p

    p = add("submit", cmd_submit, "submit tasks from a JSON object, array or JSON Lines file")
    p.add_argument("file", metavar="FILE|-", help="task file, or - for standard input")
    p.add_argument("--json", action="store_true")

    p = add("status", cmd_status, "counts per state, backlog, oldest wait, busy shops")
    p.add_argument("--json", action="store_true")

    p = add("tasks", cmd_tasks, "list tasks (queued ones best first)")
    p.add_argument("--state", choices=[s.value for s in TaskState])
    p.add_argument("--shop")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")

    p = add("task", cmd_task, "one task with its event history")
    p.add_argument("id", type=int)
    p.add_argument("--json", action="store_true")

    p = add("bump", cmd_bump, "change a task's priority (it keeps aging from its new place)")
    p.add_argument("id", type=int)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--to", type=finite_float, metavar="S", help="set the score to S now")
    g.add_argument("--by", type=finite_float, metavar="D", help="add D points")
    p.add_argument("--json", action="store_true")

    p = add("cancel", cmd_cancel, "cancel a task that has not finished")
    p.add_argument("id", type=int)
    p.add_argument("--json", action="store_true")

    p = add("preempt", cmd_preempt, "suspend a running task at its next safe step")
    p.add_argument("id", type=int)
    p.add_argument("--for", dest="for_task", type=int, metavar="TASK_ID",
                   help="move this task to the front so it gets the freed slot")
    p.add_argument("--json", action="store_true")

    p = add("workers", cmd_workers, "workers on this store: host, pool size, heartbeat")
    p.set_defaults(readonly=lambda a: not a.recover)
    p.add_argument("--recover", action="store_true",
                   help="first mark silent workers lost and requeue their tasks")
    p.add_argument("--json", action="store_true")

    p = add("shops", cmd_shops, "list shops")
    p.add_argument("--json", action="store_true")

    shop = sub.add_parser("shop", parents=[common], help="add or change a shop")
    shop_sub = shop.add_subparsers(dest="cmd", metavar="ACTION", required=True)
    p = shop_sub.add_parser("add", parents=[common], help="register a shop")
    p.add_argument("name")
    p.add_argument("--platform", required=True, help="pdd, temu, tiktok, …")
    p.add_argument("--base-url", required=True, help="the shop's seller-centre URL")
    p.add_argument("--username", help="login name (flows use {shop.username})")
    p.add_argument("--allow-origin", action="append", metavar="URL",
                   help="another origin its tasks may load (repeatable; http/https only)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_shop_add)
    p = shop_sub.add_parser("set", parents=[common],
                            help="set the origins a shop's tasks may load besides its own")
    p.add_argument("name")
    p.add_argument("--allow-origin", nargs="*", required=True, metavar="URL",
                   help="the allowed origins (replaces the list; none clears it)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_shop_set)
    p = shop_sub.add_parser("set-password", parents=[common],
                            help="store the shop's password, encrypted (prompt or stdin)")
    p.add_argument("name")
    p.add_argument("--stdin", action="store_true", help="read the password from stdin")
    p.set_defaults(handler=cmd_shop_set_password)
    for verb in ("pause", "resume"):
        p = shop_sub.add_parser(verb, parents=[common], help=f"{verb} a shop's tasks")
        p.add_argument("name")
        p.set_defaults(handler=cmd_shop_pause)

    for register in EXTRA_COMMANDS:
        register(sub, common)
    for name in READ_ONLY_COMMANDS:
        if name in sub.choices and "readonly" not in sub.choices[name]._defaults:
            sub.choices[name].set_defaults(readonly=True)
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


READ_ONLY_COMMANDS = ("status", "tasks", "task", "shops", "tickets", "ticket", "quarantine",
                      "kb", "run-flow")
"""Commands that only read (``rules`` and ``workers`` decide by their arguments)."""


def _load_extra_commands() -> None:
    if EXTRA_COMMANDS:
        return
    from . import cli_extra

    EXTRA_COMMANDS.extend(cli_extra.REGISTRATIONS)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also used as the console script)."""
    _load_extra_commands()
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _merge_common(parser.parse_args(argv))
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
        from .store.sqlite.writer import disk_full, is_disk_full

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


if __name__ == "__main__":
    raise SystemExit(main())
