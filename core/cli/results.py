"""``shopfleet results``: what the robots collected, one row per record, streamed to CSV (UTF-8
with BOM), XLSX or JSON Lines (#19; the record rule and the formats are in :mod:`core.export`).

Every argument is checked before anything is written: a bad one is one line naming the field,
exit 2, and no file (the export writes ``FILE.part`` and renames it only when complete).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..export import FORMATS, ResultFilter, export, make_filter
from .context import Cli


def result_filter(args: argparse.Namespace, cli: Cli) -> ResultFilter:
    """The filter the options describe (``--shops`` resolved against the store's shops)."""
    return make_filter(cli.store.shops() if args.shops is not None else [],
                       types=args.type or (), shop_selector=args.shops, since=args.since,
                       until=args.until, flow=args.flow)


def _output(args: argparse.Namespace) -> Path | None:
    if args.output in (None, "-"):
        if args.format == "xlsx":
            raise InvalidInput("-o", "xlsx needs a file name (-o FILE.xlsx)")
        return None
    path = Path(args.output).expanduser()
    if path.is_dir():
        raise InvalidInput("-o", f"{path} is a folder")
    if not path.parent.is_dir():
        raise InvalidInput("-o", f"no folder {path.parent}")
    return path


def cmd_results(args: argparse.Namespace, cli: Cli) -> int:
    if args.sheet_per is not None and args.format != "xlsx":
        raise InvalidInput("--sheet-per", "sheets exist only in xlsx")
    fields = list(args.field) if args.field else None
    if fields is not None and any(not f.strip() for f in fields):
        raise InvalidInput("--field", "must not be empty")
    out = _output(args)
    flt = result_filter(args, cli)
    store = cli.store

    def rows() -> Any:
        return store.iter_results(flt)

    if out is None:
        sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
        if args.format == "csv":
            sys.stdout.write("\ufeff")
        n = export(rows, args.format, sys.stdout, fields=fields)
        sys.stdout.flush()
        print(f"{n} records", file=sys.stderr)
        return 0
    n = export(rows, args.format, out, fields=fields, split_by=args.sheet_per)
    if cli.json:
        cli.out({"records": n, "file": str(out), "format": args.format})
    else:
        print(f"{n} records written to {out}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("results", parents=[common],
                       help="export collected records (one row per record) to csv, xlsx or "
                            "jsonl")
    p.add_argument("--type", action="append", metavar="T",
                   help="only tasks of this type (repeat for several)")
    p.add_argument("--shops", metavar="SELECTOR",
                   help='only these shops, e.g. "platform:pdd" or "pdd-*"')
    p.add_argument("--since", metavar="DATE", help="finished on or after (YYYY-MM-DD[THH:MM])")
    p.add_argument("--until", metavar="DATE",
                   help="finished before; a date includes that whole day")
    p.add_argument("--flow", metavar="F", help="only tasks that ran this flow")
    p.add_argument("--field", action="append", metavar="NAME",
                   help="write only this result field (repeat; default: every field)")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="file to write (default: standard output; xlsx needs a file)")
    p.add_argument("--sheet-per", choices=("type", "shop"),
                   help="xlsx: one sheet per task type or per shop")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(handler=cmd_results, readonly=True)
