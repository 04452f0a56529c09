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


def _in_own_thread(make: Callable[[], Awaitable[TakeoverResult]]
                   ) -> concurrent.futures.Future[TakeoverResult]:
    """Run ``make()`` on a new thread with its own event loop (daemon: a console quitting
    while a browser is open does not wait for the person)."""
    fut: concurrent.futures.Future[TakeoverResult] = concurrent.futures.Future()

    def body() -> None:
        try:
            fut.set_result(asyncio.run(make()))  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the window's loop through the future
            fut.set_exception(exc)

    threading.Thread(target=body, name="shopfleet-takeover", daemon=True).start()
    return fut


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

    def closed(result: TakeoverResult) -> None:
        # The runner then says "<what>: done" in the status bar.
        if result.ticket is not None:
            w.open_ticket_dialog([result.ticket.id], after_takeover=True)

    return w.runner.run(tr("Browser of %1 closed, its session saved", label),
                        lambda: asyncio.wrap_future(_in_own_thread(make)), then=closed)
