"""Origin and credential guards of the step runner (see :mod:`core.flows.runner`, "Trust
boundary").

Every URL a step names is resolved with percent-encoded values and checked against the shop's
:class:`~core.origins.OriginPolicy` before it is loaded; frame navigations and popups to a
foreign origin are noted as they happen (popups are closed), and the page and its frames are
checked before and after every step. ``{shop.username}``/``{shop.password}`` are typed only on
the login origin, checked on the frame of the very element the locator resolved to.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from ..errors import CredentialBlocked, OriginBlocked
from ..origins import is_transient, origin_of
from .models import TypeTextStep, step_label
from .placeholders import resolve_url
from .run_state import Fail, RunState


class OriginGuards(RunState):
    """The trust boundary in the page: the origins a page, frame or popup may show, URL fields
    checked before anything loads, credentials typed only on the login origin."""

    def listeners(self) -> list[tuple[str, Callable[..., None]]]:
        return [*super().listeners(), ("framenavigated", self._on_framenavigated),
                ("popup", self._on_popup)]

    def _foreign(self, url: str) -> str | None:
        if is_transient(url):
            return None
        return self.policy.why_not(url)

    def _note_violation(self, what: str, url: str, reason: str) -> None:
        if self.violation is None:
            self.violation = f"{what} went to {self._describe(url)}: {reason}"

    def _describe(self, url: str) -> str:
        origin = origin_of(url)
        if origin is not None:
            return origin
        return url.split(":", 1)[0][:20] + ": page" if ":" in url else "a page without a URL"

    def _on_framenavigated(self, frame: Any) -> None:
        try:
            url = str(frame.url)
            main = frame == self.page.main_frame
        except Exception:
            return
        reason = self._foreign(url)
        if reason is not None:
            self._note_violation("the page" if main else "a frame", url, reason)

    def _on_popup(self, popup: Any) -> None:
        # The runner never works in a second window: close it, and note a foreign one.
        try:
            url = str(popup.url)
        except Exception:
            url = ""
        reason = self._foreign(url)
        if reason is not None:
            self._note_violation("a popup window", url, reason)
        with contextlib.suppress(Exception):
            # It may still be on about:blank and navigate before it is closed.
            popup.on("framenavigated", self._on_popup_navigated)
        with contextlib.suppress(Exception):
            closing = asyncio.ensure_future(popup.close())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    def _on_popup_navigated(self, frame: Any) -> None:
        with contextlib.suppress(Exception):
            url = str(frame.url)
            reason = self._foreign(url)
            if reason is not None:
                self._note_violation("a popup window", url, reason)

    async def route_foreign(self) -> None:
        """Abort page and frame requests to foreign origins in the browser (the whole
        context: popups too). Only foreign URLs reach Python; the driver matches the rest."""
        context = getattr(self.page, "context", None)
        if context is None or not hasattr(context, "route"):
            return
        pattern = self.policy.foreign_url_pattern()

        async def handler(route: Any) -> None:
            request = route.request
            try:
                navigation = bool(request.is_navigation_request())
            except Exception:
                navigation = True
            if navigation:
                self._note_violation("a page or frame request", str(request.url),
                                     self.policy.why_not(str(request.url)) or "foreign")
                await route.abort("blockedbyclient")
            else:
                await route.continue_()

        await context.route(pattern, handler)
        self._route = (context, pattern, handler)

    async def unroute(self) -> None:
        if self._route is not None:
            context, pattern, handler = self._route
            self._route = None
            with contextlib.suppress(Exception):
                await context.unroute(pattern, handler)

    def check_origins(self, i: int | None) -> None:
        """Stop unless the page and every frame show an allowed origin (or about:blank)."""
        where = step_label(i, self.flow.steps[i]) if i is not None else "start_url"
        if self.violation is None:
            frames = getattr(self.page, "frames", None)
            for frame in list(frames or []):
                try:
                    url = str(frame.url)
                    main = frame == self.page.main_frame
                except Exception:
                    continue
                reason = self._foreign(url)
                if reason is not None:
                    self._note_violation("the page" if main else "a frame", url, reason)
                    break
        if self.violation is not None:
            raise Fail(OriginBlocked(f"{where}: {self.violation}; the task was stopped",
                                      step=i))

    def url(self, template: str, i: int | None) -> str:
        """A URL field resolved (values percent-encoded) and checked against the origins."""
        url = resolve_url(template, self.params, self.shop_values)
        reason = self.policy.why_not(url)
        if reason is not None:
            where = (f"{step_label(i, self.flow.steps[i])}.url" if i is not None
                     else "start_url")
            raise Fail(OriginBlocked(f"{where}: {reason}; nothing was loaded", step=i))
        return url

    async def fill_credential(self, i: int, step: TypeTextStep, kinds: frozenset[str]) -> None:
        """Type a text holding a shop credential, after checking, on the very element the
        locator resolved to, that its frame is the login origin and (for the password) that
        it is an ``<input type=password>``."""
        where = f"{step_label(i, step)}.text"
        selector = self.r(step.locator)
        handle = await self.page.locator(selector).element_handle(timeout=self.ms())
        try:
            frame = await handle.owner_frame()
            frame_url = str(frame.url) if frame is not None else ""
            info = await handle.evaluate(_FIELD_INFO_JS)
            origin = origin_of(frame_url)
            names = " and ".join(f"{{shop.{k}}}" for k in sorted(kinds))
            if origin is None or origin != self.policy.login:
                raise Fail(CredentialBlocked(
                    f"{where}: {names} is typed only on the shop's login origin "
                    f"{self.policy.login}, and this field is on {self._describe(frame_url)}; "
                    "nothing was typed", step=i))
            tag, typ = str(info.get("tag", "")), str(info.get("type", ""))
            if "password" in kinds and not (tag == "input" and typ == "password"):
                raise Fail(CredentialBlocked(
                    f"{where}: {{shop.password}} is typed only into an <input type=password>, "
                    f"and {selector!r} is a <{tag}{' type=' + typ if typ else ''}>; nothing "
                    "was typed", step=i))
            if tag not in ("input", "textarea"):
                raise Fail(CredentialBlocked(
                    f"{where}: {names} is typed only into an input field, and {selector!r} "
                    f"is a <{tag}>; nothing was typed", step=i))
            self.typed_into.append(selector)
            await handle.fill(self.r(step.text), timeout=self.ms())
        finally:
            with contextlib.suppress(Exception):
                await handle.dispose()


_FIELD_INFO_JS = """el => ({tag: el.tagName.toLowerCase(),
    type: el.tagName === 'INPUT' ? String(el.type).toLowerCase() : ''})"""
