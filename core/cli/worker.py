"""Worker commands: ``worker`` (the engine without a window) and ``workers`` (who runs on this
store). The run loop and its log are :mod:`core.worker`'s."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from ..build import build_engine, open_notifier
from ..config import is_loopback
from ..engine.control import Executor, NoopExecutor
from ..errors import ConfigError, InvalidInput
from ..store import new_owner_id
from ..worker import ExecLog, run_worker
from .args import port_number
from .context import Cli
from .times import ago


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= v <= 86400 or v != v:
        raise argparse.ArgumentTypeError("must be between 0 and 86400 seconds")
    return v


def cmd_worker(args: argparse.Namespace, cli: Cli) -> int:
    settings = cli.settings
    port = settings.metrics.port if args.metrics_port is None else args.metrics_port
    if port and not is_loopback(settings.metrics.host) and not settings.metrics.token:
        raise ConfigError("metrics.token", f"required to serve metrics on "
                          f"{settings.metrics.host!r}, which is not a loopback address")
    store = cli.store  # closed by the CLI when the command ends
    executor: Executor | str = args.executor
    owner = new_owner_id()
    log_to = args.exec_log
    if args.executor == "noop":
        recorder = ExecLog(log_to, owner) if log_to else None
        if recorder is not None:
            cli.closers.append(recorder.close)
        executor = NoopExecutor(hold_s=max(0.0, args.hold_ms) / 1000, record=recorder)
    elif log_to:
        raise InvalidInput("--exec-log", "only with --executor noop")
    engine = build_engine(settings, store, slots=args.slots, executor=executor, owner=owner)
    notifier = open_notifier(settings, store)  # #19: alerts, off the engine's loop
    notifier.attach(engine.bus)
    notifier.start()
    cli.closers.append(notifier.stop)  # after the engine, before the store closes
    said = store.durability_warning()
    if said:
        print(f"warning: {said}", file=sys.stderr, flush=True)
    print(f"worker {engine.owner}: {engine.slots} slots on {store.url}"
          f"{' (until idle)' if args.until_idle else ''}; Ctrl-C stops gracefully", flush=True)
    reach = args.max_wait
    if reach is None:  # the longest a held-back task can be kept waiting by the settings
        reach = max(settings.breakers.backoff_max_s, settings.queue.retry_backoff_max_s,
                    60.0) + 5.0
    return asyncio.run(run_worker(engine, until_idle=args.until_idle, quiet=args.quiet,
                                  metrics=(settings.metrics.host, port) if port else None,
                                  metrics_token=settings.metrics.token, reach_s=reach))


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
              f"{ago(max(0.0, now - w.heartbeat_at)):>9}  {w.state:<7} {w.owner}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("worker", parents=[common],
                       help="run the engine without a window (Ctrl-C stops gracefully)")
    p.add_argument("--until-idle", action="store_true",
                   help="stop when nothing is running and nothing can be claimed; work that "
                        "is only held back (gates, breakers, back-off) is waited for; with "
                        "work left it says what and why and exits 3")
    p.add_argument("--max-wait", type=_seconds, metavar="SECONDS",
                   help="with --until-idle: wait for held-back work due within this long "
                        "(default: the longest breaker or retry back-off, plus 5 s)")
    p.add_argument("--slots", type=int, help="tasks at once (default: the pool's capacity)")
    p.add_argument("--executor", choices=["browser", "noop"], default="browser",
                   help="noop: finish each task without a browser (fleet tests, benchmarks)")
    p.add_argument("--hold-ms", type=float, default=0.0, metavar="MS",
                   help="with --executor noop: hold each task this long (browser time)")
    p.add_argument("--metrics-port", type=port_number, metavar="PORT",
                   help="serve Prometheus /metrics on this port (default: [metrics] port; "
                        "0 = off); loopback unless [metrics] host says otherwise")
    p.add_argument("--quiet", action="store_true", help="no per-task lines")
    p.add_argument("--exec-log", metavar="FILE",
                   help="with --executor noop: append 'task domain time owner' per execution")
    p.set_defaults(handler=cmd_worker)

    p = sub.add_parser("workers", parents=[common],
                       help="workers on this store: host, pool size, heartbeat")
    p.add_argument("--recover", action="store_true",
                   help="first mark silent workers lost and requeue their tasks")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_workers, readonly=lambda a: not a.recover)
