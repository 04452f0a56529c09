"""The detail pane: a task's flow with each step's state, checkpoint, results, evidence and
event history."""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QPixmap
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core import TaskDetail, TaskRecord

from . import names, palette
from .i18n import tr
from .models import fmt_duration, fmt_time

STATUS_MARK = {"done": "✔", "current": "▶", "todo": "·", "unknown": "?"}


def waited_s(r: TaskRecord, now: float | None = None) -> float:
    """How long the task waited in the queue: from when it was queued to when a worker
    claimed it, or, still waiting, to now."""
    end = r.started_at if r.started_at is not None else (
        r.finished_at if r.finished_at is not None and r.state.value != "queued"
        else (time.time() if now is None else now))
    return max(0.0, end - r.created_at)


class DetailPane(QWidget):
    """Shows one task; :meth:`show_detail` fills it, :meth:`clear` empties it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("detail")
        self.task_id: int | None = None
        self.header = QLabel(self)
        self.header.setObjectName("detail-header")
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.steps = QTreeWidget(self)
        self.steps.setObjectName("detail-steps")
        self.steps.setRootIsDecorated(False)
        self.steps.setColumnCount(4)
        self.checkpoint = QPlainTextEdit(self, readOnly=True)
        self.results = QPlainTextEdit(self, readOnly=True)
        self.evidence = QLabel(self)
        self.evidence.setObjectName("detail-evidence")
        self.evidence.setWordWrap(True)
        self.evidence.setTextFormat(Qt.TextFormat.RichText)
        self.evidence.setOpenExternalLinks(False)
        self.evidence.linkActivated.connect(
            lambda link: QDesktopServices.openUrl(QUrl.fromLocalFile(link)))
        self.thumb = QLabel(self)
        ev = QWidget(self)
        ev_lay = QVBoxLayout(ev)
        ev_lay.addWidget(self.evidence)
        ev_lay.addWidget(self.thumb, 1)
        self.events = QTreeWidget(self)
        self.events.setObjectName("detail-events")
        self.events.setRootIsDecorated(False)
        self.events.setColumnCount(3)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.steps, "")
        self.tabs.addTab(self.checkpoint, "")
        self.tabs.addTab(self.results, "")
        self.tabs.addTab(ev, "")
        self.tabs.addTab(self.events, "")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.header)
        lay.addWidget(self.tabs, 1)
        self.retranslate()
        self.clear()

    def retranslate(self) -> None:
        for i, t in enumerate((tr("Flow"), tr("Checkpoint"), tr("Results"), tr("Evidence"),
                               tr("History"))):
            self.tabs.setTabText(i, t)
        self.steps.setHeaderLabels([tr("Step"), tr("State"), tr("Write"), tr("Name")])
        self.events.setHeaderLabels([tr("When"), tr("Change"), tr("Details")])
        if self.task_id is None:
            self.header.setText(tr("Select a task to see its flow, checkpoint and history."))

    def clear(self) -> None:
        self.task_id = None
        self.header.setText(tr("Select a task to see its flow, checkpoint and history."))
        self.steps.clear()
        self.events.clear()
        self.checkpoint.setPlainText("")
        self.results.setPlainText("")
        self.evidence.setText("")
        self.thumb.clear()

    def step_states(self) -> list[tuple[str, str, bool]]:
        """(label, status, write) per step, for tests and accessibility."""
        out = []
        for i in range(self.steps.topLevelItemCount()):
            it = self.steps.topLevelItem(i)
            assert it is not None
            out.append((it.text(3), it.data(1, Qt.ItemDataRole.UserRole), it.text(2) != ""))
        return out

    def show_detail(self, d: TaskDetail, *, now: float | None = None) -> None:
        r = d.record
        self.task_id = r.id
        esc = html.escape  # every value from the task is text, never markup
        deadline = f" · {esc(tr('deadline'))} {esc(fmt_time(r.deadline))}" if r.deadline else ""
        # An error is the task's news only while it is not done (a retried, then finished
        # task keeps its last error in the record: the history tab has it).
        error = r.last_error and r.state.value not in ("done", "cancelled")
        self.header.setText(
            f"<b>#{r.id}</b> {esc(names.task_type(r.type))} · {esc(r.shop)} "
            f"({esc(names.platform(r.platform))}) · <b>{esc(names.state(r.state.value))}</b>"
            f"<br>{esc(tr('score'))} {r.score:.2f} · {esc(tr('attempts'))} "
            f"{r.attempts}/{r.max_attempts} · {esc(tr('waited'))} "
            f"{esc(fmt_duration(waited_s(r, now)))}{deadline}"
            + (f"<br><span style='color:{palette.css('error')}'><b>"
               f"{esc(names.error_headline(r.error_class))}</b></span>" if error else ""))
        # The technical detail, untranslated, one hover away.
        self.header.setToolTip(
            "\n".join(x for x in (r.state_reason, f"{r.error_class}: {r.last_error}"
                                   if r.last_error else "") if x))
        self.steps.clear()
        for s in d.steps:
            it = QTreeWidgetItem([str(s.index + 1),
                                  f"{STATUS_MARK[s.status]} {names.state(s.status)}",
                                  tr("write") if s.write else "", s.label])
            it.setData(1, Qt.ItemDataRole.UserRole, s.status)
            if s.status == "current":
                f = it.font(3)
                f.setBold(True)
                for c in range(4):
                    it.setFont(c, f)
            if not s.interruptible:
                it.setToolTip(3, tr("not interruptible: never preempted inside this step"))
            self.steps.addTopLevelItem(it)
        if d.flow_error:
            self.steps.addTopLevelItem(QTreeWidgetItem(["", "", "", d.flow_error]))
        for c in range(3):
            self.steps.resizeColumnToContents(c)
        self.checkpoint.setPlainText(json.dumps(r.checkpoint, indent=2, ensure_ascii=False)
                                     if r.checkpoint else tr("(no checkpoint yet)"))
        self.results.setPlainText(json.dumps(r.results, indent=2, ensure_ascii=False)
                                  if r.results else tr("(no results yet)"))
        ev = r.evidence or {}
        if ev:
            esc = html.escape
            links = "<br>".join(
                f"{esc(str(k))}: <a href='{esc(str(v), quote=True)}'>{esc(Path(v).name)}</a>"
                if Path(str(v)).exists() else f"{esc(str(k))}: {esc(str(v))}"
                for k, v in ev.items())
            self.evidence.setText(links)
            shot = ev.get("screenshot")
            if shot and Path(shot).exists():
                pm = QPixmap(shot)
                self.thumb.setPixmap(pm.scaledToWidth(min(480, pm.width()),
                                                      Qt.TransformationMode.SmoothTransformation))
            else:
                self.thumb.clear()
        else:
            self.evidence.setText(tr("(no evidence: evidence is kept for failed attempts)"))
            self.thumb.clear()
        self.events.clear()
        for e in d.events:
            change = (f"{names.state(e.from_state) if e.from_state else '∅'} → "
                      f"{names.state(e.to_state)}")
            self.events.addTopLevelItem(QTreeWidgetItem([fmt_time(e.at), change, e.reason]))
        for c in range(2):
            self.events.resizeColumnToContents(c)
