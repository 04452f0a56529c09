"""Answer a ticket: screenshot (zoomable), redacted DOM, error, step log, earlier answers for
the same failure signature; five actions, a note, and "make this a rule".

Write safety (#15): a ticket on a write of unknown outcome shows what is known (the write
step, the page where the task stopped, the flow's verify), offers core's default answer (skip,
never a resend) and asks a second confirmation, naming the task and the step, before an answer
that sends the write again. A rule is shown in words (action, delay, scope) before it is
saved; the words saved are core's. "Open the shop's browser" asks the window for a takeover
(:mod:`desktop.takeover`); after it the dialog comes back with done / resume / skip.
"""

from __future__ import annotations

import html
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
    QFrame,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core import (
    Answer,
    KbAnswer,
    RuleAction,
    ShopFleetError,
    StepRow,
    Ticket,
    answer_rule,
    default_answer,
    read_json_file,
    read_text_file,
)

from . import names, palette
from .i18n import QT_TR_NOOP, tr
from .models import fmt_duration, fmt_time
from .screen import fit_to_screen, scrolling
from .tickets import ACTIONS, TicketReads

WRITE_UNKNOWN = "write_unknown"
"""The kind of a ticket on a write of unknown outcome (core's ``Ticket.kind``)."""

AFTER_TAKEOVER = ("done", "resume", "skip")
"""The answers offered when the dialog comes back after a takeover."""

RULE_EFFECT = {
    "retry_later": QT_TR_NOOP("retry the task from its failed step after %1, without a ticket"),
    "skip": QT_TR_NOOP("skip the failed step and go on with the next one, without a ticket"),
    "human": QT_TR_NOOP("open a ticket at once, without retrying"),
}
"""What a rule does, in the operator's language (core's words are saved with the rule)."""


def rule_preview(ticket: Ticket, action: str, delay_s: float) -> tuple[RuleAction | None, str]:
    """The rule an answer makes and the dialog's words for it (translated: action, delay,
    scope), followed by the exact words core saves; ``(None, why not)`` for done/cancel."""
    act, saved = answer_rule(ticket, action, delay_s)
    if act is None:
        return None, tr("%1 makes no rule: a person finishing or cancelling a task is not "
                        "something ShopFleet repeats on its own.", names.answer(action))
    effect = tr(RULE_EFFECT[act.value], fmt_duration(delay_s))
    step = (tr("step “%1”", ticket.step_name) if ticket.step_name
            else tr("the start page"))
    words = tr("Rule: when a %1 task of platform %2 fails at %3 with %4, %5.",
               names.task_type(ticket.task_type), names.platform(ticket.platform), step,
               ticket.error_class, effect)
    return act, words + "\n" + tr("Saved as: %1", saved)


@dataclass(frozen=True)
class AnswerChoice:
    """What the operator chose in the dialog."""

    action: str
    note: str = ""
    rule: str | None = None
    """The rule the answer makes (core's :meth:`core.Answer.as_rule`), when asked for."""
    rule_delay_s: float = 600.0
    confirm_resend: bool = False
    """The operator confirmed sending a write of unknown outcome again."""

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
    stopped_url: str = ""
    """The page where the task stopped (its evidence), "" when unknown."""
    write_step: StepRow | None = None
    """For a write of unknown outcome: the write step of the task's flow."""


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
            failure = data.get("failure") if isinstance(data, dict) else None
            url = str(failure.get("url") or "") if isinstance(failure, dict) else ""
            b.stopped_url = url if url.startswith(("http://", "https://")) else ""
            b.steps = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
        except (OSError, ValueError) as exc:
            b.problems.append(f"steps: {exc}")
    b.answers = source.kb_answers(t.signature)
    if t.kind == WRITE_UNKNOWN and t.step is not None:
        try:
            b.write_step = next((s for s in source.task_steps(t.task_id) if s.index == t.step),
                                None)
        except ShopFleetError as exc:  # the task may be gone: say so, show the rest
            b.problems.append(f"flow: {exc}")
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
    """Shows a ticket; ``answered(ticket_id, AnswerChoice)`` when the answer is sent.

    With ``others`` (more selected tickets) the one answer goes to all of them: the window
    answers each (bulk answer); the dialog shows the first and says how many. With
    ``after_takeover`` it comes back after the shop's browser was closed and offers done /
    resume / skip. ``takeover_requested(ticket_id)``: the operator asked to open the shop's
    browser (the dialog closes, leaving the ticket open).
    """

    answered = Signal(int, object)
    takeover_requested = Signal(int)

    def __init__(self, bundle: TicketBundle, parent: QWidget | None = None, *,
                 others: int = 0, after_takeover: bool = False,
                 task_label: str = "") -> None:
        super().__init__(parent)
        t = bundle.ticket
        self.ticket = t
        self.bundle = bundle
        self.others = others
        self.after_takeover = after_takeover
        self.task_label = task_label or f"#{t.task_id}"
        self.confirm: QMessageBox | None = None
        self.setObjectName("ticket-dialog")
        self.setWindowTitle(tr("Ticket #%1 — task #%2", t.id, t.task_id))
        self.setSizeGripEnabled(True)
        head = QLabel(self)
        head.setObjectName("ticket-head")
        head.setWordWrap(True)
        head.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        step = (f"{tr('step')} {(t.step + 1) if t.step is not None else '?'} {t.step_name}"
                .strip())
        e = html.escape  # every field of a task is hostile input: never rich text from it
        head.setText(
            f"<b>{e(t.shop)}</b> ({e(names.platform(t.platform))}) · "
            f"{e(names.task_type(t.task_type))} · {e(step)} · {tr('open for')} "
            f"{fmt_duration(_age(t))}<br>"
            f"<span style='color:{palette.css('error')}'><b>"
            f"{e(names.error_headline(t.error_class))}</b></span>"
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
        self.takeover_btn = QPushButton(tr("Open the shop's browser"), self)
        self.takeover_btn.setObjectName("ticket-takeover")
        self.takeover_btn.setToolTip(tr("Open %1's browser, with its session, at the page "
                                        "where the task stopped; nothing else runs on the "
                                        "shop meanwhile. Close it to come back here.", t.shop))
        self.takeover_btn.clicked.connect(self._ask_takeover)
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
        self.tabs = tabs
        if bundle.answers and t.kind != WRITE_UNKNOWN:  # a write: the page after it first
            tabs.setCurrentWidget(self.answers)
        self.group = QButtonGroup(self)
        answer_w = QWidget(self)
        al = QVBoxLayout(answer_w)
        self.known: QLabel | None = None
        if t.kind == WRITE_UNKNOWN:
            self.known = self._known_box(bundle)
            al.addWidget(self.known)
        if after_takeover:
            back = QLabel(tr("The shop's browser was closed and its session saved. How does "
                             "the task go on?"), self)
            back.setObjectName("ticket-after-takeover")
            back.setWordWrap(True)
            al.addWidget(back)
        self.buttons: dict[str, QRadioButton] = {}
        offered = AFTER_TAKEOVER if after_takeover else ACTIONS
        for action in ACTIONS:
            if action not in offered:
                continue
            rb = QRadioButton(tr(ACTION_HELP[action]), self)
            rb.setObjectName(f"answer-{action}")
            self.group.addButton(rb)
            self.buttons[action] = rb
            al.addWidget(rb)
        self.buttons.get(self._suggested(bundle, offered), next(iter(self.buttons.values()))
                         ).setChecked(True)
        self.note = QPlainTextEdit(self)
        self.note.setObjectName("answer-note")
        self.note.setPlaceholderText(tr("A note for the knowledge base (what you saw, what "
                                        "you did)"))
        self.note.setMaximumHeight(80)
        if after_takeover:
            self.note.setPlainText(tr("after taking over the shop's browser"))
        al.addWidget(self.note)
        # Short: the words under it say what the rule does (a check box does not wrap).
        self.make_rule = QCheckBox(tr("Make this a rule"), self)
        self.make_rule.setToolTip(tr("Make this a rule: answer such failures this way "
                                     "without a ticket"))
        self.make_rule.setObjectName("answer-rule")
        al.addWidget(self.make_rule)
        delay_row = QHBoxLayout()
        self.delay_label = QLabel(tr("Retry after (minutes):"), self)
        self.delay = QSpinBox(self)
        self.delay.setObjectName("rule-delay")
        self.delay.setRange(1, 7 * 24 * 60)
        self.delay.setValue(10)
        self.delay_label.setBuddy(self.delay)
        delay_row.addWidget(self.delay_label)
        delay_row.addWidget(self.delay)
        delay_row.addStretch(1)
        al.addLayout(delay_row)
        self.preview = QLabel(self)
        self.preview.setObjectName("rule-preview")
        self.preview.setWordWrap(True)
        self.preview.setTextFormat(Qt.TextFormat.PlainText)
        self.preview.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        al.addWidget(self.preview)
        al.addStretch(1)
        self.group.buttonToggled.connect(lambda *_: self._show_rule())
        self.make_rule.toggled.connect(lambda *_: self._show_rule())
        self.delay.valueChanged.connect(lambda *_: self._show_rule())
        self._show_rule()
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
        right = QWidget(self)
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        area = scrolling(answer_w)  # long on a 600 px screen: it scrolls, down only
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        rl.addWidget(area, 1)
        rl.addWidget(box)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(tabs)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([550, 450])
        lay = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(head, 1)
        top.addWidget(self.takeover_btn, 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.details_btn, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(top)
        lay.addWidget(self.details)
        lay.addWidget(split, 1)
        for p in bundle.problems:
            lay.addWidget(QLabel(p, self))
        fit_to_screen(self, 1100, 700)

    def _suggested(self, bundle: TicketBundle, offered: tuple[str, ...]) -> str:
        """Core's default for the ticket's kind; the last answer to the same failure when
        there is one, unless it would send a write of unknown outcome again."""
        first = default_answer(self.ticket.kind).value
        if bundle.answers:
            last = bundle.answers[0].action
            if last in offered and not (self.ticket.kind == WRITE_UNKNOWN
                                        and Answer(last).resends):
                return last
        return first if first in offered else "skip"

    def _known_box(self, b: TicketBundle) -> QLabel:
        """What is known about a write of unknown outcome, in plain text."""
        t = b.ticket
        ws = b.write_step
        n = (t.step + 1) if t.step is not None else "?"
        lines = [tr("A change was being sent when the attempt stopped: nobody knows whether "
                    "it went through."),
                 tr("The write: step %1 “%2” (%3).", n, ws.label if ws else t.step_name,
                    ws.action if ws else "?")]
        # A zero-width space after each "/" lets a long address wrap in the narrow column.
        url = b.stopped_url.replace("/", "/\u200b")
        lines.append(tr("Page where the task stopped: %1", url) if b.stopped_url
                     else tr("Page where the task stopped: not recorded (see the screenshot)"))
        if ws is not None and ws.verify:
            lines.append(tr("The flow's check (verify): %1 — it could not settle it.",
                            ws.verify))
        else:
            lines.append(tr("The flow declares no check (verify) for this step, so only a "
                            "person can tell."))
        lines.append(tr("Look at the shop first (Open the shop's browser, or the screenshot). "
                        "If it went through, answer Skip. Resume and Retry send it again and "
                        "ask you to confirm."))
        box = QLabel("\n".join(lines), self)
        box.setObjectName("ticket-write-unknown")
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setWordWrap(True)
        box.setFrameShape(QFrame.Shape.StyledPanel)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return box

    def _show_rule(self) -> None:
        act, words = rule_preview(self.ticket, self.action(), self.delay.value() * 60.0)
        self.make_rule.setEnabled(act is not None)
        if act is None and self.make_rule.isChecked():
            self.make_rule.setChecked(False)  # re-enters: shows the words once
            return
        retry = act is RuleAction.RETRY_LATER
        self.delay.setVisible(retry)
        self.delay_label.setVisible(retry)
        self.delay.setEnabled(self.make_rule.isChecked())
        self.preview.setText(words if act is None or self.make_rule.isChecked()
                             else tr("Tick the box to save this as a rule:") + "\n" + words)

    def _toggle_details(self, on: bool) -> None:
        self.details.setVisible(on)
        self.details_btn.setText(tr("Hide technical details") if on
                                 else tr("Show technical details"))

    def _ask_takeover(self) -> None:
        self.takeover_requested.emit(self.ticket.id)
        self.reject()

    def action(self) -> str:
        for name, rb in self.buttons.items():
            if rb.isChecked():
                return name
        return next(iter(self.buttons))

    def choice(self, *, confirm_resend: bool = False) -> AnswerChoice:
        act, _ = answer_rule(self.ticket, self.action(), self.delay.value() * 60.0)
        rule = act.value if act is not None and self.make_rule.isChecked() else None
        return AnswerChoice(action=self.action(), note=self.note.toPlainText().strip(),
                            rule=rule, rule_delay_s=self.delay.value() * 60.0,
                            confirm_resend=confirm_resend)

    def needs_confirmation(self) -> bool:
        """Would this answer send a write of unknown outcome again?"""
        return self.ticket.kind == WRITE_UNKNOWN and Answer(self.action()).resends

    def accept(self) -> None:
        if self.needs_confirmation():
            self._confirm_resend()
            return
        self._send(self.choice())

    def _send(self, choice: AnswerChoice) -> None:
        self.answered.emit(self.ticket.id, choice)
        super().accept()

    def _confirm_resend(self) -> None:
        """The second confirmation: names the task and the step; the default is No."""
        t = self.ticket
        ws = self.bundle.write_step
        step = tr("step %1 “%2”", (t.step + 1) if t.step is not None else "?",
                  ws.label if ws else t.step_name)
        more = tr(" (and the same for %1 more ticket(s))", self.others) if self.others else ""
        box = QMessageBox(QMessageBox.Icon.Warning, tr("Send the change again?"),
                          tr("%1 for task %2: %3 may already have gone through. Sending it "
                             "again can do it twice (a reply or an order sent twice).%4",
                             names.answer(self.action()), self.task_label, step, more),
                          QMessageBox.StandardButton.NoButton, self)
        box.setObjectName("confirm-resend")
        yes = box.addButton(tr("Send it again"), QMessageBox.ButtonRole.DestructiveRole)
        no = box.addButton(tr("Back"), QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(no)
        box.setEscapeButton(no)

        def done() -> None:
            if box.clickedButton() is yes:
                self._send(self.choice(confirm_resend=True))

        box.finished.connect(lambda _r: done())
        self.confirm = box
        box.open()  # never exec(): the window's loop keeps running


def _age(t: Ticket) -> float:
    return t.age_s(time.time())


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)
