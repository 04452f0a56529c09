"""The first-run wizard: data folder, a browser, the first shops and flows — or the demo.

Shown once, before the console opens, when there is no database yet
(:func:`maybe_run_first_run`). Pages:

1. **Welcome** — where ShopFleet keeps its data (the platform's user data folder; uninstalling
   the app leaves it), and the choice: set up my shops, or try the demo first.
2. **Browser** — which browser ShopFleet will drive, or how to get one: install Chrome or Edge,
   or "Install browser" (Playwright's installer; it says plainly when there is no internet).
3. **Shops** — name, platform, base URL, login; passwords are encrypted with the vault key.
4. **Flows** — JSON flow files, checked, copied into ``<data>/flows`` and added to
   ``[flows] dirs`` in the configuration.
5. **Ready** — what will be done.

Nothing is written before "Finish": cancelling leaves no database, so the wizard comes back
next time. :class:`BrowserPanel` is also meant for the settings dialog (a "Browser" tab).

The wizard runs before the qasync loop (``exec()`` must never run inside a coroutine);
browser checks and the installer run on plain threads and report back through queued signals.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from core import (
    Settings,
    ShopFleetError,
    Vault,
    data_dir,
    default_db_path,
    flow_names,
    open_store,
    save_settings,
)

from . import names, palette
from .browser_panel import BrowserPanel, Checker, Installer
from .i18n import tr

PLATFORMS = ("pdd", "temu", "tiktok")
"""Platforms offered in the shop form (any other name may be typed)."""

@dataclass(frozen=True)
class NewShop:
    """A shop entered in the wizard (the password stays in memory until it is encrypted)."""

    name: str
    platform: str
    base_url: str
    username: str = ""
    password: str = field(default="", repr=False)


@dataclass(frozen=True)
class FirstRunResult:
    """What the operator chose.

    Attributes:
        action: ``console`` (set up; open the console), ``demo`` (try the demo first) or
            ``cancelled`` (closed the wizard; nothing was written).
        shops: the shops that were added.
        flows: the flow names that were imported.
        config_path: the configuration file written (None: none was needed).
    """

    action: Literal["console", "demo", "cancelled"]
    shops: tuple[str, ...] = ()
    flows: tuple[str, ...] = ()
    config_path: Path | None = None


def shop_problem(shop: NewShop, taken: set[str]) -> str:
    """What is wrong with a shop entered in the form, in plain words ("" when nothing)."""
    if not shop.name.strip():
        return tr("Give the shop a name.")
    if shop.name in taken:
        return tr("There is already a shop named %1.", shop.name)
    if not shop.platform.strip():
        return tr("Choose the shop's platform.")
    parts = urlsplit(shop.base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return tr("The base URL must start with http:// or https://, e.g. %1.",
                  "https://seller.example.com/shop/1")
    return ""


# -- pages ------------------------------------------------------------------------------------

class WelcomePage(QWizardPage):
    """Where the data lives, and: set up my shops, or try the demo."""

    def __init__(self, data_folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(tr("Welcome to ShopFleet"))
        text = QLabel(tr(
            "ShopFleet keeps its database, saved sessions and evidence in this folder:"), self)
        text.setWordWrap(True)
        self.folder = QLineEdit(str(data_folder), self)
        self.folder.setReadOnly(True)
        note = QLabel(tr(
            "Uninstalling ShopFleet leaves this folder in place, so nothing is lost by "
            "reinstalling; delete it yourself to remove your data."), self)
        note.setWordWrap(True)
        self.setup = QRadioButton(tr("Set up my shops"), self)
        self.demo = QRadioButton(tr("Try the demo first (a built-in practice site; nothing "
                                    "is saved)"), self)
        self.setup.setChecked(True)
        lay = QVBoxLayout(self)
        for w in (text, self.folder, note, self.setup, self.demo):
            lay.addWidget(w)
        lay.addStretch(1)


class BrowserPage(QWizardPage):
    """The browser panel; the operator may go on without a browser (and fix it later)."""

    def __init__(self, panel: BrowserPanel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(tr("Browser"))
        self.setSubTitle(tr("ShopFleet runs your shops' work in a real browser."))
        self.panel = panel
        lay = QVBoxLayout(self)
        lay.addWidget(panel)
        panel.changed.connect(self.completeChanged)
        self._checked_once = False

    def initializePage(self) -> None:
        if not self._checked_once:
            self._checked_once = True
            self.panel.check()

    def isComplete(self) -> bool:
        return not self.panel.busy


class ShopsPage(QWizardPage):
    """Add the first shops (none is fine: they can be added later in the console)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(tr("Your shops"))
        self.setSubTitle(tr("Add the shops ShopFleet should work for. You can add more later."))
        self.shops: list[NewShop] = []
        self.name = QLineEdit(self)
        self.platform = QComboBox(self)
        self.platform.setEditable(True)
        for code in PLATFORMS:
            self.platform.addItem(names.platform(code), code)
        self.base_url = QLineEdit(self)
        self.base_url.setPlaceholderText("https://seller.example.com/shop/1")
        self.username = QLineEdit(self)
        self.password = QLineEdit(self)
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.add_btn = QPushButton(tr("Add shop"), self)
        self.add_btn.clicked.connect(self.add_from_form)
        self.error = QLabel("", self)
        self.error.setStyleSheet(palette.error_style())
        self.error.setWordWrap(True)
        self.list = QListWidget(self)
        self.remove_btn = QPushButton(tr("Remove"), self)
        self.remove_btn.clicked.connect(self._remove_selected)
        form = QFormLayout()
        form.addRow(tr("Name"), self.name)
        form.addRow(tr("Platform"), self.platform)
        form.addRow(tr("Base URL"), self.base_url)
        form.addRow(tr("User name"), self.username)
        form.addRow(tr("Password"), self.password)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.add_btn, alignment=Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.error)
        lay.addWidget(self.list)
        lay.addWidget(self.remove_btn, alignment=Qt.AlignmentFlag.AlignLeft)

    def add_from_form(self) -> bool:
        """Add the shop in the form to the list; False (and the reason shown) if invalid."""
        shop = NewShop(self.name.text().strip(), self.platform_code(),
                       self.base_url.text().strip(), self.username.text().strip(),
                       self.password.text())
        problem = shop_problem(shop, {s.name for s in self.shops})
        self.error.setText(problem)
        if problem:
            return False
        self.shops.append(shop)
        self.list.addItem(f"{shop.name} · {shop.platform} · {shop.base_url}"
                          + (f" · {shop.username}" if shop.username else ""))
        for w in (self.name, self.base_url, self.username, self.password):
            w.clear()
        return True

    def platform_code(self) -> str:
        """The chosen platform's code (``pdd``); one typed in as typed."""
        i = self.platform.findText(self.platform.currentText())
        data = self.platform.itemData(i) if i >= 0 else None
        return str(data) if data else self.platform.currentText().strip()

    def _remove_selected(self) -> None:
        row = self.list.currentRow()
        if row >= 0:
            self.list.takeItem(row)
            del self.shops[row]

    def validatePage(self) -> bool:
        # A filled-in form that was never added is what the operator meant: add it.
        if self.name.text().strip() or self.base_url.text().strip():
            return self.add_from_form()
        return True


class FlowsPage(QWizardPage):
    """Import JSON flow files: checked now, copied into the data folder on Finish."""

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.setTitle(tr("Flows"))
        self.setSubTitle(tr(
            "Flows say what a task does, step by step. ShopFleet ships flows for replies, "
            "campaign sign-ups, uploads and data collection; import your own JSON flow files "
            "here (optional)."))
        self.files: list[Path] = []
        self.names: list[str] = []
        self.import_btn = QPushButton(tr("Import flow files…"), self)
        self.import_btn.clicked.connect(self._choose)
        self.error = QLabel("", self)
        self.error.setStyleSheet(palette.error_style())
        self.error.setWordWrap(True)
        self.list = QListWidget(self)
        lay = QVBoxLayout(self)
        lay.addWidget(self.import_btn, alignment=Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.error)
        lay.addWidget(self.list)

    def _choose(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, tr("Import flow files"), "",
                                                tr("Flow files (*.json)"))
        if files:
            self.add_files([Path(f) for f in files])

    def add_files(self, files: list[Path]) -> bool:
        """Check flow files (with every flow already known) and list them; False if invalid.

        The check is the real one: the files are read from a scratch folder together with the
        shipped flows and the configured folders, so a bad field or a name clash shows here.
        """
        chosen = self.files + [f for f in files if f not in self.files]
        if len({f.name for f in chosen}) != len(chosen):
            self.error.setText(tr("Two of the chosen files have the same file name."))
            return False
        with tempfile.TemporaryDirectory(prefix="shopfleet-flows-") as scratch:
            try:
                before = set(flow_names(self.settings))
                for f in chosen:
                    shutil.copyfile(f, Path(scratch) / f.name)
                names = flow_names(self.settings.with_changes(
                    flows={"dirs": [*self.settings.flows.dirs, scratch]}))
            except OSError as exc:
                self.error.setText(tr("Cannot read %1: %2", exc.filename, exc.strerror))
                return False
            except ShopFleetError as exc:
                # Name the operator's file, not the scratch copy.
                self.error.setText(str(exc).replace(str(Path(scratch)) + os.sep, ""))
                return False
        self.error.setText("")
        self.files = chosen
        self.names = sorted(set(names) - before)
        self.list.clear()
        self.list.addItems([f"{f.name}" for f in self.files])
        return True


class ReadyPage(QWizardPage):
    """A summary of what Finish will do."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(tr("Ready"))
        self.text = QLabel("", self)
        self.text.setWordWrap(True)
        self.error = QLabel("", self)
        self.error.setStyleSheet(palette.error_style())
        self.error.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addWidget(self.text)
        lay.addWidget(self.error)
        lay.addStretch(1)

    def initializePage(self) -> None:
        wiz = self.wizard()
        assert isinstance(wiz, FirstRunWizard)
        self.text.setText(wiz.summary())


# -- the wizard --------------------------------------------------------------------------------

class FirstRunWizard(QWizard):
    """The first-run wizard. :attr:`result_` says what was chosen once it closed.

    Args:
        settings: the loaded configuration.
        db_path: the database the console will open (created on Finish).
        config_path: where the configuration is saved when flows are imported.
        checker, installer: the browser check and installer (default: core's).
    """

    WELCOME, BROWSER, SHOPS, FLOWS, READY = range(5)

    def __init__(self, settings: Settings, *, db_path: Path, config_path: Path,
                 checker: Checker | None = None, installer: Installer | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("ShopFleet — first start"))
        self.settings = settings
        self.db_path = db_path
        self.config_path = config_path
        self.data_folder = data_dir()
        self.result_ = FirstRunResult("cancelled")
        self.welcome = WelcomePage(self.data_folder)
        self.browser = BrowserPage(BrowserPanel(settings, checker=checker, installer=installer))
        self.shops = ShopsPage()
        self.flows = FlowsPage(settings)
        self.ready = ReadyPage()
        for pid, page in ((self.WELCOME, self.welcome), (self.BROWSER, self.browser),
                          (self.SHOPS, self.shops), (self.FLOWS, self.flows),
                          (self.READY, self.ready)):
            self.setPage(pid, page)
        self.setStartId(self.WELCOME)

    @property
    def wants_demo(self) -> bool:
        return self.welcome.demo.isChecked()

    def nextId(self) -> int:
        current = self.currentId()
        if current == self.BROWSER and self.wants_demo:
            return self.READY
        return super().nextId()

    def summary(self) -> str:
        """What Finish will do, in plain words."""
        if self.wants_demo:
            return tr("ShopFleet will open the demo: a practice seller site on this computer "
                      "with nine shops and a stream of tasks. Your data folder stays empty; "
                      "this wizard comes back when you start ShopFleet next time.")
        lines = [tr("The database will be created at %1.", self.db_path)]
        if self.shops.shops:
            lines.append(tr("Shops to add: %1.", ", ".join(s.name for s in self.shops.shops)))
        else:
            lines.append(tr("No shops yet: add them later in the console."))
        if self.flows.files:
            lines.append(tr("Flows to import into %1: %2.", self.data_folder / "flows",
                            ", ".join(self.flows.names) or ", ".join(
                                f.name for f in self.flows.files)))
        check = self.browser.panel.check_result
        if check is not None and not check.ok:
            lines.append(tr("No browser yet: tasks wait until one is installed."))
        return "\n".join(lines)

    def accept(self) -> None:
        try:
            self.result_ = self.apply()
        except (ShopFleetError, OSError) as exc:
            self.ready.error.setText(tr("Could not finish: %1", exc))
            return
        super().accept()

    def apply(self) -> FirstRunResult:
        """Write what was chosen: database, shops (passwords encrypted), flows, configuration.

        Raises:
            ShopFleetError: a shop or a flow was refused (the message names the field).
            OSError: a file could not be written.
        """
        if self.wants_demo:
            return FirstRunResult("demo")
        config_written: Path | None = None
        settings = self.settings
        imported: list[str] = []
        if self.flows.files:
            folder = self.data_folder / "flows"
            folder.mkdir(parents=True, exist_ok=True)
            for f in self.flows.files:
                shutil.copyfile(f, folder / f.name)
            imported = list(self.flows.names)
            if str(folder) not in settings.flows.dirs:
                settings = settings.with_changes(flows={"dirs": [*settings.flows.dirs,
                                                                 str(folder)]})
                save_settings(settings, self.config_path)
                config_written = self.config_path
        store = open_store(settings, self.db_path)
        try:
            vault = Vault.open(self.data_folder) if any(
                s.password for s in self.shops.shops) else None
            for s in self.shops.shops:
                store.add_shop(s.name, platform=s.platform, base_url=s.base_url,
                               username=s.username)
                if s.password and vault is not None:
                    store.update_shop(s.name,
                                      password_enc=vault.encrypt(s.password.encode("utf-8")))
        finally:
            store.close()
        return FirstRunResult("console", tuple(s.name for s in self.shops.shops),
                              tuple(imported), config_written)


def maybe_run_first_run(settings: Settings, *, db_path: str | Path | None = None,
                        config_path: Path | None = None,
                        parent: QWidget | None = None) -> FirstRunResult | None:
    """Show the first-run wizard when the database does not exist yet.

    Call it after the QApplication exists and before the qasync loop runs (it blocks in
    ``exec()``).

    Args:
        settings: the loaded configuration.
        db_path: the database the console will open (default: as ``open_store`` chooses).
        config_path: where to save the configuration (default ``<data>/shopfleet.toml``).

    Returns:
        None when there is a database already (no wizard), else what the operator chose.
    """
    if db_path:
        db = Path(db_path).expanduser()
    elif settings.store.path:
        db = Path(settings.store.path).expanduser()
    else:
        db = default_db_path()
    if db.exists():
        return None
    wizard = FirstRunWizard(settings, db_path=db,
                            config_path=config_path or data_dir() / "shopfleet.toml",
                            parent=parent)
    wizard.exec()
    return wizard.result_
