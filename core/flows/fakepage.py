"""A scripted stand-in for the part of Playwright's async ``Page`` the runner uses.

It is driven by a tiny in-memory site, so runner tests are fast and say what the site saw::

    site = FakeSite({
        "https://shop.test/login": FakeScreen(
            elements={"#user": FakeElement(), "#pass": FakeElement(type="password"),
                      "#go": FakeElement(text="Log in")},
            clicks={"#go": FakeAction(goto="https://shop.test/home",
                                      set_flags={"logged_in": True})}),
        "https://shop.test/home": FakeScreen(elements={"h1": FakeElement(text="Welcome")}),
    })
    page = site.new_page()

Elements match by the exact selector string a step uses. Visibility and text may be callables
of the site, so a flag set by one click (``logged_in``) can hide a login form elsewhere. Clicks
and key presses can navigate, record a write (``site.writes``, with the values filled in on the
page), set flags, open a popup window, raise a Playwright error, crash the page or hang.
A popup's ``popup`` event comes at once or late (after the step, as Playwright's can on a busy
machine) or never; the runner's page-side record of opened windows (its init script) is
modelled by ``evaluate`` of the record, and the script's human-marker probe (the after-step
read, ``READ_AFTER_STEP_JS``) answers as ``locator(marker).first.is_visible()`` would, once
the script that installs it was added. A locator that matches
nothing fails at once with Playwright's ``TimeoutError`` (no real waiting), and a crashed page
fails every call with ``Target crashed``, as the real one does.
"""

from __future__ import annotations

import asyncio
import inspect
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

SiteBool = bool | Callable[["FakeSite"], bool]
SiteText = str | Callable[["FakeSite"], str]


@dataclass
class FakeElement:
    """One element of a fake page.

    Attributes:
        text: its visible text (or a function of the site).
        attrs: its HTML attributes.
        visible: whether it is visible (or a function of the site).
        type: the ``type`` of an ``<input>`` (``password`` makes it a password field).
        options: the values a ``<select>`` offers; ``None`` for other elements.
        value: the value it holds when the page loads (as a server would render it).
    """

    text: SiteText = ""
    attrs: dict[str, str] = field(default_factory=dict)
    visible: SiteBool = True
    type: str = ""
    options: list[str] | None = None
    value: str = ""


@dataclass
class FakeAction:
    """What a click or key press does, in this order: crash, hang, error, flags, write, popup,
    goto.

    ``popup`` opens a window on that URL (``""``: about:blank), by ``window.open`` or, with
    ``popup_by="link"``, by a ``target=_blank`` link or form (the runner's record closes a
    blank ``window.open`` window at once, when its init script was added); ``popup_event`` says when
    the page's ``popup`` event comes: ``"now"`` (during the action), ``"late"`` (only after the page
    is next used, i.e. after the step returned) or ``"never"``. ``popup_then`` is where the
    window navigates once the opener's page is next used (if it is still open).
    """

    goto: str | None = None
    popup: str | None = None
    popup_event: str = "now"
    popup_by: str = "script"
    popup_then: str | None = None
    write: str | None = None
    set_flags: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    crash: bool = False
    hang: bool = False


@dataclass
class FakeScreen:
    """One URL of the fake site.

    Attributes:
        elements: selector → element (or list of elements for a selector matching several).
        status: the HTTP status the page is served with.
        headers: response headers (e.g. ``{"Retry-After": "30"}``).
        clicks: selector → what clicking it does.
        keys: ``"Enter"`` (page keyboard) or ``"#sel:Enter"`` (pressed in an element) → action.
        html: the DOM ``content()`` returns; default: generated from the elements.
        console: messages the page logs when it loads.
        net_error: loading it fails with this network error (``net::ERR_CONNECTION_REFUSED``).
        load_timeout: loading it times out.
        hang: loading it never finishes (a wedged browser).
        frames: URLs of the sub-frames the page holds (``page.frames``).
    """

    elements: dict[str, FakeElement | list[FakeElement]] = field(default_factory=dict)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    clicks: dict[str, FakeAction] = field(default_factory=dict)
    keys: dict[str, FakeAction] = field(default_factory=dict)
    html: str | None = None
    console: list[str] = field(default_factory=list)
    net_error: str | None = None
    load_timeout: bool = False
    hang: bool = False
    frames: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FakeWrite:
    """Something a flow wrote to the fake site: which action, on which page, with what values."""

    name: str
    url: str
    fields: dict[str, Any]


class FakeSite:
    """The in-memory site: its pages, its state flags, and what it saw.

    Attributes:
        writes: every write, in order (what the shop's site would now hold).
        log: every interaction (``goto URL``, ``click SEL``, ``fill SEL``, ``press KEY``, …).
        flags: state changed by actions (``logged_in``) that visibility functions read.
        masks: for each screenshot, the selectors it masked.
    """

    def __init__(self, pages: dict[str, FakeScreen]) -> None:
        self.pages = pages
        self.flags: dict[str, Any] = {}
        self.writes: list[FakeWrite] = []
        self.log: list[str] = []
        self.masks: list[list[str]] = []
        """For each screenshot, the selectors it masked."""
        self.popups: list[FakePopup] = []
        """Every popup window a page opened, in order."""

    def new_page(self) -> FakePage:
        """A blank page (``about:blank``) on this site."""
        return FakePage(self)

    def resolve_text(self, value: SiteText) -> str:
        return value(self) if callable(value) else value

    def resolve_bool(self, value: SiteBool) -> bool:
        return value(self) if callable(value) else value


@dataclass
class _ConsoleMessage:
    type: str
    text: str


@dataclass
class _Request:
    frame: object

    def is_navigation_request(self) -> bool:
        return True


@dataclass
class FakeResponse:
    """The part of Playwright's ``Response`` the runner reads."""

    url: str
    status: int
    headers: dict[str, str]
    request: _Request


class _Keyboard:
    def __init__(self, page: FakePage) -> None:
        self._page = page

    async def press(self, key: str, *, delay: float | None = None) -> None:
        self._page._check_alive()
        self._page.site.log.append(f"press {key}")
        await self._page._act(self._page._screen().keys.get(key))


class _Frame:
    def __init__(self, url: str) -> None:
        self.url = url


class _MainFrame:
    def __init__(self, page: FakePage) -> None:
        self._page = page

    @property
    def url(self) -> str:
        return self._page.url


class FakePopup:
    """A window a fake page opened (what the ``popup`` event hands over)."""

    def __init__(self, url: str) -> None:
        self.url = url or "about:blank"
        self.closed = False
        self.visited: list[str] = [self.url]
        """The URLs it showed (a later navigation is appended while it is open)."""
        self.main_frame = _Frame(self.url)
        self._listeners: dict[str, list[Callable[..., Any]]] = {}

    def on(self, event: str, f: Callable[..., Any]) -> None:
        self._listeners.setdefault(event, []).append(f)

    def navigate(self, url: str) -> None:
        if self.closed:
            return
        self.url = url
        self.main_frame = _Frame(url)
        self.visited.append(url)
        for fn in list(self._listeners.get("framenavigated", [])):
            fn(self.main_frame)

    async def close(self) -> None:
        self.closed = True


class FakeHandle:
    """The element a locator resolved to (``element_handle``)."""

    def __init__(self, locator: FakeLocator, element: FakeElement) -> None:
        self._locator = locator
        self._element = element

    async def owner_frame(self) -> Any:
        return self._locator._page.main_frame

    async def evaluate(self, expression: str) -> dict[str, str]:
        e = self._element
        # An element with a type, or with no text, stands for an <input> (``attrs["tag"]``
        # says otherwise: ``{"tag": "div"}`` for a contenteditable).
        tag = e.attrs.get("tag") or ("input" if e.type or not e.text else "div")
        return {"tag": tag, "type": e.type if tag == "input" else ""}

    async def fill(self, value: str, *, timeout: float | None = None) -> None:
        await self._locator.fill(value, timeout=timeout)

    async def dispose(self) -> None:
        return None


class FakePage:
    """The fake page; construct with :meth:`FakeSite.new_page`."""

    def __init__(self, site: FakeSite) -> None:
        self.site = site
        self.url = "about:blank"
        self.main_frame = _MainFrame(self)
        self.keyboard = _Keyboard(self)
        self.crashed = False
        self.closed = False
        self.values: dict[str, Any] = {}
        self.init_scripts: list[str] = []
        self._listeners: dict[str, list[Callable[..., Any]]] = {}
        self._opened: list[FakePopup] = []  # the page-side record, until it is read
        self._later: list[Callable[[], None]] = []  # late events, sent once the page is used

    # events
    def on(self, event: str, f: Callable[..., Any]) -> None:
        self._listeners.setdefault(event, []).append(f)

    def remove_listener(self, event: str, f: Callable[..., Any]) -> None:
        fns = self._listeners.get(event, [])
        if f in fns:
            fns.remove(f)

    def _emit(self, event: str, arg: Any) -> None:
        for fn in list(self._listeners.get(event, [])):
            fn(arg)

    # test controls
    def crash(self) -> None:
        """Crash the renderer: the ``crash`` event fires and every later call fails."""
        self.crashed = True
        self._emit("crash", self)

    async def close(self) -> None:
        self.closed = True

    def _check_alive(self) -> None:
        if self._later:
            later, self._later = self._later, []
            loop = asyncio.get_running_loop()
            for fn in later:
                loop.call_soon(fn)
        if self.crashed:
            raise PlaywrightError("Target crashed")
        if self.closed:
            raise PlaywrightError("Target page, context or browser has been closed")

    def _screen(self) -> FakeScreen:
        return self.site.pages.get(self.url) or FakeScreen()

    # navigation
    async def goto(self, url: str, *, timeout: float | None = None,
                   wait_until: str | None = None, referer: str | None = None) -> FakeResponse:
        self._check_alive()
        self.site.log.append(f"goto {url}")
        screen = self.site.pages.get(url)
        if screen is None:
            raise PlaywrightError(f"Page.goto: net::ERR_NAME_NOT_RESOLVED at {url}")
        if screen.net_error:
            raise PlaywrightError(f"Page.goto: {screen.net_error} at {url}")
        if screen.load_timeout:
            raise PlaywrightTimeoutError(f"Page.goto: Timeout {timeout:.0f}ms exceeded.")
        if screen.hang:
            await asyncio.get_running_loop().create_future()
        return self._load(url)

    def _load(self, url: str) -> FakeResponse:
        screen = self.site.pages.get(url) or FakeScreen(status=404)
        self.url = url
        self.values = {}
        for sel, el in screen.elements.items():
            for e in el if isinstance(el, list) else [el]:
                if e.value:
                    self.values[sel] = e.value
        response = FakeResponse(url, screen.status, dict(screen.headers), _Request(self.main_frame))
        self._emit("response", response)
        for text in screen.console:
            self._emit("console", _ConsoleMessage("log", text))
        return response

    async def add_init_script(self, script: str | None = None, *,
                              path: str | None = None) -> None:
        self._check_alive()
        self.init_scripts.append(script or "")

    async def evaluate(self, expression: str, arg: Any = None) -> Any:
        """Only the runner's after-step read (``READ_AFTER_STEP_JS``, markers in ``arg``) is
        modelled, once its init script was added: ``{opened, visible}``, the record of
        opened windows emptied and what ``is_visible`` of each marker's ``first`` says
        (None without markers). Anything else returns None."""
        self._check_alive()
        if "__shopfleetOpened" in expression and any(
                "__shopfleetOpened" in s for s in self.init_scripts):
            opened, self._opened = self._opened, []
            record = [{"url": p.url, "window": True, "closed": p.closed} for p in opened]
            markers = [str(m) for m in (arg or [])]
            visible: list[bool] | None = None
            if markers and any("__shopfleetMarkers" in s for s in self.init_scripts):
                visible = [await FakeLocator(self, m).first.is_visible() for m in markers]
            return {"opened": record, "visible": visible}
        return None

    def _open_popup(self, action: FakeAction) -> None:
        popup = FakePopup(action.popup or "")
        self.site.popups.append(popup)
        self.site.log.append(f"popup {popup.url}")
        self._opened.append(popup)
        if action.popup_by == "script" and not action.popup and any("__shopfleetOpened" in s
                                               for s in self.init_scripts):
            popup.closed = True  # what the record's window.open wrapper does
        if action.popup_event == "now":
            self._emit("popup", popup)
        elif action.popup_event == "late":
            self._later.append(lambda: self._emit("popup", popup))
        if action.popup_then is not None:
            then = action.popup_then
            self._later.append(lambda: popup.navigate(then))

    async def wait_for_load_state(self, state: str = "load", *,
                                  timeout: float | None = None) -> None:
        self._check_alive()

    async def _act(self, action: FakeAction | None) -> None:
        if action is None:
            return
        if action.crash:
            self.crash()
            raise PlaywrightError("Target crashed")
        if action.hang:
            await asyncio.get_running_loop().create_future()
        if action.error:
            raise PlaywrightError(action.error)
        self.site.flags.update(action.set_flags)
        if action.write:
            self.site.writes.append(FakeWrite(action.write, self.url, dict(self.values)))
        if action.popup is not None:
            self._open_popup(action)
        if action.goto:
            self.site.log.append(f"goto {action.goto}")
            self._load(action.goto)

    # content
    def locator(self, selector: str) -> FakeLocator:
        return FakeLocator(self, selector)

    async def screenshot(self, *, timeout: float | None = None, path: str | None = None,
                         full_page: bool | None = None, mask: Sequence[Any] = ()) -> bytes:
        self._check_alive()
        self.site.masks.append([getattr(m, "_selector", "?") for m in mask])
        return tiny_png()

    @property
    def frames(self) -> list[Any]:
        """The main frame plus the screen's ``frames`` (URLs of sub-frames)."""
        return [self.main_frame, *(_Frame(u) for u in self._screen().frames)]

    async def content(self) -> str:
        self._check_alive()
        screen = self._screen()
        if screen.html is not None:
            return screen.html
        body = []
        for sel, el in screen.elements.items():
            for e in el if isinstance(el, list) else [el]:
                attrs = "".join(f' {k}="{escape(v)}"' for k, v in e.attrs.items())
                if e.type:
                    value = f' value="{escape(e.value)}"' if e.value else ""
                    body.append(f'<input data-sel="{escape(sel)}" type="{e.type}"{attrs}{value}>')
                else:
                    text = escape(self.site.resolve_text(e.text))
                    body.append(f'<div data-sel="{escape(sel)}"{attrs}>{text}</div>')
        return "<html><body>" + "\n".join(body) + "</body></html>"


class FakeLocator:
    """The part of Playwright's ``Locator`` the runner uses (strict, like the real one)."""

    def __init__(self, page: FakePage, selector: str, *, has_text: str | None = None,
                 index: int | None = None) -> None:
        self._page = page
        self._selector = selector
        self._has_text = has_text
        self._index = index

    def __repr__(self) -> str:
        return f"<FakeLocator {self._selector!r}>"

    @property
    def first(self) -> FakeLocator:
        return FakeLocator(self._page, self._selector, has_text=self._has_text, index=0)

    def nth(self, index: int) -> FakeLocator:
        return FakeLocator(self._page, self._selector, has_text=self._has_text, index=index)

    def filter(self, *, has_text: str | None = None) -> FakeLocator:
        return FakeLocator(self._page, self._selector, has_text=has_text, index=self._index)

    def _all(self) -> list[FakeElement]:
        self._page._check_alive()
        found = self._page._screen().elements.get(self._selector)
        els = found if isinstance(found, list) else ([found] if found is not None else [])
        if self._has_text is not None:
            needle = self._has_text.lower()
            els = [e for e in els if needle in self._page.site.resolve_text(e.text).lower()]
        if self._index is not None:
            els = els[self._index:self._index + 1]
        return els

    def _visible(self, e: FakeElement) -> bool:
        return self._page.site.resolve_bool(e.visible)

    def _one(self, method: str, timeout: float | None, *, visible: bool = True) -> FakeElement:
        els = self._all()
        if len(els) > 1:
            raise PlaywrightError(f"Locator.{method}: Error: strict mode violation: "
                                  f"locator({self._selector!r}) resolved to {len(els)} elements")
        if not els or (visible and not self._visible(els[0])):
            raise PlaywrightTimeoutError(
                f"Locator.{method}: Timeout {timeout or 30000:.0f}ms exceeded.\nCall log:\n"
                f"  - waiting for locator({self._selector!r})")
        return els[0]

    async def count(self) -> int:
        return len(self._all())

    async def is_visible(self, *, timeout: float | None = None) -> bool:
        els = self._all()
        if len(els) > 1:
            raise PlaywrightError(f"Locator.is_visible: Error: strict mode violation: "
                                  f"locator({self._selector!r}) resolved to {len(els)} elements")
        return bool(els) and self._visible(els[0])

    async def wait_for(self, *, state: str = "visible", timeout: float | None = None) -> None:
        els = self._all()
        ok = {
            "visible": bool(els) and self._visible(els[0]),
            "hidden": not els or not self._visible(els[0]),
            "attached": bool(els),
            "detached": not els,
        }[state]
        if not ok:
            raise PlaywrightTimeoutError(
                f"Locator.wait_for: Timeout {timeout or 30000:.0f}ms exceeded.\nCall log:\n"
                f"  - waiting for locator({self._selector!r}) to be {state}")

    async def click(self, *, timeout: float | None = None) -> None:
        self._one("click", timeout)
        self._page.site.log.append(f"click {self._selector}")
        await self._page._act(self._page._screen().clicks.get(self._selector))

    async def element_handle(self, *, timeout: float | None = None) -> FakeHandle:
        return FakeHandle(self, self._one("element_handle", timeout, visible=False))

    async def fill(self, value: str, *, timeout: float | None = None) -> None:
        self._one("fill", timeout)
        self._page.site.log.append(f"fill {self._selector}")
        self._page.values[self._selector] = value

    async def select_option(self, value: str | None = None, *,
                            timeout: float | None = None) -> list[str]:
        el = self._one("select_option", timeout)
        if el.options is None:
            raise PlaywrightError("Locator.select_option: Error: Element is not a <select> element")
        if value not in el.options:
            raise PlaywrightTimeoutError(
                f"Locator.select_option: Timeout {timeout or 30000:.0f}ms exceeded.\n"
                f"  - waiting for option {value!r}")
        self._page.site.log.append(f"select {self._selector}={value}")
        self._page.values[self._selector] = value
        return [value]

    async def set_input_files(self, files: str | Sequence[str], *,
                              timeout: float | None = None) -> None:
        el = self._one("set_input_files", timeout, visible=False)
        if el.type != "file":
            raise PlaywrightError("Locator.set_input_files: Error: Node is not an HTMLInputElement")
        self._page.site.log.append(f"upload {self._selector}")
        self._page.values[self._selector] = files

    async def inner_text(self, *, timeout: float | None = None) -> str:
        el = self._one("inner_text", timeout, visible=False)
        return self._page.site.resolve_text(el.text)

    async def all_inner_texts(self) -> list[str]:
        return [self._page.site.resolve_text(e.text) for e in self._all()]

    async def get_attribute(self, name: str, *, timeout: float | None = None) -> str | None:
        el = self._one("get_attribute", timeout, visible=False)
        return el.attrs.get(name)

    async def press(self, key: str, *, timeout: float | None = None) -> None:
        self._one("press", timeout)
        self._page.site.log.append(f"press {self._selector}:{key}")
        await self._page._act(self._page._screen().keys.get(f"{self._selector}:{key}"))


def tiny_png() -> bytes:
    """A valid 1×1 white PNG (what the fake's ``screenshot`` returns)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\xff\xff")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


class CountingPage:
    """Wraps a page (Playwright's or a :class:`FakePage`) and notes every driver round trip
    the runner makes through it: each awaited call of the page, of its locators, keyboard
    and element handles, in order, in ``calls`` (``"goto"``, ``"evaluate"``,
    ``"locator.is_visible"``...). Everything else (``url``, ``main_frame``, ``frames``,
    ``on``) is the wrapped page's own. For tests that pin the runner's calls per step and
    for ``bench/flow_calls.py``.
    """

    def __init__(self, page: Any, calls: list[str] | None = None) -> None:
        self._inner = page
        self.calls: list[str] = calls if calls is not None else []

    def __getattr__(self, name: str) -> Any:
        return _counted(getattr(self._inner, name), name, self.calls, "")


_WRAPPED = ("locator", "first", "nth", "filter", "keyboard", "element_handle")
"""What returns a locator, keyboard or element handle: wrapped so their calls count too."""


class _Counting:
    def __init__(self, inner: Any, calls: list[str], prefix: str) -> None:
        self._inner = inner
        self._calls = calls
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        return _counted(getattr(self._inner, name), name, self._calls, self._prefix)


def _unwrap(value: Any) -> Any:
    if isinstance(value, _Counting):
        return value._inner
    if isinstance(value, list | tuple):
        return type(value)(_unwrap(v) for v in value)
    return value


def _counted(value: Any, name: str, calls: list[str], prefix: str) -> Any:
    label = f"{prefix}{name}"
    kind = "locator." if name in ("locator", "first", "nth", "filter") else (
        "handle." if name == "element_handle" else f"{name}.")
    if not callable(value):
        return _Counting(value, calls, kind) if name in _WRAPPED else value

    def call(*args: Any, **kwargs: Any) -> Any:
        result = value(*[_unwrap(a) for a in args],
                       **{k: _unwrap(v) for k, v in kwargs.items()})
        if not inspect.isawaitable(result):
            return _Counting(result, calls, kind) if name in _WRAPPED else result

        async def awaited() -> Any:
            calls.append(label)
            got = await result
            return _Counting(got, calls, kind) if name in _WRAPPED else got

        return awaited()

    return call
