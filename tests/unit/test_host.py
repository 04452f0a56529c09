"""The engine on its own loop thread, as the desktop runs it."""

from __future__ import annotations

import time

from core import EngineHost
from core.engine import Engine
from core.events import EventBus, TaskStateChanged
from core.store import SqliteStore, TaskState
from core.testing import FakeExecutor
from tests.conftest import StoreFactory
from tests.helpers import spec


def test_host_runs_commands_on_the_engine_thread_and_stops_promptly(
        make_store: StoreFactory) -> None:
    store = make_store()
    tid = store.submit(spec(params={"steps": 200, "step_s": 0.01}))
    ex = FakeExecutor()
    seen: list[object] = []

    async def factory(bus: EventBus) -> Engine:
        return Engine(store, executor=ex, slots=2, bus=bus, poll_s=0.05)

    host = EngineHost(factory)
    host.bus.subscribe(seen.append)
    host.start()
    end = time.monotonic() + 10
    while ex.live == 0 and time.monotonic() < end:
        time.sleep(0.01)
    changes = host.call(lambda e: e.bump(tid, by=1)).result(10)
    assert changes.tasks
    stats = host.call_soon(lambda e: e.statistics()).result(10)
    assert stats.running == 1
    t0 = time.monotonic()
    host.stop(timeout_s=30)
    assert time.monotonic() - t0 < 10        # no waiting out the timeout
    reopened = SqliteStore(store.path)          # the host closed the engine's store
    try:
        rec = reopened.task(tid)
    finally:
        reopened.close()
    assert rec.state is TaskState.QUEUED and rec.checkpoint   # released with its checkpoint
    assert any(isinstance(e, TaskStateChanged) and e.state == "running" for e in seen)
