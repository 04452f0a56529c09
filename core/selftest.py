"""The installed app's self-test: ``shopfleet self-test``, or ``shopfleet --self-test`` in the
frozen app (the commands are :mod:`core.cli.selftest`).

Without a window, in a temporary data folder (``SHOPFLEET_HOME`` points there for the run, so
the user's real data, keychain and configuration are never written), it:

1. finds the browser ShopFleet would drive (the user's ``[browser]`` configuration is honoured,
   read-only), and prints the doctor's findings when none works;
2. starts the built-in demo seller site on 127.0.0.1;
3. opens a fresh database, registers the demo shops with their logins;
4. runs one ``collect_data`` task through the real engine and browser pool;
5. checks the task finished, the rows it extracted are the ones the site shows, the site
   saw exactly one login and no write, and every request came with the shop's profile (#17:
   the demo shop gets a locale and a user agent of its own, as an operator's would).

It prints one line per step and exits 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .config import Settings, load_settings
from .errors import ShopFleetError
from .version import __version__

SHOP = "pdd-1"
"""The demo shop the self-test collects data for."""
PAGE = 7
"""The statistics page it reads (any page 1..500 of the demo site works)."""
TIMEOUT_S = 180.0
PROFILE_LOCALE = "en-US"
"""The self-test shop's own locale (#17): not the built-in zh-CN, so seeing it proves the
shop's profile reached the browser."""
PROFILE_UA = f"Mozilla/5.0 (ShopFleet self-test {__version__})"
"""How long the task may take in total (a first browser start on Windows can be slow)."""


@dataclass(frozen=True)
class Check:
    """One step of the self-test and how it went."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class SelfTestReport:
    """Every step that ran, in order; the self-test passed when all of them did."""

    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


def _user_config() -> Path | None:
    """The user's configuration file, located without creating the data folder."""
    import platformdirs

    from .paths import APP_NAME

    env = os.environ.get("SHOPFLEET_HOME")
    home = Path(env) if env else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    path = home / "shopfleet.toml"
    return path if path.is_file() else None


def self_test_settings(user: Settings) -> Settings:
    """The demo's settings with the user's browser choice and a single browser."""
    from .demo import demo_settings

    base = Settings().with_changes(browser=user.browser.model_dump())
    return demo_settings(base).with_changes(
        pool={"max_browsers": 1, "warm": 1, "step_timeout_s": 30},
        queue={"max_attempts": 2, "retry_backoff_s": 1})


@contextlib.contextmanager
def _temporary_home(keep: bool) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="shopfleet-selftest-"))
    before = os.environ.get("SHOPFLEET_HOME")
    os.environ["SHOPFLEET_HOME"] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop("SHOPFLEET_HOME", None)
        else:
            os.environ["SHOPFLEET_HOME"] = before
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


async def _run_one_task(settings: Settings, home: Path, report: SelfTestReport,
                        say: Callable[[Check], None], timeout_s: float) -> None:
    from .build import build_engine, open_store
    from .demo import register_demo_shops
    from .demosite import DemoSite, stats_rows
    from .engine.browser_executor import BrowserExecutor
    from .profiles import ShopProfile
    from .specs import TaskSpec
    from .store import TaskState
    from .vault import Vault

    def check(name: str, ok: bool, detail: str = "") -> bool:
        c = Check(name, ok, detail)
        report.checks.append(c)
        say(c)
        return ok

    site = await asyncio.to_thread(DemoSite().start)
    try:
        check("demo site started", True, f"127.0.0.1:{site.port}")
        store = await asyncio.to_thread(open_store, settings, home / "selftest.db")
        try:
            # Never the OS keychain: a key made here must not shadow the user's real one.
            vault = await asyncio.to_thread(Vault.open, home, use_keyring=False)
            await asyncio.to_thread(register_demo_shops, store, site, vault)
            await asyncio.to_thread(store.set_shop_profile, SHOP, ShopProfile(
                locale=PROFILE_LOCALE, user_agent=PROFILE_UA), proxy_password_enc=None)
            check("temporary database opened", True,
                  f"{home / 'selftest.db'}, {len(store.shops())} demo shops")
            spec = TaskSpec.model_validate({
                "key": "self-test", "type": "collect_data", "shop": SHOP,
                "flow": "collect_data", "params": {"page": PAGE}})
            executor = BrowserExecutor(settings, store, home=home, vault=vault)
            engine = build_engine(settings, store, executor=executor, home=home)
            started = time.monotonic()
            async with engine:
                [task_id] = await engine.submit([spec])
                try:
                    await asyncio.wait_for(engine.run_until_idle(), timeout_s)
                except TimeoutError:
                    check("task ran", False, f"not finished after {timeout_s:g}s")
                    return
            took = time.monotonic() - started
            task = await asyncio.to_thread(store.task, task_id)
            if not check("task ran in the browser", task.state is TaskState.DONE,
                         f"collect_data for {SHOP} page {PAGE}: {task.state.value} "
                         f"in {took:.1f}s"
                         + (f" ({task.error_class}: {task.last_error})"
                            if task.state is not TaskState.DONE else "")):
                if task.evidence:
                    say(Check("evidence of the failure", False, str(task.evidence)))
                return
            results = task.results or {}
            want = [sku for sku, _, _ in stats_rows(SHOP, PAGE)]
            got = list(results.get("skus") or [])
            check("extracted data is what the site shows", bool(got) and got == want,
                  f"{len(got)} rows, first {got[:1]}" if got == want
                  else f"expected {len(want)} SKUs {want[:2]}..., got {got[:2]}...")
            logins = site.logins(shop=SHOP)
            writes = site.records()
            check("the site saw one login and no write", len(logins) == 1 and not writes,
                  f"{len(logins)} login(s), {len(writes)} write(s)")
            shop_platform = (await asyncio.to_thread(store.shop, SHOP)).platform
            seen = site.requests(platform=shop_platform)
            langs = sorted({r["accept_language"] for r in seen})
            agents = sorted({r["user_agent"] for r in seen})
            # Chromium sends the locale (Playwright's own Accept-Language for it).
            lang_ok = bool(langs) and all(v.startswith(PROFILE_LOCALE) for v in langs)
            check("the shop's profile reached the site",
                  bool(seen) and lang_ok and agents == [PROFILE_UA],
                  f"{len(seen)} requests with Accept-Language {', '.join(langs)} and the "
                  + ("shop's own user agent" if agents == [PROFILE_UA]
                     else f"user agent(s) {agents}"))
        finally:
            await asyncio.to_thread(store.close)
    finally:
        await asyncio.to_thread(site.close)


def _print_check(out: TextIO) -> Callable[[Check], None]:
    def say(c: Check) -> None:
        mark = "ok  " if c.ok else "FAIL"
        print(f"[{mark}] {c.name}" + (f": {c.detail}" if c.detail else ""), file=out, flush=True)
    return say


def run_self_test(*, config: str | Path | None = None, keep: bool = False,
                  timeout_s: float = TIMEOUT_S, out: TextIO | None = None) -> int:
    """Run the self-test, printing each step to ``out`` (stdout by default).

    Args:
        config: a configuration file whose ``[browser]`` section is used (default: the user's
            ``shopfleet.toml`` when there is one; it is only read).
        keep: keep the temporary data folder (evidence of a failure) and print where it is.
        timeout_s: how long the demo task may take.

    Returns:
        0 when every check passed, 1 otherwise.
    """
    from .browser.discovery import doctor

    out = out or sys.stdout
    say = _print_check(out)
    report = SelfTestReport()
    started = time.monotonic()
    frozen = "frozen app" if getattr(sys, "frozen", False) else "from source"
    print(f"ShopFleet {__version__} self-test ({frozen}, Python {platform.python_version()}, "
          f"{platform.system()} {platform.machine()})", file=out, flush=True)
    try:
        user = load_settings(config if config is not None else _user_config())
    except ShopFleetError as exc:
        say(Check("configuration", False, str(exc)))
        return 1
    settings = self_test_settings(user)
    browser = doctor(settings.browser)
    if browser.choice is None:
        say(Check("browser found", False, "no browser ShopFleet can drive"))
        print(browser.to_text(), file=out, flush=True)
        print("self-test FAILED: no usable browser (see the findings above)", file=out)
        return 1
    report.checks.append(Check("browser found", True, browser.choice.describe()))
    say(report.checks[-1])
    with _temporary_home(keep) as home:
        say(Check("temporary data folder", True, str(home)))
        try:
            asyncio.run(_run_one_task(settings, home, report, say, timeout_s))
        except ShopFleetError as exc:
            report.checks.append(Check("running the demo task", False,
                                       f"{type(exc).__name__}: {exc}"))
            say(report.checks[-1])
        except Exception as exc:  # a self-test reports every failure instead of crashing
            report.checks.append(Check("running the demo task", False,
                                       f"unexpected {type(exc).__name__}: "
                                       f"{exc}"))
            say(report.checks[-1])
        if not report.ok and any("browser" in c.name or "task" in c.name
                                 for c in report.checks if not c.ok):
            print("browser findings:\n" + doctor(settings.browser).to_text(), file=out)
        if keep:
            print(f"kept the temporary data folder: {home}", file=out)
    report.seconds = time.monotonic() - started
    if report.ok:
        print(f"self-test passed in {report.seconds:.1f}s", file=out, flush=True)
        return 0
    failed = ", ".join(c.name for c in report.checks if not c.ok) or "no check ran"
    print(f"self-test FAILED after {report.seconds:.1f}s: {failed}", file=out, flush=True)
    return 1
