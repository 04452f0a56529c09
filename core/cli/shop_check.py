"""``shopfleet shop check NAME [--echo-url URL] [--json]``: what a site sees of a shop (#17).

Exit 0 when the page saw the profile and the proxy (if any) answers, 1 otherwise."""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import urlsplit

from .context import Cli

DEMO_RULE = "MAP *.shopfleet.test 127.0.0.1"


def cmd_shop_check(args: argparse.Namespace, cli: Cli) -> int:
    import asyncio

    from ..profiles import exit_warnings
    from ..secrets import open_vault_for
    from ..shop_check import check_echo_url, check_shop

    settings = cli.settings
    echo_url = check_echo_url(args.echo_url or settings.profiles.echo_url)
    store = cli.store
    store.shop(args.name)  # an unknown shop is named before a browser starts
    host = urlsplit(echo_url).hostname or ""
    if host.endswith(".shopfleet.test") and not settings.browser.host_resolver_rules:
        settings = settings.with_changes(browser={"host_resolver_rules": DEMO_RULE})
    vault = open_vault_for(store)
    got = asyncio.run(check_shop(store, args.name, settings, vault, echo_url=echo_url))
    warnings = exit_warnings(store.shops(),
                             exits={args.name: got.exit_address} if got.exit_address else None)
    if cli.json:
        cli.out({**got.to_dict(), "warnings": warnings})
    else:
        e = got.expected
        print(f"shop {got.shop}: {'OK' if got.ok else 'PROBLEM'}")
        if e["proxy"]:
            state = ("answers" if got.proxy_answers
                     else f"does NOT answer: {got.proxy_error}")
            print(f"  proxy              {e['proxy']} {state}")
        else:
            print("  proxy              none (direct)")
        if got.error:
            print(f"  echo page          could not be read: {got.error}")
        else:
            print(f"  exit address       {got.exit_address}")
            print(f"  Accept-Language    {got.accept_language}   (profile {e['accept_language']})")
            print(f"  navigator.language {got.navigator_language}   (profile {e['locale']})")
            print(f"  time zone          {got.timezone}   (profile {e['timezone']})")
            print(f"  user agent         {got.user_agent}")
        for m in got.mismatches:
            print(f"  mismatch: {m}")
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
    return 0 if got.ok else 1


def register_action(shop_sub: Any, common: argparse.ArgumentParser) -> None:
    """``shop check`` (called by :func:`core.cli.shops.register`)."""
    p = shop_sub.add_parser("check", parents=[common],
                            help="open the shop's profile and report what a site sees")
    p.add_argument("name")
    p.add_argument("--echo-url", metavar="URL",
                   help="a page that reports its visitor (default [profiles] echo_url; the "
                        "demo site serves one at /echo)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_shop_check)
