"""Dialog sizes that fit the screen: every dialog opens within the available screen (1024×600
laptops included), stays resizable, and scrolls where its content is taller."""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

SMALLEST = (1024, 600)
"""The smallest screen every dialog must fit (a netbook, or 2048×1200 at 200 %)."""


def fit_to_screen(w: QWidget, width: int, height: int) -> None:
    """Resize ``w`` to ``width``×``height``, or less on a smaller screen (minus a margin for
    the window frame and the task bar)."""
    screen = w.screen() if w.screen() is not None else None
    if screen is not None:
        avail = screen.availableGeometry()
        width = min(width, avail.width() - 40)
        height = min(height, avail.height() - 60)
    w.resize(max(320, width), max(240, height))


def scrolling(page: QWidget) -> QScrollArea:
    """``page`` in a frameless scroll area that resizes it (long forms on short screens)."""
    area = QScrollArea()
    area.setWidget(page)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    return area
