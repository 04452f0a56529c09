"""``shopfleet console``: its arguments, the first-run wizard, then the window (started by
:mod:`desktop.launch`, like the demo's)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from core import ShopFleetError, data_dir, load_settings, open_store

from .launch import engine_host, make_app, run_console

log = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="shopfleet console",
                                description="Open the ShopFleet operator console.")
    p.add_argument("--db", help="the SQLite file (default: from the configuration, or "
                   "shopfleet.db in the data folder)")
    p.add_argument("--config", help="a TOML configuration file (default: shopfleet.toml in "
                   "the data folder when it exists)")
    p.add_argument("--store", help="a shared store, e.g. redis://host:6379/0 (default: "
                   "[store] url from the configuration, else the SQLite file)")
    p.add_argument("--lang", choices=["system", "en", "zh_CN"], default=None,
                   help="the console's language (default: as chosen in settings, else the "
                   "OS locale)")
    p.add_argument("--executor", choices=["browser", "noop"], default="browser",
                   help=argparse.SUPPRESS)
    return p.parse_args(list(argv) if argv is not None else None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``shopfleet console [--db PATH] [--config PATH]``."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        config = Path(args.config) if args.config else None
        if config is None and (data_dir() / "shopfleet.toml").exists():
            config = data_dir() / "shopfleet.toml"
        settings = load_settings(config)
    except ShopFleetError as exc:
        print(f"shopfleet console: {exc}", file=sys.stderr)
        return 2
    import qasync

    from .i18n import install_language, saved_language

    app = make_app()
    install_language(args.lang or saved_language())
    from .firstrun import maybe_run_first_run

    # Before the qasync loop starts: the wizard is a modal dialog of its own.
    shared = args.store or settings.store.url
    # A console joining a fleet's shared store has nothing to set up on this machine.
    first = None if shared else maybe_run_first_run(
        settings, db_path=args.db, config_path=config or data_dir() / "shopfleet.toml")
    if first is not None:
        if first.action == "cancelled":
            return 0
        if first.action == "demo":
            from .demo import run_demo

            return run_demo(["--lang", args.lang] if args.lang else [])
        if first.config_path is not None:
            config = first.config_path
            settings = load_settings(config)
    try:
        store = open_store(settings, args.db, url=args.store)
    except ShopFleetError as exc:
        print(f"shopfleet console: {exc}", file=sys.stderr)
        return 2
    host = engine_host(settings, store, executor=args.executor)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(run_console(
            settings, store, host, config_path=config or data_dir() / "shopfleet.toml"))
    finally:
        loop.close()


if __name__ == "__main__":
    sys.exit(main())
