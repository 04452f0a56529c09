"""Take over a shop's browser (#15): a person opens a HEADED browser with the shop's saved
session at the page where a ticket's task stopped, works there (solves the CAPTCHA, logs in),
and closes it; the session is saved and the caller asks for the ticket's answer.

While the browser is open the shop is paused (no other task of it is claimed, so nothing else
drives the account); it is unpaused afterwards unless it was paused before. The task itself
waits for a person (``waiting_human``) all along: it holds no lease, and nothing claims it.
The browser is the shop's own (#17): its profile (proxy, locale, time zone, user agent,
viewport, geolocation, headers — :func:`core.profile_store.load_context_options`, as for its
tasks) is applied to the context the person works in.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .browser.pool import BrowserPool
from .browser.sessions import SessionStore
from .config import Settings
from .errors import Refused
from .profile_store import load_context_options
from .secrets import open_vault_for
from .store.base import Store
from .tickets import Ticket, TicketState


@dataclass(frozen=True)
class TakeoverResult:
    ticket: Ticket
    url: str
    """Where the browser opened."""
    closed_by: str
    """"person" when the page was closed, "timeout" when ``max_s`` ran out."""


def stopped_at(ticket: Ticket, fallback: str) -> str:
    """The page where the ticket's task stopped (from its evidence), else ``fallback``."""
    path = ticket.evidence.get("steps")
    if path:
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            url = str((doc.get("failure") or {}).get("url") or "")
            if url.startswith(("http://", "https://")):
                return url
        except (OSError, ValueError, AttributeError):
            pass
    return fallback


def takeover_settings(settings: Settings, shop: Any) -> Settings:
    """The browser settings for a person's takeover: headed, one browser (the shop's profile
    is its context's: see :func:`take_over`)."""
    return settings.with_changes(browser={"headless": False},
                                 pool={"max_browsers": 1, "warm": 0})


async def take_over(store: Store, settings: Settings, ticket_id: int, *, home: Path,
                    on_page: Callable[[Any], Awaitable[None]] | None = None,
                    max_s: float | None = None) -> TakeoverResult:
    """Open the shop's browser at the page where the ticket's task stopped; return when the
    person closes the page (or after ``max_s``). ``on_page`` gets the Playwright page (the
    console's hook, and a test's hands).

    Raises:
        Refused: the ticket is not open, or its task no longer waits for a person.
    """
    book = store.ticket_book()
    ticket = await asyncio.to_thread(book.ticket, ticket_id)
    if ticket.state is not TicketState.OPEN:
        raise Refused(f"ticket {ticket_id} is {ticket.state.value}, not open")
    rec = await asyncio.to_thread(store.task, ticket.task_id)
    if rec.state.value != "waiting_human":
        raise Refused(f"task {ticket.task_id} is {rec.state.value}, not waiting for a person")
    shop = await asyncio.to_thread(store.shop, ticket.shop)
    url = await asyncio.to_thread(stopped_at, ticket, shop.base_url)
    was_paused = shop.paused
    if not was_paused:
        await asyncio.to_thread(store.set_shop_paused, shop.name, True)
    try:
        vault = await asyncio.to_thread(open_vault_for, store, home)
        options = await asyncio.to_thread(load_context_options, store, shop.name, settings,
                                          vault)
        s = takeover_settings(settings, shop)
        pool = BrowserPool(s.pool, s.browser, sessions=SessionStore(home / "sessions", vault))
        async with pool, pool.task_context(shop.name, options) as tc:
            page = tc.page
            closed = asyncio.Event()
            page.on("close", lambda _p: closed.set())
            await page.goto(url)
            if on_page is not None:
                await on_page(page)
            try:
                await asyncio.wait_for(closed.wait(), max_s)
                how = "person"
            except TimeoutError:
                how = "timeout"
    finally:
        if not was_paused:
            await asyncio.to_thread(store.set_shop_paused, shop.name, False)
    return TakeoverResult(ticket, url, how)
