"""Dialogs for operator input: bump, gate rate, submit, settings. All open with ``open()``
(never ``exec()``) and report through their ``accepted`` signal."""

from __future__ import annotations

import tomllib
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core import (
    ConfigError,
    InvalidInput,
    Settings,
    TaskSpec,
    gates_toml,
    parse_specs,
    settings_from_dict,
)

from . import names, palette
from .browser_panel import BrowserPanel
from .i18n import LANGUAGES, tr
from .screen import fit_to_screen, scrolling


def _buttons(dlg: QDialog) -> QDialogButtonBox:
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                           | QDialogButtonBox.StandardButton.Cancel, dlg)
    box.accepted.connect(dlg.accept)
    box.rejected.connect(dlg.reject)
    return box


def _error_label(parent: QWidget) -> QLabel:
    label = QLabel(parent)
    label.setObjectName("error")
    label.setStyleSheet(palette.error_style())
    label.setWordWrap(True)
    return label


class BumpDialog(QDialog):
    """Bump priority: to a score or by a delta."""

    def __init__(self, count: int, current: float | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Bump priority"))
        self.to = QRadioButton(tr("Set the score to"), self)
        self.by = QRadioButton(tr("Change the score by"), self)
        group = QButtonGroup(self)
        group.addButton(self.to)
        group.addButton(self.by)
        self.by.setChecked(True)
        self.value = QDoubleSpinBox(self)
        self.value.setRange(-1000, 1000)
        self.value.setDecimals(2)
        self.value.setValue(5.0)
        self.to.toggled.connect(lambda on: self.value.setValue(
            current if on and current is not None else (5.0 if not on else self.value.value())))
        form = QVBoxLayout(self)
        form.addWidget(QLabel(tr("%1 task(s) selected.", count), self))
        form.addWidget(self.to)
        form.addWidget(self.by)
        form.addWidget(self.value)
        form.addWidget(_buttons(self))

    def values(self) -> dict[str, float]:
        """``{"to": x}`` or ``{"by": x}``."""
        return {"to" if self.to.isChecked() else "by": float(self.value.value())}


class GateDialog(QDialog):
    """Change a gate's rate and burst."""

    def __init__(self, gate_names: list[str], current: dict[str, tuple[float, float]],
                 selected: str = "*", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Rate limit"))
        self.name = QComboBox(self)
        for n in gate_names:
            self.name.addItem(names.gate(n), n)
        self.rate = QDoubleSpinBox(self)
        # A gate lets at least one request through now and then (0 would stop the site:
        # that is the breaker's job, or pausing the site).
        self.rate.setRange(0.01, 100000)
        self.rate.setSuffix(tr(" /s"))
        self.rate.setDecimals(2)
        self.burst = QDoubleSpinBox(self)
        self.burst.setRange(1.0, 100000)
        self.burst.setDecimals(0)
        self.error = _error_label(self)
        self.on_ok: Callable[[], object] | None = None
        """Set by the window: OK runs it and the dialog stays open until it succeeded."""
        self._current = current

        def fill() -> None:
            r, b = current.get(self.name.currentData(), (1.0, 1.0))
            self.rate.setValue(r)
            self.burst.setValue(b)

        self.name.currentIndexChanged.connect(lambda *_: fill())
        self.name.setCurrentIndex(max(0, self.name.findData(selected)))
        fill()
        form = QFormLayout(self)
        form.addRow(tr("Site"), self.name)
        form.addRow(tr("Requests per second"), self.rate)
        form.addRow(tr("Burst"), self.burst)
        form.addRow(self.error)
        form.addRow(_buttons(self))

    def values(self) -> tuple[str, float, float]:
        return str(self.name.currentData()), float(self.rate.value()), float(self.burst.value())

    def accept(self) -> None:
        if self.on_ok is None:
            super().accept()
        elif not getattr(self, "busy", False):
            self.error.clear()
            self.on_ok()

    def show_error(self, text: str) -> None:
        self.busy = False
        self.error.setText(text)


class SubmitDialog(QDialog):
    """Submit tasks: fill a form, or import a JSON / JSON Lines file. Validation errors name
    the field (``tasks[3].deadline: …``) and keep the dialog open."""

    def __init__(self, shops: list[str], types_: list[str], flows: list[str],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Submit tasks"))
        self.specs: list[TaskSpec] = []
        self.on_ok: Callable[[], object] | None = None
        """Set by the window: OK runs it and the dialog stays open until it succeeded."""
        self.tabs = QTabWidget(self)
        form_w = QWidget(self)
        form = QFormLayout(form_w)
        self.type = QComboBox(self, editable=True)
        for t in types_:
            self.type.addItem(names.task_type(t), t)
        self.shop = QComboBox(self)
        self.shop.addItems(shops)
        self.flow = QComboBox(self, editable=True)
        for f in flows:  # shipped flows are named like their task type
            self.flow.addItem(names.task_type(f), f)
        self.type.currentTextChanged.connect(lambda _: self._follow_type())
        self._follow_type()
        self.params = QPlainTextEdit(self)
        self.params.setPlaceholderText('{"page": 1}')
        self.params.setPlainText("{}")
        self.priority = QLineEdit(self)
        self.priority.setPlaceholderText(tr("default for the type"))
        self.deadline = QLineEdit(self)
        self.deadline.setPlaceholderText("2026-11-29T15:00:00+08:00")
        self.count = QSpinBox(self)
        self.count.setRange(1, 10000)
        form.addRow(tr("Type"), self.type)
        form.addRow(tr("Shop"), self.shop)
        form.addRow(tr("Flow"), self.flow)
        form.addRow(tr("Parameters (JSON)"), self.params)
        form.addRow(tr("Priority"), self.priority)
        form.addRow(tr("Deadline"), self.deadline)
        form.addRow(tr("How many"), self.count)
        file_w = QWidget(self)
        file_lay = QVBoxLayout(file_w)
        row = QHBoxLayout()
        self.path = QLineEdit(self)
        self.path.setPlaceholderText(tr("a .json or .jsonl file"))
        browse = QPushButton(tr("Choose…"), self)
        browse.clicked.connect(self._browse)
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        file_lay.addLayout(row)
        self.preview = QLabel(self)
        file_lay.addWidget(self.preview)
        file_lay.addStretch(1)
        self.tabs.addTab(form_w, tr("Form"))
        self.tabs.addTab(file_w, tr("File"))
        self.error = _error_label(self)
        lay = QVBoxLayout(self)
        lay.addWidget(self.tabs)
        lay.addWidget(self.error)
        lay.addWidget(_buttons(self))
        fit_to_screen(self, 560, 460)

    @staticmethod
    def _code(box: QComboBox) -> str:
        """The chosen item's code (one typed in: as typed)."""
        i = box.findText(box.currentText())
        data = box.itemData(i) if i >= 0 else None
        return str(data) if data else box.currentText().strip()

    def type_code(self) -> str:
        return self._code(self.type)

    def flow_code(self) -> str:
        return self._code(self.flow)

    def _follow_type(self) -> None:
        i = self.flow.findData(self.type_code())
        if i >= 0:
            self.flow.setCurrentIndex(i)

    def _browse(self) -> None:
        dlg = QFileDialog(self, tr("Import tasks"), "", tr("Tasks (*.json *.jsonl);;All (*)"))
        dlg.fileSelected.connect(self.path.setText)
        dlg.open()

    def build(self) -> list[TaskSpec]:
        """The specs the dialog describes. Raises ``InvalidInput`` naming the field."""
        if self.tabs.currentIndex() == 1:
            p = Path(self.path.text().strip())
            if not self.path.text().strip():
                raise InvalidInput(tr("file"), tr("choose a file"))
            try:
                text = p.read_text(encoding="utf-8")  # small, chosen by the operator
            except OSError as exc:
                raise InvalidInput(tr("file"), f"{p}: {exc.strerror or exc}") from None
            return parse_specs(text)
        import json

        try:
            params = json.loads(self.params.toPlainText() or "{}")
        except json.JSONDecodeError as exc:
            raise InvalidInput("params", tr("not JSON: %1", exc.msg)) from None
        data: dict[str, Any] = {"type": self.type_code(),
                                "shop": self.shop.currentText(),
                                "flow": self.flow_code() or None,
                                "params": params}
        if self.priority.text().strip():
            try:
                data["priority"] = float(self.priority.text())
            except ValueError:
                raise InvalidInput("priority", tr("must be a number")) from None
        if self.deadline.text().strip():
            data["deadline"] = self.deadline.text().strip()
        one = json.dumps(data, ensure_ascii=False)
        return parse_specs("\n".join([one] * self.count.value()))

    def accept(self) -> None:
        if getattr(self, "busy", False):
            return
        try:
            self.specs = self.build()
        except InvalidInput as exc:
            self.error.setText(f"{exc.field}: {exc.reason}")
            return
        self.error.clear()
        if self.on_ok is not None:
            self.on_ok()  # the dialog stays open until the engine took the tasks
        else:
            super().accept()

    def show_error(self, text: str) -> None:
        self.busy = False
        self.error.setText(text)


# -- settings ---------------------------------------------------------------------------------

_FORM_SECTIONS = ("queue", "priority", "pool", "breakers", "browser", "store")
"""Sections shown as forms (``browser`` inside the Browser tab, under the browser check)."""


def _scalar_kind(annotation: Any) -> str | None:
    origin = typing.get_origin(annotation)
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    if annotation is str:
        return "str"
    if origin is typing.Literal:
        return "choice"
    if origin in (types.UnionType, typing.Union):
        return None
    return None


class SettingsDialog(QDialog):
    """The configuration, as a form per section plus the gates as TOML, and the language.

    Values are checked with core's validation when OK is pressed; an error names the field
    (``queue.max_backlog: Input should be greater than 0``) and marks its box. On success
    :attr:`settings` holds the validated settings and :attr:`toml` the text to save.
    """

    def __init__(self, settings: Settings, *, language: str, path: str,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Settings"))
        self.base = settings
        self.settings: Settings | None = None
        self.widgets: dict[str, QWidget] = {}
        self.tabs = QTabWidget(self)
        data = settings.model_dump(by_alias=True)
        general = QWidget(self)
        gform = QFormLayout(general)
        self.language = QComboBox(self)
        for key, name in LANGUAGES.items():
            self.language.addItem(tr(name) if key == "system" else name, key)
        self.language.setCurrentIndex(max(0, self.language.findData(language)))
        gform.addRow(tr("Language"), self.language)
        lang_note = QLabel(tr("The language changes at once; \"System\" follows the "
                              "computer's language."), self)
        lang_note.setWordWrap(True)
        gform.addRow("", lang_note)
        self.sound = QCheckBox(tr("Play a sound when a new ticket opens"), self)
        self.sound.setObjectName("notify-sound")
        self.sound.setChecked(bool(QSettings().value("notify/sound", False, type=bool)))
        gform.addRow(tr("Notifications"), self.sound)
        path_label = QLabel(path, self)
        path_label.setWordWrap(True)
        path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gform.addRow(tr("Configuration file"), path_label)
        note = QLabel(tr("Changes to the configuration apply when the console starts again; "
                         "rate limits and breakers change live in the \"Rate limits & "
                         "breakers\" view."), self)
        note.setWordWrap(True)
        gform.addRow(note)
        self.tabs.addTab(scrolling(general), tr("General"))
        # Which browser ShopFleet drives, with "check again" and "install browser"; the
        # [browser] fields follow on the same page.
        self.browser_panel = BrowserPanel(settings, parent=self)
        browser_page = QWidget(self)
        browser_lay = QVBoxLayout(browser_page)
        browser_lay.addWidget(self.browser_panel)
        self.browser_panel.check()
        for section in _FORM_SECTIONS:
            model = type(getattr(settings, section))
            page = QWidget(self)
            form = QFormLayout(page)
            form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
            for fname, finfo in model.model_fields.items():
                kind = _scalar_kind(finfo.annotation)
                if kind is None:
                    continue
                value = data[section][fname]
                key = f"{section}.{fname}"
                w: QWidget
                if kind == "bool":
                    w = QCheckBox(self)
                    w.setChecked(bool(value))
                elif kind == "int":
                    w = QSpinBox(self)
                    # Wide range on purpose: core's validation gives the field-named message.
                    w.setRange(-2_000_000_000, 2_000_000_000)
                    w.setValue(int(value))
                elif kind == "float":
                    w = QDoubleSpinBox(self)
                    w.setRange(-1e9, 1e9)
                    w.setDecimals(3)
                    w.setValue(float(value))
                elif kind == "choice":
                    w = QComboBox(self)
                    w.addItems([str(a) for a in typing.get_args(finfo.annotation)])
                    w.setCurrentText(str(value))
                else:
                    w = QLineEdit(str(value), self)
                w.setObjectName(key)
                label, help_ = names.setting(key)
                # The raw key (what the configuration file says) only in the tooltip.
                w.setToolTip(f"{help_}\n[{section}] {fname}" if help_ else
                             f"[{section}] {fname}")
                self.widgets[key] = w
                form.addRow(label, w)
                if help_:
                    hl = QLabel(help_, self)
                    hl.setWordWrap(True)
                    hl.setObjectName(f"help-{key}")
                    hl.setStyleSheet(f"color: {palette.css('muted')}")
                    form.addRow("", hl)
            if section == "browser":
                browser_lay.addWidget(page)
                browser_lay.addStretch(1)
                self.tabs.insertTab(1, scrolling(browser_page), names.section("browser"))
            else:
                self.tabs.addTab(scrolling(page), names.section(section))
        self.gates = QPlainTextEdit(self)
        self.gates.setObjectName("gates")
        self.gates.setPlainText(gates_toml(data["gates"]))
        self.tabs.addTab(self.gates, tr("Rate limits (TOML)"))
        self.error = _error_label(self)
        lay = QVBoxLayout(self)
        lay.addWidget(self.tabs)
        lay.addWidget(self.error)
        lay.addWidget(_buttons(self))
        fit_to_screen(self, 640, 560)

    def chosen_language(self) -> str:
        return str(self.language.currentData())

    def chosen_sound(self) -> bool:
        return self.sound.isChecked()

    def collect(self) -> dict[str, Any]:
        data: dict[str, Any] = self.base.model_dump(by_alias=True)
        for key, w in self.widgets.items():
            section, fname = key.split(".", 1)
            value: Any
            if isinstance(w, QCheckBox):
                value = w.isChecked()
            elif isinstance(w, QSpinBox | QDoubleSpinBox):
                value = w.value()
            elif isinstance(w, QComboBox):
                value = w.currentText()
            else:
                assert isinstance(w, QLineEdit)
                value = w.text()
            data[section][fname] = value
        try:
            gates = tomllib.loads(self.gates.toPlainText())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError("gates", tr("not valid TOML: %1", exc)) from None
        data["gates"] = gates.get("gates", gates)
        return data

    def accept(self) -> None:
        for w in self.widgets.values():
            w.setStyleSheet("")
        try:
            data = self.collect()
            self.settings = settings_from_dict(data, source=tr("the settings dialog"))
        except ConfigError as exc:
            self.error.setText(f"{exc.field}: {exc.reason}")
            bad = self.widgets.get(exc.field)
            if bad is not None:
                bad.setStyleSheet(palette.bad_field_style())
                for i in range(self.tabs.count()):
                    page = self.tabs.widget(i)
                    if page is not None and page.isAncestorOf(bad):
                        self.tabs.setCurrentIndex(i)
                bad.setFocus()
            elif exc.field.startswith("gates"):
                self.tabs.setCurrentWidget(self.gates)
            return
        super().accept()
