"""The "install browser" action: Playwright's own installer, with a plain answer.

Most operators never need it: ShopFleet drives the installed Chrome or Edge. For a machine with
neither, :func:`install_browser` runs the Playwright driver's ``install chromium`` command
(``python -m playwright install chromium`` from source; inside the frozen app the same driver
is bundled, so no Python is needed). The browser lands in Playwright's usual folder (e.g.
``~/.cache/ms-playwright``, ``%LOCALAPPDATA%\\ms-playwright``), where browser discovery looks.

Without internet the installer fails after its retries; :func:`install_browser` recognises
that and says so plainly (:attr:`BrowserInstallResult.offline`) instead of showing a Node.js
stack. :func:`check_browser` is the doctor's verdict in a form the first-run wizard can show.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..config import BrowserSettings, Settings

InstallOutcome = Literal["installed", "offline", "failed", "unavailable"]

INSTALL_TIMEOUT_S = 1800.0
"""A whole browser download (~150 MB, three archives) on a slow line."""

# What Node.js and Playwright print when the download server cannot be reached.
_OFFLINE = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|"
    r"getaddrinfo|socket hang up|self[- ]signed certificate|unable to get local issuer|"
    r"certificate has expired|net::ERR_|Request to .* timed out",
    re.IGNORECASE)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

OFFLINE_MESSAGE = (
    "The browser could not be downloaded: this computer cannot reach Playwright's download "
    "server (no internet connection, or a proxy or firewall in the way). Connect to the "
    "internet (set HTTPS_PROXY if you use a proxy) and try again — or install Google Chrome "
    "or Microsoft Edge, which ShopFleet uses without any download.")


@dataclass(frozen=True)
class BrowserInstallResult:
    """What the install action did.

    Attributes:
        outcome: ``installed``; ``offline`` (the download server was unreachable);
            ``failed`` (the installer ran and failed for another reason); ``unavailable``
            (this copy of ShopFleet has no Playwright driver to run).
        message: one or two sentences for the operator.
        output: the installer's output (the last lines are the useful ones).
        executable: the browser that is now available, when installed.
        seconds: how long it took.
    """

    outcome: InstallOutcome
    message: str
    output: str = ""
    executable: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == "installed"

    @property
    def offline(self) -> bool:
        return self.outcome == "offline"


@dataclass(frozen=True)
class BrowserCheck:
    """The doctor's verdict, for the first-run wizard and the settings.

    Attributes:
        ok: a browser ShopFleet can drive was found.
        summary: one line: what will be used, or that nothing works.
        details: every candidate looked at and how to fix it (the doctor's text).
        choice: the browser that will be used, as a name and path ("" when none): the
            console words the summary itself, in the operator's language.
    """

    ok: bool
    summary: str
    details: str
    choice: str = ""


def check_browser(settings: Settings | BrowserSettings) -> BrowserCheck:
    """Which browser ShopFleet would drive (quick: nothing is launched)."""
    from .discovery import doctor

    browser = settings.browser if isinstance(settings, Settings) else settings
    report = doctor(browser)
    if report.choice is not None:
        summary = f"ShopFleet will use {report.choice.describe()}."
    else:
        summary = ("No browser found. Install Google Chrome or Microsoft Edge, or use "
                   "\"Install browser\" to download Chromium.")
    return BrowserCheck(report.ok, summary, report.to_text(),
                        report.choice.describe() if report.choice is not None else "")


def driver_command() -> list[str] | None:
    """The Playwright driver's command line (node + cli.js), or None when it is missing.

    Works from source and in the frozen app alike: the driver sits inside the ``playwright``
    package (the PyInstaller hook bundles it next to the package's modules).
    """
    try:
        from playwright._impl._driver import compute_driver_executable
    except ImportError:
        return None
    try:
        node, cli = compute_driver_executable()
    except Exception:  # playwright.Error: a driver without Node.js
        return None
    if not Path(node).is_file() or not Path(cli).is_file():
        return None
    return [node, cli]


def _driver_env() -> dict[str, str]:
    try:
        from playwright._impl._driver import get_driver_env

        env: dict[str, str] = get_driver_env()
    except ImportError:
        env = dict(os.environ)
    # "0" would install into the (possibly read-only, signed) app folder: use the user's cache.
    if env.get("PLAYWRIGHT_BROWSERS_PATH") == "0":
        env.pop("PLAYWRIGHT_BROWSERS_PATH")
    return env


def classify(returncode: int, output: str) -> InstallOutcome:
    """``installed``, ``offline`` or ``failed`` from the installer's exit code and output."""
    if returncode == 0:
        return "installed"
    return "offline" if _OFFLINE.search(output) else "failed"


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def install_browser(*, browser: str = "chromium", command: Sequence[str] | None = None,
                    env: dict[str, str] | None = None,
                    on_output: Callable[[str], None] | None = None,
                    timeout_s: float = INSTALL_TIMEOUT_S) -> BrowserInstallResult:
    """Download a browser with Playwright's installer (blocking: call it from a thread).

    Args:
        browser: what to install (``chromium``).
        command: the driver command to run instead of the bundled one (tests).
        env: the environment for the installer (default: this process's, as the driver wants).
        on_output: called with each line the installer prints (progress for the UI).
        timeout_s: give up after this long.

    Returns:
        The outcome; never raises for a failed download (the message says what happened).
    """
    started = time.monotonic()
    cmd = list(command) if command is not None else driver_command()
    if cmd is None:
        return BrowserInstallResult(
            "unavailable",
            "This copy of ShopFleet has no browser installer (the Playwright driver is "
            "missing). Install Google Chrome or Microsoft Edge, or reinstall ShopFleet.")
    full = [*cmd, "install", browser]
    lines: list[str] = []
    try:
        proc = subprocess.Popen(
            full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env if env is not None else _driver_env(), text=True, encoding="utf-8",
            errors="replace", bufsize=1)
    except OSError as exc:
        return BrowserInstallResult(
            "unavailable", f"The browser installer could not be started: {exc.strerror or exc}.",
            seconds=time.monotonic() - started)
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    with proc:  # closes the pipe whatever happens
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = _ANSI.sub("", raw.rstrip("\r\n"))
                lines.append(line)
                if on_output is not None:
                    on_output(line)
            code = proc.wait()
        finally:
            timer.cancel()
    output = "\n".join(lines)
    seconds = time.monotonic() - started
    if seconds >= timeout_s and code != 0:
        return BrowserInstallResult(
            "failed", f"The browser download did not finish within {timeout_s:g}s; try again "
            "on a faster connection.", output, seconds=seconds)
    outcome = classify(code, output)
    if outcome == "installed":
        from .discovery import find_playwright_chromium

        found = find_playwright_chromium()
        exe = str(found[0]) if found else None
        msg = ("Chromium is installed" + (f" at {exe}" if exe else "")
               + ". ShopFleet will use it when no configured browser, Chrome or Edge comes "
               "first.")
        return BrowserInstallResult("installed", msg, output, exe, seconds)
    if outcome == "offline":
        return BrowserInstallResult("offline", OFFLINE_MESSAGE, output, seconds=seconds)
    return BrowserInstallResult(
        "failed", f"The browser installer failed (exit {code}): "
        f"{_tail(output, 1) or 'no output'}", output, seconds=seconds)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m core.browser.install``: install Chromium, printing progress."""
    browser = (list(argv) if argv is not None else sys.argv[1:])[:1] or ["chromium"]
    result = install_browser(browser=browser[0], on_output=print)
    print(result.message)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
