"""Schedules: work that runs by itself, as pure functions of a definition and the time.

A :class:`Schedule` says *when* (a cron expression, or ``every`` an interval, optionally only
``between`` two times of day, in the schedule's time zone), *for which shops* (a selector, see
:mod:`core.selectors`) and *what* (a task template: a task spec without ``shop``). Nothing here
reads a clock, a store or a file: the engine passes ``now`` and the durable mark.

Words:

* a **firing** is a nominal time the rule produces, an instant: every function here returns
  aware datetimes in UTC (show them with ``.astimezone(schedule.zone)``; Python compares two
  datetimes of the *same* zone by wall clock, which is wrong in a fall-back hour, so nothing
  here does). It is the firing's identity: its tasks' keys are
  ``sched:<name>:<firing in UTC>:<shop>``, so a store's unique ``key`` makes submitting a
  firing twice harmless (exactly once).
* the **mark** is the last firing handled (submitted, skipped or declined while paused). The
  store keeps it durably, in the same transaction as the firing's tasks. A new schedule's
  mark is the time it was created: it fires only after it exists.

Rules in time:

* cron: five fields, evaluated by `cronsim <https://pypi.org/project/cronsim/>`_ in the zone,
  which behaves like Debian's cron across daylight-saving changes: a job whose time falls in a
  skipped hour (``30 2 * * *`` on a spring-forward night) runs right after the change (03:00);
  a job at a fixed time in a repeated hour runs once, at the first of the two; a job with a
  wildcard hour (``*/30 * * * *``) runs in both. ``L`` (last day of month), ``MON#2`` work;
  ``0 0 31 * *`` fires only in months with a 31st, ``0 0 29 2 *`` only in leap years.
* every/between: ``--every 15m --between 09:00-21:00`` fires at 09:00, 09:15, …, 21:00 local
  time each day (both ends included; the grid restarts at the start of each day's window).
  A window may cross midnight (``22:00-06:00``: the window that opens on a date closes the next
  morning). ``--every`` alone means the whole day from 00:00. A time of day that does not exist
  (spring-forward) is no firing that day; one that exists twice (fall-back) fires once, the
  first time (so an hourly grid has one two-hour gap on the fall-back night).
* ``until`` is a date in the schedule's zone, included: nothing fires after it ends.

Catch-up (what :func:`plan_due` does with the firings in ``(mark, now]``):

* ``skip`` — missed firings are dropped; only the latest one fires, and only if it is on time
  (at most ``grace``, default 5 minutes, ago). The default: stale data runs are worthless.
* ``once`` — everything missed is made good by one firing: the latest.
* ``all`` — every missed firing fires, oldest first, at most ``limit`` (default 100) of them:
  the most recent ones; the older ones are dropped and the plan's ``note`` says how many.

A paused schedule fires nothing, and its mark still moves over the firings it declines, so
resuming never replays the pause (a resume also sets the mark to the moment of resuming, see
:meth:`Schedule.resumed`, for when the engine was not running during the pause).

Jitter spreads a firing's tasks: each task's ``not_before`` is the firing plus an offset in
``[0, jitter)`` taken from a hash of (schedule, firing, shop), so every worker and every
restart computes the same offset. Placeholders in a template, substituted at firing time in
``params``, ``steps`` and ``deadline`` (``{{``/``}}`` are left for the flow as literal braces):

* ``{fire.date}`` — the firing's local date, ``2026-03-08``
* ``{fire.time}`` — its local time of day, ``08:00``
* ``{fire.iso}`` — its local date-time with offset, ``2026-03-08T08:00:00+08:00``
* ``{fire.utc}`` — the same instant in UTC, ``2026-03-08T00:00:00Z``
* ``{fire.yesterday}`` — the local date before it (yesterday's orders), ``2026-03-07``
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import re
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cronsim import CronSim

from .errors import SpecError
from .selectors import Selector, ShopLike, parse_selector
from .specs import TaskSpec, validate_spec
from .timewords import (
    check_cron,
    format_duration,
    parse_duration,
    parse_until,
    parse_window,
    zone_of,
)

CATCH_UP_LIMIT = 100
"""At most this many firings are made good at once under ``catch_up=all``."""
ON_TIME_GRACE = timedelta(minutes=5)
"""Under ``catch_up=skip`` a firing this late still counts as on time."""
SCAN_LIMIT = 10_000
"""Missed firings are counted exactly up to this many (a note says "more than" beyond)."""
MAX_JITTER = timedelta(hours=6)
MIN_EVERY = timedelta(minutes=1)
MAX_EVERY = timedelta(hours=24)
MAX_NEXT = 1000

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
_FIRE_TOKEN = re.compile(r"\{\{|\}\}|\{fire\.([^{}]*)\}")

FIRE_PLACEHOLDERS: tuple[str, ...] = ("date", "time", "iso", "utc", "yesterday")


class CatchUp(enum.StrEnum):
    """What a schedule does with firings it missed (the engine was down, the machine asleep)."""

    SKIP = "skip"
    """Drop what was missed; fire only the latest firing, and only if it is on time."""
    ONCE = "once"
    """Make good everything missed with one firing: the latest."""
    ALL = "all"
    """Fire every missed firing, oldest first, up to a limit (the most recent ones)."""


# -- the definition -----------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """One schedule, validated when built. Build from an operator's words with
    :func:`define_schedule`; ``to_dict``/``from_dict`` give the stored form.

    Attributes:
        name: unique; letters, digits, ``_ . -`` (it is part of every task key).
        tz: the IANA zone the rule and the placeholders are read in.
        shops: the selector text.
        template_json: the task template, canonical JSON (use :attr:`template`).
        cron: a five-field cron expression, or ``None`` with ``every``.
        every: the interval of an every-schedule.
        between: the daily window of an every-schedule (``None``: the whole day).
        jitter: spread of a firing's tasks, ``[0, jitter)`` per shop.
    """

    name: str
    tz: str
    shops: str
    template_json: str
    cron: str | None = None
    every: timedelta | None = None
    between: tuple[time, time] | None = None
    jitter: timedelta = timedelta(0)
    catch_up: CatchUp = CatchUp.SKIP
    until: date | None = None
    paused: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise SpecError("name", f"{self.name!r}: 1-64 letters, digits, '_', '.' or '-', "
                                    "starting with a letter or digit")
        zone_of(self.tz)
        parse_selector(self.shops)
        if (self.cron is None) == (self.every is None):
            raise SpecError("--cron", "give either --cron or --every (not both, not neither)")
        if self.cron is not None:
            if self.between is not None:
                raise SpecError("--between", "goes with --every; a cron expression says its "
                                             "own hours")
            if check_cron(self.cron) != self.cron:
                object.__setattr__(self, "cron", check_cron(self.cron))
        if self.every is not None:
            if not MIN_EVERY <= self.every <= MAX_EVERY or self.every % timedelta(minutes=1):
                raise SpecError("--every", f"{format_duration(self.every)}: whole minutes from "
                                           "1m to 24h")
            if self.jitter >= self.every:
                raise SpecError("--jitter", f"{format_duration(self.jitter)} must be shorter "
                                            f"than --every {format_duration(self.every)}")
        if self.jitter < timedelta(0) or self.jitter > MAX_JITTER:
            raise SpecError("--jitter", f"{format_duration(self.jitter)}: from 0s to "
                                        f"{format_duration(MAX_JITTER)}")
        object.__setattr__(self, "catch_up", _catch_up(self.catch_up))
        check_template(self.template, zone=self.zone)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def selector(self) -> Selector:
        return parse_selector(self.shops)

    @property
    def template(self) -> dict[str, Any]:
        """A fresh copy of the task template."""
        out: dict[str, Any] = json.loads(self.template_json)
        return out

    def with_paused(self, paused: bool) -> Schedule:
        return dataclasses.replace(self, paused=paused)

    def resumed(self, now: datetime | float) -> tuple[Schedule, datetime]:
        """The schedule running again, and the mark to store with it (``now``): the firings
        that fell in the pause are declined, whatever the catch-up policy."""
        return self.with_paused(False), _aware(now)

    def describe(self) -> str:
        """One line for a person: ``at 08:00 on Monday (Asia/Shanghai)``."""
        if self.cron is not None:
            what = CronSim(self.cron, datetime(2000, 1, 1, tzinfo=UTC)).explain()
            what = what[0].lower() + what[1:]
        else:
            assert self.every is not None
            what = f"every {format_duration(self.every)}"
            if self.between is not None:
                what += f" between {self.between[0]:%H:%M} and {self.between[1]:%H:%M}"
        if self.until is not None:
            what += f", until {self.until.isoformat()}"
        return f"{what} ({self.tz})"

    def to_dict(self) -> dict[str, Any]:
        """The stored (and ``--json``) form; :meth:`from_dict` reads it back."""
        return {
            "name": self.name, "cron": self.cron,
            "every": format_duration(self.every) if self.every is not None else None,
            "between": (f"{self.between[0]:%H:%M}-{self.between[1]:%H:%M}"
                        if self.between is not None else None),
            "tz": self.tz, "shops": self.shops, "task": self.template,
            "jitter": format_duration(self.jitter), "catch_up": str(self.catch_up),
            "until": self.until.isoformat() if self.until is not None else None,
            "paused": self.paused,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schedule:
        return define_schedule(
            d.get("name", ""), tz=d.get("tz", ""), shops=d.get("shops", ""),
            task=d.get("task"), cron=d.get("cron"), every=d.get("every"),
            between=d.get("between"), jitter=d.get("jitter"),
            catch_up=d.get("catch_up", "skip"), until=d.get("until"),
            paused=bool(d.get("paused", False)))


def _catch_up(v: Any) -> CatchUp:
    try:
        return CatchUp(v)
    except ValueError:
        raise SpecError("--catch-up", f"{v!r}: one of skip, once, all") from None


def define_schedule(name: str, *, tz: str, shops: str, task: Any, cron: str | None = None,
                    every: str | None = None, between: str | None = None,
                    jitter: str | None = None, catch_up: str = "skip",
                    until: str | None = None, paused: bool = False) -> Schedule:
    """Build a schedule from an operator's words (the ``schedule add`` options).

    Raises:
        SpecError: naming the option (``--cron``, ``--tz``, ``--task.params.x`` …) and why.
    """
    if between is not None and every is None:
        raise SpecError("--between", "goes with --every (e.g. --every 15m --between 09:00-21:00)")
    if not isinstance(task, dict):
        raise SpecError("--task", "must be one task as a JSON object (a template without shop)")
    return Schedule(
        name=name, tz=zone_of(tz).key, shops=parse_selector(shops).text,
        template_json=json.dumps(task, ensure_ascii=False, sort_keys=True,
                                 separators=(",", ":")),
        cron=check_cron(cron) if cron is not None else None,
        every=parse_duration(every, field="--every") if every is not None else None,
        between=parse_window(between) if between is not None else None,
        jitter=parse_duration(jitter, field="--jitter") if jitter else timedelta(0),
        catch_up=_catch_up(catch_up),
        until=parse_until(until) if until is not None else None, paused=paused)


# -- the rule in time ---------------------------------------------------------------------


def _aware(t: datetime | float, field: str = "time") -> datetime:
    """An instant in UTC from an aware datetime or epoch seconds."""
    if isinstance(t, datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise ValueError(f"{field}: a naive datetime is ambiguous; give it a zone")
        return t.astimezone(UTC)
    return datetime.fromtimestamp(float(t), UTC)


def _after(s: Schedule, t: datetime) -> Iterator[datetime]:
    """The rule's firings strictly after ``t`` (UTC), in increasing order, in UTC, ignoring
    ``until``."""
    raw = _cron_after(s, t) if s.cron is not None else _interval_after(s, t)
    last = t
    for local_f in raw:
        f = local_f.astimezone(UTC)
        # cronsim started inside a repeated (fall-back) hour may hand back the first
        # occurrence of that hour, which is before ``t``: the order is by instant, not wall.
        if f > last:
            last = f
            yield f


def _cron_after(s: Schedule, t: datetime) -> Iterator[datetime]:
    assert s.cron is not None
    yield from CronSim(s.cron, t.astimezone(s.zone))


def _instant(wall: datetime, zone: ZoneInfo) -> datetime | None:
    """A local wall time as an instant in UTC (its first occurrence), or None if it does not
    exist."""
    aware = wall.replace(tzinfo=zone, fold=0)
    inst = aware.astimezone(UTC)
    if inst.astimezone(zone).replace(tzinfo=None) != wall:
        return None
    return inst


def _interval_after(s: Schedule, t: datetime) -> Iterator[datetime]:
    assert s.every is not None
    zone, every = s.zone, s.every
    start, end = s.between if s.between is not None else (time(0), time(0))
    length = (datetime.combine(date.min, end) - datetime.combine(date.min, start)) \
        % timedelta(days=1)
    full_day = s.between is None or length == timedelta(0)
    local = t.astimezone(zone).replace(tzinfo=None, fold=0)
    day = local.date() - timedelta(days=1)  # yesterday's window may reach past midnight
    while True:
        opens = datetime.combine(day, start)
        k = max(0, math.floor(((local - opens) - timedelta(hours=3)) / every))
        while True:
            offset = k * every
            if offset >= timedelta(days=1) if full_day else offset > length:
                break  # a full day's grid is half-open; a window includes its end
            inst = _instant(opens + offset, zone)
            if inst is not None and inst > t:
                yield inst
            k += 1
        day += timedelta(days=1)


def _until_end(s: Schedule) -> datetime | None:
    """The first instant after ``until`` (local midnight after it), or None."""
    if s.until is None:
        return None
    nxt = datetime.combine(s.until + timedelta(days=1), time(0))
    inst = _instant(nxt, s.zone)
    while inst is None:  # a zone whose midnight is skipped: the first minute that exists
        nxt += timedelta(minutes=1)
        inst = _instant(nxt, s.zone)
    return inst


def firings_between(s: Schedule, lo: datetime | float, hi: datetime | float
                    ) -> Iterator[datetime]:
    """The firings ``f`` with ``lo < f <= hi`` (and before ``until`` ends), in order."""
    lo_, hi_ = _aware(lo, "lo"), _aware(hi, "hi")
    end = _until_end(s)
    for f in _after(s, lo_):
        if f > hi_ or (end is not None and f >= end):
            return
        yield f


def next_firings(s: Schedule, after: datetime | float, n: int) -> list[datetime]:
    """The next ``n`` firings strictly after ``after`` (fewer if ``until`` comes first).
    A paused schedule has them too; the console shows them greyed."""
    if not 0 <= n <= MAX_NEXT:
        raise ValueError(f"n must be 0..{MAX_NEXT}")
    far = datetime.max.replace(tzinfo=UTC) - timedelta(days=2)
    out: list[datetime] = []
    if n == 0:
        return out
    for f in firings_between(s, after, far):
        out.append(f)
        if len(out) >= n:
            break
    return out


def _count(s: Schedule, lo: datetime, hi: datetime, cap: int) -> int:
    n = 0
    for _ in firings_between(s, lo, hi):
        n += 1
        if n >= cap:
            break
    return n


def _last_n(s: Schedule, lo: datetime, hi: datetime, n: int) -> list[datetime]:
    """The latest ``n`` firings in ``(lo, hi]``, oldest first, looking back in a doubling
    window so a long outage of an every-minute schedule costs O(n), not O(outage)."""
    window = timedelta(hours=1)
    while True:
        start = max(lo, hi - window)
        got: deque[datetime] = deque(maxlen=n)
        got.extend(firings_between(s, start, hi))
        if len(got) >= n or start == lo:
            return list(got)
        window *= 2


@dataclass(frozen=True)
class DuePlan:
    """What to do now. Submit the tasks of ``firings`` (oldest first) and store ``mark``, in
    one transaction.

    Attributes:
        firings: the firings to submit now (nominal times, UTC).
        mark: the new mark: the latest firing handled, submitted or not.
        missed: firings in ``(old mark, now]`` not submitted (dropped by the policy or the
            pause); exact up to ``SCAN_LIMIT``.
        note: a line for the log and console when something was dropped, else "".
        ended: ``until`` has passed: the schedule will never fire again.
    """

    firings: tuple[datetime, ...]
    mark: datetime
    missed: int
    note: str
    ended: bool


def plan_due(s: Schedule, last_fired: datetime | float, now: datetime | float, *,
             grace: timedelta = ON_TIME_GRACE, limit: int = CATCH_UP_LIMIT) -> DuePlan:
    """The firings due at ``now`` given the mark ``last_fired``, by the catch-up policy (see
    the module docstring). Calling it again with the returned mark never returns a firing
    twice."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    lo, hi = _aware(last_fired, "last_fired"), _aware(now, "now")
    end = _until_end(s)
    ended = end is not None and hi >= end
    if hi <= lo or next(firings_between(s, lo, hi), None) is None:
        return DuePlan((), lo, 0, "", ended)  # the usual tick: nothing due
    latest = _last_n(s, lo, hi, 1)
    if not latest:
        return DuePlan((), lo, 0, "", ended)
    mark = latest[-1]
    total = _count(s, lo, hi, SCAN_LIMIT)
    if s.paused:
        fire: list[datetime] = []
    elif s.catch_up == CatchUp.ALL:
        fire = latest if limit <= 1 else _last_n(s, lo, hi, limit)
    elif s.catch_up == CatchUp.ONCE:
        fire = latest
    else:
        fire = latest if hi - mark <= grace else []
    missed = total - len(fire)
    note = ""
    if missed:
        more = "more than " if total >= SCAN_LIMIT else ""
        why = ("paused" if s.paused else
               f"catch-up all fires at most {limit}" if s.catch_up == CatchUp.ALL else
               f"catch-up {s.catch_up}")
        note = (f"schedule {s.name}: {more}{missed} missed firing(s) up to "
                f"{mark.isoformat()} not submitted ({why})")
    return DuePlan(tuple(fire), mark, missed, note, ended)


def due_firings(s: Schedule, last_fired: datetime | float, now: datetime | float, *,
                grace: timedelta = ON_TIME_GRACE, limit: int = CATCH_UP_LIMIT
                ) -> list[datetime]:
    """The firings to submit at ``now`` (see :func:`plan_due`, which also gives the mark)."""
    return list(plan_due(s, last_fired, now, grace=grace, limit=limit).firings)


# -- a firing's tasks ---------------------------------------------------------------------


def _utc_iso(f: datetime) -> str:
    return f.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fire_values(s: Schedule, firing: datetime) -> dict[str, str]:
    """The values of the ``{fire.*}`` placeholders for ``firing``."""
    local = _aware(firing, "firing").astimezone(s.zone)
    return {"date": local.date().isoformat(), "time": f"{local:%H:%M}",
            "iso": local.isoformat(timespec="seconds"), "utc": _utc_iso(local),
            "yesterday": (local.date() - timedelta(days=1)).isoformat()}


def _substitute(obj: Any, values: Mapping[str, str], path: str) -> Any:
    if isinstance(obj, str):
        def repl(m: re.Match[str]) -> str:
            if m.group(1) is None:
                return m.group(0)  # {{ or }}: a literal brace for the flow, left as it is
            if m.group(1) not in values:
                raise SpecError(path, f"unknown placeholder {m.group(0)} (known: "
                                      + ", ".join("{fire." + k + "}" for k in values) + ")")
            return values[m.group(1)]
        return _FIRE_TOKEN.sub(repl, obj)
    if isinstance(obj, list):
        return [_substitute(v, values, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        return {k: _substitute(v, values, f"{path}.{k}") for k, v in obj.items()}
    return obj


_TEMPLATED = ("params", "steps", "deadline")


def _fill(template: dict[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    out = dict(template)
    for f in _TEMPLATED:
        if f in out:
            out[f] = _substitute(out[f], values, f"--task.{f}")
    return out


def check_template(template: Any, *, zone: ZoneInfo) -> None:
    """A template is a task spec without ``shop`` and ``key``; its placeholders are known and
    it validates once filled (checked with a sample firing and shop).

    Raises:
        SpecError: naming the field under ``--task``.
    """
    if not isinstance(template, dict):
        raise SpecError("--task", "must be one task as a JSON object (a template without shop)")
    if "shop" in template:
        raise SpecError("--task.shop", "a template has no shop: --shops picks the shops")
    if "key" in template:
        raise SpecError("--task.key", "a template has no key: each task's key is "
                                      "sched:<schedule>:<firing>:<shop>")
    sample = datetime(2000, 1, 1, tzinfo=zone)
    values = {k: "x" for k in FIRE_PLACEHOLDERS}
    values.update({"date": "2000-01-01", "yesterday": "1999-12-31",
                   "iso": sample.isoformat(), "utc": _utc_iso(sample)})
    filled = _fill(template, values)
    validate_spec({**filled, "shop": "shop", "key": "k"}, where="--task")


def jitter_offset(s: Schedule, firing: datetime, shop: str) -> timedelta:
    """The deterministic offset in ``[0, jitter)`` of ``shop``'s task of ``firing``, whole
    seconds: the same on every worker and after every restart."""
    span = int(s.jitter.total_seconds())
    if span <= 0:
        return timedelta(0)
    digest = hashlib.sha256(
        f"{s.name}\x00{_utc_iso(firing)}\x00{shop}".encode()).digest()
    return timedelta(seconds=int.from_bytes(digest[:8], "big") * span >> 64)


def task_key(name: str, firing: datetime, shop: str) -> str:
    """``sched:<name>:<firing in UTC>:<shop>``; a shop name that would push the key past the
    spec's 200 characters is replaced by ``~`` and a hash of it (still unique per shop)."""
    key = f"sched:{name}:{_utc_iso(_aware(firing, 'firing'))}:{shop}"
    if len(key) > 200:
        key = key[: -len(shop)] + "~" + hashlib.sha256(shop.encode()).hexdigest()[:32]
    return key


@dataclass(frozen=True)
class PlannedTask:
    """One task of a firing: the validated spec, and when it may start (firing + jitter)."""

    shop: str
    key: str
    firing: datetime
    not_before: datetime
    spec: TaskSpec

    def to_dict(self) -> dict[str, Any]:
        """The task as submitted: the spec's fields plus ``not_before`` (ISO, UTC)."""
        d = self.spec.model_dump(mode="json", exclude_none=True)
        d["not_before"] = self.not_before.astimezone(UTC).isoformat(timespec="seconds")
        return d


def expand(s: Schedule, firing: datetime, shops: Iterable[ShopLike]) -> list[PlannedTask]:
    """The tasks of one firing: the template filled for ``firing``, one per selected shop
    (sorted by name), each with its key and jittered ``not_before``. ``firing`` may also be a
    moment that is not on the rule (``schedule run-now``).

    Raises:
        SpecError: the selector picks no shop (``--shops``), or the template no longer
            validates (``--task…``). The engine pauses the schedule and says so.
    """
    f = _aware(firing, "firing")
    picked = s.selector.select(shops)
    filled = _fill(s.template, fire_values(s, f))
    out: list[PlannedTask] = []
    for shop in picked:
        key = task_key(s.name, f, shop.name)
        spec = validate_spec({**filled, "shop": shop.name, "key": key}, where="--task")
        out.append(PlannedTask(shop=shop.name, key=key, firing=f,
                               not_before=(f + jitter_offset(s, f, shop.name)).astimezone(UTC),
                               spec=spec))
    return out
