"""The "install browser" action: a plain answer for installed, offline and broken installers.

The installer is never pointed at the internet: fake driver commands stand in for it, and the
real Playwright driver is sent to a closed port on 127.0.0.1 (what "no internet" looks like).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from core.browser import discovery
from core.browser.install import check_browser, driver_command, install_browser
from core.config import Settings


def fake_driver(tmp_path: Path, *, lines: list[str], code: int) -> list[str]:
    """A command that prints like the driver and exits with ``code`` (``install chromium`` is
    appended by install_browser and ignored)."""
    script = tmp_path / "driver.py"
    script.write_text("import sys\n" + "".join(f"print({line!r})\n" for line in lines)
                      + f"sys.exit({code})\n")
    return [sys.executable, str(script)]


@pytest.fixture
def browsers_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Playwright's browser folder, empty and private to the test."""
    folder = tmp_path / "ms-playwright"
    folder.mkdir()
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(folder))
    return folder


def test_no_internet_is_said_plainly_and_the_output_streams(
        tmp_path: Path, browsers_path: Path) -> None:
    cmd = fake_driver(tmp_path, code=1, lines=[
        "Downloading Chrome for Testing 140.0 from https://cdn.playwright.dev/...",
        "\x1b[2mError: getaddrinfo ENOTFOUND cdn.playwright.dev\x1b[22m",
        "Failed to install browsers"])
    seen: list[str] = []
    result = install_browser(command=cmd, on_output=seen.append)
    assert result.offline and not result.ok
    assert "cannot reach" in result.message and "Chrome or Microsoft Edge" in result.message
    assert seen[1] == "Error: getaddrinfo ENOTFOUND cdn.playwright.dev"  # no colour codes


def test_other_failures_are_not_called_offline(tmp_path: Path, browsers_path: Path) -> None:
    cmd = fake_driver(tmp_path, code=1, lines=["Error: ENOSPC: no space left on device"])
    result = install_browser(command=cmd)
    assert result.outcome == "failed"
    assert "ENOSPC: no space left on device" in result.message


def test_a_successful_install_names_the_new_browser(tmp_path: Path, browsers_path: Path) -> None:
    # What a finished download leaves behind: the executable and Playwright's marker.
    # The layout Playwright uses on this platform (the first one discovery looks for).
    folder = browsers_path / "chromium-1255"
    exe = folder.joinpath(*discovery._PLAYWRIGHT_CHROMIUM_RELPATHS[discovery._platform()][0])
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    exe.chmod(0o755)
    (folder / "INSTALLATION_COMPLETE").write_text("")
    result = install_browser(command=fake_driver(tmp_path, code=0, lines=["done"]))
    assert result.ok and result.executable == str(exe)
    assert str(exe) in result.message


def test_a_missing_driver_is_reported_not_raised(tmp_path: Path) -> None:
    result = install_browser(command=[str(tmp_path / "no-such-node")])
    assert result.outcome == "unavailable"
    assert "could not be started" in result.message


def test_check_browser_says_what_will_be_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # A configured browser that answers --version: it is the one named.
    monkeypatch.setattr(discovery, "read_version", lambda exe, **_: "Chromium 140.0.7339.16")
    check = check_browser(Settings().with_changes(
        browser={"executable_path": sys.executable}))
    assert check.ok
    assert check.summary.startswith("ShopFleet will use ") and sys.executable in check.summary
    assert "executable_path" in check.details  # every candidate is listed


def test_check_browser_says_what_to_install_when_there_is_none(
        browsers_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A system where no browser is installed anywhere discovery looks.
    monkeypatch.setattr(discovery, "_platform", lambda: "a-system-without-browsers")
    check = check_browser(Settings())
    assert not check.ok
    assert "Install Google Chrome or Microsoft Edge" in check.summary
    assert "executable_path" in check.details


def test_check_browser_reports_a_broken_configured_path(tmp_path: Path) -> None:
    settings = Settings().with_changes(browser={"executable_path": str(tmp_path / "nope")})
    check = check_browser(settings)
    assert "does not exist" in check.details


@pytest.mark.slow
def test_the_real_driver_without_a_reachable_server_says_offline(
        browsers_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The bundled driver's real installer, its download host a closed port on loopback.
    assert driver_command() is not None
    monkeypatch.setenv("PLAYWRIGHT_DOWNLOAD_HOST", "http://127.0.0.1:9")
    result = install_browser(env=dict(os.environ))
    assert result.offline, result.output
    assert "ECONNREFUSED" in result.output
    assert not any(browsers_path.glob("chromium-*/INSTALLATION_COMPLETE"))
