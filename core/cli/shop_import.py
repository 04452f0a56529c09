"""``shop import FILE``: add the shops of a CSV or XLSX list (see :mod:`core.shop_import`).

Every row is checked first and every error printed (line, field, reason). With errors nothing
is written and the exit status is 2, unless ``--skip-invalid`` says to add the valid rows;
``--dry-run`` only checks.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..shop_import import import_shops, read_shop_list
from .context import Cli


def cmd_shop_import(args: argparse.Namespace, cli: Cli) -> int:
    existing = [s.name for s in cli.store.shops()]
    found = read_shop_list(args.file, existing=existing)
    for e in found.errors:  # with --json, stdout holds the JSON alone
        print(f"error: {e}", file=sys.stderr if cli.json else sys.stdout)
    if found.errors and not args.skip_invalid:
        print(f"{len(found.errors)} error(s); nothing imported (fix the file, or add the "
              f"{len(found.rows)} valid row(s) with --skip-invalid)")
        return 2
    if args.dry_run:
        print(f"{len(found.rows)} shop(s) can be imported (dry run: nothing written)")
        return 0
    added = import_shops(cli.store, found.rows)
    if cli.json:
        cli.out({"added": added, "errors": [e.__dict__ for e in found.errors],
                 "without_password": found.without_password})
        return 0
    print(f"{len(added)} shop(s) imported" + (
        f"; {len(found.without_password)} without a password (set one with "
        "'shopfleet shop set-password NAME')" if found.without_password else ""))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``import`` to the ``shop`` command group (registered before this one)."""
    shop = sub.choices["shop"]
    actions = [a for a in shop._actions if isinstance(a, argparse._SubParsersAction)]
    p = actions[0].add_parser("import", parents=[common],
                              help="add the shops of a CSV or XLSX list (name, platform, "
                                   "base_url, username, password, allowed_origins, tags; "
                                   "profile: proxy, locale, timezone, user_agent, viewport, "
                                   "geolocation, headers)")
    p.add_argument("file", help="the .csv (UTF-8) or .xlsx file")
    p.add_argument("--skip-invalid", action="store_true",
                   help="add the valid rows even when others have errors")
    p.add_argument("--dry-run", action="store_true", help="check only, write nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_shop_import)
