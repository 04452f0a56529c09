"""A shop's proxy failing is that shop's own trouble (#17): its tasks wait behind the shop's
proxy breaker with no attempt spent and no ticket; other shops (of the same domain too) run;
a half-open probe tries again after the back-off and the tasks finish once the proxy is back.
Fake executor, fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

from core.engine import BreakerState
from core.errors import ProxyFailed
from core.events import ShopProxyChanged
from core.store import TaskState
from core.testing import FakeClock, FakeExecutor
from tests.conftest import StoreFactory
from tests.helpers import advance_and_settle, make_engine, spec, wait_until


class ProxiedExecutor(FakeExecutor):
    """The fake executor, with shops whose proxy is down."""

    def __init__(self) -> None:
        super().__init__()
        self.proxy_down: set[str] = set()
        self.proxy_failures = 0

    async def execute(self, task: Any, ctl: Any) -> Any:
        if task.shop in self.proxy_down:
            self.proxy_failures += 1
            raise ProxyFailed("proxy down: http://u@127.0.0.1:9 did not answer within 5s",
                              shop=task.shop)
        return await super().execute(task, ctl)


def test_a_dead_proxy_holds_only_its_shop_and_its_tasks_finish_when_it_is_back(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(breakers={"failures": 2, "window_s": 60, "backoff_s": 30,
                                 "backoff_max_s": 600},
                       queue={"max_attempts": 2, "retry_backoff_s": 0})
    proxied = store.submit_many([spec("collect_data", "pdd-1") for _ in range(3)])
    same_domain = store.submit_many([spec("collect_data", "pdd-2") for _ in range(3)])
    other = store.submit_many([spec("collect_data", "temu-1") for _ in range(2)])
    engine, ex, seen = make_engine(store, clock, slots=2, executor=ProxiedExecutor())
    ex.proxy_down.add("pdd-1")

    async def advance(seconds: float) -> None:
        # Time moves only while every background job (heartbeat, lease recovery, metrics, …)
        # is parked on the clock, and each one woken finishes its round before the engine
        # goes on: a recovery round that wrote its heartbeat before a jump and looked for
        # silent workers after it would take this worker for lost.
        jobs = len(engine._jobs)
        await wait_until(lambda: clock.sleepers >= jobs, 60, poll_s=0.005)
        await advance_and_settle(clock, seconds)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            proxy = engine.breakers.get("proxy:pdd-1")
            assert proxy.state is BreakerState.OPEN
            assert engine.breakers.get("pdd.shopfleet.test").state is BreakerState.CLOSED
            assert all(store.task(t).state is TaskState.DONE for t in same_domain + other)
            waiting = [store.task(t) for t in proxied]
            assert all(t.state is TaskState.QUEUED and t.attempts == 0 for t in waiting)
            assert store.ticket_book().tickets(state=None) == []
            assert list(engine.proxy_trouble()) == ["pdd-1"]
            assert "did not answer" in engine.proxy_trouble()["pdd-1"]
            failures = ex.proxy_failures
            assert failures == 2  # the breaker opened at its threshold; no more were tried

            await advance(30)  # half-open: one probe, the proxy is still down
            assert proxy.state is BreakerState.HALF_OPEN
            await engine.run_until_idle()
            assert ex.proxy_failures == failures + 1 and proxy.state is BreakerState.OPEN
            assert all(store.task(t).state is TaskState.QUEUED and store.task(t).attempts == 0
                       for t in proxied)

            ex.proxy_down.clear()  # the proxy is back
            await advance(60)      # the back-off doubled
            await engine.run_until_idle()
            assert proxy.state is BreakerState.CLOSED
            assert engine.proxy_trouble() == {}

    asyncio.run(go())
    assert all(store.task(t).state is TaskState.DONE for t in proxied)
    assert store.ticket_book().tickets(state=None) == []
    changes = [(e.shop, e.down) for e in seen if isinstance(e, ShopProxyChanged)]
    assert changes == [("pdd-1", True), ("pdd-1", False)]
