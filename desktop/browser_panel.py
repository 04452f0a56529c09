"""Which browser ShopFleet drives, with "Check again" and "Install browser": one panel shown
by the first-run wizard and by the settings dialog."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

import core
from core import Settings

from .i18n import tr

Checker = Callable[[Settings], Any]
"""``core.check_browser``: returns an object with ``ok``, ``summary`` and ``details``."""
Installer = Callable[..., Any]
"""``core.install_browser``: ``(on_output=...)`` → an object with ``ok``, ``offline``,
``outcome`` and ``message``."""


def _default_checker(settings: Settings) -> Any:
    return core.check_browser(settings)


def _default_installer(**kwargs: Any) -> Any:
    return core.install_browser(**kwargs)


class _Relay(QObject):
    """Carries results from worker threads to the GUI thread (queued: it lives there)."""

    checked = Signal(object)
    line = Signal(str)
    installed = Signal(object)


class BrowserPanel(QWidget):
    """Which browser ShopFleet will drive, and an "Install browser" action.

    Args:
        settings: the configuration whose ``[browser]`` section is checked.
        checker: the browser check (default ``core.check_browser``).
        installer: the installer (default ``core.install_browser``).
    """

    changed = Signal()
    """Emitted when the panel becomes busy or idle, or a check finished (the wizard page
    re-evaluates whether Next is allowed: not while a check or download runs)."""

    def __init__(self, settings: Settings, *, checker: Checker | None = None,
                 installer: Installer | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self._checker = checker or _default_checker
        self._installer = installer or _default_installer
        self.check_result: Any = None
        self.install_result: Any = None
        # No Qt parent: the worker threads hold it, so a thread that finishes after the
        # wizard was closed emits on a live object (whose receivers Qt has disconnected)
        # instead of a deleted one (a crash).
        self._relay = _Relay()
        self._relay.checked.connect(self._show_check)
        self._relay.line.connect(self._show_line)
        self._relay.installed.connect(self._show_install)

        self.summary = QLabel(tr("Looking for a browser…"), self)
        self.summary.setWordWrap(True)
        self.details = QPlainTextEdit(self)
        self.details.setReadOnly(True)
        self.details.setMaximumHeight(110)
        self.help = QLabel(tr(
            "ShopFleet drives an installed Google Chrome or Microsoft Edge: no download is "
            "needed. Without either, install Chrome or Edge, set a browser path in the "
            "settings, or download Chromium here (about 150 MB, needs the internet)."), self)
        self.help.setWordWrap(True)
        self.check_btn = QPushButton(tr("Check again"), self)
        self.install_btn = QPushButton(tr("Install browser (Chromium)"), self)
        self.check_btn.clicked.connect(self.check)
        self.install_btn.clicked.connect(self.install)
        self.progress = QPlainTextEdit(self)
        self.progress.setReadOnly(True)
        self.progress.setMaximumHeight(90)
        self.progress.hide()
        self.install_message = QLabel("", self)
        self.install_message.setWordWrap(True)
        self.install_message.hide()

        buttons = QHBoxLayout()
        buttons.addWidget(self.check_btn)
        buttons.addWidget(self.install_btn)
        buttons.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.summary)
        lay.addWidget(self.details)
        lay.addWidget(self.help)
        lay.addLayout(buttons)
        lay.addWidget(self.install_message)
        lay.addWidget(self.progress)

    @property
    def busy(self) -> bool:
        return not self.check_btn.isEnabled()

    def _set_busy(self, busy: bool) -> None:
        self.check_btn.setEnabled(not busy)
        self.install_btn.setEnabled(not busy)
        self.changed.emit()

    def check(self) -> None:
        """Look for a browser on a thread; the result shows when it is back."""
        if self.busy:
            return
        self._set_busy(True)
        self.summary.setText(tr("Looking for a browser…"))

        relay, checker, settings = self._relay, self._checker, self.settings

        def work() -> None:
            try:
                result = checker(settings)
            except Exception as exc:  # shown, not raised: a check must not kill the wizard
                result = _Failed(tr("The browser check failed: %1", exc))
            relay.checked.emit(result)

        threading.Thread(target=work, name="shopfleet-browser-check", daemon=True).start()

    def _show_check(self, result: Any) -> None:
        self.check_result = result
        self._set_busy(False)
        self.summary.setText(browser_summary(result))
        self.details.setPlainText(str(getattr(result, "details", "")))
        self.changed.emit()

    def install(self) -> None:
        """Run the browser installer on a thread, showing its output as it comes."""
        if self.busy:
            return
        self._set_busy(True)
        self.progress.clear()
        self.progress.show()
        self.install_message.setText(tr("Downloading Chromium… (this can take a few minutes)"))
        self.install_message.show()

        relay, installer = self._relay, self._installer

        def work() -> None:
            try:
                result = installer(on_output=relay.line.emit)
            except Exception as exc:
                result = _Failed(tr("The browser installer failed: %1", exc))
            relay.installed.emit(result)

        threading.Thread(target=work, name="shopfleet-browser-install", daemon=True).start()

    def _show_line(self, line: str) -> None:
        self.progress.appendPlainText(line)

    def _show_install(self, result: Any) -> None:
        self.install_result = result
        self._set_busy(False)
        self.install_message.setText(install_message(result))
        self.install_message.setToolTip(str(getattr(result, "message", "")))
        if getattr(result, "ok", False):
            self.check()  # the new browser should now be found


def browser_summary(result: Any) -> str:
    """The check's one line in the console's language (core's ``choice`` names the browser;
    the doctor's details below stay as core wrote them)."""
    if isinstance(result, _Failed):
        return str(result.summary)
    choice = getattr(result, "choice", "")
    if getattr(result, "ok", False) and choice:
        return tr("ShopFleet will use %1.", choice)
    if not getattr(result, "ok", False):
        return tr("No browser found. Install Google Chrome or Microsoft Edge, or use "
                  "\"Install browser\" to download Chromium.")
    return str(result.summary)


def install_message(result: Any) -> str:
    """The installer's outcome (core's code) in the console's language; core's own words
    stay in the tooltip and the output above."""
    outcome = getattr(result, "outcome", "failed")
    if outcome == "installed":
        return tr("Chromium is installed.")
    if outcome == "offline":
        return tr("The browser could not be downloaded: this computer cannot reach the download "
                  "server (no internet connection, or a proxy or firewall in the way). Connect "
                  "to the internet and try again, or install Google Chrome or Microsoft Edge, "
                  "which need no download.")
    return str(getattr(result, "message", "")) if isinstance(result, _Failed) else tr(
        "The browser installer failed: %1", getattr(result, "message", ""))


class _Failed:
    """A check or install that raised, shown like any other result."""

    ok = False
    offline = False
    outcome = "failed"

    def __init__(self, message: str) -> None:
        self.summary = self.message = message
        self.details = ""
