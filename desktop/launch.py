"""Starting the console: the application object, the engine host and the window's life.

Shared by ``shopfleet console`` (:mod:`desktop.app`) and ``shopfleet demo``
(:mod:`desktop.demo`), which both import it and not each other.

The Qt main thread runs a qasync event loop (the window's coroutines: store reads awaited from
worker threads, engine commands awaited from the engine's loop). The engine runs in the same
process on its own asyncio loop in a dedicated thread (:class:`core.EngineHost`). Closing the
window stops them in order: the engine (running tasks checkpoint and go back to the queue), the
browser pool, the store, then the application.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core import Engine, EngineHost, EventBus, Settings, Store, build_engine, open_notifier


def make_app(argv: Sequence[str] | None = None) -> Any:
    """The QApplication with ShopFleet's names (QSettings uses them)."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(list(argv or sys.argv[:1]))
    assert isinstance(app, QApplication)
    app.setOrganizationName("ShopFleet")
    app.setApplicationName("ShopFleet")
    app.setQuitOnLastWindowClosed(False)
    return app


def engine_host(settings: Settings, store: Store, *, executor: Any = "browser",
                home: Path | None = None, slots: int | None = None) -> EngineHost:
    """A host whose engine is built on the engine thread, over ``store`` (on a shared store
    its gates and breakers are the fleet's: :func:`core.build_engine` decides)."""
    async def factory(bus: EventBus) -> Engine:
        engine = build_engine(settings, store, executor=executor, bus=bus, home=home,
                              slots=slots)
        notifier = open_notifier(settings, store)  # #19: alerts, on threads of their own
        notifier.attach(bus)
        notifier.start()
        host.closers.append(notifier.stop)
        return engine
    host = EngineHost(factory)
    return host


async def run_console(settings: Settings, store: Store, host: EngineHost, *,
                      config_path: Path | None, title_suffix: str = "",
                      on_window: Callable[[Any], None] | None = None) -> int:
    """Show the window, start the engine off the GUI thread, wait until the window closed."""
    from .window import ConsoleContext, MainWindow

    ctx = ConsoleContext(settings=settings, store=store, host=None,
                         config_path=config_path, title_suffix=title_suffix)
    window = MainWindow(ctx)
    done = asyncio.get_running_loop().create_future()

    def closed() -> None:
        if not done.done():
            done.set_result(0)

    window.shut_down.connect(closed)
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
