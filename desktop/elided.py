"""A label that gives up width before the window does: it draws its text elided ("…") when
there is not room, and shows the whole text as its tooltip.

The status bar's labels (store, alerts, counts) grow with what they say; plain labels would
raise the window's least width past a 1024-pixel screen the moment a long alert appears.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

LEAST_WIDTH = 48
"""Pixels an elided label keeps at the least: room for a few characters and the "…"."""


class ElidedLabel(QLabel):
    """One line of text, elided at the right when narrower than its text (tooltip: all of it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), LEAST_WIDTH), hint.height())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        rect = self.contentsRect()
        text = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                              rect.width())
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(rect, int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), text)
