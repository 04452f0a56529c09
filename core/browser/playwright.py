"""Chromium through Playwright, and the last resorts when it hangs: killing process trees.

:class:`PlaywrightLauncher` starts one Playwright driver and launches browsers with a marker
flag, so each browser's process (and temporary profile folder) is found among our children
without guessing from timing; :meth:`PlaywrightBrowser.kill` kills that tree and removes the
folder when a polite close hangs. The blocking helpers run in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Callable
from typing import Any

from ..config import BrowserSettings
from ..errors import EnvironmentProblem
from ..profiles import ContextOptions
from .discovery import BrowserChoice, discover, launch_args, running_as_root


def _kill_tree(pid: int, created: float | None, timeout_s: float) -> None:
    """Kill a process and its children (blocking; run it in a thread).

    ``created`` is the process's start time when it was found: a pid the OS has since given
    to another process is left alone.
    """
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return
    try:
        root = psutil.Process(pid)
        if created is not None and abs(root.create_time() - created) > 0.01:
            return
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(procs, timeout=timeout_s)


def _kill_profile_users(path: str, timeout_s: float) -> None:
    """Kill every process still running with ``--user-data-dir=path`` (blocking).

    Chromium passes its profile folder to every helper it starts. When the main process was
    killed from outside, the helpers are orphans that ``_kill_tree`` cannot reach through the
    process tree; they are found by that argument instead, so that nothing writes into the
    folder once it is removed (waiting for them to exit on their own depends on the load).
    """
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return
    flag = f"--user-data-dir={path}"
    users = []
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if flag in (p.info.get("cmdline") or ()):
                users.append(p)
    for p in users:
        with contextlib.suppress(psutil.Error):
            p.kill()
    if users:
        psutil.wait_procs(users, timeout=timeout_s)


def _remove_dir(path: str, timeout_s: float) -> None:
    """Remove a killed browser's profile folder (blocking; run it in a thread).

    Orphaned helpers of a browser killed from outside are killed first (they carry the folder
    on their command line); the removal is then repeated until the folder stays gone, with
    ``timeout_s`` only as a backstop.
    """
    deadline = time.monotonic() + max(0.5, timeout_s)
    while True:
        _kill_profile_users(path, timeout_s)
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _process_gone(pid: int | None, created: float | None) -> bool:
    """True when we know the process has exited (or is a zombie waiting to be reaped)."""
    if pid is None:
        return False
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return False
    try:
        p = psutil.Process(pid)
        if created is not None and abs(p.create_time() - created) > 0.01:
            return True
        return bool(p.status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def _find_browser_process(marker: str) -> tuple[int | None, float | None, str | None]:
    """(pid, start time, user-data-dir) of our child browser whose command line has ``marker``."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return None, None, None
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return None, None, None
    for p in children:
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if marker in cmd and not any(a.startswith("--type=") for a in cmd):
            profile = next((a.split("=", 1)[1] for a in cmd
                            if a.startswith("--user-data-dir=")), None)
            try:
                created: float | None = p.create_time()
            except psutil.Error:
                created = None
            return p.pid, created, profile
    return None, None, None


class PlaywrightContext:
    """:class:`ContextHandle` over a Playwright ``BrowserContext``."""

    def __init__(self, context: Any) -> None:
        self._ctx = context

    @property
    def native(self) -> Any:
        return self._ctx

    async def new_page(self) -> Any:
        return await self._ctx.new_page()

    async def add_init_script(self, script: str) -> None:
        """Run ``script`` in every document of the context's pages from now on."""
        await self._ctx.add_init_script(script=script)

    async def storage_state(self) -> dict[str, Any]:
        return dict(await self._ctx.storage_state())

    async def apply_storage_state(self, state: dict[str, Any], page: Any) -> None:
        cookies = state.get("cookies") or []
        if cookies:
            await self._ctx.add_cookies(cookies)
        origins = [o for o in state.get("origins", []) if o.get("localStorage")]
        if not origins:
            return

        async def blank(route: Any) -> None:
            # Never reach the site: local storage only needs a document of the right origin.
            await route.fulfill(status=200, content_type="text/html", body="<html></html>")

        await page.route("**/*", blank)
        try:
            for o in origins:
                await page.goto(o["origin"])
                await page.evaluate(
                    "items => { for (const i of items) localStorage.setItem(i.name, i.value); }",
                    o["localStorage"])
        finally:
            await page.unroute("**/*", blank)
        await page.goto("about:blank")

    async def close(self) -> None:
        await self._ctx.close()


class PlaywrightBrowser:
    """:class:`BrowserHandle` over a Playwright ``Browser`` launched by us."""

    def __init__(self, browser: Any, pid: int | None, profile_dir: str | None,
                 kill_timeout_s: float, *, created: float | None = None) -> None:
        self._browser = browser
        self._pid = pid
        self._created = created
        self._profile_dir = profile_dir
        self._kill_timeout_s = kill_timeout_s

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def profile_dir(self) -> str | None:
        """The temporary profile folder Playwright made for this browser."""
        return self._profile_dir

    def is_connected(self) -> bool:
        # The process check covers the moment between a kill and Playwright noticing it, when
        # a task's call has already failed but ``disconnected`` has not been delivered yet.
        return bool(self._browser.is_connected()) and not _process_gone(self._pid, self._created)

    def on_disconnect(self, callback: Callable[[], None]) -> None:
        self._browser.on("disconnected", lambda _b: callback())

    async def new_context(self, storage_state: dict[str, Any] | None,
                          options: ContextOptions | None = None) -> PlaywrightContext:
        kwargs = options.playwright_kwargs() if options is not None else {}
        ctx = await self._browser.new_context(storage_state=storage_state, **kwargs)
        return PlaywrightContext(ctx)

    async def close(self) -> None:
        await self._browser.close()

    async def kill(self) -> None:
        # One thread does both, so a caller that stops waiting (a timeout) cannot leave the
        # killed browser's profile folder behind: the thread finishes the removal regardless.
        await asyncio.to_thread(self._kill_and_remove)

    def _kill_and_remove(self) -> None:
        if self._pid is not None:
            _kill_tree(self._pid, self._created, self._kill_timeout_s)
        if self._profile_dir and os.path.isdir(self._profile_dir):
            # Playwright removes it on a clean close; after a kill it may be left behind.
            _remove_dir(self._profile_dir, self._kill_timeout_s)


class PlaywrightLauncher:
    """Launches Chromium-family browsers through one Playwright driver.

    Args:
        browser: the ``[browser]`` settings (path, channel, headless, extra flags).
        choice: the browser to drive; None discovers one at :meth:`start`.
    """

    def __init__(self, browser: BrowserSettings, *, choice: BrowserChoice | None = None,
                 kill_timeout_s: float = 5.0) -> None:
        self._settings = browser
        self.choice = choice
        self._kill_timeout_s = kill_timeout_s
        self._pw: Any = None
        self._driver_pid: int | None = None
        self._driver_created: float | None = None
        self._driver_proc: Any = None

    async def start(self) -> None:
        if self._pw is not None:
            return
        if self.choice is None:
            # Discovery runs `<exe> --version`: keep it off the event loop.
            self.choice = await asyncio.to_thread(discover, self._settings)
        from playwright.async_api import async_playwright

        manager = async_playwright()
        self._pw = await manager.start()
        # Private, but the only handle on the driver process for the last-resort kill.
        with contextlib.suppress(Exception):
            proc = manager._client._transport._proc  # type: ignore[union-attr]
            self._driver_proc = proc
            self._driver_pid = int(proc.pid)
            import psutil

            self._driver_created = psutil.Process(self._driver_pid).create_time()

    async def launch(self) -> PlaywrightBrowser:
        if self._pw is None or self.choice is None:
            raise RuntimeError("PlaywrightLauncher.start() was not called")
        from playwright.async_api import Error as PlaywrightError

        # A marker flag Chromium ignores, to find this browser's process (and profile folder)
        # among our children without guessing from timing.
        marker = f"--shopfleet-browser={uuid.uuid4().hex}"
        args = [*launch_args(self._settings, as_root=running_as_root()), marker]
        kwargs: dict[str, Any] = {"headless": self._settings.headless, "args": args}
        if self.choice.executable_path:
            kwargs["executable_path"] = self.choice.executable_path
        if self.choice.channel:
            kwargs["channel"] = self.choice.channel
        try:
            browser = await self._pw.chromium.launch(**kwargs)
        except PlaywrightError as exc:
            first = (exc.message or str(exc)).strip().splitlines()[0]
            raise EnvironmentProblem(
                f"could not start {self.choice.describe()}: {first}. "
                "Run `shopfleet doctor` to check the browser.") from None
        pid, created, profile = await asyncio.to_thread(_find_browser_process, marker)
        return PlaywrightBrowser(browser, pid, profile, self._kill_timeout_s, created=created)

    async def stop(self) -> None:
        if self._pw is not None:
            pw, self._pw = self._pw, None
            await pw.stop()

    async def kill(self) -> None:
        self._pw = None
        if self._driver_pid is not None:
            await asyncio.to_thread(
                _kill_tree, self._driver_pid, self._driver_created, self._kill_timeout_s)
        proc, self._driver_proc = self._driver_proc, None
        if proc is not None:
            # Reap it and close its pipes: the stop() that would have done so was abandoned.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), self._kill_timeout_s)
            with contextlib.suppress(Exception):
                proc._transport.close()


# --------------------------------------------------------------------------- sessions
