"""The flow editor's operations: the busy state, and the work run on worker threads (open,
save, run on a shop, pick a locator, record) with its results brought back to the GUI thread.
Mixed into :class:`desktop.flow_editor.FlowEditor`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import (
    Callable,
    Mapping,
)
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal, SignalInstance
from PySide6.QtWidgets import (
    QComboBox,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QWidget,
)

from core import (
    FlowProblem,
    InvalidInput,
    Settings,
    ShopFleetError,
    Store,
    TaskError,
    flow_catalog,
    pick_locator,
    read_flow_document,
    record_shop_flow,
    run_flow_once,
    save_flow_file,
)

from .i18n import tr

Runner = Callable[..., Any]
"""``runner(settings, store, flow_doc, params, shop, *, headed, on_step)`` → results."""

MARKS = {"done": "✓", "skipped": "↷", "verified": "✓", "replayed": "✓", "failed": "✗",
         "started": "…"}
"""The mark each step status gets in the list."""

if TYPE_CHECKING:
    _Base = QWidget  # the checker sees the editor this is mixed into
else:
    _Base = object


def _default_runner(settings: Settings, store: Store, doc: Mapping[str, Any],
                    params: Mapping[str, Any], shop: str, *, headed: bool,
                    on_step: Callable[[Any], None]) -> Any:
    return asyncio.run(run_flow_once(settings, store, doc, params, shop, headed=headed,
                                     on_step=on_step))


def _default_picker(settings: Settings, store: Store, shop: str, url: str, *, lang: str,
                    headed: bool) -> str:
    return asyncio.run(pick_locator(settings, store, shop, url, lang=lang, headed=headed))


def _default_recorder(settings: Settings, store: Store, shop: str, name: str, *, lang: str,
                      headed: bool) -> Any:
    return asyncio.run(record_shop_flow(settings, store, shop, name, lang=lang,
                                        headed=headed))


class _Relay(QObject):
    """Carries results from worker threads to the GUI thread (queued: it lives there)."""

    step = Signal(object)
    done = Signal(str, object)       # (what, result)
    failed = Signal(str, object)     # (what, exception)



class FlowOpsMixin(_Base):
    """Busy state and the editor's worker-thread operations."""

    settings: Settings
    store: Store
    _runner: Runner
    _picker: Callable[..., str]
    _recorder: Callable[..., Any]
    _confirm: Callable[[str, str], bool]
    _relay: _Relay
    headed: bool
    lang: str
    problems: list[FlowProblem]
    last_error: BaseException | None
    last_results: Any
    saved_path: str
    _busy: bool
    _loading: bool
    steps: list[dict[str, Any]]
    name_edit: QLineEdit
    start_edit: QLineEdit
    open_combo: QComboBox
    open_btn: QPushButton
    steps_list: QListWidget
    locator_edit: QLineEdit
    pick_btn: QPushButton
    shop_combo: QComboBox
    params_edit: QPlainTextEdit
    run_btn: QPushButton
    save_btn: QPushButton
    record_btn: QPushButton
    log: QPlainTextEdit
    saved: SignalInstance
    run_finished: SignalInstance
    picked: SignalInstance
    loaded: SignalInstance
    busy_changed: SignalInstance

    if TYPE_CHECKING:  # defined by the editor
        def document(self) -> dict[str, Any]: ...
        def set_document(self, doc: Mapping[str, Any]) -> None: ...
        def current_row(self) -> int: ...
        def validate(self) -> list[FlowProblem]: ...
        def _step_edited(self, *_: Any) -> None: ...
        @staticmethod
        def _step_text(i: int, step: Mapping[str, Any], mark: str = "") -> str: ...

    # -- busy state --------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._busy

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_buttons()
        self.busy_changed.emit(busy)

    def _update_buttons(self) -> None:
        ok = not self.problems and not self._busy
        self.save_btn.setEnabled(ok)
        self.run_btn.setEnabled(ok and self.shop_combo.count() > 0)
        self.record_btn.setEnabled(not self._busy and self.shop_combo.count() > 0)
        self.pick_btn.setEnabled(not self._busy and self.locator_edit.isEnabled()
                                 and self.shop_combo.count() > 0)
        self.open_btn.setEnabled(not self._busy and self.open_combo.count() > 0)

    def _work(self, what: str, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on a worker thread; its result or error comes back to the GUI thread."""
        self._set_busy(True)
        relay = self._relay

        def go() -> None:
            try:
                result = fn()
            except BaseException as exc:  # shown, not raised: a worker must not die silently
                relay.failed.emit(what, exc)
            else:
                relay.done.emit(what, result)

        threading.Thread(target=go, name=f"shopfleet-flow-{what}", daemon=True).start()

    def _on_done(self, what: str, result: Any) -> None:
        self._set_busy(False)
        if what == "save":
            self.saved_path = str(result)
            self.log.appendPlainText(tr("Saved to %1", result))
            self.saved.emit(str(result))
            self.refresh_catalog()
        elif what == "run":
            self.last_results = result
            self.log.appendPlainText(tr("Done. Results: %1", result))
            self.run_finished.emit(True)
        elif what == "pick":
            self.locator_edit.setText(str(result))
            self._step_edited()
            self.picked.emit(str(result))
        elif what == "record":
            self.set_document(result.document())
            self.params_edit.setPlainText("\n".join(f"{k}={v}"
                                                    for k, v in sorted(result.params.items())))
            for note in result.notes:
                self.log.appendPlainText(tr("Note: %1", note))
            self.loaded.emit()
        elif what == "catalog":
            current = self.open_combo.currentText() or self.name_edit.text()
            self.open_combo.clear()
            self.open_combo.addItems([e.name for e in result])
            self._catalog = {e.name: e for e in result}
            if current:
                self.open_combo.setCurrentText(current)
            self._update_buttons()
        elif what == "open":
            self.set_document(result)
            self.loaded.emit()
        elif what == "shops":
            self.shop_combo.clear()
            self.shop_combo.addItems(list(result))
            self._update_buttons()

    def _on_failed(self, what: str, exc: BaseException) -> None:
        self._set_busy(False)
        self.last_error = exc
        if what == "save" and isinstance(exc, InvalidInput) and exc.field == "name" \
                and "shipped" in exc.reason:
            if self._confirm(tr("Replace a shipped flow?"), tr(
                    "%1\n\nReplace the shipped flow's file with this one? Choose No to save "
                    "it under another name.", exc.reason)):
                self._save(over_shipped=True)
                return
            self.log.appendPlainText(tr("Not saved: %1", exc.reason))
            return
        if what == "run" and isinstance(exc, TaskError):
            step = exc.step
            self.log.appendPlainText(tr("FAILED at step %1: %2",
                                        "?" if step is None else step + 1, exc))
            for name, path in sorted(exc.evidence.items()):
                self.log.appendPlainText(tr("  evidence %1: %2", name, path))
            if step is not None and 0 <= step < len(self.steps):
                self.steps_list.setCurrentRow(step)
            self.run_finished.emit(False)
            return
        if isinstance(exc, InvalidInput) and exc.field:
            text = tr("%1: %2", exc.field, exc.reason)
        elif isinstance(exc, ShopFleetError):
            text = str(exc)
        else:
            text = f"{type(exc).__name__}: {exc}"
        self.log.appendPlainText(tr("%1 failed: %2", what, text))
        if what == "run":
            self.run_finished.emit(False)

    # -- operations --------------------------------------------------------------------

    def refresh_catalog(self) -> None:
        """List the flows there are (on a thread: it reads the flow folders)."""
        dirs = list(self.settings.flows.dirs)
        relay = self._relay

        def go() -> None:
            try:
                relay.done.emit("catalog", flow_catalog(dirs))
            except Exception as exc:
                relay.failed.emit("catalog", exc)

        threading.Thread(target=go, name="shopfleet-flow-catalog", daemon=True).start()

    def _load_shops(self) -> None:
        """Offer the store's shops (read on a thread: the store may block)."""
        store, relay = self.store, self._relay

        def go() -> None:
            try:
                relay.done.emit("shops", [s.name for s in store.shops()])
            except Exception as exc:
                relay.failed.emit("shops", exc)

        threading.Thread(target=go, name="shopfleet-flow-shops", daemon=True).start()

    def open_flow(self, name: str) -> None:
        entry = self._catalog.get(name)
        if entry is None or self._busy:
            return
        self._work("open", lambda: read_flow_document(entry))

    def save(self) -> None:
        """Save into the user's flow folder (asks before replacing a shipped flow)."""
        self._save(over_shipped=False)

    def _save(self, *, over_shipped: bool) -> None:
        if self.validate() or self._busy:
            return
        doc, dirs = self.document(), list(self.settings.flows.dirs)
        self._work("save", lambda: save_flow_file(doc, configured=dirs,
                                                  over_shipped=over_shipped))

    def params(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in self.params_edit.toPlainText().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip():
                out[key.strip()] = value
        return out

    def run(self) -> None:
        """Run the flow on the chosen shop, step by step, the page visible."""
        if self.validate() or self._busy or not self.shop_combo.currentText():
            return
        for i, step in enumerate(self.steps):
            self.steps_list.item(i).setText(self._step_text(i, step))
        shop, doc, params = self.shop_combo.currentText(), self.document(), self.params()
        self.log.appendPlainText(tr("Running %1 on shop %2…", doc["name"], shop))
        relay, runner, settings, store = self._relay, self._runner, self.settings, self.store
        headed = self.headed
        self._work("run", lambda: runner(settings, store, doc, params, shop, headed=headed,
                                         on_step=relay.step.emit))

    def _on_step(self, ev: Any) -> None:
        if ev.index is None:
            if ev.status == "failed":
                self.log.appendPlainText(tr("Start page failed: %1", ev.error))
            return
        if 0 <= ev.index < len(self.steps):
            mark = MARKS.get(ev.status, "")
            self.steps_list.item(ev.index).setText(
                self._step_text(ev.index, self.steps[ev.index], mark))
        if ev.status != "started":
            extra = f": {ev.error}" if ev.error else ""
            self.log.appendPlainText(f"{ev.index + 1}. {ev.name or ev.action} "
                                     f"{tr(ev.status)}{extra}")

    def pick(self) -> None:
        """Point at the element in the shop's live page; its locator goes into the step."""
        shop = self.shop_combo.currentText()
        if self._busy or not shop:
            return
        url = self._page_of_step(self.current_row())
        settings, store, picker, lang, headed = (self.settings, self.store, self._picker,
                                                 self.lang, self.headed)
        self.log.appendPlainText(tr("Point at the element in the browser (a pick button, "
                                    "then the element)…"))
        self._work("pick", lambda: picker(settings, store, shop, url, lang=lang, headed=headed))

    def _page_of_step(self, row: int) -> str:
        """The page a step acts on: the last navigate before it, else the start URL."""
        for step in reversed(self.steps[:max(row, 0)]):
            if step.get("action") == "navigate" and step.get("url"):
                return str(step["url"])
        return self.start_edit.text() or "{shop.base_url}/"

    def record(self) -> None:
        """Record a new flow on the chosen shop; it opens here to edit and save."""
        shop = self.shop_combo.currentText()
        name = self.name_edit.text() or "recorded_flow"
        if self._busy or not shop:
            return
        settings, store, recorder, lang, headed = (self.settings, self.store, self._recorder,
                                                   self.lang, self.headed)
        self.log.appendPlainText(tr("Recording on shop %1: do the work in the browser, then "
                                    "press Finish in its toolbar.", shop))
        self._work("record", lambda: recorder(settings, store, shop, name, lang=lang,
                                              headed=headed))
