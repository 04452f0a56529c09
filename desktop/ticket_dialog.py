"""Answer a ticket: screenshot (zoomable), redacted DOM, error, step log, earlier answers for
the same failure signature; five actions, a note, and "make this a rule"."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage, QPixmap, QShowEvent, QWheelEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core import KbAnswer, Ticket, read_json_file, read_text_file

from . import names, palette
from .i18n import QT_TR_NOOP, tr
from .models import fmt_duration, fmt_time
from .screen import fit_to_screen
from .tickets import ACTIONS, TicketReads

ACTION_HELP = {
    "retry": QT_TR_NOOP("Retry: run the task again from the start"),
    "resume": QT_TR_NOOP("Resume: continue from the failed step"),
    "skip": QT_TR_NOOP("Skip: mark the failed step done and continue"),
    "done": QT_TR_NOOP("Done: I finished it by hand"),
    "cancel": QT_TR_NOOP("Cancel the task: drop it, do not run it again"),
}


@dataclass
class TicketBundle:
    """What the dialog shows, read off the GUI thread."""

    ticket: Ticket
    screenshot: QImage | None = None
    dom: str = ""
    console: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    answers: list[KbAnswer] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def load_bundle(source: TicketReads, ticket_id: int) -> TicketBundle:
    """Read a ticket with its evidence files and earlier answers (blocking)."""
    t = source.ticket(ticket_id)
    b = TicketBundle(ticket=t)
    ev = t.evidence
    shot = ev.get("screenshot")
    if shot and Path(shot).exists():
        img = QImage(shot)  # QImage (not QPixmap) may be loaded off the GUI thread
        b.screenshot = img if not img.isNull() else None
    for key, attr in (("dom", "dom"), ("console", "console")):
        p = ev.get(key)
        if p and Path(p).exists():
            try:
                setattr(b, attr, read_text_file(p))
            except OSError as exc:
                b.problems.append(f"{key}: {exc}")
    steps = ev.get("steps")
    if steps and Path(steps).exists():
        try:
            data = read_json_file(steps)
            rows = data.get("steps", data) if isinstance(data, dict) else data
            b.steps = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
        except (OSError, ValueError) as exc:
            b.problems.append(f"steps: {exc}")
    b.answers = source.kb_answers(t.signature)
    return b


class ZoomView(QGraphicsView):
    """A picture that zooms with Ctrl+wheel or the buttons."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.item = QGraphicsPixmapItem()
        self.scene().addItem(self.item)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.zoom = 1.0
        self._fitted = False

    def set_image(self, img: QImage | None) -> None:
        self.item.setPixmap(QPixmap.fromImage(img) if img is not None else QPixmap())
        self.scene().setSceneRect(self.item.boundingRect())

    def zoom_by(self, factor: float) -> None:
        self.zoom = max(0.05, min(16.0, self.zoom * factor))
        self.resetTransform()
        self.scale(self.zoom, self.zoom)

    def fit(self) -> None:
        self.fitInView(self.item, Qt.AspectRatioMode.KeepAspectRatio)
        self.zoom = self.transform().m11()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._fitted and not self.item.pixmap().isNull():
            self._fitted = True
            self.fit()

    def wheelEvent(self, event: QWheelEvent) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.zoom_by(1.25 if event.angleDelta().y() > 0 else 0.8)
        else:
            super().wheelEvent(event)


class TicketDialog(QDialog):
    """Shows a ticket; ``answered(ticket_id, action, note, make_rule)`` on OK.

    With ``others`` (more selected tickets) the one answer goes to all of them: the window
    answers each (bulk answer); the dialog shows the first and says how many.
    """

    answered = Signal(int, str, str, bool)

    def __init__(self, bundle: TicketBundle, parent: QWidget | None = None, *,
                 others: int = 0) -> None:
        super().__init__(parent)
        t = bundle.ticket
        self.ticket = t
        self.others = others
        self.setObjectName("ticket-dialog")
        self.setWindowTitle(tr("Ticket #%1 — task #%2", t.id, t.task_id))
        self.setSizeGripEnabled(True)
        head = QLabel(self)
        head.setObjectName("ticket-head")
        head.setWordWrap(True)
        head.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        step = (f"{tr('step')} {(t.step + 1) if t.step is not None else '?'} {t.step_name}"
                .strip())
        head.setText(
            f"<b>{t.shop}</b> ({names.platform(t.platform)}) · {names.task_type(t.task_type)}"
            f" · {step} · {tr('open for')} {fmt_duration(_age(t))}<br>"
            f"<span style='color:{palette.css('error')}'><b>"
            f"{names.error_headline(t.error_class)}</b></span>"
            + ("<br><b>" + tr("The same answer goes to %1 more selected ticket(s).", others)
               + "</b>" if others else ""))
        # The technical detail stays untranslated, one click away.
        self.details = QPlainTextEdit(f"{t.error_class}: {t.error}\n{tr('signature')}: "
                                      f"{t.signature}", self, readOnly=True)
        self.details.setObjectName("ticket-details")
        self.details.setMaximumHeight(90)
        self.details.hide()
        self.details_btn = QPushButton(tr("Show technical details"), self)
        self.details_btn.setCheckable(True)
        self.details_btn.toggled.connect(self._toggle_details)
        self.shot = ZoomView(self)
        self.shot.setObjectName("ticket-screenshot")
        self.shot.set_image(bundle.screenshot)
        zin, zout, zfit = (QPushButton(x, self) for x in ("+", "−", tr("Fit")))
        zin.clicked.connect(lambda: self.shot.zoom_by(1.25))
        zout.clicked.connect(lambda: self.shot.zoom_by(0.8))
        zfit.clicked.connect(self.shot.fit)
        shot_w = QWidget(self)
        sl = QVBoxLayout(shot_w)
        zrow = QHBoxLayout()
        for b in (zin, zout, zfit):
            zrow.addWidget(b)
        zrow.addStretch(1)
        if bundle.screenshot is None:
            zrow.addWidget(QLabel(tr("(no screenshot: the page may have crashed)"), self))
        sl.addLayout(zrow)
        sl.addWidget(self.shot, 1)
        self.dom = QPlainTextEdit(bundle.dom or tr("(no DOM captured)"), self, readOnly=True)
        self.console_log = QPlainTextEdit(bundle.console, self, readOnly=True)
        self.steps = QTreeWidget(self)
        self.steps.setRootIsDecorated(False)
        self.steps.setHeaderLabels([tr("Step"), tr("Action"), tr("Name"), tr("Status"),
                                    tr("ms"), tr("Error")])
        for s in bundle.steps:
            self.steps.addTopLevelItem(QTreeWidgetItem([
                str(s.get("index", "")), str(s.get("action", "")), str(s.get("name", "")),
                names.state(str(s.get("status", ""))), str(s.get("duration_ms", "")),
                str(s.get("error", "") or "")]))
        self.answers = QTreeWidget(self)
        self.answers.setObjectName("ticket-answers")
        self.answers.setRootIsDecorated(False)
        self.answers.setHeaderLabels([tr("When"), tr("Answer"), tr("Note"), tr("Ticket")])
        for a in bundle.answers:
            self.answers.addTopLevelItem(QTreeWidgetItem([
                fmt_time(a.at), names.answer(a.action), a.note, f"#{a.ticket_id}"]))
        tabs = QTabWidget(self)
        tabs.addTab(shot_w, tr("Screenshot"))
        tabs.addTab(self.dom, tr("Page (redacted)"))
        tabs.addTab(self.steps, tr("Step log"))
        tabs.addTab(self.console_log, tr("Console"))
        tabs.addTab(self.answers, tr("Earlier answers (%1)", len(bundle.answers)))
        if bundle.answers:
            tabs.setCurrentWidget(self.answers)
        self.group = QButtonGroup(self)
        answer_w = QWidget(self)
        al = QVBoxLayout(answer_w)
        self.buttons: dict[str, QRadioButton] = {}
        for action in ACTIONS:
            rb = QRadioButton(tr(ACTION_HELP[action]), self)
            rb.setObjectName(f"answer-{action}")
            self.group.addButton(rb)
            self.buttons[action] = rb
            al.addWidget(rb)
        suggested = bundle.answers[0].action if bundle.answers else "resume"
        self.buttons.get(suggested, self.buttons["resume"]).setChecked(True)
        self.note = QPlainTextEdit(self)
        self.note.setObjectName("answer-note")
        self.note.setPlaceholderText(tr("A note for the knowledge base (what you saw, what "
                                        "you did)"))
        self.note.setMaximumHeight(80)
        al.addWidget(self.note)
        self.make_rule = QCheckBox(tr("Make this a rule: answer such failures this way "
                                      "without a ticket"), self)
        self.make_rule.setObjectName("answer-rule")
        al.addWidget(self.make_rule)
        # Not OK/Cancel: "Cancel" is also an answer (cancel the task). The buttons say
        # what they do: send the answer, or close the dialog leaving the ticket open.
        box = QDialogButtonBox(self)
        self.send_btn = box.addButton(
            tr("Send answer") if not others else tr("Send answer to %1 tickets", others + 1),
            QDialogButtonBox.ButtonRole.AcceptRole)
        self.send_btn.setObjectName("answer-send")
        self.close_btn = box.addButton(tr("Close (leave the ticket open)"),
                                       QDialogButtonBox.ButtonRole.RejectRole)
        self.close_btn.setObjectName("answer-close")
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        al.addWidget(box)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(tabs)
        split.addWidget(answer_w)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        lay = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(head, 1)
        top.addWidget(self.details_btn, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(top)
        lay.addWidget(self.details)
        lay.addWidget(split, 1)
        for p in bundle.problems:
            lay.addWidget(QLabel(p, self))
        fit_to_screen(self, 1100, 700)

    def _toggle_details(self, on: bool) -> None:
        self.details.setVisible(on)
        self.details_btn.setText(tr("Hide technical details") if on
                                 else tr("Show technical details"))

    def action(self) -> str:
        for name, rb in self.buttons.items():
            if rb.isChecked():
                return name
        return "resume"

    def accept(self) -> None:
        self.answered.emit(self.ticket.id, self.action(), self.note.toPlainText().strip(),
                           self.make_rule.isChecked())
        super().accept()


def _age(t: Ticket) -> float:
    return t.age_s(time.time())


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)
