"""The one way the command line prints times: a moment to the second, a duration short."""

from __future__ import annotations

from datetime import UTC, datetime


def when(ts: float | None) -> str:
    """A moment in local time, to the second (``-`` for none)."""
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def ago(seconds: float) -> str:
    """A duration, short: ``45s``, ``12m``, ``3h05m``."""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
