"""#15 item 6: shops in the console: add (a refusal keeps the input), a shop without a password
flagged and filterable, edit, set a password, import a list with per-row errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from core import SqliteStore, open_store, set_shop_password
from core.secrets import decrypt_password
from desktop import shops
from tests.conftest import SHOPS
from tests.gui.conftest import Run, make_settings
from tests.gui.test_console import select, show

pytestmark = pytest.mark.gui


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    """Shops with real encrypted passwords (the shared fixture's are placeholders that no
    key decrypts, which the vault rightly refuses to mix with a new key)."""
    s = open_store(make_settings(), tmp_path / "shops.db")
    for shop, platform in SHOPS:
        s.add_shop(shop, platform=platform,
                   base_url=f"http://{platform}.shopfleet.test/shop/{shop}")
    set_shop_password(s, "pdd-1", "pdd-pw")
    yield s
    s.close()


def ok(dlg: Any) -> None:
    dlg.buttons.button(QDialogButtonBox.StandardButton.Ok).click()


def password_cell(window: Any, name: str) -> Any:
    m = window.models["shops"]
    c = [col.key for col in m.columns].index("password")
    return m.index(m.row_of(name), c)


def test_add_a_shop_keeps_the_input_on_refusal_and_flags_no_password(
        console: Any, run: Run, store: SqliteStore) -> None:
    show(console, run, "shops")
    dlg = shops.add_shop(console)
    dlg.name.setText("new-1")
    dlg.platform.setText("pdd")
    dlg.base_url.setText("ftp://pdd.example/new")               # refused: the scheme
    ok(dlg)
    run.until(lambda: "base_url" in dlg.error.text())
    assert dlg.isVisible() and dlg.name.text() == "new-1"       # still open, input kept
    assert "new-1" not in [s.name for s in store.shops()]       # nothing written
    dlg.base_url.setText("https://pdd.example/new")
    ok(dlg)
    run.until(lambda: not dlg.isVisible())
    assert store.shop("new-1").has_password is False
    run.until(lambda: console.models["shops"].row_of("new-1") >= 0)
    cell = password_cell(console, "new-1")
    assert cell.data() == "missing"
    assert "No password" in cell.data(Qt.ItemDataRole.ToolTipRole)
    assert cell.data(Qt.ItemDataRole.DecorationRole) is not None  # the warning icon
    assert password_cell(console, "pdd-1").data(Qt.ItemDataRole.DecorationRole) is None
    # The filter: only shops without a password.
    panel = console.panels["shops"]
    only = panel._only[0][0]
    only.setChecked(True)
    names = [panel.row_at_view(i).name for i in range(panel.view.model().rowCount())]
    assert sorted(names) == sorted(s.name for s in store.shops() if not s.has_password)
    assert "new-1" in names and "pdd-1" not in names
    only.setChecked(False)
    assert panel.view.model().rowCount() == len(store.shops())


def test_a_duplicate_name_is_refused_in_the_dialog(
        console: Any, run: Run, store: SqliteStore) -> None:
    dlg = shops.add_shop(console)
    dlg.name.setText("pdd-1")
    dlg.platform.setText("pdd")
    dlg.base_url.setText("https://pdd.example/x")
    ok(dlg)
    run.until(lambda: "exists already" in dlg.error.text())
    assert dlg.isVisible() and dlg.error.text().startswith("name:")


def test_set_and_replace_a_password_and_edit_a_shop(
        console: Any, run: Run, store: SqliteStore) -> None:
    store.add_shop("bare", platform="pdd", base_url="https://pdd.example/bare")
    show(console, run, "shops")
    select(console, run, "shops", "bare")
    dlg = shops.set_password(console)
    assert dlg is not None and dlg.windowTitle() == "Set the password of bare"
    dlg.password.setText("one")
    dlg.again.setText("two")
    ok(dlg)
    run.until(lambda: "differ" in dlg.error.text())
    assert dlg.isVisible() and not store.shop("bare").has_password
    dlg.again.setText("one")
    ok(dlg)
    run.until(lambda: store.shop("bare").has_password or dlg.error.text() != ""
              or console.presenter.last_box is not None)
    assert console.presenter.last_box is None, console.presenter.last_box.detailedText()
    assert store.shop("bare").has_password, dlg.error.text()
    assert decrypt_password(store.shop_password_enc("bare")) == "one"
    run.until(lambda: console.models["shops"].snapshot("bare").has_password)
    dlg = shops.set_password(console)
    assert dlg is not None and dlg.windowTitle() == "Replace the password of bare"
    dlg.reject()
    edit = shops.edit_shop(console)
    assert edit is not None and edit.name.isReadOnly()
    edit.username.setText("bare-user")
    edit.origins.setPlainText("https://img.pdd.example")
    ok(edit)
    run.until(lambda: not edit.isVisible())                      # closed once all is saved
    assert store.shop("bare").username == "bare-user"
    assert list(store.shop("bare").allowed_origins) == ["https://img.pdd.example:443"]
    assert decrypt_password(store.shop_password_enc("bare")) == "one"  # kept (left empty)


def test_import_shows_each_row_error_and_adds_the_valid_rows_after_ok(
        console: Any, run: Run, store: SqliteStore, tmp_path: Path) -> None:
    f = tmp_path / "list.csv"
    f.write_bytes(b"\xef\xbb\xbfname,platform,base_url,username,password\n"
                  b"imp-1,pdd,https://pdd.example/i1,u1,pw\n"
                  b"imp-2,pdd,nope,u2,pw\n"
                  b"pdd-1,pdd,https://pdd.example/dup,u3,pw\n"
                  b"imp-4,temu,https://temu.example/i4,u4,\n")
    show(console, run, "shops")
    run(shops.import_from(console, f))
    dlg = console.dialog
    assert isinstance(dlg, shops.ImportDialog)
    errors = dlg.errors.toPlainText().splitlines()
    assert errors == ["line 3: base_url: 'nope' must be an http:// or https:// address "
                      "with a host", "line 4: name: a shop named 'pdd-1' exists already"]
    assert "imp-4" in dlg.summary.text()                         # no password: said first
    assert "imp-1" not in [s.name for s in store.shops()]        # nothing before OK
    ok(dlg)
    run.until(lambda: not dlg.isVisible())
    names = {s.name for s in store.shops()}
    assert {"imp-1", "imp-4"} <= names and "imp-2" not in names
    run.until(lambda: console.models["shops"].row_of("imp-4") >= 0)
    assert password_cell(console, "imp-4").data() == "missing"
