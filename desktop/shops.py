"""Shops in the console: add, edit, set or replace a password, import a list (CSV/XLSX).

The rows of the Shops view are core's :class:`core.ShopRow` (work counts) joined with the
shop's record (login name, password set, allowed origins): a shop without a password is
flagged (an icon, a tooltip, a filter), never a silent trap.

Every dialog here keeps its input when core refuses it: the error (naming the field) shows in
the dialog, which stays open. The checks are core's (:mod:`core.shop_import` for lists); the
writes run on a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from core import (
    InvalidInput,
    Refused,
    ShopFleetError,
    ShopImport,
    Store,
    check_shop_table,
    import_shops,
    read_shop_list,
    set_shop_password,
    shop_rows,
)

from . import palette
from .i18n import tr
from .screen import fit_to_screen


@dataclass(frozen=True)
class ShopLine:
    """A row of the Shops view: the shop's work now and what it needs to log in."""

    name: str
    platform: str
    domain: str
    base_url: str
    paused: bool
    domain_paused: bool
    queued: int
    running: int
    waiting: int
    username: str = ""
    has_password: bool = False
    allowed_origins: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


def load_shop_lines(store: Store) -> list[ShopLine]:
    """Blocking: every shop's row (run it on a worker thread)."""
    records = {s.name: s for s in store.shops()}
    out = []
    for r in shop_rows(store):
        rec = records.get(r.name)
        out.append(ShopLine(
            name=r.name, platform=r.platform, domain=r.domain, base_url=r.base_url,
            paused=r.paused, domain_paused=r.domain_paused, queued=r.queued, running=r.running,
            waiting=r.waiting, username=rec.username if rec else "",
            has_password=bool(rec and rec.has_password),
            allowed_origins=tuple(rec.allowed_origins) if rec else (),
            tags=tuple(r.tags)))
    return out


def password_text(row: Any) -> str:
    return tr("set") if getattr(row, "has_password", True) else tr("missing")


def password_tip(row: Any) -> str:
    if getattr(row, "has_password", True):
        return tr("The password is stored encrypted")
    return tr("No password: tasks that log in will fail. Shops → Set password…")


def password_icon(row: Any) -> QIcon | None:
    if getattr(row, "has_password", True):
        return None
    return QApplication.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)


def without_password(row: Any) -> bool:
    """The "without a password only" filter of the Shops view."""
    return not getattr(row, "has_password", True)


# -- running a dialog's write: refusals stay in the dialog ----------------------------------

class KeepsInput(QDialog):
    """A dialog whose OK asks for a write; it closes only when the write succeeded, and
    shows a refusal (naming the field) while keeping what was typed."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.error = QLabel(self)
        self.error.setObjectName("error")
        self.error.setStyleSheet(palette.error_style())
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.accepted.connect(self._ok)
        self.buttons.rejected.connect(self.reject)
        self.busy = False

    def _ok(self) -> None:
        if self.busy:
            return
        self.error.clear()
        self.submitted.emit()

    def show_error(self, text: str) -> None:
        self.busy = False
        self.error.setText(text)


def _imported(window: Any, n: int) -> None:
    """After an import: the shops view again, and the count in the status bar."""
    _refresh(window)
    window.status_message(tr("%1 shop(s) imported", n))


def run_keeping_input[T](window: Any, dlg: Any, what: str,
                      make: Callable[[], Awaitable[T]],
                      then: Callable[[T], None] | None = None) -> asyncio.Task[None]:
    """Run ``make()``; on success close ``dlg`` and call ``then``; a refusal (bad input, or
    core saying no) is shown in ``dlg``, which stays open with its input; anything else is a
    bug and goes to the window's error presenter."""
    dlg.busy = True

    async def go() -> None:
        try:
            result = await make()
        except InvalidInput as exc:
            dlg.show_error(tr("%1: %2", exc.field, exc.reason) if exc.field else exc.reason)
            return
        except (Refused, ShopFleetError) as exc:  # core said no (backlog full, key…)
            dlg.show_error(str(exc))
            return
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            dlg.busy = False
            window.presenter.present(exc, what=what)
            return
        dlg.busy = False
        dlg.done(QDialog.DialogCode.Accepted)  # not accept(): a dialog's OK may run this
        window.status_message(tr("%1: done", what))
        if then is not None:
            then(result)

    task = asyncio.ensure_future(go())
    window._tasks.add(task)
    task.add_done_callback(window._tasks.discard)
    return task


# -- add / edit --------------------------------------------------------------------------

class ShopDialog(KeepsInput):
    """Add a shop, or edit one (its login name, allowed origins; its password optionally)."""

    def __init__(self, shop: ShopLine | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("shop-dialog")
        self.editing = shop
        self.setWindowTitle(tr("Edit shop %1", shop.name) if shop else tr("Add shop"))
        self.name = QLineEdit(shop.name if shop else "", self)
        self.platform = QLineEdit(shop.platform if shop else "", self)
        self.platform.setPlaceholderText("pdd, temu, tiktok…")
        self.base_url = QLineEdit(shop.base_url if shop else "", self)
        self.base_url.setPlaceholderText("https://")
        for w in (self.name, self.platform, self.base_url):
            w.setReadOnly(shop is not None)  # a shop's identity: add a new one instead
        self.username = QLineEdit(shop.username if shop else "", self)
        self.password = QLineEdit(self)
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password.setPlaceholderText(
            tr("leave empty to keep the current one") if shop and shop.has_password
            else tr("none yet: tasks that log in will fail"))
        self.origins = QPlainTextEdit("\n".join(shop.allowed_origins) if shop else "", self)
        self.origins.setPlaceholderText(tr("one per line, e.g. https://img.example.com"))
        self.origins.setFixedHeight(70)
        form = QFormLayout()
        form.addRow(tr("Name"), self.name)
        form.addRow(tr("Platform"), self.platform)
        form.addRow(tr("Seller-centre address"), self.base_url)
        form.addRow(tr("Login name"), self.username)
        form.addRow(tr("Password"), self.password)
        form.addRow(tr("Other allowed origins"), self.origins)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.error)
        lay.addWidget(self.buttons)
        fit_to_screen(self, 560, 360)

    def origin_list(self) -> list[str]:
        return [u.strip() for u in self.origins.toPlainText().split() if u.strip()]


def save_shop(store: Store, editing: bool, name: str, platform: str, base_url: str,
              username: str, password: str, origins: list[str]) -> None:
    """Blocking: add the shop (or change it), its origins and, if given, its password. On
    adding, everything is checked before the shop is written."""
    if editing:
        store.update_shop(name, username=username)
        store.set_shop_origins(name, origins)
        if password:
            set_shop_password(store, name, password)
        return
    table = [["name", "platform", "base_url", "username", "password", "allowed_origins"],
             [name, platform, base_url, username, password, " ".join(origins)]]
    found = check_shop_table(table, existing=[s.name for s in store.shops()])
    if found.errors:
        e = found.errors[0]
        raise InvalidInput(e.field, e.reason)
    import_shops(store, found.rows)


class PasswordDialog(KeepsInput):
    """Set or replace a shop's password (typed twice)."""

    def __init__(self, shop: str, replacing: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("password-dialog")
        self.shop = shop
        self.setWindowTitle(tr("Replace the password of %1", shop) if replacing
                            else tr("Set the password of %1", shop))
        self.password = QLineEdit(self)
        self.again = QLineEdit(self)
        for w in (self.password, self.again):
            w.setEchoMode(QLineEdit.EchoMode.Password)
        form = QFormLayout()
        form.addRow(tr("Password"), self.password)
        form.addRow(tr("Again"), self.again)
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel(tr("Stored encrypted with this store's key."), self))
        lay.addLayout(form)
        lay.addWidget(self.error)
        lay.addWidget(self.buttons)

    def checked(self) -> str:
        if self.password.text() != self.again.text():
            raise InvalidInput("password", tr("the two entries differ"))
        return self.password.text()


class ImportDialog(KeepsInput):
    """What a shop list holds: the valid rows, each error (line, field, reason); OK imports
    the valid rows."""

    def __init__(self, path: Path, found: ShopImport, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("import-dialog")
        self.found = found
        self.setWindowTitle(tr("Import shops from %1", path.name))
        lines = [tr("%1 shop(s) can be imported.", len(found.rows))]
        if found.without_password:
            lines.append(tr("%1 of them have no password (flagged in the Shops view): %2",
                            len(found.without_password), ", ".join(found.without_password[:10])))
        if found.errors:
            lines.append(tr("%1 row(s) have errors and are left out:", len(found.errors)))
        self.summary = QLabel("\n".join(lines), self)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.errors = QPlainTextEdit(self)
        self.errors.setObjectName("import-errors")
        self.errors.setReadOnly(True)
        self.errors.setPlainText("\n".join(
            tr("line %1: %2: %3", e.line, e.field, e.reason) for e in found.errors))
        self.errors.setVisible(bool(found.errors))
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText(tr("Import %1 shop(s)", len(found.rows)))
        ok.setEnabled(bool(found.rows))
        lay = QVBoxLayout(self)
        lay.addWidget(self.summary)
        lay.addWidget(self.errors, 1)
        lay.addWidget(self.error)
        lay.addWidget(self.buttons)
        fit_to_screen(self, 640, 420)


# -- the window's shop commands ------------------------------------------------------------

def _refresh(window: Any) -> None:
    window._mark(("shops",))
    window._spawn(window._load_choices())


def add_shop(window: Any) -> ShopDialog:
    return _shop_dialog(window, None)


def edit_shop(window: Any) -> ShopDialog | None:
    rows = [r for r in window.panels["shops"].selected_rows() if r is not None]
    if not rows:
        return None
    return _shop_dialog(window, rows[0])


def _shop_dialog(window: Any, shop: ShopLine | None) -> ShopDialog:
    dlg = ShopDialog(shop, window)

    def go() -> None:
        args = (window.store, shop is not None, dlg.name.text().strip(),
                dlg.platform.text().strip(), dlg.base_url.text().strip(),
                dlg.username.text().strip(), dlg.password.text(), dlg.origin_list())
        what = tr("Edit shop %1", args[2]) if shop else tr("Add shop %1", args[2])
        run_keeping_input(window, dlg, what, lambda: window.reader(save_shop, *args),
                          then=lambda _: _refresh(window))

    dlg.submitted.connect(go)
    window.dialog = dlg
    dlg.open()
    return dlg


def set_password(window: Any) -> PasswordDialog | None:
    rows = [r for r in window.panels["shops"].selected_rows() if r is not None]
    if not rows:
        return None
    shop = rows[0]
    dlg = PasswordDialog(shop.name, bool(getattr(shop, "has_password", False)), window)

    def go() -> None:
        async def write() -> None:
            password = dlg.checked()
            await window.reader(set_shop_password, window.store, shop.name, password)

        run_keeping_input(window, dlg, tr("Set the password of %1", shop.name), write,
                          then=lambda _: _refresh(window))

    dlg.submitted.connect(go)
    window.dialog = dlg
    dlg.open()
    return dlg


def import_file_dialog(window: Any) -> None:
    dlg = QFileDialog(window, tr("Import shops"), "",
                      tr("Shop lists (*.csv *.xlsx)"))
    dlg.setFileMode(QFileDialog.FileMode.ExistingFile)
    dlg.fileSelected.connect(lambda p: import_from(window, Path(p)))
    window.dialog = dlg
    dlg.open()


def import_from(window: Any, path: Path) -> asyncio.Task[None]:
    """Check the list on a worker thread, then show what it holds; OK imports the valid rows
    (checked again against the shops that exist by then)."""
    async def check() -> ShopImport:
        existing = [s.name for s in await window.reader(window.store.shops)]
        return await window.reader(read_shop_list, path, existing=existing)

    def show(found: ShopImport) -> None:
        dlg = ImportDialog(path, found, window)

        def go() -> None:
            run_keeping_input(window, dlg, tr("Import shops"),
                              lambda: window.reader(import_shops, window.store, found.rows),
                              then=lambda added: _imported(window, len(added)))

        dlg.submitted.connect(go)
        window.dialog = dlg
        dlg.open()

    return window.runner.run(tr("Import shops"), check, then=show)
