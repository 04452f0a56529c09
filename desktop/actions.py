"""One path for every operator action: GUI action → core coroutine → UI update.

:class:`ActionRunner` runs a coroutine on the window's (qasync) loop — an engine command is
scheduled onto the engine's own loop with :meth:`core.EngineHost.call` and awaited here with
``asyncio.wrap_future`` — then hands the result to a callback, and routes every error to the one
:class:`ErrorPresenter`: a known :class:`core.ShopFleetError` gets a plain message; anything
else is a bug and shows its traceback. Dialogs are opened with ``open()``, never ``exec()``
(which would re-enter the loop inside a coroutine).
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from core import Changes, Engine, EngineHost, InvalidInput, ShopFleetError

from . import names
from .i18n import tr

T = TypeVar("T")
log = logging.getLogger(__name__)


class ErrorPresenter(QObject):
    """Shows errors: plain language for known ones, the traceback for bugs.

    A known error gets a short translated headline chosen by its type
    (:func:`desktop.names.refusal_headline`); core's message — technical, untranslated — is
    one click away ("Show Details…"). For bad input the field is named in the box itself."""

    presented = Signal(str, bool)
    """(message, is_bug) after a message box was opened."""

    def __init__(self, parent_widget: QWidget | None = None) -> None:
        super().__init__(parent_widget)
        self._parent = parent_widget
        self.last_box: QMessageBox | None = None
        self.messages: list[str] = []

    def message_for(self, exc: BaseException) -> str:
        if isinstance(exc, InvalidInput) and exc.field:
            return tr("%1: %2", exc.field, exc.reason)
        return str(exc) or type(exc).__name__

    def present(self, exc: BaseException, *, what: str) -> None:
        known = isinstance(exc, ShopFleetError)
        box = QMessageBox(self._parent)
        box.setWindowTitle(what)
        if known:
            text = self.message_for(exc)
            box.setIcon(QMessageBox.Icon.Warning)
            box.setText(tr("%1 was refused: %2", what, names.refusal_headline(exc)))
            if isinstance(exc, InvalidInput) and exc.field:
                box.setInformativeText(tr("Check the field %1.", exc.field))
            box.setDetailedText(text)
        else:
            log.error("bug in %s", what, exc_info=exc)
            text = f"{type(exc).__name__}: {exc}"
            box.setIcon(QMessageBox.Icon.Critical)
            box.setText(tr("%1 failed because of a bug in ShopFleet.", what))
            box.setInformativeText(text)
            box.setDetailedText("".join(traceback.format_exception(exc)))
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.messages.append(text)
        self.last_box = box
        box.open()  # never exec(): we may be inside a coroutine
        self.presented.emit(text, not known)


class ActionRunner(QObject):
    """Runs actions as tasks on the window's loop and reports how they ended.

    Args:
        host: the engine host (commands run on its loop).
        presenter: where errors go.
    """

    finished = Signal(str, object)
    """(what, result) after an action succeeded."""
    changed = Signal(object)
    """A :class:`core.Changes` an engine command returned (views mark themselves stale)."""
    failed = Signal(str, str)
    """(what, message) after an action failed (the presenter has shown it)."""

    def __init__(self, host: EngineHost | None, presenter: ErrorPresenter,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.presenter = presenter
        self._tasks: set[asyncio.Task[Any]] = set()

    def engine(self, fn: Callable[[Engine], Awaitable[T]]) -> Awaitable[T]:
        """An awaitable of ``fn(engine)`` run on the engine's loop."""
        if self.host is None:
            raise ShopFleetError(tr("the engine is not running"))
        return asyncio.wrap_future(self.host.call(fn))

    def run(self, what: str, make: Callable[[], Awaitable[T]], *,
            then: Callable[[T], None] | None = None,
            on_error: Callable[[BaseException], None] | None = None) -> asyncio.Task[None]:
        """Start an action: ``make()`` gives the awaitable; ``then`` gets its result.

        Returns the task (tests may await it); errors never escape it.
        """
        async def go() -> None:
            try:
                result = await make()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # every error ends at the presenter
                self.presenter.present(exc, what=what)
                self.failed.emit(what, self.presenter.message_for(exc))
                if on_error is not None:
                    on_error(exc)
                return
            if isinstance(result, Changes):
                self.changed.emit(result)
            if then is not None:
                try:
                    then(result)
                except Exception as exc:
                    self.presenter.present(exc, what=what)
                    return
            self.finished.emit(what, result)

        task = asyncio.ensure_future(go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def command(self, what: str, fn: Callable[[Engine], Awaitable[T]], *,
                then: Callable[[T], None] | None = None) -> asyncio.Task[None]:
        """Run an engine command (a coroutine function of the engine)."""
        return self.run(what, lambda: self.engine(fn), then=then)

    async def wait_idle(self) -> None:
        """Wait until every started action has ended (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel_all(self) -> None:
        for t in list(self._tasks):
            t.cancel()
