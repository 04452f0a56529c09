"""#15 takeover in the console: the Shops view shows a held shop (who, until when), read off
the window's thread and live; a console that quits while a taken-over browser is open says so,
closes it, saves its session and gives the shop back at once (not after ``lease_s``).

Core's real takeover runs here (its hold on the real store, its session store), with the fake
browser (:class:`core.browser.fake.FakeLauncher`); the headed Chromium one is
tests/integration/test_takeover_chromium.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from core import SqliteStore, open_store, take_over_shop
from core.browser.fake import FakeLauncher
from core.browser.sessions import SessionStore
from core.vault import Vault
from desktop import shops
from tests.conftest import SHOPS
from tests.gui.conftest import Run, make_settings
from tests.gui.test_console import select, show, trigger

pytestmark = pytest.mark.gui


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    """Shops without passwords (the shared fixture's placeholder ones no key decrypts, and a
    takeover opens the shop's vault for its session)."""
    s = open_store(make_settings(), tmp_path / "takeover.db")
    for shop, platform in SHOPS:
        s.add_shop(shop, platform=platform,
                   base_url=f"http://{platform}.shopfleet.test/shop/{shop}",
                   username=f"{shop}-user")
    yield s
    s.close()


def cell(window: Any, name: str, key: str) -> Any:
    m = window.models["shops"]
    return m.index(m.row_of(name), [c.key for c in m.columns].index(key))


def takeover_text(window: Any, name: str) -> str:
    return str(cell(window, name, "takeover").data() or "")


class Person:
    """The person in the (fake) browser: adds a cookie to the shop's session, then works on
    until the console closes the browser."""

    def __init__(self) -> None:
        self.in_browser = threading.Event()
        self.pages: list[Any] = []

    async def __call__(self, page: Any) -> None:
        await page.context.add_cookies([{"name": "captcha_solved", "value": "1",
                                         "domain": "temu.shopfleet.test", "path": "/"}])
        self.pages.append(page)
        self.in_browser.set()


def real_takeover(window: Any, tmp_path: Path) -> tuple[Person, FakeLauncher, Path]:
    home = tmp_path / "home"
    window.ctx.extra["home"] = str(home)
    person, launcher = Person(), FakeLauncher()
    window.takeover_impl = {"shop": partial(take_over_shop, launcher=launcher, on_page=person),
                            "ticket": None}
    return person, launcher, home


def test_a_held_shop_shows_who_holds_it_until_when_read_off_the_gui_thread(
        console: Any, run: Run, store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hold taken elsewhere (another console of the fleet) shows in the shop's row on the
    next read, without a task event; released, it goes away; the rows are read on a worker
    thread, from one listing of the shops."""
    gui = threading.get_ident()
    read_on: list[int] = []
    real_load = shops.load_shop_lines

    def load(*a: Any, **k: Any) -> Any:
        read_on.append(threading.get_ident())
        return real_load(*a, **k)
    monkeypatch.setattr(shops, "load_shop_lines", load)
    monkeypatch.setattr(store, "shop_hold", lambda *_a: pytest.fail("a hold read per row"))
    show(console, run, "shops")
    assert takeover_text(console, "temu-1") == ""
    hold = store.hold_shop("temu-1", "takeover:x", lease_s=600,
                           what="alice@host-b (ticket #9)")
    run.until(lambda: takeover_text(console, "temu-1").startswith(
        "alice@host-b (ticket #9), until "), timeout_ms=15_000)
    from desktop.models import fmt_time
    assert takeover_text(console, "temu-1").endswith(fmt_time(hold.until))
    tip = str(cell(console, "temu-1", "takeover").data(0x03) or "")
    assert tip.startswith("taken over by alice@host-b (ticket #9) until ") and "browser" in tip
    assert all(takeover_text(console, n) == "" for n, _p in SHOPS if n != "temu-1")
    store.release_shop_hold("temu-1", "takeover:x")
    run.until(lambda: takeover_text(console, "temu-1") == "", timeout_ms=15_000)
    assert read_on and gui not in read_on


def test_quitting_with_a_taken_over_browser_asks_then_closes_it_saves_and_releases(
        window: Any, run: Run, store: SqliteStore, tmp_path: Path) -> None:
    person, launcher, home = real_takeover(window, tmp_path)
    show(window, run, "shops")
    select(window, run, "shops", "temu-1")
    trigger(window, "takeover")
    run.until(person.in_browser.is_set)
    held = store.shop_hold("temu-1")
    assert held is not None and "Shops view" in held.what
    run.until(lambda: "(Shops view), until" in takeover_text(window, "temu-1"),
              timeout_ms=15_000)                         # item 1, from this console's own
    box = window.ask_close()                             # the window's close button
    assert "temu-1" in box.text() and "saves its session" in box.text()
    assert not person.pages[0].closed                    # asking closed nothing
    stop = next(b for b in box.buttons() if b.text() == "Stop automation and quit")
    stop.click()
    run.until(lambda: window._closed, timeout_ms=60_000)
    # the browser closed, the session (with the person's cookie) saved, the shop given back
    assert person.pages[0].closed and launcher.live_browsers == 0
    assert all(not t.thread.is_alive() or t.done for t in window.takeovers)
    after = open_store(make_settings(), tmp_path / "takeover.db")
    try:
        assert after.shop_hold("temu-1") is None         # now, not after lease_s
        vault = Vault.open(home)
        saved = run(SessionStore(home / "sessions", vault).load("temu-1"))
    finally:
        after.close()
    assert saved is not None and [c["name"] for c in saved["cookies"]] == ["captcha_solved"]


def test_the_close_question_names_no_browser_when_none_is_open(
        console: Any, run: Run) -> None:
    box = console.ask_close()
    assert "taken over" not in box.text()
    box.reject()



@pytest.mark.parametrize("what, en, zh", [
    ("alice@host-b (ticket #9)", "alice@host-b (ticket #9)", "alice@host-b (工单 #9)"),
    ("bob@pc (Shops view)", "bob@pc (Shops view)", "bob@pc (店铺视图)"),
    ("bob@pc (command line)", "bob@pc (command line)", "bob@pc (命令行)"),
    ("a hold of another tool", "a hold of another tool", "a hold of another tool")])
def test_who_holds_a_shop_is_said_in_the_consoles_language(qapp: Any, what: str, en: str,
                                                          zh: str) -> None:
    """The store keeps a hold's words in one language for the whole fleet; each console
    shows where it came from in its own."""
    from types import SimpleNamespace

    from desktop.i18n import install_language
    from desktop.shops import hold_who

    hold = SimpleNamespace(what=what, owner="takeover:x")
    assert hold_who(hold) == en
    try:
        assert install_language("zh_CN") == "zh_CN"
        assert hold_who(hold) == zh
    finally:
        install_language("en")
