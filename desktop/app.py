"""``shopfleet console``: the window on a qasync loop, the engine on its own thread.

The Qt main thread runs a qasync event loop (the window's coroutines: store reads awaited from
worker threads, engine commands awaited from the engine's loop). The engine runs in the same
process on its own asyncio loop in a dedicated thread (:class:`core.EngineHost`). Closing the
window stops them in order: the engine (running tasks checkpoint and go back to the queue), the
browser pool, the store, then the application.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core import (
    Engine,
    EngineHost,
    EventBus,
    Settings,
    ShopFleetError,
    SqliteStore,
    build_engine,
    data_dir,
    load_settings,
    open_store,
)

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


def make_app(argv: Sequence[str] | None = None) -> Any:
    """The QApplication with ShopFleet's names (QSettings uses them)."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(list(argv or sys.argv[:1]))
    app.setOrganizationName("ShopFleet")
    app.setApplicationName("ShopFleet")
    app.setQuitOnLastWindowClosed(False)
    return app


class _StopSafeEngine(Engine):
    """An engine whose ``run()`` returns only after a concurrent ``stop()`` has finished.

    Works around a race in core: ``stop()`` marks the engine stopped and then awaits its jobs;
    ``run()`` sees the mark, finds the shutdown "already done" and returns, so
    ``EngineHost._serve`` ends and closes the loop while ``stop()`` is still pending —
    ``EngineHost.stop()`` then waits its whole timeout. Remove when core waits in ``run()``.
    """

    _stop_done: asyncio.Future[None] | None = None

    async def stop(self, *, grace_s: float | None = None) -> None:
        if self._stop_done is not None:  # a second stop waits for the first
            await asyncio.shield(self._stop_done)
            return
        done = self._stop_done = asyncio.get_running_loop().create_future()
        try:
            await super().stop(grace_s=grace_s)
        finally:
            done.set_result(None)

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            if self._stop_done is not None:
                await asyncio.shield(self._stop_done)


def engine_host(settings: Settings, store: SqliteStore, *, executor: Any = "browser",
                home: Path | None = None, slots: int | None = None) -> EngineHost:
    """A host whose engine is built on the engine thread, over ``store``."""
    async def factory(bus: EventBus) -> Engine:
        built = build_engine(settings, store, executor=executor, bus=bus, home=home,
                             slots=slots)
        # On a Redis store (a fleet) the gates and breakers are the fleet's, as in build_engine.
        return _StopSafeEngine(store, settings, executor=built.executor, bus=bus,
                               slots=built.slots,
                               shared_url=getattr(store, "connect_url", None),
                               shared_prefix=settings.store.redis_prefix)
    return EngineHost(factory)


async def run_console(settings: Settings, store: SqliteStore, host: EngineHost, *,
                      config_path: Path | None, tickets: Any = None, title_suffix: str = "",
                      on_window: Callable[[Any], None] | None = None) -> int:
    """Show the window, start the engine off the GUI thread, wait until the window closed."""
    from .window import ConsoleContext, MainWindow

    ctx = ConsoleContext(settings=settings, store=store, host=None, tickets=tickets,
                         config_path=config_path, title_suffix=title_suffix)
    window = MainWindow(ctx)
    done = asyncio.get_running_loop().create_future()
    window.shut_down.connect(lambda: done.done() or done.set_result(0))
    window.show()
    window.status_message("starting the engine and warming the browsers…")
    try:
        await asyncio.to_thread(host.start)
    except BaseException as exc:
        # The window stays, read-only, with the reason on screen; closing it ends the app.
        window.presenter.present(exc, what="Start the engine")
        return int(await done) or 1
    window.attach_engine(host)
    window.status_message("engine running")
    if on_window is not None:
        on_window(window)
    return int(await done)


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
