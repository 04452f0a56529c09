"""Shops in the console: add, edit, set or replace a password, import a list (CSV/XLSX), tag
and untag the selected shops (#18 shop groups).

The rows of the Shops view are core's :class:`core.ShopRow` (work counts) joined with the
shop's record (login name, password set, allowed origins): a shop without a password is
flagged (an icon, a tooltip, a filter), never a silent trap.

#17: the shop's network identity (its profile: proxy, locale, time zone, user agent, viewport,
geolocation, headers) is edited in the shop dialog (:class:`ProfileFields`), checked with the
CLI's words (:func:`core.parse_profile_fields`); the proxy's password is typed apart, stored
encrypted and never shown. The view's Network column says "proxy down" with the error while a
shop's proxy breaker is open (the engine's snapshot and its events) and warns about shops of a
platform that share a proxy, or go direct while the others use one (:func:`core.check_exits`).

Every dialog here keeps its input when core refuses it: the error (naming the field) shows in
the dialog, which stays open. The checks are core's (:mod:`core.shop_import` for lists); the
writes run on a worker thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QApplication,
    QCompleter,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from core import (
    ExitWarning,
    InvalidInput,
    ProfileInput,
    Refused,
    ShopFleetError,
    ShopImport,
    ShopProfile,
    ShopRow,
    Store,
    check_exits,
    check_shop_table,
    import_shops,
    live_only,
    normalize_tags,
    parse_profile_fields,
    profile_input_from_form,
    read_hold_words,
    read_shop_list,
    save_profile,
    set_shop_password,
    shop_rows,
)

from . import palette
from .i18n import QT_TR_NOOP, tr
from .models import fmt_time
from .screen import fit_to_screen, scrolling


@dataclass(frozen=True)
class ShopLine(ShopRow):
    """A row of the Shops view: core's :class:`core.ShopRow` (the shop's work now) and what it
    needs to log in and to reach its site."""

    username: str = ""
    has_password: bool = False
    allowed_origins: tuple[str, ...] = ()
    # --- #17 the shop's network identity
    profile: ShopProfile = field(default_factory=ShopProfile)
    has_proxy_password: bool = False
    proxy_down: str = ""
    """Why its proxy is down (its tasks wait), or "" while it answers."""
    exit_warnings: tuple[ExitWarning, ...] = ()
    """The platform could tie it to other shops by its network path."""


def load_shop_lines(store: Store, proxy_down: Mapping[str, str] | None = None
                    ) -> list[ShopLine]:
    """Blocking: every shop's row (run it on a worker thread). ``proxy_down``: shops whose
    proxy is down, with why (the engine's :attr:`core.EngineStatistics.proxy_down`)."""
    records = {s.name: s for s in store.shops()}
    warned: dict[str, list[ExitWarning]] = {}
    for w in check_exits(records.values()):
        for name in w.shops:
            warned.setdefault(name, []).append(w)
    down = proxy_down or {}
    out = []
    for r in shop_rows(store):
        rec = records.get(r.name)
        work = {f.name: getattr(r, f.name) for f in fields(ShopRow)}
        out.append(ShopLine(
            **work, username=rec.username if rec else "",
            has_password=bool(rec and rec.has_password),
            allowed_origins=tuple(rec.allowed_origins) if rec else (),
            profile=rec.profile if rec else ShopProfile(),
            has_proxy_password=bool(rec and rec.has_proxy_password),
            proxy_down=down.get(r.name, ""), exit_warnings=tuple(warned.get(r.name, ()))))
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


# -- the Network column (#17) ------------------------------------------------------------

def network_text(row: Any) -> str:
    """"proxy down", the proxy (no password: the profile never holds one) or "direct"."""
    if getattr(row, "proxy_down", ""):
        return tr("proxy down")
    profile = getattr(row, "profile", None)
    shared = any(w.kind != "direct" for w in getattr(row, "exit_warnings", ()))
    if profile is not None and profile.proxy:
        return tr("%1 (shared)", profile.proxy) if shared else profile.proxy
    if getattr(row, "exit_warnings", ()):
        return tr("direct (others use a proxy)")
    return tr("direct")


def _warning_text(w: ExitWarning, me: str) -> str:
    if w.kind == "direct":
        return tr("No proxy, while other %1 shops use one", w.platform)
    others = ", ".join(n for n in w.shops if n != me)
    if w.kind == "exit":
        return tr("Same exit address %1 as %2 (%3)", w.address, others, w.platform)
    return tr("Same proxy %1 as %2 (%3)", w.address, others, w.platform)


def network_tip(row: Any) -> str:
    lines = []
    if getattr(row, "proxy_down", ""):
        lines.append(tr("Proxy down: %1", row.proxy_down))
        lines.append(tr("Its tasks wait for the proxy; other shops run."))
    lines += [_warning_text(w, row.name) for w in getattr(row, "exit_warnings", ())]
    return "\n".join(lines)


def network_icon(row: Any) -> QIcon | None:
    if getattr(row, "proxy_down", ""):
        return QApplication.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxCritical)
    if getattr(row, "exit_warnings", ()):
        return QApplication.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
    return None


# -- the Takeover column (#15) ------------------------------------------------------------

def live_hold(row: Any) -> Any:
    """The row's hold while it has not run out (the column is redrawn every second, so a
    hold whose holder stopped renewing it disappears at its time, before the next read)."""
    return live_only(getattr(row, "hold", None), time.time())


_VIA_WORDS = (QT_TR_NOOP("Shops view"), QT_TR_NOOP("command line"))
"""core.takeover's words for where a takeover was asked (``read_hold_words(...).via``), so the
translation tools see them; shown through :func:`tr`."""


def hold_who(hold: Any) -> str:
    """Who holds the shop and from where, in the console's language (the store keeps the
    words in one language for every console of a fleet)."""
    words = str(hold.what or hold.owner)
    read = read_hold_words(words)
    if read is None:
        return words
    where = tr("ticket #%1", read.ticket) if read.ticket is not None else tr(read.via or "")
    return f"{read.who} ({where})"


def hold_text(row: Any) -> str:
    """"<who> (<from where>), until <time>" while a person's takeover holds the shop (the
    column's title says what it is: the cell stays short on a small screen)."""
    hold = live_hold(row)
    if hold is None:
        return ""
    return tr("%1, until %2", hold_who(hold), fmt_time(hold.until))


def hold_tip(row: Any) -> str:
    hold = live_hold(row)
    if hold is None:
        return ""
    return tr("taken over by %1 until %2", hold_who(hold), fmt_time(hold.until)) + "\n" + tr(
        "A person works in this shop's browser: none of its tasks starts until the browser is "
        "closed (or the hold runs out at %1 if its console stops).", fmt_time(hold.until))


def hold_icon(row: Any) -> QIcon | None:
    if live_hold(row) is None:
        return None
    return QApplication.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxInformation)


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
        self.tags = tags_field(shop.tags if shop else (), self)
        self.profile = ProfileFields(shop, self)  # #17
        form = QFormLayout()
        form.addRow(tr("Name"), self.name)
        form.addRow(tr("Platform"), self.platform)
        form.addRow(tr("Seller-centre address"), self.base_url)
        form.addRow(tr("Login name"), self.username)
        form.addRow(tr("Password"), self.password)
        form.addRow(tr("Other allowed origins"), self.origins)
        form.addRow(tr("Tags"), self.tags)
        # The fields scroll (the profile group made the form taller than a 600-pixel
        # screen); the error line and the buttons stay in view.
        page = QWidget(self)
        fields_lay = QVBoxLayout(page)
        fields_lay.setContentsMargins(0, 0, 0, 0)
        fields_lay.addLayout(form)
        fields_lay.addWidget(self.profile)
        lay = QVBoxLayout(self)
        lay.addWidget(scrolling(page), 1)
        lay.addWidget(self.error)
        lay.addWidget(self.buttons)
        fit_to_screen(self, 560, 640)

    def origin_list(self) -> list[str]:
        return [u.strip() for u in self.origins.toPlainText().split() if u.strip()]

    def tag_list(self) -> list[str]:
        return split_tags(self.tags.text())


# -- tags (#18 shop groups) ----------------------------------------------------------------

def tags_field(tags: Any = (), parent: QWidget | None = None) -> QLineEdit:
    """A line for tags, separated by spaces or commas (what a shop list's ``tags`` column
    takes)."""
    field = QLineEdit(" ".join(tags), parent)
    field.setObjectName("tags")
    field.setPlaceholderText(tr("e.g. north 华北 big (spaces or commas between tags)"))
    return field


def split_tags(text: str) -> list[str]:
    return [t for t in text.replace(",", " ").replace(";", " ").split() if t]


def set_shop_tags(store: Store, name: str, tags: list[str]) -> None:
    """Blocking: make ``tags`` the shop's tags, exactly (added and removed in one go)."""
    wanted = set(normalize_tags(tags, field="tags"))
    have = set(store.shop(name).tags)
    if wanted != have:
        store.retag_shop(name, add=sorted(wanted - have), remove=sorted(have - wanted))


def retag_shops(store: Store, names: list[str], tags: list[str], *, remove: bool) -> int:
    """Blocking: add (or remove) ``tags`` on every shop of ``names``; every tag is checked
    before the first shop changes. Returns how many shops changed."""
    checked = normalize_tags(tags, field="tags")
    if not checked:
        raise InvalidInput("tags", tr("give at least one tag"))
    changed = 0
    for name in names:
        before = set(store.shop(name).tags)
        after = store.retag_shop(name, **({"remove": checked} if remove else {"add": checked}))
        changed += set(after.tags) != before
    return changed


class TagDialog(KeepsInput):
    """Add tags to the selected shops, or remove tags from them."""

    def __init__(self, names: list[str], *, remove: bool,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("tag-dialog")
        self.names = names
        self.remove = remove
        self.setWindowTitle(tr("Remove tags from %1 shop(s)", len(names)) if remove
                            else tr("Tag %1 shop(s)", len(names)))
        shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        self.shops = QLabel(shown, self)
        self.shops.setTextFormat(Qt.TextFormat.PlainText)
        self.shops.setWordWrap(True)
        self.tags = tags_field((), self)
        hint = QLabel(tr("A tag is letters (any script), digits, '_', '-' or '.'. Views, "
                         "schedules and commands pick a group by its tag (tag:north)."), self)
        hint.setWordWrap(True)
        hint.setStyleSheet(f"color: {palette.css('muted')}")
        form = QFormLayout()
        form.addRow(tr("Shops"), self.shops)
        form.addRow(tr("Tags"), self.tags)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(hint)
        lay.addStretch(1)
        lay.addWidget(self.error)
        lay.addWidget(self.buttons)
        fit_to_screen(self, 460, 200)


def tag_shops(window: Any, *, remove: bool = False) -> TagDialog | None:
    """The Shops view's Tag…/Untag… on the selected shops."""
    names = [r.name for r in window.panels["shops"].selected_rows() if r is not None]
    if not names:
        return None
    dlg = TagDialog(names, remove=remove, parent=window)

    def go() -> None:
        tags = split_tags(dlg.tags.text())
        what = (tr("Remove tags from %1 shop(s)", len(names)) if remove
                else tr("Tag %1 shop(s)", len(names)))
        run_keeping_input(window, dlg, what,
                          lambda: window.reader(retag_shops, window.store, names, tags,
                                                remove=remove),
                          then=lambda _: _refresh(window))

    dlg.submitted.connect(go)
    window.dialog = dlg
    dlg.open()
    return dlg


class ProfileFields(QGroupBox):
    """#17: the shop's network identity in its dialog. The proxy shows without a password
    (the store has none in it); the password is typed apart, never shown."""

    def __init__(self, shop: ShopLine | None, parent: QWidget | None = None) -> None:
        super().__init__(tr("Network identity (profile)"), parent)
        self.setObjectName("shop-profile")
        p = shop.profile if shop is not None else ShopProfile()
        self.had_password = bool(shop is not None and shop.has_proxy_password)
        self.shown_proxy = p.proxy
        self.proxy = QLineEdit(p.proxy, self)
        self.proxy.setPlaceholderText(tr("http://user@host:port — empty: direct"))
        self.proxy_password = QLineEdit(self)
        self.proxy_password.setEchoMode(QLineEdit.EchoMode.Password)
        self.proxy_password.setPlaceholderText(
            tr("stored encrypted; leave empty to keep it") if self.had_password
            else tr("if the proxy asks for one"))
        self.language = QLineEdit(p.locale, self)
        self.language.setPlaceholderText(tr("platform's or zh-CN"))
        self.timezone = QLineEdit(p.timezone, self)
        self.timezone.setPlaceholderText(tr("platform's or this computer's, e.g. Asia/Shanghai"))
        self.timezone.setCompleter(_timezone_completer(self))
        self.user_agent = QLineEdit(p.user_agent, self)
        self.user_agent.setPlaceholderText(tr("platform's or the browser's own"))
        self.viewport = QLineEdit("x".join(map(str, p.viewport)) if p.viewport else "", self)
        self.viewport.setPlaceholderText("1366x768")
        self.geolocation = QLineEdit(
            ",".join(f"{v:g}" for v in p.geolocation) if p.geolocation else "", self)
        self.geolocation.setPlaceholderText("31.23,121.47")
        self.headers = QPlainTextEdit("\n".join(f"{k}: {v}" for k, v in p.headers), self)
        self.headers.setPlaceholderText(tr("one per line, e.g. X-Team: north"))
        self.headers.setFixedHeight(56)
        form = QFormLayout(self)
        form.addRow(tr("Proxy"), self.proxy)
        form.addRow(tr("Proxy password"), self.proxy_password)
        form.addRow(tr("Language (locale)"), self.language)
        form.addRow(tr("Time zone"), self.timezone)
        form.addRow(tr("User agent"), self.user_agent)
        form.addRow(tr("Window size"), self.viewport)
        form.addRow(tr("Location"), self.geolocation)
        form.addRow(tr("Extra headers"), self.headers)

    def given(self) -> ProfileInput:
        """What the operator typed (checked by :func:`save_shop`, on a worker thread).

        Raises:
            InvalidInput: a proxy password that cannot go with the proxy typed.
        """
        return profile_input_from_form(
            shown_proxy=self.shown_proxy, proxy=self.proxy.text(),
            proxy_password=self.proxy_password.text(), locale=self.language.text(),
            timezone=self.timezone.text(), user_agent=self.user_agent.text(),
            viewport=self.viewport.text(), geolocation=self.geolocation.text(),
            headers=self.headers.toPlainText().splitlines(), had_password=self.had_password)


def _timezone_completer(parent: QWidget) -> QCompleter:
    import zoneinfo

    c = QCompleter(sorted(zoneinfo.available_timezones()), parent)
    c.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
    c.setFilterMode(Qt.MatchFlag.MatchContains)
    return c


def save_shop(store: Store, editing: bool, name: str, platform: str, base_url: str,
              username: str, password: str, origins: list[str],
              tags: list[str] | None = None, profile: ProfileInput | None = None) -> None:
    """Blocking: add the shop (or change it), its origins, its tags, its profile and, if
    given, its password. Everything is checked before anything is written (the profile with
    the CLI's words, each field named)."""
    change = None
    if profile is not None:
        current = store.shop(name).profile if editing else ShopProfile()
        change = parse_profile_fields(current, profile, prefix="")
    if editing:
        if tags is not None:
            normalize_tags(tags, field="tags")  # before the first write
        store.update_shop(name, username=username)
        store.set_shop_origins(name, origins)
        if tags is not None:
            set_shop_tags(store, name, tags)
        if password:
            set_shop_password(store, name, password)
        if change is not None:
            save_profile(store, name, change)
        return
    table = [["name", "platform", "base_url", "username", "password", "allowed_origins",
              "tags"],
             [name, platform, base_url, username, password, " ".join(origins),
              " ".join(tags or ())]]
    found = check_shop_table(table, existing=[s.name for s in store.shops()])
    if found.errors:
        e = found.errors[0]
        raise InvalidInput(e.field, e.reason)
    import_shops(store, found.rows)
    if change is not None and not change.profile.is_empty:
        save_profile(store, name, change)


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
                dlg.username.text().strip(), dlg.password.text(), dlg.origin_list(),
                dlg.tag_list())
        what = tr("Edit shop %1", args[2]) if shop else tr("Add shop %1", args[2])

        async def write() -> None:
            given = dlg.profile.given()  # a refusal here stays in the dialog too
            await window.reader(save_shop, *args, given)

        run_keeping_input(window, dlg, what, write, then=lambda _: _refresh(window))

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
