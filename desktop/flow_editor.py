"""The flow editor: a flow's steps as a list, edited with validation as you type.

One window (:class:`FlowEditor`) per flow being edited: the steps on the left (insert, delete,
move up and down), the selected step's fields on the right (action, locator, value, write,
interruptible, if_visible, timeout, name), every problem core's validation finds listed under
them with its field, and the field itself marked. Buttons:

* **Pick…** opens the shop's live page and puts there the locator Playwright generates for the
  element the person points at (``core.pick_locator``);
* **Save** writes the flow into the user's flow folder (``core.save_flow_file``): a shipped
  flow's name is refused unless the person confirms replacing the shipped file;
* **Run on shop** runs the flow on the chosen shop, step by step, with the browser visible
  (``core.run_flow_once``, the same as ``shopfleet run-flow --headed``); the list marks each
  step, and the first failing step is selected with its error and evidence files;
* **Record…** records a new flow on the shop's browser (``core.record_shop_flow``) and loads it
  here to edit and save.

Browser and file work runs on worker threads (each with its own event loop for Playwright),
never on the GUI thread; results come back through a queued relay. The core calls are
injectable (``runner``, ``picker``, ``recorder``) so tests can script them.

The busy state and the worker-thread operations live in :mod:`desktop.flow_editor_ops`;
:func:`desktop.flow_editor_window.install_flow_editor` adds "Flow editor…" and "Record a flow…"
to the console window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core import (
    STEP_ACTIONS,
    FlowProblem,
    Settings,
    Store,
    validate_flow_dict,
)

from . import palette
from .flow_editor_ops import MARKS as MARKS
from .flow_editor_ops import (
    FlowOpsMixin,
    Runner,
    _default_picker,
    _default_recorder,
    _default_runner,
    _Relay,
)
from .i18n import QT_TR_NOOP, tr

VALUE_FIELD: dict[str, str | None] = {
    "navigate": "url", "click": None, "type_text": "text", "select_option": "value",
    "upload_file": "path", "wait_element": "state", "extract": "into", "assert_text": "text",
    "screenshot": "into", "press_key": "key",
}
"""Which field of a step the editor's "value" box edits, per action."""

NEEDS_LOCATOR = frozenset({"click", "type_text", "select_option", "upload_file",
                           "wait_element", "extract", "assert_text"})
OPTIONAL_LOCATOR = frozenset({"press_key"})

VALUE_LABELS: dict[str, str] = {
    "url": QT_TR_NOOP("URL"), "text": QT_TR_NOOP("Text"), "value": QT_TR_NOOP("Option"),
    "path": QT_TR_NOOP("File (in an asset folder)"), "state": QT_TR_NOOP("State"),
    "into": QT_TR_NOOP("Result name"), "key": QT_TR_NOOP("Key"),
}




def new_step(action: str = "click") -> dict[str, Any]:
    """A fresh step of ``action`` (fields left empty for the person to fill)."""
    step: dict[str, Any] = {"action": action}
    if action in NEEDS_LOCATOR:
        step["locator"] = ""
    field = VALUE_FIELD.get(action)
    if field is not None and field != "state":
        step[field] = ""
    return step


class FlowEditor(FlowOpsMixin, QWidget):
    """Edit one flow. See the module docstring.

    Args:
        settings: the configuration (flow folders, browser).
        store: where the shops are (for runs, picks and recordings).
        shops: the shop names offered for "Run on shop".
        doc: the flow document to start from (default: an empty new flow).
        runner, picker, recorder: the core calls (injected by tests).
        confirm: asks a yes/no question (default: a message box).
        headed: show the browser for runs, picks and recordings (tests run it headless).
    """

    saved = Signal(str)
    """The file a flow was saved to."""
    run_finished = Signal(bool)
    """A run ended: True when every step passed."""
    picked = Signal(str)
    loaded = Signal()
    busy_changed = Signal(bool)

    def __init__(self, settings: Settings, store: Store, *, shops: list[str] | None = None,
                 doc: Mapping[str, Any] | None = None, runner: Runner | None = None,
                 picker: Callable[..., str] | None = None,
                 recorder: Callable[..., Any] | None = None,
                 confirm: Callable[[str, str], bool] | None = None, headed: bool = True,
                 lang: str = "en", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("flow-editor")
        self.settings = settings
        self.store = store
        self._runner = runner or _default_runner
        self._picker = picker or _default_picker
        self._recorder = recorder or _default_recorder
        self._confirm = confirm or self._ask
        self.headed = headed
        self.lang = lang
        self.problems: list[FlowProblem] = []
        self.last_error: BaseException | None = None
        self.last_results: Any = None
        self.saved_path = ""
        self._busy = False
        self._loading = False
        self._relay = _Relay()
        self._relay.step.connect(self._on_step)
        self._relay.done.connect(self._on_done)
        self._relay.failed.connect(self._on_failed)

        # -- the flow
        self.name_edit = QLineEdit(self)
        self.start_edit = QLineEdit(self)
        self.desc_edit = QLineEdit(self)
        self.open_combo = QComboBox(self)
        self.open_combo.setObjectName("open-flow")
        self.open_btn = QPushButton(self)
        self.head_box = QGroupBox(self)
        head = QFormLayout(self.head_box)
        self.name_label, self.start_label, self.desc_label = QLabel(), QLabel(), QLabel()
        head.addRow(self.name_label, self.name_edit)
        head.addRow(self.start_label, self.start_edit)
        head.addRow(self.desc_label, self.desc_edit)
        open_row = QHBoxLayout()
        self.open_label = QLabel(self)
        open_row.addWidget(self.open_label)
        open_row.addWidget(self.open_combo, 1)
        open_row.addWidget(self.open_btn)
        head.addRow(open_row)

        # -- the steps
        self.steps_list = QListWidget(self)
        self.steps_list.setObjectName("steps")
        self.insert_btn, self.delete_btn = QPushButton(self), QPushButton(self)
        self.up_btn, self.down_btn = QPushButton(self), QPushButton(self)
        step_btns = QHBoxLayout()
        for b in (self.insert_btn, self.delete_btn, self.up_btn, self.down_btn):
            step_btns.addWidget(b)
        left = QWidget(self)
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.steps_list, 1)
        lv.addLayout(step_btns)

        # -- the selected step
        self.action_combo = QComboBox(self)
        self.action_combo.addItems(list(STEP_ACTIONS))
        self.locator_edit = QLineEdit(self)
        self.pick_btn = QPushButton(self)
        self.value_edit = QLineEdit(self)
        self.write_check = QCheckBox(self)
        self.interruptible_check = QCheckBox(self)
        self.if_visible_edit = QLineEdit(self)
        self.timeout_spin = QDoubleSpinBox(self)
        self.timeout_spin.setRange(0, 3600)
        self.timeout_spin.setDecimals(1)
        self.step_name_edit = QLineEdit(self)
        self.step_box = QGroupBox(self)
        form = QFormLayout(self.step_box)
        self.action_label, self.locator_label = QLabel(), QLabel()
        self.value_label, self.if_visible_label = QLabel(), QLabel()
        self.timeout_label, self.step_name_label = QLabel(), QLabel()
        loc_row = QHBoxLayout()
        loc_row.addWidget(self.locator_edit, 1)
        loc_row.addWidget(self.pick_btn)
        form.addRow(self.action_label, self.action_combo)
        form.addRow(self.locator_label, loc_row)
        form.addRow(self.value_label, self.value_edit)
        flags = QHBoxLayout()
        flags.addWidget(self.write_check)
        flags.addWidget(self.interruptible_check)
        flags.addStretch(1)
        form.addRow(flags)
        form.addRow(self.if_visible_label, self.if_visible_edit)
        form.addRow(self.timeout_label, self.timeout_spin)
        form.addRow(self.step_name_label, self.step_name_edit)
        self.problems_label = QLabel(self)
        self.problems_label.setObjectName("problems")
        self.problems_label.setWordWrap(True)
        self.problems_label.setStyleSheet(palette.error_style())
        right = QWidget(self)
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(self.step_box)
        rv.addWidget(self.problems_label)
        rv.addStretch(1)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)

        # -- run, save, record
        self.shop_combo = QComboBox(self)
        self.shop_combo.addItems(shops or [])
        self.params_edit = QPlainTextEdit(self)
        self.params_edit.setMaximumHeight(60)
        self.run_btn, self.save_btn, self.record_btn = (QPushButton(self), QPushButton(self),
                                                        QPushButton(self))
        self.log = QPlainTextEdit(self)
        self.log.setObjectName("run-log")
        self.log.setReadOnly(True)
        self.log.setMaximumHeight(140)
        self.shop_label, self.params_label = QLabel(), QLabel()
        bottom = QFormLayout()
        bottom.addRow(self.shop_label, self.shop_combo)
        bottom.addRow(self.params_label, self.params_edit)
        btns = QHBoxLayout()
        btns.addWidget(self.record_btn)
        btns.addStretch(1)
        btns.addWidget(self.run_btn)
        btns.addWidget(self.save_btn)

        lay = QVBoxLayout(self)
        lay.addWidget(self.head_box)
        lay.addWidget(split, 1)
        lay.addLayout(bottom)
        lay.addLayout(btns)
        lay.addWidget(self.log)

        # -- wiring
        for edit in (self.name_edit, self.start_edit, self.desc_edit):
            edit.textEdited.connect(self._flow_edited)
        self.steps_list.currentRowChanged.connect(self._show_step)
        self.insert_btn.clicked.connect(self.insert_step)
        self.delete_btn.clicked.connect(self.delete_step)
        self.up_btn.clicked.connect(lambda: self.move_step(-1))
        self.down_btn.clicked.connect(lambda: self.move_step(1))
        self.action_combo.currentTextChanged.connect(self._action_changed)
        for edit in (self.locator_edit, self.value_edit, self.if_visible_edit,
                     self.step_name_edit):
            edit.textEdited.connect(self._step_edited)
        self.write_check.toggled.connect(self._write_toggled)
        self.interruptible_check.toggled.connect(self._step_edited)
        self.timeout_spin.valueChanged.connect(self._step_edited)
        self.pick_btn.clicked.connect(self.pick)
        self.save_btn.clicked.connect(self.save)
        self.run_btn.clicked.connect(self.run)
        self.record_btn.clicked.connect(self.record)
        self.open_btn.clicked.connect(lambda: self.open_flow(self.open_combo.currentText()))

        self.steps: list[dict[str, Any]] = []
        self._catalog: dict[str, Any] = {}
        self.set_document(doc or {"name": "", "start_url": "{shop.base_url}/",
                                  "steps": [new_step("navigate")]})
        self.retranslate()
        self.refresh_catalog()
        if shops is None:
            self._load_shops()

    # -- the document ------------------------------------------------------------------

    def document(self) -> dict[str, Any]:
        """The flow as edited right now (a flow file's JSON object)."""
        doc: dict[str, Any] = {"name": self.name_edit.text(),
                               "start_url": self.start_edit.text(),
                               "steps": [dict(s) for s in self.steps]}
        if self.desc_edit.text():
            doc["description"] = self.desc_edit.text()
        doc.update(self._extra)
        return doc

    def set_document(self, doc: Mapping[str, Any]) -> None:
        """Load a flow document into the editor (fields it does not show are kept)."""
        self._loading = True
        try:
            self._extra = {k: v for k, v in doc.items()
                           if k not in ("name", "start_url", "steps", "description")}
            self.name_edit.setText(str(doc.get("name", "")))
            self.start_edit.setText(str(doc.get("start_url", "")))
            self.desc_edit.setText(str(doc.get("description", "")))
            raw = doc.get("steps")
            self.steps = [dict(s) if isinstance(s, Mapping) else {"action": str(s)}
                          for s in (raw if isinstance(raw, list) else [])]
            self._fill_list(0 if self.steps else -1)
        finally:
            self._loading = False
        self.validate()

    def _fill_list(self, row: int) -> None:
        was = self._loading
        self._loading = True
        try:
            self.steps_list.clear()
            for i, step in enumerate(self.steps):
                self.steps_list.addItem(QListWidgetItem(self._step_text(i, step)))
            self.steps_list.setCurrentRow(row)
        finally:
            self._loading = was
        self._show_step(row)

    @staticmethod
    def _step_text(i: int, step: Mapping[str, Any], mark: str = "") -> str:
        action = str(step.get("action", "?"))
        what = step.get("name") or step.get("locator") or step.get(VALUE_FIELD.get(action) or "")
        flags = " ⚑" if step.get("write") else ""
        text = f"{i + 1}. {action}{flags}"
        if what:
            text += f" · {str(what)[:60]}"
        return f"{mark} {text}" if mark else text

    def current_row(self) -> int:
        return self.steps_list.currentRow()

    def _show_step(self, row: int) -> None:
        self._loading, was = True, self._loading
        try:
            on = 0 <= row < len(self.steps)
            self.step_box.setEnabled(on)
            step = self.steps[row] if on else {}
            action = str(step.get("action", "click"))
            self.action_combo.setCurrentText(action)
            self.locator_edit.setText(str(step.get("locator") or ""))
            field = VALUE_FIELD.get(action)
            self.value_edit.setEnabled(field is not None)
            self.value_edit.setText(str(step.get(field, "")) if field else "")
            self.value_label.setText(tr(VALUE_LABELS[field]) if field else tr("Value"))
            self.locator_edit.setEnabled(action in NEEDS_LOCATOR | OPTIONAL_LOCATOR)
            self.pick_btn.setEnabled(self.locator_edit.isEnabled() and not self._busy)
            write = bool(step.get("write", False))
            self.write_check.setChecked(write)
            self.interruptible_check.setChecked(bool(step.get("interruptible", not write)))
            self.if_visible_edit.setText(str(step.get("if_visible") or ""))
            t = step.get("timeout_s")
            self.timeout_spin.setValue(float(t) if isinstance(t, int | float) else 0.0)
            self.step_name_edit.setText(str(step.get("name", "")))
        finally:
            self._loading = was
        self._mark_fields()

    def _flow_edited(self, *_: Any) -> None:
        if not self._loading:
            self.validate()

    def _action_changed(self, action: str) -> None:
        row = self.current_row()
        if self._loading or not (0 <= row < len(self.steps)):
            return
        old = self.steps[row]
        step = new_step(action)
        # Keep what still means the same: the locator, the flags, the name.
        for k in ("locator", "write", "interruptible", "if_visible", "timeout_s", "name",
                  "verify"):
            if k in old and (k != "locator" or action in NEEDS_LOCATOR | OPTIONAL_LOCATOR):
                step[k] = old[k]
        self.steps[row] = step
        self._show_step(row)
        self._step_changed(row)

    def _write_toggled(self, write: bool) -> None:
        row = self.current_row()
        if self._loading or not (0 <= row < len(self.steps)):
            return
        if "interruptible" not in self.steps[row]:
            # Not chosen by the person: follows the default (a write is not interruptible).
            self._loading = True
            try:
                self.interruptible_check.setChecked(not write)
            finally:
                self._loading = False
        self._step_edited()

    def _step_edited(self, *_: Any) -> None:
        row = self.current_row()
        if self._loading or not (0 <= row < len(self.steps)):
            return
        step = self.steps[row]
        action = str(step.get("action", ""))
        if self.locator_edit.isEnabled():
            loc = self.locator_edit.text()
            if loc or action in NEEDS_LOCATOR:
                step["locator"] = loc
            else:
                step.pop("locator", None)
        field = VALUE_FIELD.get(action)
        if field is not None:
            value = self.value_edit.text()
            if field in ("state",) and not value:
                step.pop(field, None)
            else:
                step[field] = value
        write = self.write_check.isChecked()
        if write:
            step["write"] = True
        else:
            step.pop("write", None)
        interruptible = self.interruptible_check.isChecked()
        if interruptible == (not write):
            step.pop("interruptible", None)      # the default for this kind of step
        else:
            step["interruptible"] = interruptible
        for key, text in (("if_visible", self.if_visible_edit.text()),
                          ("name", self.step_name_edit.text())):
            if text:
                step[key] = text
            else:
                step.pop(key, None)
        t = self.timeout_spin.value()
        if t > 0:
            step["timeout_s"] = t
        else:
            step.pop("timeout_s", None)
        self._step_changed(row)

    def _step_changed(self, row: int) -> None:
        item = self.steps_list.item(row)
        if item is not None:
            item.setText(self._step_text(row, self.steps[row]))
        self.validate()

    def insert_step(self) -> None:
        """Insert a new step after the selected one (or at the end)."""
        row = self.current_row()
        at = row + 1 if row >= 0 else len(self.steps)
        self.steps.insert(at, new_step("click"))
        self._fill_list(at)
        self.validate()

    def delete_step(self) -> None:
        row = self.current_row()
        if 0 <= row < len(self.steps):
            del self.steps[row]
            self._fill_list(min(row, len(self.steps) - 1))
            self.validate()

    def move_step(self, by: int) -> None:
        row = self.current_row()
        to = row + by
        if 0 <= row < len(self.steps) and 0 <= to < len(self.steps):
            self.steps[row], self.steps[to] = self.steps[to], self.steps[row]
            self._fill_list(to)
            self.validate()

    # -- validation --------------------------------------------------------------------

    def validate(self) -> list[FlowProblem]:
        """Check the document with core; list the problems and mark their fields."""
        self.problems = validate_flow_dict(self.document())
        if self.problems:
            lines = [tr("%1: %2", p.field, p.reason) for p in self.problems[:8]]
            if len(self.problems) > 8:
                lines.append(tr("… and %1 more", len(self.problems) - 8))
            self.problems_label.setText("\n".join(lines))
        else:
            self.problems_label.setText("")
        bad_steps = {p.step for p in self.problems if p.step is not None}
        for i in range(self.steps_list.count()):
            item = self.steps_list.item(i)
            item.setForeground(palette.signal("error") if i in bad_steps
                               else palette.role(QPalette.ColorRole.Text))
        self._mark_fields()
        self._update_buttons()
        return self.problems

    def field_widgets(self) -> dict[str, QWidget]:
        """The widget that edits each field of the selected step (and of the flow)."""
        row = self.current_row()
        action = self.steps[row].get("action") if 0 <= row < len(self.steps) else None
        out: dict[str, QWidget] = {"name": self.name_edit, "start_url": self.start_edit,
                                   "description": self.desc_edit}
        prefix = f"steps[{row}]."
        out.update({prefix + "action": self.action_combo, prefix + "locator": self.locator_edit,
                    prefix + "write": self.write_check,
                    prefix + "interruptible": self.interruptible_check,
                    prefix + "if_visible": self.if_visible_edit,
                    prefix + "timeout_s": self.timeout_spin,
                    prefix + "name": self.step_name_edit})
        field = VALUE_FIELD.get(str(action)) if action else None
        if field:
            out[prefix + field] = self.value_edit
        return out

    def marked_fields(self) -> list[str]:
        """The fields shown as wrong right now."""
        return [f for f, w in self.field_widgets().items() if w.property("invalid")]

    def _mark_fields(self) -> None:
        bad = {p.field for p in self.problems}
        for field, widget in self.field_widgets().items():
            wrong = field in bad
            if bool(widget.property("invalid")) != wrong:
                widget.setProperty("invalid", wrong)
                widget.setStyleSheet(palette.bad_field_style() if wrong else "")
            problem = next((p for p in self.problems if p.field == field), None)
            widget.setToolTip(problem.reason if problem else "")

    # -- texts -------------------------------------------------------------------------

    def _ask(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(self, title, text)
        return answer == QMessageBox.StandardButton.Yes

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        self.setWindowTitle(tr("Flow editor"))
        self.head_box.setTitle(tr("Flow"))
        self.name_label.setText(tr("Name"))
        self.start_label.setText(tr("Start page"))
        self.desc_label.setText(tr("Description"))
        self.open_btn.setText(tr("Open"))
        self.open_label.setText(tr("Edit an existing flow:"))
        self.insert_btn.setText(tr("Insert step"))
        self.delete_btn.setText(tr("Delete step"))
        self.up_btn.setText(tr("Move up"))
        self.down_btn.setText(tr("Move down"))
        self.step_box.setTitle(tr("Step"))
        self.action_label.setText(tr("Action"))
        self.locator_label.setText(tr("Locator"))
        self.pick_btn.setText(tr("Pick in page…"))
        self.write_check.setText(tr("Writes to the site"))
        self.interruptible_check.setText(tr("Interruptible"))
        self.if_visible_label.setText(tr("Only if visible"))
        self.timeout_label.setText(tr("Timeout (s, 0 = default)"))
        self.step_name_label.setText(tr("Step name"))
        self.shop_label.setText(tr("Shop"))
        self.params_label.setText(tr("Parameters (KEY=VALUE a line)"))
        self.run_btn.setText(tr("Run on shop"))
        self.save_btn.setText(tr("Save"))
        self.record_btn.setText(tr("Record a flow…"))
        self._show_step(self.current_row())
        self.validate()
