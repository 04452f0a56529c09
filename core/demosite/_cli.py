"""``shopfleet demo-site``: serve the demo platforms until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from ._catalog import PLATFORM_HOSTS
from ._site import DemoSite
from ._state import host_resolver_rules

DEFAULT_PORT = 8765


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"TCP port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")


def describe(site: DemoSite, out: TextIO) -> None:
    """Print where the demo platforms are, the shops and their demo credentials."""
    port = site.port
    print(f"ShopFleet demo site on 127.0.0.1:{port}", file=out)
    print(f'Chromium flag: --host-resolver-rules="{host_resolver_rules()}"', file=out)
    print("Platforms:", file=out)
    for platform, host in PLATFORM_HOSTS.items():
        print(f"  {platform:7} http://{host}:{port}/   (plain browser: "
              f"http://{platform}.localhost:{port}/)", file=out)
    print("Shops (user / password):", file=out)
    for shop in site.shops():
        print(f"  {shop.name:9} {shop.base_url}   {shop.username} / {shop.password}", file=out)
    print(f"Control API: {site.control_url}/records, /faults, /reset", file=out)


def run(args: argparse.Namespace, cli: object = None) -> int:
    """Handler of the ``demo-site`` subcommand: serve until interrupted. Returns the exit code.

    ``cli`` is accepted (and unused) so ``core.cli`` can call it like its other handlers.
    """
    try:
        site = DemoSite(port=int(args.port)).start()
    except OSError as exc:
        print(f"shopfleet demo-site: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}",
              file=sys.stderr)
        return 1
    try:
        describe(site, sys.stdout)
        print("Serving; press Ctrl-C to stop.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("stopped.")
        return 0
    finally:
        site.close()


def register_cli(subparsers: Any,
                 common: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Add the ``demo-site`` subcommand.

    Fits ``core.cli``'s command groups as is (``common`` is the shared parent parser). The
    ``handler`` default is :func:`run`: ``handler(args)`` or ``handler(args, cli)`` returns the
    exit code.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo-site", parents=[common] if common is not None else [],
        help="serve the local demo seller platforms (pdd, temu, tiktok)",
        description="Serve the local demo seller platforms until Ctrl-C.")
    _add_arguments(parser)
    parser.set_defaults(handler=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m core.demosite [--port N]``."""
    parser = argparse.ArgumentParser(prog="shopfleet demo-site",
                                     description="Serve the local demo seller platforms.")
    _add_arguments(parser)
    return run(parser.parse_args(argv))
