"""#18 item 4: how often the engine looks for due schedule firings is a setting
(``[queue] schedule_tick_s``), checked when the configuration is read (the field named), and
the engine's scheduler job sleeps exactly that long between rounds (fake clock)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from core.config import settings_from_dict
from core.engine import Engine
from core.errors import ConfigError
from core.events import Event, ScheduleFired
from core.schedules import define_schedule
from core.testing import FakeClock, FakeExecutor
from tests.conftest import StoreFactory
from tests.helpers import wait_until

START = datetime(2026, 3, 1, 8, 0, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("bad", [0, 0.1, -5, 301, "fast", float("nan"), float("inf")])
def test_a_bad_tick_names_the_field(bad: object) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict({"queue": {"schedule_tick_s": bad}})
    assert str(err.value).startswith("queue.schedule_tick_s: "), str(err.value)


def test_the_default_and_the_bounds() -> None:
    assert settings_from_dict({}).queue.schedule_tick_s == 5.0
    for ok in (0.5, 60, 300):
        assert settings_from_dict({"queue": {"schedule_tick_s": ok}}).queue.schedule_tick_s == ok


def _sleeps_until(clock: FakeClock, when: float) -> bool:
    return any(abs(at - when) < 1e-6 and not fut.done() for at, fut in clock._sleepers)


def test_the_engine_looks_for_due_firings_every_tick(make_store: StoreFactory,
                                                    clock: FakeClock) -> None:
    clock.set(START)
    store = make_store(queue={"schedule_tick_s": 42, "max_tasks_per_shop": 10})
    s = define_schedule("m", tz="UTC", shops="platform:pdd", every="1m",
                        task={"type": "collect_data", "flow": "collect_data",
                              "params": {"page": 1}})
    store.add_schedule(s.name, s.to_dict(), mark=clock.now())
    engine = Engine(store, store.settings, executor=FakeExecutor(), slots=1, clock=clock)
    seen: list[Event] = []
    engine.bus.subscribe(seen.append)

    async def go() -> None:
        async with engine:
            # A round at start (nothing due at 08:00:30), then one every 42 s of clock time.
            await wait_until(lambda: _sleeps_until(clock, START + 42))
            clock.advance(42)                       # 08:01:12: the 08:01 firing is due
            await wait_until(lambda: any(isinstance(e, ScheduleFired) for e in seen))
            await wait_until(lambda: _sleeps_until(clock, START + 84))

    asyncio.run(go())
    fired = [e for e in seen if isinstance(e, ScheduleFired)]
    assert [e.at for e in fired] == [START + 42]          # found by the round at +42 s
    assert len(fired[0].tasks) == 2                 # pdd-1, pdd-2
