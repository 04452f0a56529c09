"""A Redis outage: the engine waits it out instead of dying, and loses nothing.

A durable redis-server (append-only file, fsync always) is stopped while an engine works on
it and started again on the same port 3 s later. The engine keeps running, logs the outage
once, and every task ends done exactly once.
"""

from __future__ import annotations

import asyncio
import shutil
import time

import pytest

from core.build import build_engine, open_store
from core.config import Settings
from core.events import EngineProblem, Event
from core.testing import FakeExecutor
from tests.conftest import SHOPS, add_demo_shops
from tests.helpers import missing_tool, spec

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_the_engine_waits_out_a_redis_restart_and_loses_nothing() -> None:
    if not shutil.which("redis-server"):
        missing_tool("redis-server is not installed (make setup installs it)")
    from core.testing.redis_server import RedisServer

    settings = Settings().with_changes(
        queue={"heartbeat_s": 0.2, "recover_every_s": 0.5, "lease_s": 30},
        gates={"global": {"rate_per_s": 1000, "burst": 1000},
               "default_domain": {"rate_per_s": 1000, "burst": 1000}})
    with RedisServer(durable=True) as server:
        store = open_store(settings, url=server.url, validate=False)
        add_demo_shops(store)
        ids = store.submit_many([spec(shop=name, params={"steps": 4, "step_s": 0.1})
                                 for name, _ in SHOPS for _ in range(6)])
        ex = FakeExecutor()
        engine = build_engine(settings, store, executor=ex, slots=4)
        seen: list[Event] = []
        engine.bus.subscribe(seen.append)

        async def go() -> None:
            async with engine:
                runner = asyncio.create_task(engine.run())
                while len(ex.finished) < 5:
                    await asyncio.sleep(0.05)
                await asyncio.to_thread(server.restart, down_s=3.0)
                end = time.monotonic() + 60
                while await asyncio.to_thread(lambda: store.counts()["done"]) < len(ids):
                    assert time.monotonic() < end, store.counts()
                    assert not runner.done(), runner.exception()
                    await asyncio.sleep(0.2)
                await engine.stop()
                await runner                      # it did not die: no exception here

        try:
            asyncio.run(go())
            problems = [e for e in seen if isinstance(e, EngineProblem)]
            assert problems and all("unreachable" in e.error for e in problems)
            assert store.counts()["done"] == len(ids)
            for tid in ids:                       # each finished once
                assert sum(1 for e in store.events(tid) if e.to_state == "done") == 1
        finally:
            store.close()
