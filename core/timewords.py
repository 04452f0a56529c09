"""Time words an operator types: durations, daily windows, time zones, cron expressions, dates.

Each parser returns a typed value or raises :class:`~core.errors.SpecError` naming the option
(``--every``, ``--between``, ``--tz``, ``--cron``, ``--until``) and saying what is wrong.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from .errors import SpecError

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?\Z")
_CLOCK = re.compile(r"([01]\d|2[0-3]):([0-5]\d)\Z")



def parse_duration(text: str, *, field: str) -> timedelta:
    """``90s``, ``10m``, ``1h30m``, ``2d`` → a timedelta (units required, no fractions)."""
    if not isinstance(text, str):
        raise SpecError(field, "must be a duration such as 10m, 1h30m or 90s")
    m = _DURATION.match(text.strip().lower())
    if not text.strip() or m is None or not any(m.groups()):
        raise SpecError(field, f"{text!r} is not a duration (write e.g. 10m, 1h30m, 90s, 2d)")
    d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    if d > 366:
        raise SpecError(field, f"{text!r} is longer than a year")
    return timedelta(days=d, hours=h, minutes=mi, seconds=s)


def format_duration(d: timedelta) -> str:
    """The inverse of :func:`parse_duration` (``1h30m``; ``0s`` for nothing)."""
    total = int(d.total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size:
            parts.append(f"{total // size}{unit}")
            total %= size
    return "".join(parts) or "0s"


def parse_window(text: str, *, field: str = "--between") -> tuple[time, time]:
    """``09:00-21:00`` → (start, end), local times of day; end may be before start."""
    if not isinstance(text, str) or text.count("-") != 1:
        raise SpecError(field, f"{text!r} is not a window (write e.g. 09:00-21:00)")
    out = []
    for part in text.split("-"):
        m = _CLOCK.match(part.strip())
        if m is None:
            raise SpecError(field, f"{part.strip()!r} is not a time of day (HH:MM, 00:00-23:59)")
        out.append(time(int(m.group(1)), int(m.group(2))))
    return out[0], out[1]


def zone_of(name: str, *, field: str = "--tz") -> ZoneInfo:
    """The IANA time zone called ``name`` (``Asia/Shanghai``), or :class:`SpecError`."""
    if not isinstance(name, str) or not name.strip():
        raise SpecError(field, "give a time zone such as Asia/Shanghai or Europe/Berlin")
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise SpecError(field, f"unknown time zone {name!r} (an IANA name such as "
                               "Asia/Shanghai, America/New_York or UTC)") from None


def check_cron(expr: str, *, field: str = "--cron") -> str:
    """A valid five-field cron expression, normalised to single spaces, or :class:`SpecError`."""
    if not isinstance(expr, str) or not expr.strip():
        raise SpecError(field, "give a cron expression such as '0 8 * * *'")
    fields = expr.split()
    if len(fields) != 5:
        raise SpecError(field, f"{expr!r} has {len(fields)} fields; a cron expression has five: "
                               "minute hour day-of-month month day-of-week")
    norm = " ".join(fields)
    try:
        CronSim(norm, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        raise SpecError(field, f"{expr!r}: {str(exc).lower()} (five fields: minute hour "
                               "day-of-month month day-of-week)") from None
    return norm


def parse_until(text: str, *, field: str = "--until") -> date:
    if not isinstance(text, str):
        raise SpecError(field, "must be a date YYYY-MM-DD")
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise SpecError(field, f"{text!r} is not a date (write YYYY-MM-DD)") from None
