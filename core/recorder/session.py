"""The live part of the recorder: Playwright's recorder on a browser context, plus our events.

:func:`open_recorder` starts Playwright's own recorder (the one behind ``playwright codegen``)
on a context through its programmatic API — ``BrowserContext._start_recording`` with the
``jsonl`` language, which works headless and headed and reports each action with the locator
Playwright's selector generator chose (role, label, text, test id first; CSS last). Next to it
the recorder listens to the network (typed navigations, POSTs), adds :mod:`._page_script`'s
toolbar to every page, and asks ``Locator.normalize`` — the same generator — for the locator of
each element picked with the toolbar.

Nothing here logs a typed value: recorded actions carry them only in memory, to be turned into
placeholders by :func:`~core.recorder.convert.flow_from_recording`.

Trust: the toolbar's bindings live in the page's world, so the shop's own scripts can call them
too — fake a pick, a page change or Finish. What they can reach is a suggestion in a flow the
person reviews before saving (a locator, a verify text), never a credential: credentials are
recognised by value in Python and never pass through the page script.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ._page_script import (
    CHANGED_BINDING,
    FINISH_BINDING,
    GESTURE_BINDING,
    PICK_ATTRIBUTE,
    PICK_BINDING,
    page_script,
)
from .convert import (
    Action,
    Changed,
    Event,
    Loaded,
    Navigation,
    Pick,
    PickMode,
    Post,
    RecordedFlow,
    Recording,
    ShopLogin,
    flow_from_recording,
)

_PICK_MODES: frozenset[str] = frozenset({"extract", "extract_all", "assert_text"})


class Recorder:
    """Records one browser context. Make with :func:`open_recorder`."""

    def __init__(self, context: Any, *, lang: str) -> None:
        self._context = context
        self._lang = lang
        self._events: list[Event] = []
        self._pages: dict[Any, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._held: list[Event] = []
        self._click_pending = False
        self._action_arrived = asyncio.Event()
        self.finished = asyncio.Event()
        """Set when the person presses Finish in the toolbar or closes the browser."""
        self.picked = asyncio.Event()
        """Set when an element picked with the toolbar has been looked up (clear it to wait
        for the next one)."""

    # --- events ----------------------------------------------------------------------------

    def _page_no(self, page: Any) -> int:
        # The recorder's sink gets Playwright's inner page objects, listeners the public ones.
        page = getattr(page, "_impl_obj", page)
        if page not in self._pages:
            self._pages[page] = len(self._pages)
        return self._pages[page]

    def _add(self, ev: Event) -> None:
        # Playwright reports a left click only after ~0.5 s (or when the next action comes),
        # so what follows a click — its POST, the page it loads, a pick — waits for it here.
        if self._click_pending:
            self._held.append(ev)
        else:
            self._events.append(ev)

    def _release(self) -> None:
        self._click_pending = False
        self._events.extend(self._held)
        self._held.clear()
        self._action_arrived.set()

    def _gesture(self) -> None:
        self._click_pending = True
        self._action_arrived.clear()

    def action_added(self, page: Any, data: Mapping[str, Any], code: str) -> None:
        """Playwright's recorder: a new action (the sink protocol of ``_start_recording``)."""
        self._events.append(_action(data, self._page_no(page)))
        self._release()

    def action_updated(self, page: Any, data: Mapping[str, Any], code: str) -> None:
        """Playwright's recorder: the last action grew (more text typed into one field)."""
        new = _action(data, self._page_no(page))
        for i in range(len(self._events) - 1, -1, -1):
            ev = self._events[i]
            if isinstance(ev, Action):
                if ev.name == new.name and ev.selector == new.selector:
                    self._events[i] = new
                    self._release()
                    return
                break
        self._events.append(new)
        self._release()

    def signal_added(self, page: Any, data: Mapping[str, Any], code: str) -> None:
        """Playwright's recorder: a navigation/popup/download after an action (not needed:
        the network listeners see them)."""

    def _watch(self, page: Any) -> None:
        no = self._page_no(page)

        def on_request(request: Any) -> None:
            if request.frame != page.main_frame:
                return
            if request.method == "POST":
                self._add(Post(request.url, request.is_navigation_request(), no))
            elif (request.method == "GET" and request.is_navigation_request()
                  and request.redirected_from is None
                  and not request.headers.get("referer")):
                # No referrer: the address bar (or page.goto), not a link, a form or a script.
                self._add(Navigation(request.url, no))

        def on_navigated(frame: Any) -> None:
            if frame == page.main_frame:
                self._add(Loaded(no))

        page.on("request", on_request)
        page.on("framenavigated", on_navigated)
        page.on("close", lambda _p: self._maybe_finish())

    def _maybe_finish(self) -> None:
        if all(p.is_closed() for p in self._context.pages):
            self.finished.set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _on_pick(self, source: Mapping[str, Any], arg: Any) -> None:
        page = source["page"]
        if not isinstance(arg, Mapping) or arg.get("mode") not in _PICK_MODES:
            return
        token = str(arg.get("token", ""))
        marked = page.locator(f'[{PICK_ATTRIBUTE}="{token}"]')
        mode: PickMode = arg["mode"]
        try:
            if mode == "extract_all" and isinstance(arg.get("all"), str):
                selector = arg["all"]
            else:
                # Playwright's own generator, the one codegen uses for the picked element.
                normalized = await marked.normalize()
                selector = normalized._impl_obj._selector
            unique = await page.locator(selector).count() == 1
            await marked.evaluate(f"e => e.removeAttribute('{PICK_ATTRIBUTE}')")
        except Exception:  # the page navigated away under the pick: nothing to record
            return
        self._add(Pick(mode, selector, unique, str(arg.get("text", ""))[:2000],
                                 str(arg.get("name", ""))[:64], str(arg.get("hint", ""))[:64],
                                 self._page_no(page)))
        self.picked.set()

    async def _on_changed(self, source: Mapping[str, Any], arg: Any) -> None:
        page = source["page"]
        out: list[tuple[str, str]] = []
        items = arg.get("changed", []) if isinstance(arg, Mapping) else []
        for item in items[:20]:
            ident, text = str(item.get("id", "")), str(item.get("text", ""))
            if not ident:
                continue
            try:
                loc = page.locator(f"id={ident}")
                normalized = await loc.normalize()
                selector = normalized._impl_obj._selector
                if await page.locator(selector).count() != 1:
                    continue
            except Exception:  # gone already: another candidate may do
                continue
            out.append((selector, text[:500]))
        if out:
            self._add(Changed(tuple(out), self._page_no(page)))

    # --- lifecycle -------------------------------------------------------------------------

    async def _start(self) -> None:
        ctx = self._context
        await ctx.expose_binding(PICK_BINDING, lambda s, a: self._spawn(self._on_pick(s, a)))
        await ctx.expose_binding(CHANGED_BINDING,
                                 lambda s, a: self._spawn(self._on_changed(s, a)))
        await ctx.expose_binding(FINISH_BINDING, lambda s: self.finished.set())
        await ctx.expose_binding(GESTURE_BINDING, lambda s: self._gesture())
        await ctx.add_init_script(script=page_script(self._lang))
        for page in ctx.pages:
            self._watch(page)
        ctx.on("page", self._watch)
        ctx.on("close", lambda _c: self.finished.set())
        # The programmatic recorder (Playwright >= 1.5x): the private twin of codegen.
        await ctx._impl_obj._start_recording({"language": "jsonl"}, self)

    async def _stop(self) -> None:
        if self._click_pending:
            # A click Playwright still holds back (its timer is 0.5 s); a click it does not
            # record (a <select>) never comes, hence the bound.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._action_arrived.wait(), 5)
        self._release()
        with contextlib.suppress(Exception):  # the context may be closed already
            await self._context._impl_obj._stop_recording()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def settle(self) -> None:
        """Wait for the picks and page changes being looked up right now, and for a click
        Playwright still holds back."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._click_pending:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._action_arrived.wait(), 5)
        self._release()

    def recording(self) -> Recording:
        """The events so far (a copy)."""
        return Recording(list(self._events))


@contextlib.asynccontextmanager
async def open_recorder(context: Any, *, lang: str = "en") -> AsyncIterator[Recorder]:
    """Record what happens in a Playwright ``BrowserContext`` until the block ends.

    Args:
        context: an async-API ``BrowserContext`` with no recorder running.
        lang: the toolbar's language, ``en`` or ``zh``.
    """
    if lang not in ("en", "zh"):
        raise SpecError("lang", "must be en or zh")
    rec = Recorder(context, lang=lang)
    await rec._start()
    try:
        yield rec
    finally:
        await rec._stop()


async def record_flow(context: Any, *, name: str, shop: ShopLogin, start_url: str | None = None,
                      lang: str = "en", description: str = "",
                      param_names: Mapping[str, str] | None = None,
                      asset_dirs: Sequence[Path] = ()) -> RecordedFlow:
    """Open a page, record until the person presses Finish (or closes it), build the flow.

    This is what ``shopfleet record`` and the console's "Record a flow" run, on the shop's own
    browser context (its session and profile).

    Args:
        context: the shop's async-API ``BrowserContext``.
        name: the new flow's name.
        shop: the shop's base URL and credentials (to recognise them; never written).
        start_url: the page to open first; default: a blank page, where the person types
            the shop's address (the first typed address becomes the flow's start URL).
        lang: the toolbar's language.
        description, param_names, asset_dirs: see
            :func:`~core.recorder.convert.flow_from_recording`.

    Raises:
        SpecError: nothing usable was recorded.
    """
    async with open_recorder(context, lang=lang) as rec:
        page = await context.new_page()
        if start_url:
            await page.goto(start_url)
        await rec.finished.wait()
        await rec.settle()
        recording = rec.recording()
    return await asyncio.to_thread(
        flow_from_recording, recording, name=name, shop=shop, description=description,
        param_names=param_names, asset_dirs=asset_dirs)


def _action(data: Mapping[str, Any], page: int) -> Action:
    options = data.get("options")
    return Action(
        name=str(data.get("name", "")),
        selector=str(data.get("selector", "")),
        text=str(data.get("text", data.get("value", ""))),
        key=str(data.get("key", "")),
        modifiers=int(data.get("modifiers", 0) or 0),
        options=tuple(str(o) for o in options) if isinstance(options, list) else (),
        click_count=int(data.get("clickCount", 1) if data.get("clickCount") is not None else 1),
        page=page,
    )
