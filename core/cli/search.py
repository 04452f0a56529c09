"""``shopfleet search TEXT [--in results|tickets|kb]``: text search, Chinese included (#19;
how and why in :mod:`core.search`). SQLite store only; on Redis it says so (exit 1)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..search import SOURCES, split_query
from .context import Cli

_SHOW: dict[str, tuple[str, ...]] = {
    "results": ("task_id", "shop", "type", "text"),
    "tickets": ("id", "task_id", "shop", "state", "step_name", "error", "note"),
    "kb": ("id", "ticket_id", "step_name", "error_norm", "action", "note"),
}


def _line(place: str, row: dict[str, Any]) -> str:
    parts = [str(row.get(c, "")) for c in _SHOW[place] if row.get(c) not in (None, "")]
    text = "  ".join(parts).replace("\n", " ")
    return text if len(text) <= 200 else text[:199] + "…"


def cmd_search(args: argparse.Namespace, cli: Cli) -> int:
    split_query(args.text)  # a bad query is refused before the store is opened
    if args.limit < 1 or args.limit > 10_000:
        from ..errors import InvalidInput

        raise InvalidInput("--limit", "must be 1..10000")
    places = [args.place] if args.place else list(SOURCES)
    found = {p: cli.store.search(p, args.text, limit=args.limit) for p in places}
    if cli.json:
        cli.out({p: [{k: r.get(k) for k in _SHOW[p]} for r in rows]
                 for p, rows in found.items()})
        return 0
    total = 0
    for place, rows in found.items():
        for row in rows:
            print(f"{place:<8} {_line(place, row)}")
        total += len(rows)
    if total == 0:
        print(f"nothing found for {json.dumps(args.text, ensure_ascii=False)}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("search", parents=[common],
                       help="find text (Chinese included) in results, tickets and answers")
    p.add_argument("text", metavar="TEXT", help="words to find (all must match)")
    p.add_argument("--in", dest="place", choices=tuple(SOURCES),
                   help="where to search (default: everywhere)")
    p.add_argument("--limit", type=int, default=100, help="rows per place (default 100)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_search, readonly=True)
