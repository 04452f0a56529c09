"""The window's action handlers: each opens its dialog if it needs one, then runs an
operator operation (:mod:`desktop.operations`, one call into core) through the action runner.
Mixed into :class:`desktop.window.MainWindow` (its attributes are declared here for the
checker)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMainWindow, QMessageBox, QWidget

from core import Changes, Engine, save_settings

from . import names
from . import operations as ops
from .actions import ActionRunner
from .context import ConsoleContext
from .dialogs import BumpDialog, GateDialog, SettingsDialog, SubmitDialog
from .i18n import install_language, save_language, saved_language, tr
from .models import KeyedTableModel, ListTableModel, Reader, TaskTableModel
from .panels import TablePanel
from .shops import run_keeping_input
from .ticket_dialog import TicketDialog, load_bundle
from .tickets import TicketReads

if TYPE_CHECKING:
    _Base = QMainWindow  # the checker sees the window this is mixed into
else:
    _Base = object


class CommandsMixin(_Base):
    """The operator's commands, bound to the window's actions."""

    ctx: ConsoleContext
    runner: ActionRunner
    reader: Reader
    tickets: TicketReads
    models: dict[str, KeyedTableModel]
    panels: dict[str, TablePanel]
    dialog: QWidget | None
    last_confirm: QMessageBox | None
    choices: Any
    _flows: list[str]

    if TYPE_CHECKING:  # defined by the window and its other parts
        def current_key(self) -> str: ...
        def selected_task_ids(self) -> list[int]: ...
        def _selected_shops(self) -> list[Any]: ...
        def _selected_in(self, name: str) -> list[Any]: ...
        def status_message(self, text: str) -> None: ...
        def _mark(self, names: Sequence[str]) -> None: ...
        def _spawn(self, coro: Any) -> None: ...
        async def _load_choices(self) -> None: ...

    def _each(self, what: str, ids: Sequence[Any],
              fn: ops.Operation) -> asyncio.Task[None] | None:
        """Run one operation per selected item as one action; the first refusal stops it and
        is shown; what was done before it stays done."""
        if not ids:
            return None
        items = list(ids)

        async def all_of(engine: Engine) -> Changes:
            return ops.merged([await fn(engine, x) for x in items])

        return self.runner.command(what, all_of)

    def _task_snapshot(self, task_id: int) -> Any:
        """The row the operator sees for this task (the current view first)."""
        order = [self.current_key(), "pending", "in_flight", "suspended", "quarantine",
                 "history"]
        for key in dict.fromkeys(order):
            m = self.models.get(key)
            if m is not None and key != "tickets":
                snap = m.snapshot(task_id)
                if snap is not None:
                    return snap
        for t in self.panels["tickets"].selected_rows() if "tickets" in self.panels else []:
            if t is not None and t.task_id == task_id:
                return t
        return None

    def task_label(self, task_id: int) -> str:
        """The task as the operator knows it: its number, shop and type."""
        snap = self._task_snapshot(task_id)
        if snap is None:
            return f"#{task_id}"
        kind = getattr(snap, "type", None) or getattr(snap, "task_type", "")
        return tr("#%1 (%2, %3)", task_id, snap.shop, names.task_type(kind))

    def tasks_label(self, ids: Sequence[int], *, most: int = 3) -> str:
        """The first few tasks named, then how many more."""
        shown = ", ".join(self.task_label(i) for i in ids[:most])
        return shown if len(ids) <= most else tr("%1 and %2 more", shown, len(ids) - most)

    def bump_selected(self) -> None:
        ids = self.selected_task_ids()
        if not ids:
            return
        snap = self.models[self.current_key()].snapshot(ids[0]) \
            if self.current_key() in self.models else None
        dlg = BumpDialog(len(ids), snap.score if snap is not None else None, self)
        what = tr("Change priority of %1", self.tasks_label(ids))
        dlg.accepted.connect(lambda: self._each(
            what, ids, lambda e, i: ops.bump(e, i, **dlg.values())))
        self.dialog = dlg
        dlg.open()

    def cancel_selected(self) -> None:
        ids = self.selected_task_ids()
        if not ids:
            return
        what = self.tasks_label(ids)
        box = QMessageBox(QMessageBox.Icon.Question, tr("Cancel tasks"),
                          tr("Cancel %1? Running ones stop at their next step.", what),
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.accepted.connect(lambda: self._each(tr("Cancel %1", what), ids,
                                                lambda e, i: ops.cancel(e, i)))
        self.last_confirm = box
        box.open()

    def retry_selected(self) -> None:
        ids = self.selected_task_ids()
        self._each(tr("Retry %1", self.tasks_label(ids)), ids, lambda e, i: ops.retry(e, i))

    def preempt_selected(self) -> None:
        """Preempt after a confirmation naming the tasks (a preempted task gives up its
        browser at the next safe step)."""
        ids = self.selected_task_ids()
        if not ids:
            return
        what = self.tasks_label(ids)
        box = QMessageBox(QMessageBox.Icon.Question, tr("Preempt tasks"),
                          tr("Preempt %1? It stops at its next safe step and waits in "
                             "Suspended.", what),
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.accepted.connect(lambda: self._each(tr("Preempt %1", what), ids,
                                                lambda e, i: ops.preempt(e, i)))
        self.last_confirm = box
        box.open()

    def release_selected(self) -> None:
        ids = self.selected_task_ids()
        self._each(tr("Release %1 from quarantine", self.tasks_label(ids)), ids,
                   lambda e, i: ops.release(e, i))

    def pause_shops(self, paused: bool) -> None:
        names = [s.name for s in self._selected_shops()]
        self._each(tr("Pause shop") if paused else tr("Resume shop"), names,
                   lambda e, n: ops.pause_shop(e, n, paused))

    def pause_domains(self, paused: bool) -> None:
        domains = sorted({s.domain for s in self._selected_shops() if s.domain})
        self._each(tr("Pause site") if paused else tr("Resume site"), domains,
                   lambda e, d: ops.pause_domain(e, d, paused))

    def set_breakers(self, state: Literal["open", "closed"]) -> None:
        names = self._selected_in("breakers")
        self._each(tr("Trip breaker") if state == "open" else tr("Reset breaker"), names,
                   lambda e, n: ops.set_breaker(e, n, state))

    def change_gate(self) -> None:
        gates = self.models["gates"]
        current = {g.name: (g.rate_per_s, g.burst) for g in (gates.snapshot(k) for k in gates.ids)
                   if g is not None}
        names = list(current) or ["*"]
        choices = getattr(self, "choices", None)
        for d in (choices.domains if choices is not None else []):
            if d not in current:  # a domain whose gate has not been used yet
                names.append(d)
                spec = self.ctx.settings.gates.default_domain
                current[d] = (spec.rate_per_s, spec.burst)
        sel = self._selected_in("gates")
        dlg = GateDialog(names, current, str(sel[0]) if sel else "*", self)

        def go() -> None:
            name, rate, burst = dlg.values()
            run_keeping_input(self, dlg, tr("Rate limit"), lambda: self.runner.engine(
                lambda e: ops.set_gate_rate(e, name, rate, burst)),
                then=lambda ch: self.runner.changed.emit(ch))

        dlg.on_ok = go
        self.dialog = dlg
        dlg.open()

    def submit_tasks(self) -> None:
        choices = getattr(self, "choices", None)
        dlg = SubmitDialog(choices.shops if choices else [], choices.types if choices else [],
                           self._flows, self)

        def go() -> None:
            specs = dlg.specs

            def done(ids: list[int]) -> None:
                self._mark(("pending",))
                self.status_message(tr("Submitted %1 task(s)", len(ids)))

            run_keeping_input(self, dlg, tr("Submit tasks"),
                              lambda: self.runner.engine(lambda e: ops.submit(e, specs)),
                              then=done)

        dlg.on_ok = go
        self.dialog = dlg
        dlg.open()

    def answer_selected(self) -> None:
        """Answer the selected tickets: the dialog shows the first; with several selected,
        the same answer (and note) goes to each of them (bulk answer)."""
        rows = [r for r in self.panels["tickets"].selected_rows() if r is not None]
        if not rows:
            return
        ids = [r.id for r in rows]

        def show(bundle: Any) -> None:
            dlg = TicketDialog(bundle, self, others=len(ids) - 1)
            dlg.answered.connect(lambda _tid, action, note, rule: self._answer_all(
                ids, action, note, rule))
            self.dialog = dlg
            dlg.open()

        self.runner.run(tr("Open ticket"),
                        lambda: self.reader(load_bundle, self.tickets, ids[0]), then=show)

    def _answer_all(self, ticket_ids: list[int], action: str, note: str,
                    make_rule: bool) -> asyncio.Task[None] | None:
        # One rule is enough: the first answer makes it, the others only answer.
        task = self._each(tr("Answer ticket"), ticket_ids, lambda e, t: ops.answer_ticket(
            e, t, action, note=note, make_rule=make_rule and t == ticket_ids[0]))
        self._mark(("tickets", "kb", "rules"))
        return task

    def _answer(self, ticket_id: int, action: str, note: str, make_rule: bool) -> None:
        self._answer_all([ticket_id], action, note, make_rule)

    def open_settings(self) -> None:
        # Only the file this console was started with (the demo's is in its own folder); a
        # console without one never falls back to the operator's default file.
        path = self.ctx.config_path
        dlg = SettingsDialog(self.ctx.settings, language=saved_language(),
                             path=str(path) if path is not None else tr("(not saved)"),
                             parent=self)

        def go() -> None:
            QSettings().setValue("notify/sound", dlg.chosen_sound())
            lang = dlg.chosen_language()
            if lang != saved_language():
                save_language(lang)
                install_language(lang)
            if dlg.settings is not None and dlg.settings != self.ctx.settings:
                chosen = dlg.settings
                if path is None:
                    self.status_message(tr("Settings not saved: this console has no "
                                           "configuration file"))
                    return

                async def write() -> None:
                    await asyncio.to_thread(save_settings, chosen, path)

                self.runner.run(tr("Save settings"), write, then=lambda _: self.status_message(
                    tr("Settings saved to %1; they apply at the next start", path)))

        dlg.accepted.connect(go)
        self.dialog = dlg
        dlg.open()

    def refresh_all(self) -> None:
        for m in self.models.values():
            if isinstance(m, TaskTableModel | ListTableModel):
                m.mark_stale()
        self._spawn(self._load_choices())
