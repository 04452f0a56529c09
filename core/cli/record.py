"""``shopfleet record NAME --shop SHOP [--lang zh|en] [--start URL]``: make a flow by doing it.

Opens the shop's own browser (headed: its saved session, and its profile where the pool
applies one) with the recorder's toolbar, records until the person presses Finish or closes
the window, lets them name the suggested parameters (asked one by one on a terminal;
``--param-name old=new`` for scripts), and saves ``NAME.json`` in the user's flow folder
(the first of ``[flows] dirs``, else ``<data folder>/flows``) — never over an existing flow,
shipped or not. Prints the file, the notes and the ``--param`` values that replay what was
done; never a credential (the recorder writes them as ``{shop.username}``/``{shop.password}``).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from typing import Any

from ..errors import InvalidInput
from .context import Cli

_NAME = re.compile(r"[A-Za-z0-9_\-]{1,100}")


def parse_renames(pairs: list[str]) -> dict[str, str]:
    """``old=new`` pairs of ``--param-name``."""
    out: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise InvalidInput("--param-name", f"{pair!r} is not OLD=NEW")
        out[old.strip()] = new.strip()
    return out


def cmd_record(args: argparse.Namespace, cli: Cli) -> int:
    from ..flows.editing import flow_catalog, user_flows_dir
    from ..recorder import write_flow_file
    from ..workbench import record_shop_flow, rename_params

    name = str(args.name)
    if not _NAME.fullmatch(name):
        raise InvalidInput("name", "must be letters, digits, _ and -, at most 100 (it is the "
                           "file's name)")
    if args.lang not in ("en", "zh"):
        raise InvalidInput("--lang", "must be en or zh")
    renames = parse_renames(args.param_name or [])
    settings = cli.settings
    taken = [e.name for e in flow_catalog(settings.flows.dirs)]
    if name in taken:
        raise InvalidInput("name", f"a flow named {name!r} exists already (choose another name)")
    store = cli.store
    try:  # an unknown shop is refused before a window opens
        store.shop(args.shop)
    except InvalidInput as exc:
        raise InvalidInput("--shop", exc.reason) from None
    folder = user_flows_dir(settings.flows.dirs)
    print(f"recording {name!r} on shop {args.shop}: do the work in the browser window, then "
          "press Finish in its toolbar (or close the window)", flush=True)
    recorded = asyncio.run(record_shop_flow(
        settings, store, args.shop, name, lang=args.lang, start_url=args.start,
        headed=not args.headless))
    if not renames and sys.stdin.isatty() and recorded.params:
        renames = _ask_names(recorded.params)
    recorded = rename_params(recorded, renames)
    path = write_flow_file(recorded, folder, taken=taken)
    print(f"saved {path} ({len(recorded.flow.steps)} steps)")
    for note in recorded.notes:
        print(f"  note: {note}")
    if recorded.params:
        print("replay what you did with:")
        line = " ".join(f"--param {_quote(k)}={_quote(v)}"
                        for k, v in sorted(recorded.params.items()))
        print(f"  shopfleet run-flow {name} --shop {args.shop} {line}")
    return 0


def _ask_names(params: dict[str, str]) -> dict[str, str]:
    print("name the flow's parameters (Enter keeps the suggestion):")
    out: dict[str, str] = {}
    for key, value in sorted(params.items()):
        shown = value if len(value) <= 40 else value[:37] + "…"
        answer = input(f"  {key} (recorded value {shown!r}) → ").strip()
        if answer and answer != key:
            out[key] = answer
    return out


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("record", parents=[common],
                       help="record a new flow by doing the work once in the shop's browser")
    p.add_argument("name", help="the new flow's name (letters, digits, _ and -)")
    p.add_argument("--shop", required=True, help="the shop whose browser and login to use")
    p.add_argument("--lang", default="en", help="the toolbar's language: en or zh")
    p.add_argument("--start", metavar="URL",
                   help="the page to open first (may use {shop.base_url}; default: the shop's "
                        "base URL)")
    p.add_argument("--param-name", action="append", metavar="OLD=NEW",
                   help="rename a suggested parameter (repeat; without it a terminal asks)")
    p.add_argument("--headless", action="store_true",
                   help="no window: for a script that drives the browser itself")
    p.set_defaults(handler=cmd_record, readonly=True)
