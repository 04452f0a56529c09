"""Origin and credential guards of the step runner (see :mod:`core.flows.runner`, "Trust
boundary").

Every URL a step names is resolved with percent-encoded values and checked against the shop's
:class:`~core.origins.OriginPolicy` before it is loaded; frame navigations and popups to a
foreign origin are noted as they happen (popups are closed), and the page and its frames are
checked before and after every step. ``{shop.username}``/``{shop.password}`` are typed only on
the login origin, checked on the frame of the very element the locator resolved to.

Playwright reports a popup with an event that can arrive after the step that opened it (even
after the run ended) on a busy machine. So a page-side record says which windows a step opened:
an init script wraps ``window.open`` (and closes a blank window it opened right after the
calling script, before any timer of the page can send it elsewhere) and notes ``target`` link
and form activations, with the URLs resolved against the page. After every step one
``evaluate`` reads (and empties) it; a foreign URL in it stops the run at once, and the runner
waits for the ``popup`` event of every window it names that is still open (and closes them)
before the next step starts — a window that never shows up to be checked stops the run too. A
hostile page can overwrite the wrapper: the record is a hint that makes the check deterministic
for honest pages; the event-based check stays.

That same ``evaluate`` also says which human markers (CAPTCHA, login error) the page shows
after a step that talked to the site, so the after-step checks cost one driver round trip
instead of one plus one per marker (``READ_AFTER_STEP_JS``). The init script keeps, before
any script of the page runs, the DOM functions it needs, and answers with Playwright's own
``is_visible`` rules for ``locator(marker).first`` (the first match in Playwright's order:
the document's, then each open shadow root's; visible = ``checkVisibility()``, computed
``visibility: visible`` and a non-empty bounding box; ``display: contents`` by its children).
Only plain CSS markers (:data:`SIMPLE_MARKER`) are answered there; any other marker, a
document without the script, a failed ``evaluate`` or a step that waited for popups falls
back to one ``is_visible`` call per marker, as before. The URLs of the page and its frames
need no round trip: the driver reports them with every navigation.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Sequence
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
        self.popups_seen += 1
        if self._popup_seen is not None:
            self._popup_seen.set()
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

    async def watch_windows(self, *, installed: bool = False) -> None:
        """Install the page-side record of opened windows in the page's next documents
        (every run starts with a navigation). Without it (a page without
        ``add_init_script``/``evaluate``) only the ``popup`` event is checked.
        ``installed``: the page's context already runs it in every document."""
        add = getattr(self.page, "add_init_script", None)
        if add is None or not hasattr(self.page, "evaluate"):
            return
        if installed:
            self._watching = True
            return
        with contextlib.suppress(Exception):
            await add(script=WINDOW_RECORD_JS)
            self._watching = True

    async def check_windows(self, i: int | None, markers: Sequence[str] = ()) -> None:
        """Stop on a window the step opened on a foreign origin; wait for the ``popup``
        event of every window the step opened (they are closed) before the next step.

        ``markers``: the human markers to read in the same round trip (after a step that
        talked to the site); what the page showed is kept in ``marker_snapshot`` for the
        human check that follows (:meth:`~core.flows.failures.FailureClassifier.raise_for_human`).
        """
        self.marker_snapshot = None
        if not self._watching:
            return
        probe = [m for m in dict.fromkeys(markers) if m and SIMPLE_MARKER.fullmatch(m)]
        try:
            got = await self.page.evaluate(READ_AFTER_STEP_JS, probe)
        except Exception:
            # The document went away (a navigation) with its record; the event check stays.
            got = None
        opened = got.get("opened") if isinstance(got, dict) else None
        visible = got.get("visible") if isinstance(got, dict) else None
        if not isinstance(opened, list):
            opened = []
        for entry in opened[:100]:
            if not isinstance(entry, dict):
                continue
            url = str(entry.get("url", ""))[:2000]
            reason = self._foreign(url)
            if reason is not None:
                self._note_violation("a popup window", url, reason)
            if entry.get("window") and not entry.get("closed"):
                self.popups_expected += 1
        waited = self.popups_seen < self.popups_expected
        if waited:
            await self._wait_for_popups()
        elif (probe and isinstance(visible, list) and len(visible) == len(probe)
              and all(isinstance(v, bool) for v in visible)):
            # Read before the wait otherwise: after waiting for popups, markers are read anew.
            self.marker_snapshot = dict(zip(probe, visible, strict=True))
        # A window the record missed (a page that replaced the wrapper) was checked by its
        # event; it must not stand in for one a later step opens.
        self.popups_expected = self.popups_seen = max(self.popups_seen, self.popups_expected)
        if self._closing:
            # Closed before the next step starts (a closed window can no longer navigate).
            with contextlib.suppress(Exception):
                await asyncio.wait(list(self._closing), timeout=self.ms() / 1000)

    async def _wait_for_popups(self) -> None:
        self._popup_seen = asyncio.Event()
        loop = asyncio.get_running_loop()
        try:
            while self.popups_seen < self.popups_expected:
                left = self.deadline - loop.time()
                if left <= 0:
                    break
                self._popup_seen.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._popup_seen.wait(), left)
        finally:
            self._popup_seen = None
        if self.popups_seen < self.popups_expected:
            missing = self.popups_expected - self.popups_seen
            self.popups_expected = self.popups_seen  # not waited for again
            self._note_violation("a popup window", "", f"the page opened {missing} "
                                 "window(s) that never showed up to be checked")

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


SIMPLE_MARKER = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9-]*)?"
    r"(?:[#.][A-Za-z_][A-Za-z0-9_-]*|\[[A-Za-z_][A-Za-z0-9_-]*"
    r"(?:=(?:\"[^\"\\\\]*\"|'[^'\\\\]*'|[A-Za-z0-9_-]+))?\])*")
"""A human marker the page-side probe answers: one compound CSS selector of a tag, ids,
classes and attributes (``#captcha``, ``[data-captcha]``, ``div.login-error``); no
combinators, pseudo-classes or Playwright engines. For these Playwright's CSS engine and
``querySelectorAll`` match the same elements."""

WINDOW_RECORD_JS = r"""(() => {
  const KEY = '__shopfleetOpened';
  if (Object.prototype.hasOwnProperty.call(window, KEY)) return;
  // The human-marker probe (READ_AFTER_STEP_JS): Playwright's is_visible of
  // locator(css).first, through functions taken now, before any script of the page runs.
  // Set up apart: a browser without one of these functions loses the probe (the runner then
  // asks each marker itself), never the record below.
  try {
    const R = Reflect.apply;
    const getter = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
    const docQSA = Document.prototype.querySelectorAll;
    const fragQSA = DocumentFragment.prototype.querySelectorAll;
    const listLength = getter(NodeList.prototype, 'length');
    const shadowOf = getter(Element.prototype, 'shadowRoot');
    const computed = window.getComputedStyle;
    const prop = CSSStyleDeclaration.prototype.getPropertyValue;
    const checkVisibility = Element.prototype.checkVisibility;
    const elementRect = Element.prototype.getBoundingClientRect;
    const rectWidth = getter(DOMRectReadOnly.prototype, 'width');
    const rectHeight = getter(DOMRectReadOnly.prototype, 'height');
    const firstChild = getter(Node.prototype, 'firstChild');
    const nextSibling = getter(Node.prototype, 'nextSibling');
    const nodeType = getter(Node.prototype, 'nodeType');
    const createRange = Document.prototype.createRange;
    const selectNode = Range.prototype.selectNode;
    const rangeRect = Range.prototype.getBoundingClientRect;
    const doc = document;
    // Playwright's order: the root's matches, then each open shadow root's, depth first.
    const first = (root, css) => {
      const qsa = root === doc ? docQSA : fragQSA;
      const found = R(qsa, root, [css]);
      if (R(listLength, found, []) > 0) return found[0];
      const all = R(qsa, root, ['*']);
      const n = R(listLength, all, []);
      for (let k = 0; k < n; k++) {
        const sr = R(shadowOf, all[k], []);
        if (sr) { const f = first(sr, css); if (f) return f; }
      }
      return null;
    };
    const boxVisible = (r) => R(rectWidth, r, []) > 0 && R(rectHeight, r, []) > 0;
    const textVisible = (node) => {
      const range = R(createRange, doc, []);
      R(selectNode, range, [node]);
      return boxVisible(R(rangeRect, range, []));
    };
    const visible = (el) => {
      const style = R(computed, window, [el]);
      if (!style) return true;
      if (R(prop, style, ['display']) === 'contents') {
        for (let c = R(firstChild, el, []); c; c = R(nextSibling, c, [])) {
          const t = R(nodeType, c, []);
          if (t === 1 && visible(c)) return true;
          if (t === 3 && textVisible(c)) return true;
        }
        return false;
      }
      if (checkVisibility && !R(checkVisibility, el, [])) return false;
      if (R(prop, style, ['visibility']) !== 'visible') return false;
      return boxVisible(R(elementRect, el, []));
    };
    const probe = (markers) => {
      const out = [];
      for (let k = 0; k < markers.length; k++) {
        const el = first(doc, String(markers[k]));
        out[k] = el ? visible(el) : false;
      }
      return out;
    };
    Object.defineProperty(window, '__shopfleetMarkers',
      {value: probe, configurable: false, enumerable: false, writable: false});
  } catch (e) {}
  let sink = [];
  try {
    // A same-origin frame records into the top document, which the runner reads.
    if (window.top !== window && window.top[KEY]) sink = window.top[KEY];
  } catch (e) {}
  Object.defineProperty(window, KEY, {value: sink, configurable: false, enumerable: false});
  const abs = (u) => {
    if (u === undefined || u === null || String(u) === '') return 'about:blank';
    let url = String(u);
    try { url = new URL(url, document.baseURI).href; } catch (e) {}
    // A javascript: URL runs its script in a new blank window.
    return /^\s*javascript:/i.test(url) ? 'about:blank' : url;
  };
  // w: the window (window.open); blank: a target=_blank activation (a new window).
  const note = (url, w, blank) => {
    if (sink.length < 100) sink.push({url: abs(url), w: w || null, blank: !!blank});
  };
  const open = window.open;
  window.open = function (url, ...rest) {
    const w = open.call(this, url, ...rest);
    note(url, w, false);
    // The runner never works in a second window: a blank one is closed before any timer of
    // the page can send it elsewhere. One opened on a URL is left to the runner (closed when
    // its popup event comes): closed here, its request escapes the context's route.
    if (w && abs(url) === 'about:blank') queueMicrotask(() => { try { w.close(); } catch (e) {} });
    return w;
  };
  const kind = (target) => {
    const t = String(target || '').trim().toLowerCase();
    if (t === '' || t === '_self' || t === '_parent' || t === '_top') return '';
    return t === '_blank' ? 'blank' : 'named';
  };
  const baseTarget = () => (document.querySelector('base[target]') || {}).target;
  // Noted last in the event's path (window, bubbling), only when nothing cancelled it.
  window.addEventListener('click', (e) => {
    if (e.defaultPrevented || !e.target || !e.target.closest) return;
    const a = e.target.closest('a[href], area[href]');
    // A download link opens no window.
    const k = a && !a.hasAttribute('download') ? kind(a.target || baseTarget()) : '';
    if (k) note(a.href, null, k === 'blank');
  });
  window.addEventListener('submit', (e) => {
    const f = e.target;
    if (e.defaultPrevented || !f || !f.getAttribute) return;
    const s = e.submitter;
    const k = kind((s && s.getAttribute('formtarget')) || f.getAttribute('target')
      || baseTarget());
    // An empty action submits to the document's own URL.
    if (k) note((s && s.getAttribute('formaction')) || f.getAttribute('action')
      || document.URL, null, k === 'blank');
  });
})()"""
"""Installs the page-side record of opened windows (idempotent)."""

READ_AFTER_STEP_JS = r"""(markers) => {
  const sink = window.__shopfleetOpened;
  const opened = !Array.isArray(sink) ? [] : sink.splice(0, sink.length).map((e) => {
    let closed = false;
    try { closed = !!(e.w && e.w.closed); } catch (err) {}
    return {url: String(e.url), window: !!e.w || e.blank, closed: closed};
  });
  let visible = null;
  const probe = window.__shopfleetMarkers;
  if (markers.length && typeof probe === 'function') {
    try { visible = probe(markers); } catch (err) { visible = null; }
  }
  return {opened: opened, visible: visible};
}"""
"""One round trip after a step: the record of opened windows, read and emptied (``opened``:
``[{url, window, closed}]``), and for each marker given whether
``locator(marker).first.is_visible()`` (``visible``: a list of booleans, or null without the
probe or markers)."""

_FIELD_INFO_JS = """el => ({tag: el.tagName.toLowerCase(),
    type: el.tagName === 'INPUT' ? String(el.type).toLowerCase() : ''})"""
