"""The browser pool driving real Chromium against a tiny local site on 127.0.0.1.

One event loop, site and pool are shared by the module (launching Chromium is the slow part).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import signal
import threading
import time
from collections.abc import Coroutine, Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import psutil
import pytest

from core.browser.discovery import discover, doctor
from core.browser.playwright import PlaywrightBrowser, PlaywrightLauncher
from core.browser.pool import BrowserPool
from core.browser.sessions import SessionStore
from core.config import BrowserSettings, PoolSettings
from core.errors import BrowserCrashed
from core.vault import Vault

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"


def browser_settings() -> BrowserSettings:
    path = CHROMIUM if os.path.exists(CHROMIUM) else ""
    return BrowserSettings(executable_path=path)


class Site(http.server.BaseHTTPRequestHandler):
    """``/set?v=X`` sets cookie sid=X; ``/echo`` shows the sid cookie it received."""

    def do_GET(self) -> None:
        url = urlparse(self.path)
        sid = SimpleCookie(self.headers.get("Cookie", "")).get("sid")
        body = f"<p id='sid'>{sid.value if sid else 'none'}</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        if url.path == "/set":
            value = parse_qs(url.query)["v"][0]
            self.send_header("Set-Cookie", f"sid={value}; Path=/; Max-Age=3600")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


class HangingBrowser(PlaywrightBrowser):
    async def close(self) -> None:
        await asyncio.Event().wait()


class RecordingLauncher(PlaywrightLauncher):
    """Remembers every browser it launched (pids and temporary profiles to check for leaks).

    With ``hang=True`` its browsers never close politely and the driver never stops, so only
    the pool's last resort (killing process trees) can clean up.
    """

    def __init__(self, *args: Any, hang: bool = False, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.launched: list[PlaywrightBrowser] = []
        self.hang = hang

    async def launch(self) -> PlaywrightBrowser:
        b = await super().launch()
        if self.hang:
            b.__class__ = HangingBrowser
        self.launched.append(b)
        return b

    async def stop(self) -> None:
        if self.hang:
            await asyncio.Event().wait()
        await super().stop()


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


@pytest.fixture(scope="module")
def shared(loop: asyncio.AbstractEventLoop, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[BrowserPool, RecordingLauncher, SessionStore]]:
    home = tmp_path_factory.mktemp("pool-home")
    store = SessionStore(home / "sessions", Vault.open(home, use_keyring=False))
    launcher = RecordingLauncher(browser_settings())
    # close_timeout_s also bounds the session save after a task: long, for a loaded machine
    pool = BrowserPool(PoolSettings(max_browsers=1, warm=1, close_timeout_s=30),
                       browser_settings(),
                       launcher=launcher, sessions=store)
    loop.run_until_complete(pool.start())
    yield pool, launcher, store
    loop.run_until_complete(pool.close())


def run(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> Any:
    return loop.run_until_complete(coro)


def test_doctor_finds_the_machines_chromium() -> None:
    report = doctor(browser_settings())
    assert report.ok, report.to_text()
    choice = discover(browser_settings())
    assert choice.version and any(ch.isdigit() for ch in choice.version)


def test_a_shops_cookie_is_carried_to_its_next_task_only(
        loop: asyncio.AbstractEventLoop, site: str,
        shared: tuple[BrowserPool, RecordingLauncher, SessionStore]) -> None:
    pool, _, store = shared

    async def main() -> tuple[str, str, str]:
        async with pool.task_context("shop-a") as tc:
            await tc.page.goto(f"{site}/set?v=logged-in-a")
            first = await tc.page.text_content("#sid")
        async with pool.task_context("shop-a") as tc:
            await tc.page.goto(f"{site}/echo")
            again = await tc.page.text_content("#sid")
        async with pool.task_context("shop-b") as tc:
            await tc.page.goto(f"{site}/echo")
            other = await tc.page.text_content("#sid")
        return first or "", again or "", other or ""

    first, again, other = run(loop, main())
    assert first == "none"  # the cookie was only just set
    assert again == "logged-in-a"
    assert other == "none"
    assert b"logged-in-a" not in store.path_for("shop-a").read_bytes()


def test_killing_the_browser_mid_task_gives_browser_crashed_then_the_next_task_works(
        loop: asyncio.AbstractEventLoop, site: str,
        shared: tuple[BrowserPool, RecordingLauncher, SessionStore]) -> None:
    pool, launcher, _ = shared

    async def main() -> str:
        async with pool.task_context("shop-a") as tc:    # a session saved before the crash
            await tc.page.goto(f"{site}/set?v=before-crash-a")
        with pytest.raises(BrowserCrashed, match="closed unexpectedly"):
            async with pool.task_context("shop-a") as tc:
                await tc.page.goto(f"{site}/echo")
                pid = launcher.launched[-1].pid
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
                await tc.page.goto(f"{site}/echo")
        async with pool.task_context("shop-a") as tc:
            await tc.page.goto(f"{site}/echo")
            return await tc.page.text_content("#sid") or ""

    crashed_before = pool.stats().crashed
    text = run(loop, main())
    assert pool.stats().crashed == crashed_before + 1
    assert text == "before-crash-a"  # the page works, with the session saved before the crash


def test_spare_context_loads_cookies_and_local_storage(
        loop: asyncio.AbstractEventLoop, site: str, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions", Vault.open(tmp_path, use_keyring=False))

    async def main() -> tuple[str, str | None, int, int]:
        async with BrowserPool(PoolSettings(max_browsers=1, warm=1, close_timeout_s=30),
                               browser_settings(),
                               sessions=store, prewarm_contexts=True) as pool:
            async with pool.task_context("shop-a") as tc:
                await tc.page.goto(f"{site}/set?v=spare-ok")
                await tc.page.evaluate("localStorage.setItem('cart', '3 items')")
            for _ in range(1200):  # the spare is made in the background (60 s backstop)
                if pool.stats().contexts_alive == 1:
                    break
                await asyncio.sleep(0.05)
            spare_ready = pool.stats().contexts_alive
            async with pool.task_context("shop-a") as tc:
                await tc.page.goto(f"{site}/echo")
                sid = await tc.page.text_content("#sid") or ""
                cart = await tc.page.evaluate("localStorage.getItem('cart')")
            return sid, cart, spare_ready, pool.stats().launched

    sid, cart, spare_ready, launched = run(loop, main())
    assert spare_ready == 1
    assert (sid, cart) == ("spare-ok", "3 items")
    assert launched == 1


def chromium_children() -> set[tuple[int, float]]:
    """Live Chromium processes under this test process, as (pid, start time)."""
    found = set()
    for p in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if p.status() != psutil.STATUS_ZOMBIE and "chrom" in p.name().lower():
                found.add((p.pid, p.create_time()))
    return found


def process_tree(pid: int) -> set[tuple[int, float]]:
    root = psutil.Process(pid)
    return {(p.pid, p.create_time()) for p in [root, *root.children(recursive=True)]}


@pytest.mark.parametrize("hang", [False, True], ids=["polite", "hanging"])
def test_close_leaves_no_browser_process_and_no_temp_profile(
        loop: asyncio.AbstractEventLoop, site: str, hang: bool) -> None:
    launcher = RecordingLauncher(browser_settings(), hang=hang)
    before = chromium_children()  # other pools of this module may be running
    trees: set[tuple[int, float]] = set()

    async def main() -> None:
        pool = BrowserPool(PoolSettings(max_browsers=2, warm=2, close_timeout_s=1.0),
                           browser_settings(), launcher=launcher)
        await pool.start()
        release = asyncio.Event()

        async def hold() -> None:
            async with pool.task_context("shop-x") as tc:
                await tc.page.goto(f"{site}/echo")
                await release.wait()

        holder = asyncio.create_task(hold())
        async with pool.task_context("shop-y") as tc:
            await tc.page.goto(f"{site}/echo")
        for b in launcher.launched:
            assert b.pid is not None
            trees.update(process_tree(b.pid))
        # One browser is killed the hard way: its reaping must clean up too.
        pid = launcher.launched[0].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        release.set()
        await asyncio.gather(holder, return_exceptions=True)
        await pool.close()

    run(loop, main())
    assert len(launcher.launched) >= 2
    assert len(trees) > len(launcher.launched)  # renderers and helpers were seen too
    profiles = [b.profile_dir for b in launcher.launched]
    assert all(profiles), "every browser's temporary profile was known"

    def survivors() -> list[psutil.Process]:
        alive = []
        for pid, created in trees:
            with contextlib.suppress(psutil.NoSuchProcess):
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
        return alive

    def profiles_left() -> list[str]:
        return [p for p in profiles if p and os.path.exists(p)]

    # close() returns within its own bound; a kill it escalated to may still be finishing in
    # its thread on a loaded machine: wait for the outcome (a backstop, not a speed check).
    end = time.monotonic() + 30
    while (survivors() or profiles_left()
           or not chromium_children() <= before) and time.monotonic() < end:
        time.sleep(0.1)
    assert chromium_children() <= before
    assert survivors() == []
    assert profiles_left() == []
