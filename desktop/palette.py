"""Every colour the console draws, in one place, taken from the system's palette.

The console follows the operating system's light or dark scheme (Qt 6's
``QStyleHints.colorScheme``): text and backgrounds come from the application's
:class:`QPalette`; the few signal colours (error, warning, good, the chart series) have a light
and a dark variant chosen by the scheme, so dark-red error text never sits on a dark
background. No other module of ``desktop/`` writes a colour literal (a test greps for them).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

# (light, dark) variants: readable on a white and on a near-black base.
_SIGNAL: dict[str, tuple[str, str]] = {
    "error": ("#b00020", "#ff6b6b"),
    "warning": ("#b35c00", "#ffb74d"),
    "good": ("#1b7f3b", "#66d17a"),
    "info": ("#1f5fbf", "#7fb2ff"),
    "muted": ("#666666", "#a0a0a0"),
}

# Chart series (tableau-like), with brighter twins for a dark background.
_SERIES: dict[str, tuple[str, str]] = {
    "queued": ("#1f77b4", "#5aa9e6"),
    "running": ("#2ca02c", "#5fd35f"),
    "done": ("#2ca02c", "#5fd35f"),
    "failed": ("#d62728", "#ff6b6b"),
    "success_rate": ("#2ca02c", "#5fd35f"),
    "resume_success_rate": ("#9467bd", "#c39bef"),
    "oldest_wait_s": ("#ff7f0e", "#ffad5c"),
    "preemptions_per_hour": ("#8c564b", "#d39a8c"),
    "open_tickets": ("#e377c2", "#f5a3dc"),
    "gates": ("#1f77b4", "#5aa9e6"),
}


def is_dark() -> bool:
    """Whether the console is drawn in a dark scheme (the system's, or a dark palette)."""
    app = QGuiApplication.instance()
    if app is None:
        return False
    assert isinstance(app, QGuiApplication)
    scheme = app.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    return app.palette().color(QPalette.ColorRole.Window).lightness() < 128


def _pick(pair: tuple[str, str]) -> QColor:
    return QColor(pair[1] if is_dark() else pair[0])


def signal(name: str) -> QColor:
    """A signal colour (``error``, ``warning``, ``good``, ``info``, ``muted``) for the scheme."""
    return _pick(_SIGNAL[name])


def css(name: str) -> str:
    """A signal colour as ``#rrggbb`` for rich text and style sheets."""
    return signal(name).name()


def series(key: str) -> QColor:
    """A chart series' colour for the scheme."""
    return _pick(_SERIES.get(key, _SERIES["queued"]))


def role(r: QPalette.ColorRole) -> QColor:
    """A colour of the application's palette (text, base, window…)."""
    app = QGuiApplication.instance()
    if app is None:
        return QColor()
    assert isinstance(app, QGuiApplication)
    return app.palette().color(r)


def chart_background() -> QColor:
    return role(QPalette.ColorRole.Base)


def chart_foreground() -> QColor:
    return role(QPalette.ColorRole.Text)


def error_style() -> str:
    """A style sheet for an error label."""
    return f"color: {css('error')}"


def bad_field_style() -> str:
    """A style sheet marking the input a validation error names."""
    return f"border: 1px solid {css('error')}"


def breaker_color(state: str) -> QColor:
    return signal({"closed": "good", "open": "error", "half_open": "warning"}.get(state, "muted"))


def badge_colors() -> tuple[QColor, QColor]:
    """(fill, text) of the tray badge."""
    return _pick(_SIGNAL["error"]), QColor(Qt.GlobalColor.white)


def dark_palette() -> QPalette:
    """A dark palette (screenshots and platforms without a system dark theme)."""
    p = QPalette()
    base, window, text = QColor("#1e1e1e"), QColor("#2b2b2b"), QColor("#e6e6e6")
    for r, c in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
                 (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase,
                                                   QColor("#262626")),
                 (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, window),
                 (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, base),
                 (QPalette.ColorRole.ToolTipText, text),
                 (QPalette.ColorRole.Highlight, QColor("#2f65ca")),
                 (QPalette.ColorRole.HighlightedText, QColor("#ffffff")),
                 (QPalette.ColorRole.PlaceholderText, QColor("#8a8a8a")),
                 (QPalette.ColorRole.Link, QColor("#7fb2ff"))):
        p.setColor(r, c)
    for r in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText,
              QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, r, QColor("#7a7a7a"))
    return p
