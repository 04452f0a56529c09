"""Edit a rule (#15): what it does (retry later / skip the step / ask a person), after how
long, and its note. Its scope — which failures it answers — stays; the dialog shows the rule
in words before it is saved, in the operator's language and in core's saved words
(:func:`core.redescribe_rule`). A refusal stays in the dialog with the input."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from core import Rule, RuleAction, redescribe_rule

from . import names
from . import operations as ops
from .i18n import tr
from .models import fmt_duration
from .screen import fit_to_screen
from .shops import KeepsInput, run_keeping_input
from .ticket_dialog import RULE_EFFECT


class RuleDialog(KeepsInput):
    """Change one rule's action, delay and note; ``values()`` gives them."""

    def __init__(self, rule: Rule, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rule = rule
        self.setObjectName("rule-dialog")
        self.setWindowTitle(tr("Edit rule #%1", rule.id))
        self.setSizeGripEnabled(True)
        self.action = QComboBox(self)
        self.action.setObjectName("rule-action")
        for a in RuleAction:
            self.action.addItem(names.answer(a.value), a.value)
        self.action.setCurrentIndex(max(0, self.action.findData(rule.action.value)))
        self.delay = QSpinBox(self)
        self.delay.setObjectName("rule-delay")
        self.delay.setRange(1, 7 * 24 * 60)
        self.delay.setSuffix(tr(" min"))
        self.delay.setValue(max(1, round(rule.delay_s / 60)) if rule.delay_s else 10)
        self.note = QLineEdit(rule.note, self)
        self.note.setObjectName("rule-note")
        self.note.setMaxLength(2000)
        self.scope = QLabel(rule.description, self)
        self.scope.setWordWrap(True)
        self.scope.setTextFormat(Qt.TextFormat.PlainText)
        self.preview = QLabel(self)
        self.preview.setObjectName("rule-preview")
        self.preview.setWordWrap(True)
        self.preview.setTextFormat(Qt.TextFormat.PlainText)
        self.preview.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form = QFormLayout(self)
        form.addRow(tr("Now"), self.scope)
        form.addRow(tr("Action"), self.action)
        form.addRow(tr("Retry after"), self.delay)
        form.addRow(tr("Note"), self.note)
        form.addRow(tr("After saving"), self.preview)
        form.addRow(self.error)
        form.addRow(self.buttons)
        self.action.currentIndexChanged.connect(lambda *_: self._show())
        self.delay.valueChanged.connect(lambda *_: self._show())
        self._show()
        fit_to_screen(self, 640, 360)

    def values(self) -> tuple[str, float, str]:
        """(action, delay in seconds, note) as chosen."""
        act = str(self.action.currentData())
        delay = self.delay.value() * 60.0 if act == RuleAction.RETRY_LATER.value else 0.0
        return act, delay, self.note.text().strip()

    def _show(self) -> None:
        act, delay, _ = self.values()
        retry = act == RuleAction.RETRY_LATER.value
        self.delay.setEnabled(retry)
        effect = tr(RULE_EFFECT[act], fmt_duration(delay))
        self.preview.setText(tr("The rule will %1.", effect) + "\n"
                             + tr("Saved as: %1", redescribe_rule(self.rule, act, delay)))


def edit_selected_rule(w: Any) -> RuleDialog | None:
    """The action's handler: edit the first selected rule of the Knowledge base view."""
    ids = [int(str(x)) for x in w._selected_in("rules")]
    rule = w.models["rules"].snapshot(ids[0]) if ids else None
    if rule is None:
        return None
    dlg = RuleDialog(rule, w)

    def go() -> None:
        action, delay, note = dlg.values()
        run_keeping_input(w, dlg, tr("Edit rule #%1", rule.id), lambda: w.runner.engine(
            lambda e: ops.edit_rule(e, rule.id, action=action, delay_s=delay, note=note)),
            then=lambda ch: w.runner.changed.emit(ch))

    dlg.submitted.connect(go)
    w.dialog = dlg
    dlg.open()
    return dlg
