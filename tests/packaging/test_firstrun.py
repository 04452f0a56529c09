"""The first-run wizard, offscreen: what an operator sees on each page and what Finish writes.

The browser check and installer are scripted stand-ins (no browser hunt, no download)."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QWizard

from core import Settings, Vault, flow_names, load_settings, open_store
from desktop.firstrun import FirstRunWizard, maybe_run_first_run

pytestmark = pytest.mark.gui


@dataclass
class Check:
    ok: bool
    summary: str
    details: str = "[not found] Google Chrome (channel 'chrome'): not installed"


@dataclass
class Install:
    outcome: str
    message: str

    @property
    def ok(self) -> bool:
        return self.outcome == "installed"

    @property
    def offline(self) -> bool:
        return self.outcome == "offline"


class FakeBrowser:
    """No browser until the installer succeeds; the installer prints a line or two."""

    def __init__(self, *, online: bool) -> None:
        self.online = online
        self.installed = False
        self.checks = 0
        self.release = threading.Event()
        self.release.set()

    def check(self, settings: Settings) -> Check:
        self.checks += 1
        if self.installed:
            return Check(True, "ShopFleet will use Chromium 140 (~/.cache/ms-playwright)")
        return Check(False, "No browser found. Install Google Chrome or Microsoft Edge.")

    def install(self, *, on_output: Any) -> Install:
        on_output("Downloading Chromium 140 from https://cdn.playwright.dev/...")
        self.release.wait(10)
        if not self.online:
            on_output("Error: getaddrinfo ENOTFOUND cdn.playwright.dev")
            return Install("offline", "The browser could not be downloaded: this computer "
                                      "cannot reach Playwright's download server.")
        self.installed = True
        return Install("installed", "Chromium is installed.")


@pytest.fixture
def home() -> Path:
    return Path(os.environ["SHOPFLEET_HOME"])  # isolated per test by tests/conftest.py


def make(qtbot: Any, home: Path, fake: FakeBrowser,
         settings: Settings | None = None) -> FirstRunWizard:
    wiz = FirstRunWizard(settings or Settings(), db_path=home / "shopfleet.db",
                         config_path=home / "shopfleet.toml", checker=fake.check,
                         installer=fake.install)
    qtbot.addWidget(wiz)
    wiz.show()
    return wiz


def to_page(qtbot: Any, wiz: FirstRunWizard, page_id: int) -> None:
    while wiz.currentId() != page_id:
        qtbot.waitUntil(lambda: wiz.button(QWizard.WizardButton.NextButton).isEnabled())
        wiz.next()


def test_welcome_shows_the_data_folder_and_that_uninstalling_keeps_it(
        qtbot: Any, home: Path) -> None:
    wiz = make(qtbot, home, FakeBrowser(online=True))
    assert wiz.welcome.folder.text() == str(home)
    page_text = " ".join(w.text() for w in wiz.welcome.findChildren(type(wiz.ready.text)))
    assert "Uninstalling ShopFleet leaves this folder" in page_text


def test_no_browser_then_install_without_internet_says_so(qtbot: Any, home: Path) -> None:
    fake = FakeBrowser(online=False)
    wiz = make(qtbot, home, fake)
    to_page(qtbot, wiz, wiz.BROWSER)
    panel = wiz.browser.panel
    qtbot.waitUntil(lambda: panel.check_result is not None)
    assert panel.summary.text().startswith("No browser found")
    assert "Google Chrome" in panel.details.toPlainText()

    fake.release.clear()
    qtbot.mouseClick(panel.install_btn, qtbot_button())
    assert not panel.install_btn.isEnabled()          # busy while downloading
    assert not wiz.button(QWizard.WizardButton.NextButton).isEnabled()
    fake.release.set()
    qtbot.waitUntil(lambda: panel.install_result is not None)
    assert "cannot reach" in panel.install_message.text()
    assert "ENOTFOUND" in panel.progress.toPlainText()
    assert panel.install_btn.isEnabled()
    # The operator may go on without a browser; the summary says tasks will wait.
    to_page(qtbot, wiz, wiz.READY)
    assert "No browser yet" in wiz.ready.text.text()


def test_install_with_internet_finds_the_new_browser(qtbot: Any, home: Path) -> None:
    fake = FakeBrowser(online=True)
    wiz = make(qtbot, home, fake)
    to_page(qtbot, wiz, wiz.BROWSER)
    panel = wiz.browser.panel
    qtbot.waitUntil(lambda: panel.check_result is not None)
    qtbot.mouseClick(panel.install_btn, qtbot_button())
    qtbot.waitUntil(lambda: panel.check_result is not None and panel.check_result.ok)
    assert panel.summary.text() == "ShopFleet will use Chromium 140 (~/.cache/ms-playwright)"
    assert panel.install_message.text() == "Chromium is installed."
    assert fake.checks == 2  # checked again after the install


def test_shops_are_checked_then_written_with_encrypted_passwords(
        qtbot: Any, home: Path) -> None:
    wiz = make(qtbot, home, FakeBrowser(online=True))
    to_page(qtbot, wiz, wiz.SHOPS)
    page = wiz.shops
    qtbot.keyClicks(page.name, "north-store")
    page.platform.setCurrentText("temu")
    qtbot.keyClicks(page.base_url, "seller.example.com/shop/1")  # no scheme
    assert not page.add_from_form()
    assert "must start with http:// or https://" in page.error.text()
    assert page.list.count() == 0
    page.base_url.setText("https://seller.example.com/shop/1")
    qtbot.keyClicks(page.username, "north")
    qtbot.keyClicks(page.password, "s3cret-pw")
    assert page.add_from_form()
    assert page.list.count() == 1 and page.name.text() == ""
    # A second shop typed but not added is added when the operator clicks Next.
    page.name.setText("south-store")
    page.base_url.setText("https://seller.example.com/shop/2")
    to_page(qtbot, wiz, wiz.READY)
    assert "north-store, south-store" in wiz.ready.text.text()
    assert not (home / "shopfleet.db").exists()       # nothing written before Finish
    wiz.accept()
    assert wiz.result_.action == "console"
    assert wiz.result_.shops == ("north-store", "south-store")

    store = open_store(Settings(), home / "shopfleet.db")
    try:
        shops = {s.name: s for s in store.shops()}
        assert shops["north-store"].platform == "temu"
        assert shops["north-store"].username == "north"
        token = store.shop_password_enc("north-store")
        assert token is not None
        assert Vault.open(home).decrypt(token) == b"s3cret-pw"
        assert store.shop_password_enc("south-store") in (None, b"")
    finally:
        store.close()
    assert b"s3cret-pw" not in (home / "shopfleet.db").read_bytes()


FLOW = {"name": "check_orders", "start_url": "{shop.base_url}/orders",
        "steps": [{"action": "navigate", "url": "{shop.base_url}/orders"},
                  {"action": "extract", "locator": "#orders td", "into": "orders",
                   "all": True}]}


def test_flows_are_checked_copied_and_added_to_the_configuration(
        qtbot: Any, home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps({"name": "broken", "start_url": "{shop.base_url}",
                               "steps": [{"action": "click"}]}))
    good = tmp_path / "check_orders.json"
    good.write_text(json.dumps(FLOW))
    wiz = make(qtbot, home, FakeBrowser(online=True))
    to_page(qtbot, wiz, wiz.FLOWS)
    assert not wiz.flows.add_files([bad])
    # The message names the file and the field.
    assert wiz.flows.error.text().startswith("broken.json: steps")
    assert "locator" in wiz.flows.error.text()
    assert wiz.flows.list.count() == 0
    assert wiz.flows.add_files([good])
    assert wiz.flows.names == ["check_orders"] and wiz.flows.error.text() == ""
    to_page(qtbot, wiz, wiz.READY)
    wiz.accept()
    assert wiz.result_.flows == ("check_orders",)
    assert (home / "flows" / "check_orders.json").read_text() == good.read_text()
    settings = load_settings(home / "shopfleet.toml")
    assert settings.flows.dirs == [str(home / "flows")]
    assert "check_orders" in flow_names(settings)
    assert (home / "shopfleet.db").exists()


def test_a_flow_named_like_a_shipped_one_is_refused(qtbot: Any, home: Path,
                                                      tmp_path: Path) -> None:
    clash = tmp_path / "mine.json"
    clash.write_text(json.dumps({**FLOW, "name": "collect_data"}))
    wiz = make(qtbot, home, FakeBrowser(online=True))
    assert not wiz.flows.add_files([clash])
    assert "already defined" in wiz.flows.error.text()


def test_try_the_demo_skips_setup_and_writes_nothing(qtbot: Any, home: Path) -> None:
    wiz = make(qtbot, home, FakeBrowser(online=True))
    wiz.welcome.demo.setChecked(True)
    to_page(qtbot, wiz, wiz.BROWSER)
    wiz.next()
    assert wiz.currentId() == wiz.READY                 # no shops or flows pages
    assert "demo" in wiz.ready.text.text()
    wiz.accept()
    assert wiz.result_.action == "demo"
    assert not (home / "shopfleet.db").exists()


def test_no_wizard_when_the_database_exists(home: Path) -> None:
    open_store(Settings(), home / "shopfleet.db").close()
    assert maybe_run_first_run(Settings(), db_path=home / "shopfleet.db") is None


def qtbot_button() -> Any:
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_by_default_the_wizard_asks_core_which_browser_it_will_use(
        qtbot: Any, home: Path) -> None:
    # Wiring: core's facade exports check_browser / install_browser (core/browser/install.py).
    wiz = FirstRunWizard(Settings(), db_path=home / "shopfleet.db",
                         config_path=home / "shopfleet.toml")
    qtbot.addWidget(wiz)
    wiz.browser.panel.check()
    qtbot.waitUntil(lambda: wiz.browser.panel.check_result is not None, timeout=30_000)
    summary = wiz.browser.panel.summary.text()
    # Exactly what core answers on this machine (whichever browser that is).
    from core import check_browser

    assert summary == check_browser(Settings()).summary
