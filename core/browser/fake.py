"""A scripted fake browser for fast tests and demos: it can be slow, crash or hang on purpose.

``FakeLauncher`` implements the pool's :class:`~core.browser.base.Launcher` protocol without a
process. It counts what is alive so tests can assert that nothing leaked::

    launcher = FakeLauncher(crash_after_contexts=3, hang_on_close=True)
    async with BrowserPool(pool_settings, browser_settings, launcher=launcher) as pool:
        ...
    assert launcher.live_browsers == 0 and launcher.live_contexts == 0

Delays are real (``asyncio.sleep``) and meant to be tiny: they exist to interleave coroutines,
never to be measured.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable
from typing import Any


class FakeBrowserError(Exception):
    """What a fake raises where Playwright would raise its ``Error`` (target closed...)."""


class FakeBrowserPage:
    """The smallest page a task can hold: ``goto``, ``close``, ``on``, and a ``url``. (The
    scripted site page flows run against is :class:`core.flows.fakepage.FakePage`.)"""

    def __init__(self, context: FakeContext) -> None:
        self.context = context
        self.url = "about:blank"
        self.closed = False
        self.visits: list[str] = []
        self._handlers: dict[str, list[Callable[..., Any]]] = {}

    def on(self, event: str, handler: Callable[..., Any]) -> None:
        self._handlers.setdefault(event, []).append(handler)

    def emit(self, event: str) -> None:
        """Fire an event as Playwright would (``crash``, ``close``)."""
        for h in list(self._handlers.get(event, [])):
            h(self)

    async def goto(self, url: str, **_: Any) -> None:
        self.context.check_alive()
        if self.closed:
            raise FakeBrowserError("Target page, context or browser has been closed")
        await asyncio.sleep(0)
        self.context.check_alive()
        self.url = url
        self.visits.append(url)

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.emit("close")


PageFactory = Callable[["FakeContext"], Any]
"""Makes the page object of a fake context (default: :class:`FakeBrowserPage`)."""


class FakeContext:
    """A browser context holding cookies and local storage like Playwright's storage state."""

    def __init__(self, browser: FakeBrowser, storage_state: dict[str, Any] | None,
                 page_factory: PageFactory) -> None:
        self.browser = browser
        state = copy.deepcopy(storage_state) if storage_state else {}
        self.cookies: list[dict[str, Any]] = list(state.get("cookies", []))
        self.origins: list[dict[str, Any]] = list(state.get("origins", []))
        self.created_with_state = storage_state is not None
        self.options: Any = None
        """What the context was made with (tests check a spare never crosses options)."""
        self.pages: list[Any] = []
        self.closed = False
        self.init_scripts: list[str] = []
        """Scripts added to the context: like Playwright's, they reach every page of it
        (a page with an ``init_scripts`` list, as :class:`~core.flows.fakepage.FakePage`)."""
        self._page_factory = page_factory

    @property
    def native(self) -> FakeContext:
        return self

    def check_alive(self) -> None:
        if self.closed or not self.browser.connected:
            raise FakeBrowserError("Target page, context or browser has been closed")

    async def new_page(self) -> Any:
        self.check_alive()
        page = self._page_factory(self)
        if self.init_scripts and isinstance(getattr(page, "init_scripts", None), list):
            page.init_scripts.extend(self.init_scripts)
        self.pages.append(page)
        return page

    async def add_init_script(self, script: str) -> None:
        self.check_alive()
        self.init_scripts.append(script)
        for page in self.pages:
            if isinstance(getattr(page, "init_scripts", None), list):
                page.init_scripts.append(script)

    async def add_cookies(self, cookies: list[dict[str, Any]]) -> None:
        self.check_alive()
        by_key = {(c.get("name"), c.get("domain"), c.get("path")): c for c in self.cookies}
        for c in cookies:
            by_key[(c.get("name"), c.get("domain"), c.get("path"))] = dict(c)
        self.cookies = list(by_key.values())

    async def apply_storage_state(self, state: dict[str, Any], page: Any) -> None:
        """Load a saved session into this context after creation (spare contexts)."""
        await self.add_cookies(list(state.get("cookies", [])))
        by_origin = {o["origin"]: o for o in self.origins}
        for o in state.get("origins", []):
            by_origin[o["origin"]] = copy.deepcopy(o)
        self.origins = list(by_origin.values())

    async def storage_state(self) -> dict[str, Any]:
        self.check_alive()
        await asyncio.sleep(0)
        return {"cookies": copy.deepcopy(self.cookies), "origins": copy.deepcopy(self.origins)}

    async def close(self) -> None:
        if self.closed:
            return
        if self.browser.launcher.hang_on_context_close and self.browser.connected:
            await asyncio.Event().wait()  # until cancelled by the pool's timeout
        self._mark_closed()

    def _mark_closed(self) -> None:
        if not self.closed:
            self.closed = True
            self.browser.launcher.live_contexts -= 1
            for p in self.pages:
                if not getattr(p, "closed", True):
                    p.closed = True


class FakeBrowser:
    """A browser with a fake pid that can :meth:`crash` on demand."""

    def __init__(self, launcher: FakeLauncher, pid: int) -> None:
        self.launcher = launcher
        self.pid: int | None = pid
        self.connected = True
        self.killed = False
        self.contexts: list[FakeContext] = []
        self.contexts_made = 0
        self._on_disconnect: list[Callable[[], None]] = []

    def is_connected(self) -> bool:
        return self.connected

    def on_disconnect(self, callback: Callable[[], None]) -> None:
        self._on_disconnect.append(callback)

    async def new_context(self, storage_state: dict[str, Any] | None,
                          options: Any = None) -> FakeContext:
        if not self.connected:
            raise FakeBrowserError("Browser has been closed")
        if self.launcher.context_delay_s:
            await asyncio.sleep(self.launcher.context_delay_s)
            if not self.connected:
                raise FakeBrowserError("Browser has been closed")
        ctx = FakeContext(self, storage_state, self.launcher.page_factory)
        ctx.options = options  # the profile it was made with (tests check no mixing)
        self.contexts.append(ctx)
        self.contexts_made += 1
        self.launcher.live_contexts += 1
        self.launcher.contexts_made += 1
        n = self.launcher.crash_after_contexts
        if n is not None and self.contexts_made == n:
            # The crash lands while the task is using this context, like a renderer dying
            # in the middle of a page load.
            asyncio.get_running_loop().call_soon(self.crash)
        return ctx

    def crash(self) -> None:
        """Die now, as if the process was killed: contexts gone, ``disconnected`` fired."""
        if not self.connected:
            return
        self.launcher.crashes += 1
        self._die()

    def _die(self) -> None:
        if not self.connected:
            return
        self.connected = False
        self.launcher.live_browsers -= 1
        for ctx in self.contexts:
            ctx._mark_closed()
        for cb in list(self._on_disconnect):
            cb()

    async def close(self) -> None:
        if not self.connected:
            return
        if self.launcher.hang_on_close:
            await asyncio.Event().wait()  # until cancelled by the pool's timeout
        await asyncio.sleep(0)
        self._die()

    async def kill(self) -> None:
        if self.connected:
            self.killed = True
            self.launcher.kills += 1
            self._die()


class FakeLauncher:
    """Launches :class:`FakeBrowser` objects, scripted by its attributes (change them any time).

    Args:
        launch_delay_s: how long each launch takes.
        crash_after_contexts: every browser crashes right after opening this many contexts.
        hang_on_close: ``browser.close()`` never returns (the pool must kill it).
        hang_on_context_close: ``context.close()`` never returns.
        hang_on_stop: the driver's ``stop()`` never returns.
        context_delay_s: how long creating a context takes.
        fail_launch: an exception each launch raises (None: launches succeed).
        page_factory: makes each context's page (default :class:`FakeBrowserPage`).
    """

    def __init__(self, *, launch_delay_s: float = 0.0, crash_after_contexts: int | None = None,
                 hang_on_close: bool = False, hang_on_context_close: bool = False,
                 hang_on_stop: bool = False, context_delay_s: float = 0.0,
                 fail_launch: BaseException | None = None,
                 page_factory: PageFactory | None = None) -> None:
        self.launch_delay_s = launch_delay_s
        self.crash_after_contexts = crash_after_contexts
        self.hang_on_close = hang_on_close
        self.hang_on_context_close = hang_on_context_close
        self.hang_on_stop = hang_on_stop
        self.context_delay_s = context_delay_s
        self.fail_launch = fail_launch
        self.page_factory: PageFactory = page_factory or FakeBrowserPage
        self.browsers: list[FakeBrowser] = []
        self.live_browsers = 0
        self.live_contexts = 0
        self.max_live_browsers = 0
        """The most browsers ever alive at once (for cap tests)."""
        self.contexts_made = 0
        self.crashes = 0
        self.kills = 0
        self.started = False
        self.stopped = False
        self.driver_killed = False
        self._pids = itertools.count(40_000)

    @property
    def launched(self) -> int:
        return len(self.browsers)

    async def start(self) -> None:
        self.started = True

    async def launch(self) -> FakeBrowser:
        if self.launch_delay_s:
            await asyncio.sleep(self.launch_delay_s)
        if self.fail_launch is not None:
            raise self.fail_launch
        b = FakeBrowser(self, next(self._pids))
        self.browsers.append(b)
        self.live_browsers += 1
        self.max_live_browsers = max(self.max_live_browsers, self.live_browsers)
        return b

    async def stop(self) -> None:
        if self.hang_on_stop:
            await asyncio.Event().wait()
        # Like Playwright's driver: stopping it takes its browsers down.
        for b in self.browsers:
            b._die()
        self.stopped = True

    async def kill(self) -> None:
        self.driver_killed = True
        for b in self.browsers:
            await b.kill()
