"""``shopfleet shop check NAME``: open a shop's profile in a real browser and report what a
site sees (#17) — the exit address, ``Accept-Language``, ``navigator.language``, the time
zone, the user agent — and whether the shop's proxy answers.

The echo URL is a page that reports its visitor (the demo site's ``/echo``; configurable as
``[profiles] echo_url``). It is loaded in a context made with
:func:`core.profiles.context_options_for`, exactly as the shop's tasks get it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .config import Settings
from .errors import InvalidInput
from .profile_store import load_context_options
from .profiles import ContextOptions
from .proxy_probe import probe_proxy
from .store.base import Store


@dataclass(frozen=True)
class ShopCheck:
    """What ``shop check`` found for one shop (no password anywhere)."""

    shop: str
    expected: dict[str, Any]
    """The profile as configured (``ContextOptions.describe``)."""
    proxy_answers: bool | None
    """None: the shop has no proxy."""
    proxy_error: str = ""
    exit_address: str = ""
    accept_language: str = ""
    navigator_language: str = ""
    timezone: str = ""
    user_agent: str = ""
    error: str = ""
    """Why the echo page could not be read (empty when it was)."""
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error and not self.mismatches and self.proxy_answers is not False

    def to_dict(self) -> dict[str, Any]:
        return {"shop": self.shop, "ok": self.ok, "expected": self.expected,
                "proxy_answers": self.proxy_answers, "proxy_error": self.proxy_error,
                "exit_address": self.exit_address, "accept_language": self.accept_language,
                "navigator_language": self.navigator_language, "timezone": self.timezone,
                "user_agent": self.user_agent, "error": self.error,
                "mismatches": self.mismatches}


def check_echo_url(url: str) -> str:
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("--echo-url", "must be an http:// or https:// URL (e.g. the demo "
                           "site's /echo page); set [profiles] echo_url or pass --echo-url")
    return url


async def check_shop(store: Store, name: str, settings: Settings, vault: Any, *,
                     echo_url: str, launcher: Any = None) -> ShopCheck:
    """Open ``name``'s profile, load ``echo_url`` and compare what the page saw."""
    from .browser.playwright import PlaywrightLauncher

    check_echo_url(echo_url)
    options: ContextOptions = await asyncio.to_thread(
        load_context_options, store, name, settings, vault)
    expected = options.describe()
    answers: bool | None = None
    proxy_error = ""
    if options.has_proxy:
        why = await probe_proxy(options, echo_url)
        answers, proxy_error = why is None, why or ""
    launcher = launcher or PlaywrightLauncher(settings.browser,
                                              kill_timeout_s=settings.pool.close_timeout_s)
    seen: dict[str, Any] = {}
    error = ""
    await launcher.start()
    try:
        browser = await launcher.launch()
        try:
            ctx = await browser.new_context(None, options)
            try:
                page = await ctx.new_page()
                await page.goto(echo_url, timeout=settings.pool.step_timeout_s * 1000)
                await page.wait_for_function("() => window.shopfleetEcho !== undefined",
                                             timeout=settings.pool.step_timeout_s * 1000)
                seen = dict(await page.evaluate("window.shopfleetEcho"))
            except Exception as exc:  # the report says what failed; the check goes on
                error = str(exc).strip().splitlines()[0][:300] if str(exc) else repr(exc)
            finally:
                await ctx.close()
        finally:
            await browser.close()
    finally:
        await launcher.stop()
    server = seen.get("server") or {}
    headers = {k.lower(): v for k, v in (server.get("headers") or {}).items()}
    got = ShopCheck(
        shop=name, expected=expected, proxy_answers=answers, proxy_error=proxy_error,
        exit_address=str(server.get("address", "")),
        accept_language=str(headers.get("accept-language", "")),
        navigator_language=str(seen.get("navigator_language", "")),
        timezone=str(seen.get("timezone", "")), user_agent=str(seen.get("user_agent", "")),
        error=error)
    if not error:
        if got.navigator_language != options.locale:
            got.mismatches.append(f"navigator.language is {got.navigator_language!r}, "
                                  f"the profile says {options.locale!r}")
        if not got.accept_language.startswith(options.locale):
            got.mismatches.append(f"Accept-Language is {got.accept_language!r}")
        if options.timezone_id and got.timezone != options.timezone_id:
            got.mismatches.append(f"the time zone is {got.timezone!r}, the profile says "
                                  f"{options.timezone_id!r}")
        if options.user_agent and got.user_agent != options.user_agent:
            got.mismatches.append("the user agent differs from the profile's")
        if options.has_proxy and "via" not in headers and not got.exit_address:
            got.mismatches.append("the page saw no sign of the proxy")
    return got
