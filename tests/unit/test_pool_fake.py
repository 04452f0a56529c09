"""The browser pool against the scripted fake browser: caps, warm-up, recycling, crashes,
close escalation and encrypted sessions, without a real browser. Also browser discovery."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from core.browser import discovery
from core.browser.discovery import doctor, launch_args
from core.browser.fake import FakeBrowserError, FakeBrowserPage, FakeContext, FakeLauncher
from core.browser.pool import BrowserPool, PoolStats
from core.browser.sessions import SessionStore
from core.config import BrowserSettings, PoolSettings
from core.errors import BrowserCrashed, EnvironmentProblem, Refused
from core.profiles import ContextOptions
from core.testing import FakeClock
from core.vault import Vault

BROWSER = BrowserSettings()


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def settings(**kw: Any) -> PoolSettings:
    base: dict[str, Any] = {"max_browsers": 2, "warm": 0, "close_timeout_s": 0.05}
    base.update(kw)
    return PoolSettings(**base)


async def eventually(cond: Callable[[], bool], what: str, tries: int = 600) -> None:
    """Let background work run until ``cond`` holds: first bare loop turns, then short real
    naps (for the pool's close timeouts); gives up after a bounded number of tries."""
    for i in range(tries):
        if cond():
            return
        await asyncio.sleep(0 if i < 100 else 0.01)
    raise AssertionError(f"never happened: {what}")


def sessions(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions", Vault.open(tmp_path, use_keyring=False))


def cookie(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value, "domain": "seller.example", "path": "/",
            "expires": -1, "httpOnly": False, "secure": False, "sameSite": "Lax"}


# --------------------------------------------------------------------------- warm-up and caps


def test_start_warms_browsers_and_close_leaves_nothing_alive() -> None:
    launcher = FakeLauncher()

    async def main() -> PoolStats:
        async with BrowserPool(settings(max_browsers=3, warm=2), BROWSER,
                               launcher=launcher) as pool:
            assert launcher.live_browsers == 2
            stats = pool.stats()
        return stats

    stats = run(main())
    assert stats.browsers_alive == 2 and stats.launched == 2
    assert launcher.live_browsers == 0 and launcher.live_contexts == 0
    assert launcher.stopped


@pytest.mark.parametrize("per_browser", [1, 3])
def test_cap_holds_under_concurrency_and_every_task_runs(per_browser: int) -> None:
    launcher = FakeLauncher(launch_delay_s=0.001)
    running = 0
    most = 0
    done: list[int] = []

    async def task(pool: BrowserPool, i: int) -> None:
        nonlocal running, most
        async with pool.task_context(f"shop-{i}") as tc:
            running += 1
            most = max(most, running)
            await tc.page.goto(f"http://seller.example/{i}")
            for _ in range(5):
                await asyncio.sleep(0)
            running -= 1
        done.append(i)

    async def main() -> int:
        async with BrowserPool(settings(max_browsers=2), BROWSER, launcher=launcher,
                               contexts_per_browser=per_browser) as pool:
            await asyncio.gather(*(task(pool, i) for i in range(20)))
            return pool.capacity

    capacity = run(main())
    assert capacity == 2 * per_browser
    assert sorted(done) == list(range(20))
    assert launcher.max_live_browsers <= 2
    assert most == capacity  # the pool was used fully, never beyond
    assert launcher.live_browsers == 0 and launcher.live_contexts == 0


def test_each_task_gets_a_fresh_context_and_page() -> None:
    launcher = FakeLauncher()

    async def main() -> list[Any]:
        seen = []
        async with BrowserPool(settings(max_browsers=1), BROWSER, launcher=launcher) as pool:
            for shop in ("a", "a", "b"):
                async with pool.task_context(shop) as tc:
                    seen.append(tc.context)
                    assert isinstance(tc.page, FakeBrowserPage)
                    assert tc.page.url == "about:blank"
        return seen

    seen = run(main())
    assert len({id(c) for c in seen}) == 3
    assert all(c.closed for c in seen)


def test_page_factory_is_used_for_pages() -> None:
    class MyPage(FakeBrowserPage):
        pass

    launcher = FakeLauncher(page_factory=MyPage)

    async def main() -> None:
        async with BrowserPool(settings(), BROWSER, launcher=launcher) as pool, \
                pool.task_context("a") as tc:
            assert isinstance(tc.page, MyPage)

    run(main())


# --------------------------------------------------------------------------- recycling


def test_browser_is_retired_after_tasks_per_browser_tasks() -> None:
    launcher = FakeLauncher()

    async def main() -> tuple[list[int], PoolStats]:
        ids = []
        async with BrowserPool(settings(max_browsers=1, warm=1, tasks_per_browser=3), BROWSER,
                               launcher=launcher) as pool:
            for i in range(7):
                async with pool.task_context(f"shop-{i}") as tc:
                    ids.append(tc.browser_id)
            stats = pool.stats()
        return ids, stats

    ids, stats = run(main())
    assert ids == [1, 1, 1, 2, 2, 2, 3]
    assert all(b.contexts_made <= 3 for b in launcher.browsers)
    assert stats.retired == 2 and stats.tasks_served == 7
    assert launcher.max_live_browsers == 1


def test_idle_browsers_beyond_warm_are_retired_by_the_janitor() -> None:
    clock = FakeClock()
    launcher = FakeLauncher()
    gate = asyncio.Event

    async def main() -> None:
        release = gate()
        pool = BrowserPool(settings(max_browsers=3, warm=1, idle_retire_s=60), BROWSER,
                           launcher=launcher, clock=clock)
        async with pool:

            async def hold(i: int) -> None:
                async with pool.task_context(f"shop-{i}"):
                    await release.wait()

            tasks = [asyncio.create_task(hold(i)) for i in range(3)]
            await eventually(lambda: launcher.live_contexts == 3, "three tasks running")
            release.set()
            await asyncio.gather(*tasks)
            assert pool.stats().browsers_alive == 3

            clock.advance(59)
            for _ in range(50):
                await asyncio.sleep(0)
            assert pool.stats().browsers_alive == 3, "retired before idle_retire_s"

            clock.advance(2)
            await eventually(lambda: pool.stats().browsers_alive == 1, "idle browsers retired")
            assert pool.stats().retired == 2
            # The warm one stays, however long it idles.
            clock.advance(3600)
            for _ in range(50):
                await asyncio.sleep(0)
            assert pool.stats().browsers_alive == 1
            async with pool.task_context("later") as tc:
                await tc.page.goto("http://seller.example/")

    run(main())
    assert launcher.live_browsers == 0


# --------------------------------------------------------------------------- crashes


def test_browser_killed_mid_task_raises_browser_crashed_and_next_task_gets_a_new_one() -> None:
    launcher = FakeLauncher()

    async def main() -> tuple[int, int, PoolStats]:
        async with BrowserPool(settings(max_browsers=1, warm=1), BROWSER,
                               launcher=launcher) as pool:
            with pytest.raises(BrowserCrashed, match="browser closed unexpectedly") as info:
                async with pool.task_context("a") as tc:
                    first = tc.browser_id
                    launcher.browsers[0].crash()
                    await tc.page.goto("http://seller.example/")
            assert isinstance(info.value.__cause__, FakeBrowserError)
            async with pool.task_context("a") as tc:
                await tc.page.goto("http://seller.example/")
                second = tc.browser_id
            return first, second, pool.stats()

    first, second, stats = run(main())
    assert first != second
    assert stats.crashed == 1 and stats.launched == 2
    assert launcher.live_browsers == 0


def test_scripted_crash_after_n_contexts() -> None:
    launcher = FakeLauncher(crash_after_contexts=2)
    outcomes: list[str] = []

    async def main() -> None:
        async with BrowserPool(settings(max_browsers=1), BROWSER, launcher=launcher) as pool:
            for _ in range(4):
                try:
                    async with pool.task_context("a") as tc:
                        await tc.page.goto("http://seller.example/")
                    outcomes.append("ok")
                except BrowserCrashed:
                    outcomes.append("crashed")

    run(main())
    assert outcomes == ["ok", "crashed", "ok", "crashed"]
    assert launcher.live_browsers == 0 and launcher.live_contexts == 0


def test_crash_while_task_returns_normally_still_reports_browser_crashed() -> None:
    launcher = FakeLauncher()

    async def main() -> None:
        async with BrowserPool(settings(), BROWSER, launcher=launcher) as pool:
            with pytest.raises(BrowserCrashed):
                async with pool.task_context("a"):
                    launcher.browsers[0].crash()

    run(main())


def test_renderer_crash_raises_browser_crashed_and_keeps_the_browser() -> None:
    launcher = FakeLauncher()

    async def main() -> PoolStats:
        async with BrowserPool(settings(max_browsers=1), BROWSER, launcher=launcher) as pool:
            with pytest.raises(BrowserCrashed, match="renderer crashed"):
                async with pool.task_context("a") as tc:
                    tc.page.emit("crash")
                    raise RuntimeError("page went blank")
            async with pool.task_context("a") as tc:
                assert tc.browser_id == 1
            return pool.stats()

    stats = run(main())
    assert stats.crashed == 0 and stats.launched == 1


def test_ordinary_task_errors_pass_through_unchanged() -> None:
    async def main() -> None:
        async with BrowserPool(settings(), BROWSER, launcher=FakeLauncher()) as pool:
            with pytest.raises(KeyError):
                async with pool.task_context("a"):
                    raise KeyError("x")

    run(main())


def test_launch_failure_is_reported_as_environment_problem() -> None:
    launcher = FakeLauncher(fail_launch=EnvironmentProblem("no browser here"))

    async def main() -> None:
        with pytest.raises(EnvironmentProblem, match="no browser here"):
            async with BrowserPool(settings(warm=1), BROWSER, launcher=launcher):
                pass
        async with BrowserPool(settings(warm=0), BROWSER, launcher=launcher) as pool:
            with pytest.raises(EnvironmentProblem):
                async with pool.task_context("a"):
                    pass
            launcher.fail_launch = None
            async with pool.task_context("a") as tc:  # the slot was given back
                await tc.page.goto("http://seller.example/")

    run(main())


# --------------------------------------------------------------------------- closing


def test_close_escalates_to_kill_when_browser_close_hangs() -> None:
    launcher = FakeLauncher(hang_on_close=True, hang_on_context_close=True, hang_on_stop=True)

    async def main() -> None:
        pool = BrowserPool(settings(max_browsers=2, warm=2), BROWSER, launcher=launcher)
        await pool.start()
        await pool.close()

    run(main())
    assert launcher.live_browsers == 0 and launcher.live_contexts == 0
    assert launcher.driver_killed


def test_retiring_a_browser_that_hangs_on_close_kills_it() -> None:
    launcher = FakeLauncher(hang_on_close=True)

    async def main() -> PoolStats:
        async with BrowserPool(settings(max_browsers=1, tasks_per_browser=1), BROWSER,
                               launcher=launcher) as pool:
            async with pool.task_context("a"):
                pass
            await eventually(lambda: launcher.live_browsers == 0, "hung browser killed")
            return pool.stats()

    stats = run(main())
    assert launcher.browsers[0].killed and stats.retired == 1


def test_a_context_that_hangs_on_close_gets_its_browser_retired() -> None:
    launcher = FakeLauncher(hang_on_context_close=True)

    async def main() -> None:
        async with BrowserPool(settings(max_browsers=1), BROWSER, launcher=launcher) as pool:
            async with pool.task_context("a") as tc:
                first = tc.browser_id
            async with pool.task_context("a") as tc:
                assert tc.browser_id != first

    run(main())
    assert launcher.live_browsers == 0


def test_tasks_are_refused_once_the_pool_closes() -> None:
    async def main() -> None:
        pool = BrowserPool(settings(), BROWSER, launcher=FakeLauncher())
        await pool.start()
        await pool.close()
        with pytest.raises(Refused):
            async with pool.task_context("a"):
                pass

    run(main())


def test_waiting_task_is_refused_when_the_pool_closes() -> None:
    async def main() -> None:
        pool = BrowserPool(settings(max_browsers=1), BROWSER, launcher=FakeLauncher())
        await pool.start()
        release = asyncio.Event()

        async def holder() -> None:
            async with pool.task_context("a"):
                await release.wait()

        async def waiter() -> None:
            async with pool.task_context("b"):
                pass

        h = asyncio.create_task(holder())
        await eventually(lambda: pool.stats().contexts_alive == 1, "holder running")
        w = asyncio.create_task(waiter())
        await asyncio.sleep(0)
        closing = asyncio.create_task(pool.close())
        with pytest.raises(Refused):
            await w
        release.set()
        await closing
        await asyncio.gather(h, return_exceptions=True)

    run(main())


# --------------------------------------------------------------------------- sessions


def test_session_is_saved_encrypted_and_reloaded_for_the_same_shop(tmp_path: Path) -> None:
    store = sessions(tmp_path)
    launcher = FakeLauncher()

    async def main() -> None:
        async with BrowserPool(settings(), BROWSER, launcher=launcher, sessions=store) as pool:
            async with pool.task_context("shop-a") as tc:
                await tc.context.add_cookies([cookie("sid", "s3cret-cookie-value")])
            async with pool.task_context("shop-a") as tc:
                ctx: FakeContext = tc.context
                assert [c["value"] for c in ctx.cookies] == ["s3cret-cookie-value"]
            async with pool.task_context("shop-b") as tc:
                assert tc.context.cookies == []

    run(main())
    raw = store.path_for("shop-a").read_bytes()
    assert b"s3cret-cookie-value" not in raw and b"sid" not in raw

    # A new pool (the app restarted) still has the shop logged in.
    async def again() -> list[str]:
        async with BrowserPool(settings(), BROWSER, launcher=FakeLauncher(),
                               sessions=sessions(tmp_path)) as pool, \
                pool.task_context("shop-a") as tc:
            return [c["value"] for c in tc.context.cookies]

    assert run(again()) == ["s3cret-cookie-value"]


def test_session_is_saved_even_when_the_task_fails(tmp_path: Path) -> None:
    store = sessions(tmp_path)

    async def main() -> dict[str, Any] | None:
        async with BrowserPool(settings(), BROWSER, launcher=FakeLauncher(),
                               sessions=store) as pool:
            with pytest.raises(ValueError):
                async with pool.task_context("shop-a") as tc:
                    await tc.context.add_cookies([cookie("sid", "v1")])
                    raise ValueError("step failed after login")
        return await store.load("shop-a")

    state = run(main())
    assert state is not None and state["cookies"][0]["value"] == "v1"


def test_cancelled_task_still_saves_its_session_and_closes_its_context(tmp_path: Path) -> None:
    store = sessions(tmp_path)
    launcher = FakeLauncher()

    async def main() -> dict[str, Any] | None:
        async with BrowserPool(settings(), BROWSER, launcher=launcher, sessions=store) as pool:
            entered = asyncio.Event()

            async def task() -> None:
                async with pool.task_context("shop-a") as tc:
                    await tc.context.add_cookies([cookie("sid", "kept")])
                    entered.set()
                    await asyncio.Event().wait()

            t = asyncio.create_task(task())
            await entered.wait()
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            await eventually(lambda: launcher.live_contexts == 0, "context closed")
            return await store.load("shop-a")

    state = run(main())
    assert state is not None and state["cookies"][0]["value"] == "kept"


def test_unreadable_session_is_treated_as_absent(tmp_path: Path) -> None:
    store = sessions(tmp_path)
    run(store.save("shop-a", {"cookies": [cookie("sid", "x")], "origins": []}))
    other = SessionStore(tmp_path / "sessions", Vault.open(tmp_path / "elsewhere",
                                                           use_keyring=False))
    assert run(other.load("shop-a")) is None
    assert run(store.load("shop-a")) is not None


def test_session_file_names_are_safe_for_any_shop_name(tmp_path: Path) -> None:
    store = sessions(tmp_path)
    names = ["../../etc/passwd", "店铺 1", "a/b", "A", "a"]
    paths = {store.path_for(n) for n in names}
    assert len(paths) == len(names)
    assert all(p.parent == store.directory for p in paths)


# --------------------------------------------------------------------------- spare contexts


def test_spare_context_is_used_and_gets_the_shop_session(tmp_path: Path) -> None:
    store = sessions(tmp_path)
    run(store.save("shop-a", {"cookies": [cookie("sid", "abc")],
                              "origins": [{"origin": "http://seller.example",
                                           "localStorage": [{"name": "k", "value": "v"}]}]}))
    launcher = FakeLauncher()

    async def main() -> None:
        async with BrowserPool(settings(max_browsers=1), BROWSER, launcher=launcher,
                               sessions=store, prewarm_contexts=True) as pool:
            async with pool.task_context("shop-b"):
                pass
            await eventually(lambda: pool.stats().contexts_alive == 1, "spare ready")
            made = launcher.contexts_made
            async with pool.task_context("shop-a") as tc:
                assert launcher.contexts_made == made  # no new context: the spare was used
                assert not tc.context.created_with_state
                assert [c["value"] for c in tc.context.cookies] == ["abc"]
                assert tc.context.origins[0]["localStorage"] == [{"name": "k", "value": "v"}]

    run(main())
    assert launcher.live_contexts == 0 and launcher.live_browsers == 0


def test_spares_serve_only_shops_with_the_spares_profile() -> None:
    """#17: a context made ahead carries the options it was made with; a shop with a profile
    of its own gets a context made for it, never a spare made for other options."""
    plain = ContextOptions()
    profiled = ContextOptions(locale="en-US", timezone_id="America/New_York",
                              proxy_server="http://127.0.0.1:9", proxy_username="u",
                              proxy_password="pw")
    launcher = FakeLauncher()

    async def main() -> None:
        async with BrowserPool(settings(max_browsers=1), BROWSER, launcher=launcher,
                               prewarm_contexts=True, spare_options=plain) as pool:
            async with pool.task_context("shop-plain", plain):
                pass
            await eventually(lambda: pool.stats().contexts_alive == 1, "spare ready")
            made = launcher.contexts_made
            async with pool.task_context("shop-profiled", profiled) as tc:
                assert launcher.contexts_made == made + 1  # made for it, not the spare
                assert tc.context.options == profiled and tc.options == profiled
            # The browser's next spare follows its last task's options (#20: the pool's
            # spares are keyed by options); whatever it holds, a plain shop never gets the
            # profiled one.
            await eventually(lambda: pool.stats().contexts_alive == 1, "a spare again")
            async with pool.task_context("shop-plain", plain) as tc:
                assert tc.context.options == plain and tc.options == plain

    run(main())
    assert launcher.live_contexts == 0


# --------------------------------------------------------------------------- discovery


def test_launch_args_add_no_sandbox_only_for_root_on_linux(
        monkeypatch: pytest.MonkeyPatch) -> None:
    s = BrowserSettings(host_resolver_rules="MAP *.shopfleet.test 127.0.0.1",
                        extra_args=["--lang=zh-CN"])
    monkeypatch.setattr(discovery, "_platform", lambda: "linux")
    root = launch_args(s, as_root=True)
    assert root[0] == "--no-sandbox"
    assert "--host-resolver-rules=MAP *.shopfleet.test 127.0.0.1" in root
    assert root[-1] == "--lang=zh-CN"
    assert "--no-sandbox" not in launch_args(s, as_root=False)
    monkeypatch.setattr(discovery, "_platform", lambda: "win32")
    assert "--no-sandbox" not in launch_args(s, as_root=True)
    assert "--disable-background-networking" in launch_args(BrowserSettings(), as_root=False)


def fake_browser(path: Path, version: str = "Chromium 126.0.1.2") -> Path:
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(0o755)
    return path


@pytest.mark.skipif(os.name != "posix", reason="uses a shell script as the browser")
def test_configured_path_wins_and_reports_its_version(tmp_path: Path) -> None:
    exe = fake_browser(tmp_path / "chrome")
    report = doctor(BrowserSettings(executable_path=str(exe)))
    assert report.choice is not None
    assert report.choice.kind == "configured"
    assert report.choice.executable_path == str(exe)
    assert report.choice.version == "Chromium 126.0.1.2"
    assert json.loads(json.dumps(report.to_json()))["ok"] is True


def test_missing_configured_path_says_how_to_fix_it(tmp_path: Path) -> None:
    report = doctor(BrowserSettings(executable_path=str(tmp_path / "nope")))
    first = report.findings[0]
    assert first.status == "failed" and "does not exist" in first.detail
    assert "executable_path" in first.fix


@pytest.mark.skipif(os.name != "posix", reason="uses a shell script as the browser")
def test_playwright_download_is_found_in_its_cache(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "chromium-1234" / "chrome-linux64"
    folder.mkdir(parents=True)
    exe = fake_browser(folder / "chrome", "Google Chrome for Testing 130.0")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    monkeypatch.setattr(discovery, "_platform", lambda: "linux")
    assert discovery.find_playwright_chromium() == []  # no INSTALLATION_COMPLETE: half download
    (tmp_path / "chromium-1234" / "INSTALLATION_COMPLETE").touch()
    assert discovery.find_playwright_chromium() == [exe]
    choice = doctor(BrowserSettings()).choice
    assert choice is not None and choice.kind == "playwright"


def test_nothing_found_raises_environment_problem_with_the_fix(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(discovery, "_CHANNEL_PATHS", {"chrome": {}, "msedge": {}})
    monkeypatch.setattr(discovery, "_SYSTEM_CHROMIUMS", {})
    with pytest.raises(EnvironmentProblem, match="Install Google Chrome"):
        discovery.discover(BrowserSettings())
    report = doctor(BrowserSettings())
    assert not report.ok
    assert all(f.status != "found" for f in report.findings)
    assert "No usable browser" in report.to_text()


@pytest.mark.skipif(os.name != "posix", reason="uses a shell script as the browser")
def test_a_browser_that_hangs_on_version_is_reported_not_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "chrome"
    exe.write_text("#!/bin/sh\nsleep 30\n")
    exe.chmod(0o755)
    monkeypatch.setattr(discovery, "VERSION_TIMEOUT_S", 0.2)
    with pytest.raises(EnvironmentProblem, match="did not answer"):
        discovery.read_version(exe, timeout_s=0.2)


def test_doctor_cli_exit_code_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from core.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[browser]\nexecutable_path = "{tmp_path / "missing"}"\n')
    monkeypatch.setattr(discovery, "_CHANNEL_PATHS", {"chrome": {}, "msedge": {}})
    monkeypatch.setattr(discovery, "_SYSTEM_CHROMIUMS", {})
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    assert main(["doctor", "--json", "--config", str(cfg)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["findings"][0]["status"] == "failed"

