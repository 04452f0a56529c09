"""Run an engine on its own asyncio loop in a dedicated thread (the desktop's arrangement).

The window's loop (qasync, Qt main thread) never runs engine code: a command is a coroutine
function of the engine, scheduled here with ``run_coroutine_threadsafe``; the caller gets a
``concurrent.futures.Future`` (await it on another loop with ``asyncio.wrap_future``). Events
come out through the engine's bus, on the engine thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..errors import ShopFleetError
from ..events import EventBus
from .engine import Engine

T = TypeVar("T")
log = logging.getLogger(__name__)


class EngineHost:
    """Owns the engine thread: start, call into the engine, stop in order.

    Args:
        factory: builds the engine *on the engine thread* (so its loop-bound parts are created
            where they run). Receives the host's event bus.
    """

    def __init__(self, factory: Callable[[EventBus], Awaitable[Engine]], *,
                 bus: EventBus | None = None) -> None:
        self.bus = bus or EventBus()
        self._factory = factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: Engine | None = None
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._main, name="shopfleet-engine", daemon=True)
        self.closers: list[Callable[[], None]] = []
        """Run after the engine stops, before the store closes (#19: the notifier)."""

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise ShopFleetError("the engine is not running")
        return self._engine

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the thread and wait until the engine has started (browsers warm)."""
        self._thread.start()
        self._ready.result(timeout_s)

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported through the futures
            if not self._ready.done():
                self._ready.set_exception(exc)
            if not self._done.done():
                self._done.set_exception(exc)
        else:
            if not self._done.done():
                self._done.set_result(None)
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._engine = await self._factory(self.bus)
        await self._engine.start()
        self._ready.set_result(None)
        await self._engine.run()

    def call(self, fn: Callable[[Engine], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Schedule ``fn(engine)`` on the engine's loop; returns a thread-safe future."""
        if self._loop is None or self._engine is None:
            raise ShopFleetError("the engine is not running")
        engine = self._engine

        async def run() -> T:
            return await fn(engine)

        return asyncio.run_coroutine_threadsafe(run(), self._loop)

    def call_soon(self, fn: Callable[[Engine], Any]) -> concurrent.futures.Future[Any]:
        """Run a plain function of the engine on its thread (e.g. ``statistics``)."""
        async def wrap(engine: Engine) -> Any:
            return fn(engine)
        return self.call(wrap)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop the engine gracefully (running tasks checkpoint and go back to the queue),
        close the pool, and end the thread."""
        if self._loop is not None and self._engine is not None and self._thread.is_alive():
            fut = asyncio.run_coroutine_threadsafe(self._engine.stop(), self._loop)
            try:
                fut.result(timeout_s)
            except Exception:
                log.exception("engine stop failed")
        self._thread.join(timeout_s)
        for close in reversed(self.closers):
            try:
                close()
            except Exception:
                log.exception("closing %r failed", close)
        if self._engine is not None:
            self._engine.store.close()
