"""What keeps the engine's loop responsive (#20): bounded statistics, short collector pauses.

The figures are bench/engine.py's; these pin the mechanisms: a statistics snapshot costs the
same after a million finished attempts as after ten, its counts are the per-attempt counts
(per second of the clock), and the objects alive when an engine starts are out of the
collector's full passes while it runs and back when it stops.
"""

from __future__ import annotations

import asyncio
import gc
import random
from collections import Counter

from core.engine import collector
from core.engine.finished import FinishedWindow
from core.testing import FakeClock, FakeExecutor
from tests.conftest import StoreFactory
from tests.helpers import spec


def reference(events: list[tuple[float, bool, str, str]], now: float
              ) -> tuple[int, int, Counter[str], Counter[str], int, int, Counter[str]]:
    """The counts the window promises, from the list of every attempt (per whole second)."""
    hour = [e for e in events if int(e[0] // 1) >= now - 3600]
    minute = [e for e in hour if int(e[0] // 1) >= now - 60]
    return (sum(1 for e in minute if e[1]), sum(1 for e in minute if not e[1]),
            Counter(e[2] for e in minute if not e[1]), Counter(e[3] for e in minute if not e[1]),
            sum(1 for e in hour if e[1]), sum(1 for e in hour if not e[1]),
            Counter(e[2] for e in hour if not e[1]))


def test_the_window_counts_what_a_list_of_every_attempt_counts() -> None:
    rng = random.Random(20)
    win = FinishedWindow()
    events: list[tuple[float, bool, str, str]] = []
    now = 1_000_000.0
    for _ in range(5000):
        now += rng.choice((0.0, 0.01, 0.4, 1.0, 7.0, 59.5, 300.0))
        ok = rng.random() < 0.7
        ev = (now, ok, "" if ok else rng.choice(("SiteFailed", "StepTimeout")),
              rng.choice(("pdd", "temu")))
        events.append(ev)
        win.add(*ev)
        if rng.random() < 0.1:
            win.expire(now)
            done, failed, by_class, by_platform = win.last_minute(now)
            ref = reference(events, now)
            assert (done, failed, by_class, by_platform) == ref[:4]
            assert (win.done, win.failed, +win.by_class) == ref[4:]


def test_a_snapshot_does_not_walk_every_attempt_of_the_hour() -> None:
    win = FinishedWindow()
    for i in range(200_000):  # 200,000 attempts in 100 seconds
        win.add(1000.0 + i / 2000, True, "", "pdd")
    assert len(win._seconds) == 100  # one entry a second, not one an attempt
    win.expire(1100.0)
    assert win.last_minute(1100.0)[0] == 2000 * 60 and win.done == 200_000
    win.expire(1000.0 + 3600 + 50.5)  # the first 51 seconds are out of the hour
    assert win.done == 200_000 - 51 * 2000


def test_statistics_after_many_tasks(make_store: StoreFactory, clock: FakeClock) -> None:
    """The engine's own figures go through the window: 30 done, then an hour later none."""
    from core.engine import Engine

    store = make_store()
    store.submit_many([spec("collect_data", shop, params={"step_s": 0.01})
                       for shop in ("pdd-1", "pdd-2", "temu-1") for _ in range(10)])
    settings = store.settings.with_changes(gates={
        "global": {"rate_per_s": 1e6, "burst": 1e6},
        "default_domain": {"rate_per_s": 1e6, "burst": 1e6}})
    engine = Engine(store, settings, executor=FakeExecutor(), slots=3, clock=clock)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            s = engine.statistics()
            assert s.done_per_min == 30 and s.failed_per_min == 0 and s.success_rate == 1.0
            clock.advance(3601)
            s = engine.statistics()
            assert s.done_per_min == 0 and s.success_rate is None

    asyncio.run(go())


def test_an_engine_freezes_the_collector_while_it_runs(make_store: StoreFactory,
                                                       clock: FakeClock) -> None:
    from core.engine import Engine

    store = make_store()
    base = collector.engines_running()  # an engine another test left running keeps its hold
    engines = [Engine(store, store.settings, executor=FakeExecutor(), slots=1, clock=clock)
               for _ in range(2)]
    seen: list[tuple[int, int]] = []

    async def go() -> None:
        await engines[0].start()
        seen.append((collector.engines_running(), gc.get_freeze_count()))
        await engines[1].start()
        await engines[0].stop()
        seen.append((collector.engines_running(), gc.get_freeze_count()))
        await engines[1].stop()
        seen.append((collector.engines_running(), gc.get_freeze_count()))

    asyncio.run(go())
    assert seen[0][0] == base + 1 and seen[0][1] > 1000  # modules and the rest: frozen
    assert seen[1][0] == base + 1 and seen[1][1] > 1000  # the other engine still runs
    assert seen[2][0] == base
    if base == 0:
        assert seen[2][1] == 0                            # all handed back to the collector
