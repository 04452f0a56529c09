"""The flow editor's own window and its two entries in the console ("Flow editor…",
"Record a flow…")."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QMainWindow,
)

from .flow_editor import FlowEditor
from .i18n import QT_TR_NOOP, tr

_STATUSES = (QT_TR_NOOP("done"), QT_TR_NOOP("skipped"), QT_TR_NOOP("failed"),
             QT_TR_NOOP("verified"), QT_TR_NOOP("replayed"))


class FlowEditorWindow(QMainWindow):
    """The editor in its own window (the console opens one per "Flow editor…")."""

    def __init__(self, editor: FlowEditor) -> None:
        super().__init__()
        self.editor = editor
        self.setCentralWidget(editor)
        self.setWindowTitle(editor.windowTitle())
        self.resize(980, 720)


class _EditorActions(QObject):
    """The console window's two entries into the editor, retranslated with it."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self.open_act = QAction(window)
        self.open_act.setObjectName("flow-editor")
        self.record_act = QAction(window)
        self.record_act.setObjectName("record-flow")
        self.open_act.triggered.connect(lambda: self.open_editor())
        self.record_act.triggered.connect(lambda: self.open_editor(record=True))
        self.windows: list[FlowEditorWindow] = []
        window.installEventFilter(self)
        self.retranslate()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.window and event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        return False

    def retranslate(self) -> None:
        self.open_act.setText(tr("Flow editor…"))
        self.open_act.setToolTip(tr("Edit a flow's steps, check them, run them on a shop"))
        self.record_act.setText(tr("Record a flow…"))
        self.record_act.setToolTip(tr("Make a flow by doing the work once in a shop's browser"))

    def open_editor(self, *, record: bool = False) -> FlowEditorWindow:
        ctx = self.window.ctx
        from .i18n import resolve_language, saved_language

        lang = "zh" if resolve_language(saved_language()) == "zh_CN" else "en"
        editor = FlowEditor(ctx.settings, ctx.store, lang=lang)   # shops: read on a thread
        win = FlowEditorWindow(editor)
        self.windows.append(win)
        win.show()
        if record:
            editor.record()
        return win


def install_flow_editor(window: Any) -> _EditorActions:
    """Add "Flow editor…" and "Record a flow…" to the console window's toolbar and to its
    File menu (every action is reachable from the menu bar)."""
    acts = _EditorActions(window)
    window.toolbar.addSeparator()
    window.toolbar.addAction(acts.open_act)
    window.toolbar.addAction(acts.record_act)
    menus = getattr(window, "menus", {})
    if "file" in menus:
        first = menus["file"].actions()[0] if menus["file"].actions() else None
        menus["file"].insertAction(first, acts.open_act)
        menus["file"].insertAction(first, acts.record_act)
        menus["file"].insertSeparator(first)
    window.flow_editor_actions = acts
    return acts
