"""``shopfleet migrate --from sqlite:PATH --to redis://…``: move a desktop's store to Redis.
The copy and its verification are :func:`core.store.redis.from_sqlite.migrate`'s."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import InvalidInput
from .context import Cli


def cmd_migrate(args: argparse.Namespace, cli: Cli) -> int:
    """``shopfleet migrate``: exit 0 when verified, 1 when the verification failed."""
    source = str(args.source)
    if not source.startswith("sqlite:") and "://" in source:
        raise InvalidInput("--from", f"{source!r}: give sqlite:PATH (the desktop's database)")
    json_out = bool(args.json)

    def show(stage: str, done: int, total: int) -> None:
        if not json_out and sys.stderr.isatty():
            print(f"\r  {stage.replace('_', ' ')} {done}/{total}   ", end="", file=sys.stderr,
                  flush=True)

    from ..store.redis.from_sqlite import migrate

    report = migrate(source, args.to, settings=cli.settings, batch=args.batch,
                     dry_run=args.dry_run, force=args.force, prefix=args.prefix,
                     progress=show)
    if not json_out and sys.stderr.isatty():
        print(file=sys.stderr)
    if json_out:
        cli.out(report.to_json())
    else:
        print("\n".join(report.lines()))
    return 0 if report.ok else 1


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "migrate", parents=[common],
        help="move a desktop's queue, tickets and knowledge base to Redis (scale-out)",
        description="Copy everything from the desktop's SQLite file into an empty Redis "
                    "prefix, ids kept, and verify the copy. Stop the desktop's worker first. "
                    "The fleet's workers need the desktop's vault key to log in to shops.")
    p.add_argument("--from", dest="source", required=True, metavar="sqlite:PATH",
                   help="the desktop's database")
    p.add_argument("--to", required=True, metavar="URL", help="redis://host:6379/0")
    p.add_argument("--prefix", help="Redis key prefix (default: [store] redis_prefix)")
    p.add_argument("--dry-run", action="store_true",
                   help="check and count, write nothing")
    p.add_argument("--force", action="store_true",
                   help="move running tasks back to the queue (their desktop worker must be "
                        "stopped), and wipe an unfinished earlier migration")
    p.add_argument("--batch", type=int, default=1000, help="rows per read and write batch")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=cmd_migrate)
