"""Take over a shop's browser from the console (#15): from a ticket (its dialog's button, or
the Tickets view's action) or from a shop's row.

Core's :func:`core.take_over` / :func:`core.take_over_shop` run on a thread of their own with
their own asyncio loop: the window's (qasync) loop is never blocked while the person works in
the browser, and the headed browser's events are never held up by a busy paint or a modal
dialog (nor by the engine's loop). Core holds the shop's lease meanwhile, so nothing else
drives the account. When the person closes the browser its session is saved and, for a
ticket, the answer dialog comes back offering done / resume / skip.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from core import TakeoverResult, data_dir, take_over, take_over_shop

from .i18n import tr

TakeoverFn = Callable[..., Awaitable[TakeoverResult]]

IMPL: dict[str, TakeoverFn] = {"ticket": take_over, "shop": take_over_shop}
"""Core's takeovers by what is taken over; a window's ``takeover_impl`` replaces them (tests
use a fake that needs no browser)."""


def takeover_selected(w: Any) -> asyncio.Task[None] | None:
    """The action's handler: the selected ticket's shop (Tickets view) or the selected shop
    (Shops view)."""
    key = w.current_key()
    if key == "tickets":
        rows = [r for r in w.panels["tickets"].selected_rows() if r is not None]
        return start_takeover(w, ticket_id=rows[0].id) if rows else None
    if key == "shops":
        shops = w._selected_shops()
        return start_takeover(w, shop=shops[0].name) if shops else None
    return None


class OpenTakeover:
    """A takeover whose browser may be open: core's coroutine on a thread of its own, with
    its own event loop, and the way to close it from the window (:meth:`close`).

    Closing cancels core's takeover on its loop; core then closes the browser the way the
    person's close does — the context's session is saved, the pool closed — and releases the
    shop's hold (its ``finally``), so a console that quits gives the shop back at once instead
    of leaving the hold to run out after ``queue.lease_s``.
    """

    def __init__(self, label: str, make: Callable[[], Awaitable[TakeoverResult]]) -> None:
        self.label = label
        self.future: concurrent.futures.Future[TakeoverResult] = concurrent.futures.Future()
        self.future.set_running_or_notify_cancel()  # nobody cancels the thread's work by it
        self._make = make
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._closing = False
        # Daemon: a process killed mid-takeover does not wait for the person (the hold then
        # runs out on its own); a console that quits closes it first (MainWindow._shutdown).
        self.thread = threading.Thread(target=self._body, name="shopfleet-takeover",
                                       daemon=True)
        self.thread.start()

    def _body(self) -> None:
        try:
            self.future.set_result(asyncio.run(self._main()))
        except BaseException as exc:  # handed to the window's loop through the future
            self.future.set_exception(exc)

    async def _main(self) -> TakeoverResult:
        with self._lock:
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            if self._closing:
                raise asyncio.CancelledError
        return await self._make()

    def close(self) -> None:
        """Close the browser (session saved, hold released); returns at once, wait for
        :attr:`future`."""
        with self._lock:
            self._closing = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # its loop already ended: the takeover is over
                pass

    @property
    def done(self) -> bool:
        return self.future.done()


def open_takeovers(w: Any) -> list[OpenTakeover]:
    """The window's takeovers whose browser is still open."""
    return [t for t in getattr(w, "takeovers", []) if not t.done]


async def close_takeovers(w: Any, *, wait_s: float) -> list[str]:
    """Close every open takeover's browser (the console quits): each saves its session and
    gives its shop back. Waits up to ``wait_s``; returns the labels of those that did not
    end in time (their hold then runs out on its own)."""
    open_now = open_takeovers(w)
    if not open_now:
        return []
    w.status_message(tr("Closing the browser of %1: saving its session…",
                        ", ".join(t.label for t in open_now)))
    for t in open_now:
        t.close()
    waiting = [asyncio.wrap_future(t.future) for t in open_now]
    _done, pending = await asyncio.wait(waiting, timeout=wait_s)
    for f in waiting:  # their outcome (cancelled, refused…) is not news while quitting
        if f.done() and not f.cancelled():
            f.exception()
    return [t.label for t, f in zip(open_now, waiting, strict=True) if f in pending]


def start_takeover(w: Any, *, ticket_id: int | None = None,
                   shop: str | None = None) -> asyncio.Task[None]:
    """Open the shop's browser (of a ticket, or a shop) off the GUI thread; when it closes,
    bring the ticket's answer dialog back (or say the session was saved)."""
    impl: dict[str, TakeoverFn] = getattr(w, "takeover_impl", None) or IMPL
    settings, store = w.ctx.settings, w.ctx.store
    home = Path(w.ctx.extra.get("home") or data_dir())
    if ticket_id is not None:
        label = tr("ticket #%1", ticket_id)

        def make() -> Awaitable[TakeoverResult]:
            return impl["ticket"](store, settings, ticket_id, home=home)
    else:
        assert shop is not None
        label = shop

        def make() -> Awaitable[TakeoverResult]:
            return impl["shop"](store, settings, shop, home=home)

    w.status_message(tr("Opening the shop's browser for %1; close it when you are done",
                        label))
    handle = OpenTakeover(label, make)
    w.takeovers = [*open_takeovers(w), handle]

    def closed(result: TakeoverResult) -> None:
        # After wait()'s finally (the list is trimmed there, whatever the outcome); the
        # runner then says "<what>: done" in the status bar.
        w._mark(("shops",))  # the shop's hold is gone
        if result.ticket is not None:
            w.open_ticket_dialog([result.ticket.id], after_takeover=True)

    async def wait() -> TakeoverResult:
        try:
            return await asyncio.wrap_future(handle.future)
        finally:
            w.takeovers = open_takeovers(w)

    return w.runner.run(tr("Browser of %1 closed, its session saved", label), wait,
                        then=closed)
