"""Schedules (core.schedules): months of firings on a fake clock, catch-up, jitter, pause,
until, placeholders, keys, and every bad input named by its option."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import SpecError
from core.schedules import (
    CatchUp,
    Schedule,
    define_schedule,
    due_firings,
    expand,
    firings_between,
    jitter_offset,
    next_firings,
    plan_due,
    task_key,
)
from core.selectors import ShopRef
from core.testing import FakeClock

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")
SHANGHAI = ZoneInfo("Asia/Shanghai")

TEMPLATE: dict[str, Any] = {"type": "collect_data", "flow": "collect_data",
                            "params": {"day": "{fire.yesterday}", "at": "{fire.iso}"}}
SHOPS = [ShopRef("pdd-1", "pdd", frozenset({"north"})), ShopRef("pdd-2", "pdd"),
         ShopRef("temu-1", "temu", frozenset({"north"}))]


def sched(name: str = "s", *, tz: str = "Asia/Shanghai", shops: str = "platform:pdd",
          task: dict[str, Any] | None = None, **kw: Any) -> Schedule:
    return define_schedule(name, tz=tz, shops=shops, task=task or TEMPLATE, **kw)


def local(zone: ZoneInfo, *args: int, fold: int = 0) -> datetime:
    return datetime(*args, tzinfo=zone, fold=fold)  # type: ignore[misc]


def walk(s: Schedule, start: datetime, end: datetime, tick: timedelta, *,
         lag: timedelta = timedelta(minutes=2)) -> list[datetime]:
    """An engine on a fake clock: it wakes every ``tick`` or ``lag`` after the next firing,
    whichever comes first, asks what is due and stores the mark."""
    clock = FakeClock(start.timestamp())
    mark: datetime = start
    fired: list[datetime] = []
    while clock.now() < end.timestamp():
        upcoming = next_firings(s, mark, 1)
        wake = clock.now() + tick.total_seconds()
        if upcoming:
            wake = min(wake, (upcoming[0] + lag).timestamp())
        clock.set(min(wake, end.timestamp()))
        plan = plan_due(s, mark, clock.now())
        fired.extend(plan.firings)
        mark = plan.mark
    return fired


def utc(fs: list[datetime]) -> list[datetime]:
    return [f.astimezone(UTC) for f in fs]


def loc(fs: list[datetime] | tuple[datetime, ...], zone: ZoneInfo = SHANGHAI) -> list[datetime]:
    return [f.astimezone(zone) for f in fs]


# -- a year in zones with daylight saving -------------------------------------------------


def test_a_daily_2_30_job_in_new_york_fires_once_every_day_of_a_year() -> None:
    s = sched(tz="America/New_York", cron="30 2 * * *")
    fired = walk(s, local(NY, 2026, 1, 1), local(NY, 2027, 1, 1), timedelta(hours=6))
    days = [f.astimezone(NY).date() for f in fired]
    assert len(fired) == 365 and len(set(days)) == 365           # one a day, none twice
    assert fired == sorted(fired)
    by_day = {f.astimezone(NY).date(): f.astimezone(NY) for f in fired}
    # spring forward (2026-03-08, 02:00 → 03:00): 02:30 does not exist; it runs at 03:00 EDT
    assert by_day[date(2026, 3, 8)] == local(NY, 2026, 3, 8, 3, 0)
    assert by_day[date(2026, 3, 8)].utcoffset() == timedelta(hours=-4)
    # fall back (2026-11-01, 02:00 → 01:00): 02:30 exists once (EST)
    assert by_day[date(2026, 11, 1)].astimezone(UTC) == datetime(2026, 11, 1, 7, 30, tzinfo=UTC)
    others = [f for d, f in by_day.items() if d != date(2026, 3, 8)]
    assert all((f.hour, f.minute) == (2, 30) for f in others)


def test_a_job_in_the_repeated_hour_runs_once_a_wildcard_hour_job_runs_in_both() -> None:
    day = (local(NY, 2026, 10, 31, 12), local(NY, 2026, 11, 1, 12))
    fixed = walk(sched(tz="America/New_York", cron="30 1 * * *"), *day, timedelta(hours=1))
    assert utc(fixed) == [datetime(2026, 11, 1, 5, 30, tzinfo=UTC)]   # 01:30 EDT, the first
    half_hourly = walk(sched(tz="America/New_York", cron="*/30 * * * *"), *day,
                       timedelta(minutes=3))
    ones = [f for f in half_hourly if f.astimezone(NY).hour == 1]
    assert utc(ones) == [datetime(2026, 11, 1, h, m, tzinfo=UTC)
                         for h, m in ((5, 0), (5, 30), (6, 0), (6, 30))]   # EDT, then EST
    assert len(half_hourly) == 50 and len(set(utc(half_hourly))) == 50


def test_berlin_spring_forward_and_fall_back_over_months() -> None:
    s = sched(tz="Europe/Berlin", cron="30 2 * * *")
    fired = walk(s, local(BERLIN, 2026, 3, 1), local(BERLIN, 2026, 11, 1), timedelta(hours=6))
    by_day = Counter(f.astimezone(BERLIN).date() for f in fired)
    assert len(by_day) == 245 and set(by_day.values()) == {1}
    spring = next(f for f in fired if f.astimezone(BERLIN).date() == date(2026, 3, 29))
    assert spring.astimezone(BERLIN).strftime("%H:%M %z") == "03:00 +0200"
    # 2026-10-25 03:00 → 02:00: 02:30 happens twice; the job runs at the first (CEST) only
    autumn = next(f for f in fired if f.astimezone(BERLIN).date() == date(2026, 10, 25))
    assert autumn.astimezone(UTC) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)


# -- month ends and leap days -------------------------------------------------------------


def test_the_31st_fires_only_in_months_that_have_one() -> None:
    s = sched(cron="0 9 31 * *")
    fired = walk(s, local(SHANGHAI, 2026, 1, 1), local(SHANGHAI, 2027, 1, 1), timedelta(hours=6))
    assert [f.astimezone(SHANGHAI).month for f in fired] == [1, 3, 5, 7, 8, 10, 12]
    last = sched(cron="0 9 L * *")
    fired = walk(last, local(SHANGHAI, 2027, 12, 1), local(SHANGHAI, 2028, 12, 31),
                 timedelta(hours=6))
    assert [f.astimezone(SHANGHAI).day for f in fired] == \
        [31, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30]   # Dec 2027 … Nov 2028: Feb 29


def test_leap_day_fires_only_in_leap_years() -> None:
    s = sched(cron="0 0 29 2 *")
    assert [f.date() for f in loc(next_firings(s, local(SHANGHAI, 2026, 1, 1), 3))] == \
        [date(2028, 2, 29), date(2032, 2, 29), date(2036, 2, 29)]
    fired = walk(s, local(SHANGHAI, 2026, 1, 1), local(SHANGHAI, 2029, 1, 1), timedelta(hours=6))
    assert utc(fired) == [local(SHANGHAI, 2028, 2, 29).astimezone(UTC)]
    daily = walk(sched(cron="0 12 * * *"), local(SHANGHAI, 2028, 2, 27),
                 local(SHANGHAI, 2028, 3, 2), timedelta(hours=1))
    assert [f.day for f in loc(daily)] == [27, 28, 29, 1]


# -- every / between ----------------------------------------------------------------------


def test_every_between_across_midnight_and_daylight_saving() -> None:
    s = sched(tz="Europe/Berlin", every="30m", between="22:00-02:00")
    normal = loc(list(firings_between(s, local(BERLIN, 2026, 3, 20, 12),
                                      local(BERLIN, 2026, 3, 21, 12))), BERLIN)
    assert [f.strftime("%H:%M") for f in normal] == \
        ["22:00", "22:30", "23:00", "23:30", "00:00", "00:30", "01:00", "01:30", "02:00"]
    assert normal[0].date() == date(2026, 3, 20) and normal[-1].date() == date(2026, 3, 21)
    # 2026-03-29 02:00 does not exist in Berlin: that night's window ends at 01:30
    spring = loc(list(firings_between(s, local(BERLIN, 2026, 3, 28, 12),
                                      local(BERLIN, 2026, 3, 29, 12))), BERLIN)
    assert [f.strftime("%H:%M") for f in spring][-2:] == ["01:00", "01:30"] and len(spring) == 8
    # 2026-10-25 02:00 happens twice: it fires once, the first time
    autumn = list(firings_between(s, local(BERLIN, 2026, 10, 24, 12),
                                  local(BERLIN, 2026, 10, 25, 12)))
    assert len(autumn) == 9
    assert autumn[-1].astimezone(UTC) == datetime(2026, 10, 25, 0, 0, tzinfo=UTC)


def test_every_15m_between_9_and_21_for_a_month_on_the_fake_clock() -> None:
    s = sched(every="15m", between="09:00-21:00")
    fired = walk(s, local(SHANGHAI, 2026, 1, 1), local(SHANGHAI, 2026, 2, 1), timedelta(minutes=5))
    assert len(fired) == 31 * 49                     # 09:00 … 21:00 inclusive, each day
    assert {f.astimezone(SHANGHAI).strftime("%H:%M") for f in fired} == {
        f"{h:02d}:{m:02d}" for h in range(9, 21) for m in (0, 15, 30, 45)} | {"21:00"}
    assert len(set(fired)) == len(fired)


def test_every_without_a_window_restarts_at_midnight_and_skips_the_missing_hour() -> None:
    s = sched(tz="America/New_York", every="7h")
    assert [f.strftime("%d %H:%M") for f in loc(next_firings(s, local(NY, 2026, 1, 1), 5), NY)] == \
        ["01 07:00", "01 14:00", "01 21:00", "02 00:00", "02 07:00"]
    hourly = sched(tz="America/New_York", every="1h")
    spring = loc(list(firings_between(hourly, local(NY, 2026, 3, 8), local(NY, 2026, 3, 8, 5))), NY)
    assert [f.strftime("%H") for f in spring] == ["01", "03", "04", "05"]   # no 02:00
    assert spring[1].astimezone(UTC) - spring[0].astimezone(UTC) == timedelta(hours=1)


# -- catch-up after downtime ----------------------------------------------------------------


@pytest.mark.parametrize(("policy", "down_until", "expected_days", "missed"), [
    ("skip", (5, 8, 2), [5], 3),          # back 2 minutes after the 5th's firing: on time
    ("skip", (5, 9, 0), [], 4),           # back an hour late: nothing, all four missed
    ("once", (5, 9, 0), [5], 3),          # one firing stands for all four
    ("all", (5, 9, 0), [2, 3, 4, 5], 0),  # every one, oldest first
])
def test_catch_up_policies_after_downtime(policy: str, down_until: tuple[int, int, int],
                                          expected_days: list[int], missed: int) -> None:
    s = sched(cron="0 8 * * *", catch_up=policy)
    mark = local(SHANGHAI, 2026, 3, 1, 8)
    plan = plan_due(s, mark, local(SHANGHAI, 2026, 3, *down_until))
    assert [f.day for f in loc(plan.firings)] == expected_days
    assert plan.mark == local(SHANGHAI, 2026, 3, 5, 8)   # everything up to now is handled
    assert plan.missed == missed
    assert (plan.note != "") is (missed > 0)
    # the engine stores the mark: the next tick has nothing more
    assert due_firings(s, plan.mark, local(SHANGHAI, 2026, 3, 5, 9, 30)) == []


def test_catch_up_all_is_capped_and_says_what_it_dropped() -> None:
    s = sched(cron="0 8 * * *", catch_up="all")
    plan = plan_due(s, local(SHANGHAI, 2026, 3, 1, 8), local(SHANGHAI, 2026, 3, 5, 9), limit=2)
    assert [f.day for f in loc(plan.firings)] == [4, 5] and plan.missed == 2
    assert "2 missed firing(s)" in plan.note and "at most 2" in plan.note
    # a month down with an every-minute schedule: the 100 most recent, in O(limit)
    minutely = sched(cron="* * * * *", catch_up="all")
    plan = plan_due(minutely, local(SHANGHAI, 2026, 3, 1), local(SHANGHAI, 2026, 3, 31))
    assert len(plan.firings) == 100 and plan.firings[-1] == local(SHANGHAI, 2026, 3, 31)
    assert plan.firings[0] == local(SHANGHAI, 2026, 3, 30, 22, 21)
    assert "more than 9900 missed" in plan.note


def test_skip_fires_the_current_firing_when_the_engine_ticks_within_grace() -> None:
    s = sched(cron="0 8 * * *")
    mark = local(SHANGHAI, 2026, 3, 1, 8)
    assert due_firings(s, mark, local(SHANGHAI, 2026, 3, 2, 8, 5)) == \
        [local(SHANGHAI, 2026, 3, 2, 8)]
    assert due_firings(s, mark, local(SHANGHAI, 2026, 3, 2, 8, 6)) == []
    assert due_firings(s, mark, local(SHANGHAI, 2026, 3, 2, 8, 6),
                       grace=timedelta(minutes=10)) == [local(SHANGHAI, 2026, 3, 2, 8)]


_ticks = st.lists(st.integers(min_value=1, max_value=36 * 60), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ticks=_ticks, policy=st.sampled_from(list(CatchUp)),
       rule=st.sampled_from([{"cron": "*/20 * * * *"}, {"cron": "30 1 * * *"},
                             {"cron": "0 2 * * 0"}, {"every": "45m", "between": "22:00-03:00"}]),
       start=st.datetimes(min_value=datetime(2026, 3, 6), max_value=datetime(2026, 3, 8),
                          timezones=st.just(NY)) | st.datetimes(
           min_value=datetime(2026, 10, 30), max_value=datetime(2026, 11, 1, 3),
           timezones=st.just(NY)))
def test_consecutive_ticks_never_fire_a_firing_twice(ticks: list[int], policy: CatchUp,
                                                     rule: dict[str, str],
                                                     start: datetime) -> None:
    """Whatever the gaps between ticks (minutes to a day and a half), across DST nights, with
    every policy: no firing twice, in order, all on the rule, and with ticks no longer than
    the grace nothing is missed."""
    s = sched(tz="America/New_York", catch_up=policy.value, **rule)
    clock = FakeClock(start.timestamp())
    mark: datetime = start
    fired: list[datetime] = []
    for minutes in ticks:
        clock.advance(minutes * 60)
        plan = plan_due(s, mark, clock.now())
        assert plan.mark >= mark
        fired.extend(plan.firings)
        mark = plan.mark
    assert utc(fired) == sorted(set(utc(fired)))
    rule_firings = utc(list(firings_between(s, start, clock.now())))
    assert set(utc(fired)) <= set(rule_firings)
    if (policy is CatchUp.ALL and len(rule_firings) <= 100) or all(m <= 5 for m in ticks):
        assert utc(fired) == rule_firings


@settings(max_examples=200, deadline=None)
@given(after=st.datetimes(min_value=datetime(2026, 10, 31, 20), max_value=datetime(2026, 11, 1, 4),
                          timezones=st.just(NY)),
       expr=st.sampled_from(["30 1 * * *", "*/30 * * * *", "0 * * * *", "*/7 1-2 * * *"]))
def test_next_after_any_instant_agrees_with_the_sequence(after: datetime, expr: str) -> None:
    """Starting inside the repeated hour (fold=1) gives the same firings as walking through."""
    s = sched(tz="America/New_York", cron=expr)
    seq = next_firings(s, local(NY, 2026, 10, 31, 12), 200)
    expected = [f for f in seq if f > after][:3]
    assert utc(next_firings(s, after, 3)) == utc(expected)


# -- pause, resume, until -----------------------------------------------------------------


def test_pause_declines_firings_and_resume_never_replays_them() -> None:
    s = sched(cron="0 8 * * *", catch_up="all").with_paused(True)
    mark = local(SHANGHAI, 2026, 3, 1, 8)
    plan = plan_due(s, mark, local(SHANGHAI, 2026, 3, 3, 8, 1))
    assert plan.firings == () and plan.missed == 2 and "paused" in plan.note
    assert plan.mark == local(SHANGHAI, 2026, 3, 3, 8)     # declined, not pending
    # paused while the engine was down (the stored mark is old): resuming sets the mark
    running, new_mark = s.resumed(local(SHANGHAI, 2026, 3, 6, 12))
    assert not running.paused and new_mark == local(SHANGHAI, 2026, 3, 6, 12)
    assert due_firings(running, new_mark, local(SHANGHAI, 2026, 3, 7, 8, 1)) == \
        [local(SHANGHAI, 2026, 3, 7, 8)]
    # without the resume mark, catch-up all would replay the pause
    assert len(due_firings(running, mark, local(SHANGHAI, 2026, 3, 7, 8, 1))) == 6


def test_until_is_the_last_local_day_included() -> None:
    s = sched(cron="0 8 * * *", until="2026-03-10", catch_up="all")
    nxt = next_firings(s, local(SHANGHAI, 2026, 3, 8), 10)
    assert [f.day for f in loc(nxt)] == [8, 9, 10]
    plan = plan_due(s, local(SHANGHAI, 2026, 3, 9, 9), local(SHANGHAI, 2026, 3, 20))
    assert [f.day for f in loc(plan.firings)] == [10] and plan.ended
    assert not plan_due(s, local(SHANGHAI, 2026, 3, 9, 9), local(SHANGHAI, 2026, 3, 10, 23)).ended
    late = sched(cron="59 23 * * *", until="2026-03-10")
    assert next_firings(late, local(SHANGHAI, 2026, 3, 10), 5) == \
        [local(SHANGHAI, 2026, 3, 10, 23, 59)]


# -- a firing's tasks -----------------------------------------------------------------------


def test_expand_one_task_per_selected_shop_with_key_placeholders_and_jitter() -> None:
    task = {"type": "collect_data", "deadline": "{fire.date}T12:00:00+08:00",
            "steps": [{"action": "navigate", "url": "{shop.base_url}/orders?d={fire.yesterday}"},
                      {"action": "type_text", "locator": "#q",
                       "text": "{{fire.date}} {fire.time}"}],
            "params": {"when": ["{fire.iso}", {"utc": "{fire.utc}"}], "n": 3}}
    s = sched("morning", cron="0 8 * * *", task=task, jitter="10m")
    firing = local(SHANGHAI, 2026, 3, 1, 8)
    tasks = expand(s, firing, list(reversed(SHOPS)))
    assert [t.shop for t in tasks] == ["pdd-1", "pdd-2"]
    assert [t.key for t in tasks] == ["sched:morning:2026-03-01T00:00:00Z:pdd-1",
                                      "sched:morning:2026-03-01T00:00:00Z:pdd-2"]
    spec = tasks[0].spec
    assert spec.shop == "pdd-1" and spec.key == tasks[0].key
    assert spec.deadline == datetime(2026, 3, 1, 12, tzinfo=SHANGHAI)
    assert spec.steps is not None
    assert spec.steps[0]["url"] == "{shop.base_url}/orders?d=2026-02-28"
    assert spec.steps[1]["text"] == "{{fire.date}} 08:00"    # {{ }} stay for the flow
    assert spec.params == {"when": ["2026-03-01T08:00:00+08:00", {"utc": "2026-03-01T00:00:00Z"}],
                           "n": 3}
    for t in tasks:
        assert firing <= t.not_before < firing + timedelta(minutes=10)
        d = t.to_dict()
        assert d["shop"] == t.shop and d["key"] == t.key
        assert datetime.fromisoformat(d["not_before"]) == t.not_before
    # the template of the schedule is untouched by a firing
    assert s.template == task


def test_keys_and_offsets_are_the_same_after_a_restart() -> None:
    s = sched("a", cron="*/15 * * * *", jitter="10m", shops="*")
    again = Schedule.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s
    f = local(SHANGHAI, 2026, 5, 1, 9, 15)
    assert [(t.key, t.not_before) for t in expand(s, f, SHOPS)] == \
        [(t.key, t.not_before) for t in expand(again, f.astimezone(UTC), SHOPS)]


@given(name=st.from_regex(r"[a-z][a-z0-9_.\-]{0,20}", fullmatch=True),
       shop=st.text(min_size=1, max_size=50),
       minutes=st.integers(min_value=0, max_value=10**7),
       jitter_s=st.integers(min_value=1, max_value=6 * 3600))
def test_jitter_is_within_bounds_whole_seconds_and_deterministic(
        name: str, shop: str, minutes: int, jitter_s: int) -> None:
    s = sched(name, cron="* * * * *", jitter=f"{jitter_s}s")
    firing = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    off = jitter_offset(s, firing, shop)
    assert timedelta(0) <= off < timedelta(seconds=jitter_s)
    assert off.microseconds == 0
    assert jitter_offset(s, firing.astimezone(NY), shop) == off


def test_jitter_spreads_a_firing_over_its_window() -> None:
    s = sched(cron="0 8 * * *", jitter="10m")
    f = local(SHANGHAI, 2026, 3, 1, 8)
    offsets = [jitter_offset(s, f, f"shop-{i}").total_seconds() for i in range(200)]
    assert len(set(offsets)) > 150
    assert min(offsets) < 60 and max(offsets) > 540          # the whole window is used
    assert sum(1 for o in offsets if o < 300) in range(70, 131)
    # the same shop moves between firings (it is not always first)
    assert len({jitter_offset(s, f + timedelta(days=d), "shop-1") for d in range(10)}) > 5
    assert jitter_offset(sched(cron="0 8 * * *"), f, "shop-1") == timedelta(0)


def test_a_long_shop_name_keeps_the_key_within_200_characters() -> None:
    f = datetime(2026, 1, 1, tzinfo=UTC)
    long_a, long_b = "x" * 200, "x" * 199 + "y"
    ka, kb = task_key("n" * 64, f, long_a), task_key("n" * 64, f, long_b)
    assert len(ka) <= 200 and len(kb) <= 200 and ka != kb
    assert task_key("n", f, "pdd-1") == "sched:n:2026-01-01T00:00:00Z:pdd-1"


def test_run_now_expands_a_moment_that_is_not_on_the_rule() -> None:
    s = sched(cron="0 8 * * *")
    now = datetime(2026, 3, 1, 3, 17, 42, tzinfo=UTC)
    [t, _] = expand(s, now, SHOPS)
    assert t.key == "sched:s:2026-03-01T03:17:42Z:pdd-1" and t.not_before == now


# -- the words of an operator, and every bad one ----------------------------------------------


def test_definition_round_trips_and_describes_itself() -> None:
    s = sched("m", cron="0  8 * * 1", jitter="1h30m", catch_up="once", until="2026-12-31")
    assert s.cron == "0 8 * * 1"
    assert s.describe() == "at 08:00 on Monday, until 2026-12-31 (Asia/Shanghai)"
    d = s.to_dict()
    assert d["jitter"] == "1h30m" and d["catch_up"] == "once" and d["task"] == TEMPLATE
    assert Schedule.from_dict(d) == s
    e = sched("e", every="15m", between="09:00-21:00")
    assert e.describe() == "every 15m between 09:00 and 21:00 (Asia/Shanghai)"
    assert Schedule.from_dict(e.to_dict()) == e


@pytest.mark.parametrize(("kw", "field", "reason"), [
    ({"cron": "61 * * * *"}, "--cron", "bad minute"),
    ({"cron": "0 8 * *"}, "--cron", "has 4 fields"),
    ({"cron": "0 0 8 * * *"}, "--cron", "has 6 fields"),
    ({"cron": "0 0 30 2 *"}, "--cron", "bad day-of-month"),
    ({"cron": "@daily"}, "--cron", "has 1 fields"),
    ({"cron": ""}, "--cron", "give a cron expression"),
    ({"cron": "0 8 * * *", "tz": "Mars/Olympus"}, "--tz", "unknown time zone 'Mars/Olympus'"),
    ({"cron": "0 8 * * *", "tz": "../../etc/passwd"}, "--tz", "unknown time zone"),
    ({"cron": "0 8 * * *", "tz": ""}, "--tz", "give a time zone"),
    ({"cron": "0 8 * * *", "shops": ""}, "--shops", "empty selector"),
    ({"cron": "0 8 * * *", "shops": "color:red"}, "--shops", "unknown kind"),
    ({"cron": "0 8 * * *", "task": {**TEMPLATE, "shop": "pdd-1"}}, "--task.shop", "no shop"),
    ({"cron": "0 8 * * *", "task": {**TEMPLATE, "key": "k"}}, "--task.key", "no key"),
    ({"cron": "0 8 * * *", "task": {"type": "x"}}, "--task", "give a flow name"),
    ({"cron": "0 8 * * *", "task": {**TEMPLATE, "colour": 1}}, "--task.colour", "unknown field"),
    ({"cron": "0 8 * * *", "task": [TEMPLATE]}, "--task", "JSON object"),
    ({"cron": "0 8 * * *", "task": {**TEMPLATE, "params": {"d": "{fire.month}"}}},
     "--task.params.d", "unknown placeholder {fire.month}"),
    ({"cron": "0 8 * * *", "task": {**TEMPLATE, "deadline": "{fire.date}"}},
     "--task.deadline", "has no time zone"),
    ({}, "--cron", "either --cron or --every"),
    ({"cron": "0 8 * * *", "every": "15m"}, "--cron", "either --cron or --every"),
    ({"cron": "0 8 * * *", "between": "09:00-21:00"}, "--between", "goes with --every"),
    ({"every": "15m", "between": "9-21"}, "--between", "not a time of day"),
    ({"every": "15m", "between": "09:00-24:00"}, "--between", "not a time of day"),
    ({"every": "15"}, "--every", "not a duration"),
    ({"every": "0m"}, "--every", "whole minutes from 1m to 24h"),
    ({"every": "90s"}, "--every", "whole minutes"),
    ({"every": "25h"}, "--every", "whole minutes from 1m to 24h"),
    ({"every": "15m", "jitter": "15m"}, "--jitter", "shorter than --every 15m"),
    ({"cron": "0 8 * * *", "jitter": "7h"}, "--jitter", "from 0s to 6h"),
    ({"cron": "0 8 * * *", "jitter": "soon"}, "--jitter", "not a duration"),
    ({"cron": "0 8 * * *", "catch_up": "sometimes"}, "--catch-up", "one of skip, once, all"),
    ({"cron": "0 8 * * *", "until": "next week"}, "--until", "not a date"),
    ({"cron": "0 8 * * *", "name": "a:b"}, "name", "letters, digits"),
    ({"cron": "0 8 * * *", "name": ""}, "name", "letters, digits"),
])
def test_bad_definitions_name_the_option(kw: dict[str, Any], field: str, reason: str) -> None:
    args: dict[str, Any] = {"tz": "Asia/Shanghai", "shops": "*", "task": TEMPLATE}
    name = kw.pop("name", "ok")
    args.update(kw)
    with pytest.raises(SpecError) as err:
        define_schedule(name, **args)
    assert err.value.field == field
    assert reason in err.value.reason


def test_a_selector_that_matches_nothing_at_firing_time_fails_loudly() -> None:
    s = sched(cron="0 8 * * *", shops="tag:west")
    with pytest.raises(SpecError) as err:
        expand(s, local(SHANGHAI, 2026, 3, 1, 8), SHOPS)
    assert err.value.field == "--shops" and "matches none of the 3 shops" in err.value.reason


def test_times_must_carry_a_zone() -> None:
    s = sched(cron="0 8 * * *")
    with pytest.raises(ValueError, match="naive"):
        due_firings(s, datetime(2026, 1, 1), datetime(2026, 1, 2))
