"""Pause all: the engine starts nothing while paused (running tasks finish), the pause holds
however long time passes, and resume all starts the queue again."""

from __future__ import annotations

import asyncio

from core import all_paused, pause_all
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.helpers import make_engine
from tests.unit.test_engine import task


def test_pause_all_stops_claiming_until_resumed(make_store: StoreFactory,
                                                clock: FakeClock) -> None:
    store = make_store()
    ids = store.submit_many([task(s, step_s=0.01, steps=2) for s in ("pdd-1", "pdd-2")])
    engine, ex, _ = make_engine(store, clock)

    async def go() -> None:
        async with engine:
            ch = await pause_all(engine, True)
            assert ch.breakers
            assert all_paused(engine.statistics())
            await engine.run_until_idle()
            # An hour later (the fake clock): a pause by hand never lifts by itself.
            clock.advance(3600)
            await engine.run_until_idle()
            assert ex.started == []
            assert store.counts()["queued"] == len(ids)
            await pause_all(engine, False)
            assert not all_paused(engine.statistics())
            await engine.run_until_idle()

    asyncio.run(go())
    assert sorted(ex.started) == sorted(ids)
    assert store.counts()["done"] == len(ids)
