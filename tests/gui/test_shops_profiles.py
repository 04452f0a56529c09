"""#17 in the console: the shop dialog edits the shop's profile with the CLI's checks (the
field named, nothing written, the input kept), the proxy password typed apart, stored
encrypted and never shown; the Shops view's Network column says "proxy down" with the error
while a shop's proxy breaker is open, and warns about shared proxies and shops going direct."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QDialogButtonBox, QLabel, QLineEdit, QPlainTextEdit

from core import ProxyFailed, SqliteStore, open_store, set_shop_password
from core.profile_store import load_context_options
from core.testing import FakeExecutor
from desktop import shops
from tests.conftest import SHOPS
from tests.gui.conftest import Run, make_settings
from tests.gui.test_console import quick, select, show
from tests.security.helpers import SECRET, leaks

pytestmark = pytest.mark.gui


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    """Shops with real encrypted passwords (a proxy password joins them under one key)."""
    s = open_store(make_settings(), tmp_path / "shops.db")
    for shop, platform in SHOPS:
        s.add_shop(shop, platform=platform,
                   base_url=f"http://{platform}.shopfleet.test/shop/{shop}",
                   username=f"{shop}-user")
        set_shop_password(s, shop, f"{shop}-pw")
    yield s
    s.close()


class ProxiedExecutor(FakeExecutor):
    """The fake executor; pdd-1's proxy does not answer."""

    async def execute(self, task: Any, ctl: Any) -> Any:
        if task.shop == "pdd-1":
            raise ProxyFailed("proxy down: http://shop-user@127.0.0.1:9 did not answer within "
                              "5s", shop=task.shop)
        return await super().execute(task, ctl)


@pytest.fixture
def executor() -> FakeExecutor:
    return ProxiedExecutor()


def ok(dlg: Any) -> None:
    dlg.buttons.button(QDialogButtonBox.StandardButton.Ok).click()


def cell(window: Any, name: str, key: str) -> Any:
    m = window.models["shops"]
    return m.index(m.row_of(name), [c.key for c in m.columns].index(key))


def shown_texts(widget: Any) -> list[str]:
    """Every text a person could see in a dialog (fields, placeholders, labels, buttons)."""
    out = [widget.windowTitle()]
    for w in widget.findChildren(QLineEdit):
        out += [w.text(), w.placeholderText(), w.displayText()]
    for p in widget.findChildren(QPlainTextEdit):
        out += [p.toPlainText(), p.placeholderText()]
    for lab in widget.findChildren(QLabel):
        out.append(lab.text())
    for b in widget.findChildren(QAbstractButton):
        out.append(b.text())
    return out


def model_texts(window: Any) -> list[str]:
    m = window.models["shops"]
    roles = (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole)
    return [str(m.index(r, c).data(role)) for r in range(m.rowCount())
            for c in range(m.columnCount()) for role in roles]


def test_the_dialog_edits_the_profile_with_the_clis_checks_and_hides_the_proxy_password(
        console: Any, run: Run, store: SqliteStore) -> None:
    show(console, run, "shops")
    select(console, run, "shops", "pdd-2")
    dlg = shops.edit_shop(console)
    assert dlg is not None
    prof = dlg.profile
    prof.proxy.setText("http://shop-user@127.0.0.1:8899")
    prof.proxy_password.setText(SECRET)
    prof.language.setText("en-US")
    prof.timezone.setText("Mars/Base")                           # refused: named, as the CLI
    prof.viewport.setText("1280x720")
    prof.headers.setPlainText("X-Team: north\n")
    ok(dlg)
    run.until(lambda: dlg.error.text() != "")
    assert dlg.error.text().startswith("timezone: unknown time zone 'Mars/Base'")
    assert dlg.isVisible() and prof.language.text() == "en-US"  # still open, input kept
    assert store.shop("pdd-2").profile.is_empty and not store.shop("pdd-2").has_proxy_password
    prof.timezone.setText("America/New_York")
    prof.headers.setPlainText("Host: evil")
    ok(dlg)
    run.until(lambda: dlg.error.text().startswith("header: Host is the browser's own"))
    assert store.shop("pdd-2").profile.is_empty                  # nothing written
    prof.headers.setPlainText("X-Team: north\n")
    ok(dlg)
    run.until(lambda: not dlg.isVisible())
    rec = store.shop("pdd-2")
    assert rec.profile.proxy == "http://shop-user@127.0.0.1:8899" and rec.has_proxy_password
    assert (rec.profile.locale, rec.profile.timezone, rec.profile.viewport) == (
        "en-US", "America/New_York", (1280, 720))
    assert rec.profile.headers == (("X-Team", "north"),)
    options = load_context_options(store, "pdd-2", store.settings, None)
    assert options.proxy_password == SECRET                      # encrypted, and it decrypts
    token = store.shop_proxy_password_enc("pdd-2")

    # Opened again: the proxy without its password, the password field empty.
    run.until(lambda: console.models["shops"].snapshot("pdd-2").has_proxy_password)
    again = shops.edit_shop(console)
    assert again is not None
    assert again.profile.proxy.text() == "http://shop-user@127.0.0.1:8899"
    assert again.profile.proxy_password.text() == ""
    assert "leave empty to keep it" in again.profile.proxy_password.placeholderText()
    assert not any(leaks(t) for t in shown_texts(again))
    assert not any(leaks(t) for t in model_texts(console))
    # Another field changed, the proxy left as shown: the stored password stays.
    again.profile.language.setText("de-DE")
    ok(again)
    run.until(lambda: not again.isVisible())
    assert store.shop("pdd-2").profile.locale == "de-DE"
    assert store.shop_proxy_password_enc("pdd-2") == token
    # The proxy changed without its password typed again: refused, nothing written.
    run.until(lambda: console.models["shops"].snapshot("pdd-2").profile.locale == "de-DE")
    third = shops.edit_shop(console)
    assert third is not None
    third.profile.proxy.setText("http://shop-user@10.0.0.7:8899")
    ok(third)
    run.until(lambda: third.error.text().startswith("proxy_password: type the proxy's "
                                                    "password again"))
    assert store.shop("pdd-2").profile.proxy == "http://shop-user@127.0.0.1:8899"
    third.reject()


def test_add_a_shop_with_a_profile(console: Any, run: Run, store: SqliteStore) -> None:
    dlg = shops.add_shop(console)
    dlg.name.setText("pdd-9")
    dlg.platform.setText("pdd")
    dlg.base_url.setText("https://pdd.example/9")
    dlg.profile.proxy.setText("socks5://u:p@127.0.0.1:1080")    # refused: socks5 with a login
    ok(dlg)
    run.until(lambda: dlg.error.text().startswith("proxy: socks5 proxies with a user name"))
    assert "pdd-9" not in [s.name for s in store.shops()]       # the shop is not added either
    dlg.profile.proxy.setText("socks5://127.0.0.1:1080")
    dlg.profile.geolocation.setText("31.23,121.47")
    ok(dlg)
    run.until(lambda: not dlg.isVisible())
    p = store.shop("pdd-9").profile
    assert (p.proxy, p.geolocation) == ("socks5://127.0.0.1:1080", (31.23, 121.47))


def test_network_column_warns_about_shared_proxies_and_shops_going_direct(
        console: Any, run: Run, store: SqliteStore) -> None:
    from core import ShopProfile

    for name in ("pdd-1", "pdd-2"):
        store.set_shop_profile(name, ShopProfile(proxy="http://10.0.0.1:3128"),
                               proxy_password_enc=None)
    show(console, run, "shops")
    net = cell(console, "pdd-1", "network")
    assert net.data() == "http://10.0.0.1:3128 (shared)"
    assert "Same proxy http://10.0.0.1:3128 as pdd-2 (pdd)" in net.data(
        Qt.ItemDataRole.ToolTipRole)
    assert net.data(Qt.ItemDataRole.DecorationRole) is not None
    pdd_shops = [s.name for s in store.shops() if s.platform == "pdd"]
    direct = [n for n in pdd_shops if n not in ("pdd-1", "pdd-2")]
    for name in direct:
        c = cell(console, name, "network")
        assert c.data() == "direct (others use a proxy)"
        assert "No proxy, while other pdd shops use one" in c.data(Qt.ItemDataRole.ToolTipRole)
    other = cell(console, "temu-1", "network")                   # another platform: fine
    assert other.data() == "direct" and other.data(Qt.ItemDataRole.DecorationRole) is None
    # One of the two moves to its own proxy: no more sharing.
    store.set_shop_profile("pdd-2", ShopProfile(proxy="http://10.0.0.2:3128"),
                           proxy_password_enc=None)
    console.models["shops"].mark_stale()
    run.until(lambda: cell(console, "pdd-1", "network").data() == "http://10.0.0.1:3128")


def test_a_shop_whose_proxy_is_down_shows_proxy_down_with_the_error(
        window: Any, run: Run, store: SqliteStore) -> None:
    show(window, run, "shops")
    store.submit_many([quick("pdd-1") for _ in range(3)] + [quick("temu-1")])
    run.until(lambda: cell(window, "pdd-1", "network").data() == "proxy down", 30_000)
    c = cell(window, "pdd-1", "network")
    tip = c.data(Qt.ItemDataRole.ToolTipRole)
    assert "Proxy down: proxy down: http://shop-user@127.0.0.1:9 did not answer" in tip
    assert "other shops run" in tip
    assert c.data(Qt.ItemDataRole.DecorationRole) is not None
    assert cell(window, "temu-1", "network").data() == "direct"
    run.until(lambda: store.counts().get("done", 0) == 1)        # temu-1's task ran
    assert store.ticket_book().tickets(state=None) == []         # no ticket for the proxy
    # The breakers view names it as the shop's proxy.
    show(window, run, "gates")
    run.until(lambda: window.models["breakers"].row_of("proxy:pdd-1") >= 0)
    b = window.models["breakers"]
    assert b.index(b.row_of("proxy:pdd-1"), 0).data() == "proxy of shop pdd-1"
