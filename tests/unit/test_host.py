"""The engine on its own loop thread, as the desktop runs it."""

from __future__ import annotations

import time

import pytest

from core import EngineHost
from core.engine import Engine
from core.events import EventBus, TaskStateChanged
from core.store import SqliteStore, TaskState
from core.testing import FakeExecutor
from tests.conftest import StoreFactory
from tests.helpers import spec


@pytest.mark.timeout(120)
def test_host_runs_commands_on_the_engine_thread_and_stops_promptly(
        make_store: StoreFactory) -> None:
    store = make_store()
    tid = store.submit(spec(params={"steps": 200, "step_s": 0.01, "until_released": True}))
    ex = FakeExecutor()
    seen: list[object] = []

    async def factory(bus: EventBus) -> Engine:
        return Engine(store, executor=ex, slots=2, bus=bus, poll_s=0.05)

    host = EngineHost(factory)
    host.bus.subscribe(seen.append)
    host.start()
    end = time.monotonic() + 60
    while ex.live == 0:                         # a poll for the task to start, not a timing
        assert time.monotonic() < end, "the task never started"
        time.sleep(0.01)
    changes = host.call(lambda e: e.bump(tid, by=1)).result(60)
    assert changes.tasks
    stats = host.call_soon(lambda e: e.statistics()).result(60)
    assert stats.running == 1
    # Promptly: the task (200 steps) stops at its next step and the thread ends; with a
    # timeout longer than the test's own (pytest-timeout), waiting it out fails the test.
    host.stop(timeout_s=100_000)
    assert not host._thread.is_alive()
    assert ex.yielded == [tid] and ex.finished == []
    reopened = SqliteStore(store.path)          # the host closed the engine's store
    try:
        rec = reopened.task(tid)
    finally:
        reopened.close()
    assert rec.state is TaskState.QUEUED and rec.checkpoint   # released with its checkpoint
    assert any(isinstance(e, TaskStateChanged) and e.state == "running" for e in seen)
