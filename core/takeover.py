"""Take over a shop's browser (#15): a person opens a HEADED browser with the shop's saved
session at the page where a ticket's task stopped (or at the shop's address), works there
(solves the CAPTCHA, logs in), and closes it; the session is saved and the caller asks for the
ticket's answer.

While the browser is open the takeover holds a **lease on the shop** (:meth:`Store.hold_shop`):
no task of the shop is claimed, by this process or any worker sharing the store, so nothing
else drives the account. The lease is renewed every ``queue.heartbeat_s`` and released when
the browser closes; if the process dies mid-takeover it runs out after ``queue.lease_s`` on
its own and the shop's tasks run again (nothing to clean up, never blocked for good). A task
of the shop already running when the takeover starts is waited for (it finishes or yields at
its next step; no new one starts meanwhile); the ticket's own task waits for a person
(``waiting_human``) all along and nothing claims it.

The browser is the shop's own (#17): its profile (proxy, locale, time zone, user agent,
viewport, geolocation, headers — :func:`core.profile_store.load_context_options`, as for its
tasks) is applied to the context the person works in.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .browser.base import Launcher
from .browser.pool import BrowserPool
from .browser.sessions import SessionStore
from .config import Settings
from .errors import Refused
from .origins import OriginPolicy
from .profile_store import load_context_options
from .secrets import open_vault_for
from .store.base import Store
from .store.owners import new_owner_id
from .tickets import Ticket, TicketState
from .validation import shop_policy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TakeoverResult:
    shop: str
    ticket: Ticket | None
    """The ticket taken over (``None`` for a takeover from the shop's row)."""
    url: str
    """Where the browser opened."""
    closed_by: str
    """"person" when the page was closed, "timeout" when ``max_s`` ran out."""


def stopped_at(ticket: Ticket, fallback: str, origins: OriginPolicy) -> str:
    """The page where the ticket's task stopped (from its evidence) when it is a page of an
    origin the shop's tasks may load, else ``fallback``. A task stopped *because* its page
    went to a foreign origin recorded that page: the shop's browser, with its session, does
    not open a person's takeover there (a look-alike login page asking for the password)."""
    path = ticket.evidence.get("steps")
    if path:
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            url = str((doc.get("failure") or {}).get("url") or "")
            if url.startswith(("http://", "https://")) and origins.allows(url):
                return url
        except (OSError, ValueError, AttributeError):
            pass
    return fallback


def takeover_settings(settings: Settings, shop: Any) -> Settings:
    """The browser settings for a person's takeover: headed, one browser (the shop's profile
    is its context's: see :func:`take_over`)."""
    return settings.with_changes(browser={"headless": False},
                                 pool={"max_browsers": 1, "warm": 0})


def person() -> str:
    """Who takes over, for the hold's words: the login name on this computer."""
    try:
        return getpass.getuser()
    except Exception:  # no login name in the environment (a service, a bare container)
        return "someone"


VIA_SHOPS_VIEW = "Shops view"
VIA_COMMAND_LINE = "command line"
TICKET_PREFIX = "ticket #"
"""Where a takeover was asked from, in its hold's words (``alice@host-a (ticket #12)``):
stored in one language for the whole fleet; :func:`read_hold_words` reads them back for a
console to say in its own."""

_HOLD_WORDS = re.compile(
    r"^(?P<who>.*) \((?:" + re.escape(TICKET_PREFIX) + r"(?P<ticket>\d+)|(?P<via>"
    + re.escape(VIA_SHOPS_VIEW) + "|" + re.escape(VIA_COMMAND_LINE) + r"))\)$", re.S)


@dataclass(frozen=True)
class HoldWords:
    """A takeover's hold words, read back: who, and a ticket's id or where it was asked."""

    who: str
    ticket: int | None
    via: str | None
    """:data:`VIA_SHOPS_VIEW` or :data:`VIA_COMMAND_LINE` (None for a ticket's)."""


def read_hold_words(words: str) -> HoldWords | None:
    """What :func:`hold_words` wrote, read back; None for words of another kind."""
    m = _HOLD_WORDS.match(words)
    if m is None:
        return None
    return HoldWords(m["who"], int(m["ticket"]) if m["ticket"] else None, m["via"])


def hold_words(detail: str) -> str:
    """The hold's words, as the Shops view and a refused takeover show them:
    ``"alice@host-a (ticket #12)"`` (who, on which computer, from where)."""
    return f"{person()}@{socket.gethostname()} ({detail})"[:200]


async def take_over(store: Store, settings: Settings, ticket_id: int, *, home: Path,
                    on_page: Callable[[Any], Awaitable[None]] | None = None,
                    max_s: float | None = None, wait_running_s: float = 60.0,
                    launcher: Launcher | None = None) -> TakeoverResult:
    """Open the shop's browser at the page where the ticket's task stopped; return when the
    person closes the page (or after ``max_s``). ``on_page`` gets the Playwright page (the
    console's hook, and a test's hands); ``launcher`` replaces the real browser (tests).

    Cancelling it (a console that quits) closes the browser the same way: the session is
    saved and the hold released before the cancellation goes on.

    Raises:
        Refused: the ticket is not open, its task no longer waits for a person, another
            takeover holds the shop, or a task of the shop still runs after
            ``wait_running_s``.
    """
    book = store.ticket_book()
    ticket = await asyncio.to_thread(book.ticket, ticket_id)
    if ticket.state is not TicketState.OPEN:
        raise Refused(f"ticket {ticket_id} is {ticket.state.value}, not open")
    rec = await asyncio.to_thread(store.task, ticket.task_id)
    if rec.state.value != "waiting_human":
        raise Refused(f"task {ticket.task_id} is {rec.state.value}, not waiting for a person")
    shop = await asyncio.to_thread(store.shop, ticket.shop)
    url = await asyncio.to_thread(stopped_at, ticket, shop.base_url,
                                  shop_origins(settings, shop))
    how = await _held_browser(store, settings, shop, url, home=home,
                              what=f"{TICKET_PREFIX}{ticket.id}", on_page=on_page,
                              max_s=max_s, wait_running_s=wait_running_s, launcher=launcher)
    return TakeoverResult(shop.name, ticket, url, how)


def shop_origins(settings: Settings, shop: Any) -> OriginPolicy:
    """The origins the shop's tasks may load (its own, its list, its platform's)."""
    return shop_policy(settings, shop.platform, shop.base_url, shop.allowed_origins)


def shop_stopped_at(store: Store, settings: Settings, shop: Any) -> str:
    """Blocking: where the shop's latest stopped task (its newest open ticket) stopped, else
    the shop's address."""
    newest = store.ticket_book().tickets(state="open", shop=shop.name, limit=1,
                                         newest_first=True)
    return (stopped_at(newest[0], shop.base_url, shop_origins(settings, shop)) if newest
            else str(shop.base_url))


async def take_over_shop(store: Store, settings: Settings, shop_name: str, *, home: Path,
                         on_page: Callable[[Any], Awaitable[None]] | None = None,
                         max_s: float | None = None, wait_running_s: float = 60.0,
                         via: str = VIA_SHOPS_VIEW, launcher: Launcher | None = None
                         ) -> TakeoverResult:
    """Open a shop's browser (the Shops view's takeover, ``shopfleet takeover --shop``) at the
    page where its latest stopped task stopped (its newest open ticket), else at its address,
    under the same lease as :func:`take_over`. No ticket is answered. ``via`` says where it
    was asked from, in the hold's words.

    Raises:
        InvalidInput: no such shop (field ``shop``).
        Refused: another takeover holds the shop, or a task of it still runs after
            ``wait_running_s``.
    """
    shop = await asyncio.to_thread(store.shop, shop_name)
    url = await asyncio.to_thread(shop_stopped_at, store, settings, shop)
    how = await _held_browser(store, settings, shop, url, home=home, what=via,
                              on_page=on_page, max_s=max_s, wait_running_s=wait_running_s,
                              launcher=launcher)
    return TakeoverResult(shop.name, None, url, how)


async def _held_browser(store: Store, settings: Settings, shop: Any, url: str, *, home: Path,
                        what: str, on_page: Callable[[Any], Awaitable[None]] | None,
                        max_s: float | None, wait_running_s: float,
                        launcher: Launcher | None = None) -> str:
    """Hold the shop, wait for its running tasks, open its browser at ``url`` until the
    person closes it; always release the hold (and, through the pool, save the session),
    also when cancelled. Returns how it closed."""
    q = settings.queue
    owner = f"takeover:{new_owner_id()}"
    words = hold_words(what)
    await asyncio.to_thread(store.hold_shop, shop.name, owner, lease_s=q.lease_s, what=words)
    renewing = asyncio.create_task(_renew(store, shop.name, owner, q.lease_s, q.heartbeat_s,
                                          words))
    try:
        await _wait_idle_shop(store, shop.name, wait_running_s)
        vault = await asyncio.to_thread(open_vault_for, store, home)
        options = await asyncio.to_thread(load_context_options, store, shop.name, settings,
                                          vault)
        s = takeover_settings(settings, shop)
        pool = BrowserPool(s.pool, s.browser, launcher=launcher,
                           sessions=SessionStore(home / "sessions", vault))
        async with pool, pool.task_context(shop.name, options) as tc:
            page = tc.page
            closed = asyncio.Event()
            page.on("close", lambda _p: closed.set())
            await page.goto(url)
            if on_page is not None:
                await on_page(page)
            try:
                await asyncio.wait_for(closed.wait(), max_s)
                return "person"
            except TimeoutError:
                return "timeout"
    finally:
        renewing.cancel()
        await asyncio.gather(renewing, return_exceptions=True)
        await asyncio.shield(asyncio.to_thread(store.release_shop_hold, shop.name, owner))


async def _renew(store: Store, name: str, owner: str, lease_s: float, every_s: float,
                 words: str) -> None:
    """Keep the hold alive while the browser is open (a dead process stops renewing it)."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await asyncio.to_thread(store.hold_shop, name, owner, lease_s=lease_s, what=words)
        except Refused:
            log.warning("takeover of %s: the shop's hold ran out and another holder took it",
                        name)
            return
        except Exception:  # a store hiccup: the next heartbeat tries again
            log.exception("takeover of %s: renewing the shop's hold failed", name)


async def _wait_idle_shop(store: Store, name: str, wait_s: float) -> None:
    """Wait (holding the shop, so nothing new starts) until no task of it runs."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        running = await asyncio.to_thread(store.tasks, state="running", shop=name, limit=5)
        if not running:
            return
        if loop.time() >= deadline:
            ids = ", ".join(f"#{t.id} (worker {t.lease_owner or '?'})" for t in running)
            raise Refused(f"shop {name} still runs task {ids}; try again when it ends (or "
                          "preempt it)")
        await asyncio.sleep(0.5)
