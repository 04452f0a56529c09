"""#19's notifier on a real SQLite store with a fake clock and a fake sender: bus events become
alerts without store work on the publishing thread, a storm is one message, lost workers and
the daily digest are alerted once, and the thread pair starts and stops cleanly."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.events import BreakerChanged, EventBus, TaskStateChanged, TicketOpened
from core.notify import Request, Verdict, parse_target
from core.notify.host import Notifier
from core.store import SqliteStore
from core.testing import FakeClock
from tests.conftest import add_demo_shops

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC = 08:00 in Shanghai


class Sent:
    def __init__(self) -> None:
        self.requests: list[tuple[str, Request]] = []
        self.got = threading.Event()

    def __call__(self, kind: str, req: Request) -> Verdict:
        self.requests.append((kind, req))
        self.got.set()
        return Verdict(True, False, "ok")

    def texts(self) -> list[str]:
        return [r.body.decode() for _, r in self.requests]


class StoreOnThreads:
    """The store, noting which threads touched it."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self.threads: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.threads.add(threading.current_thread().name)
        return getattr(self._store, name)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    clock = FakeClock(T0)
    with SqliteStore(tmp_path / "n.db", clock=clock) as s:
        add_demo_shops(s)
        yield s


def targets(**kw: Any) -> list[Any]:
    return [parse_target({"name": "ops", "kind": "webhook", "url": "https://hooks.test/x",
                          "batch_window_s": 10, "lang": "en", **kw})]


def test_bus_events_become_one_message_per_batch(store: SqliteStore) -> None:
    clock = FakeClock(T0)
    sent = Sent()
    n = Notifier(store, targets(events=["ticket", "quarantine", "breaker_open"]),
                 now=clock.now, send=sent)
    bus = EventBus()
    n.attach(bus)
    for i in range(150):   # a 5xx storm over 50 shops (a message holds up to 200 events)
        bus.publish(TicketOpened(T0, i + 1, i + 1, f"shop-{i % 50}", "SiteFailed", "HTTP 502"))
    bus.publish(TaskStateChanged(T0, 7, "pdd-1", "quarantined", "crashed its browser 3 times"))
    bus.publish(BreakerChanged(T0, "pdd.shopfleet.test", "open", "5 failures in 60 s"))
    bus.publish(BreakerChanged(T0, "pdd.shopfleet.test", "half_open", "probe"))  # not an alert
    bus.publish(TaskStateChanged(T0, 8, "pdd-1", "done", "finished"))           # not an alert
    assert n.drain() == 152
    assert n.dispatcher.run_once() == 0            # inside the batch window: nothing yet
    clock.advance(10)
    assert n.dispatcher.run_once() == 1
    [text] = sent.texts()
    assert "152 alerts from 51 shops" in text and "50 shops" in text
    assert "Breaker open on pdd.shopfleet.test" in text and "Quarantined task #7" in text
    assert n.dispatcher.run_once() == 0            # sent: nothing left
    [h] = n.outbox.health()
    assert (h.pending, h.failing_since, h.last_sent_at) == (0, None, clock.now())
    # the same ticket published again (a restart) is not alerted twice
    bus.publish(TicketOpened(T0, 1, 1, "shop-0", "SiteFailed", "HTTP 502"))
    n.drain()
    clock.advance(60)
    assert n.dispatcher.run_once() == 0


def test_the_publishing_thread_does_no_store_work(store: SqliteStore) -> None:
    watched = StoreOnThreads(store)
    sent = Sent()
    n = Notifier(watched, targets(batch_window_s=0), send=sent, watch_s=3600)  # type: ignore[arg-type]
    bus = EventBus()
    n.attach(bus)
    n.start()
    try:
        watched.threads.clear()
        bus.publish(TicketOpened(T0, 1, 1, "pdd-1", "PageChanged", "找不到按钮"))
        assert sent.got.wait(30)
    finally:
        n.stop()
    assert threading.current_thread().name not in watched.threads
    assert watched.threads <= {"shopfleet-notifier", "shopfleet-notify"}
    assert "找不到按钮" in sent.texts()[0]


def test_a_lost_worker_is_alerted_once_across_notifiers(store: SqliteStore) -> None:
    clock: FakeClock = store.clock  # type: ignore[assignment]
    sent = Sent()
    store.heartbeat("w-1", {"host": "box-7", "pid": 42, "slots": 4, "running": 2,
                            "started_at": T0})
    clock.advance(600)
    store.recover_lost_workers(60)
    first = Notifier(store, targets(events=["worker_lost"], batch_window_s=0),
                     now=clock.now, send=sent)
    second = Notifier(store, targets(events=["worker_lost"], batch_window_s=0),
                      now=clock.now, send=sent)
    first.watch_once()
    second.watch_once()          # another worker of the fleet sees the same loss
    first.watch_once()
    assert first.dispatcher.run_once() == 1
    assert second.dispatcher.run_once() == 0
    [text] = sent.texts()
    assert "Worker lost: w-1" in text and "box-7" in text


def test_the_daily_digest_goes_once_after_its_time(store: SqliteStore) -> None:
    clock = FakeClock(T0)        # 08:00 in Shanghai
    sent = Sent()
    n = Notifier(store, targets(events=["digest"], batch_window_s=0, lang="zh_CN"),
                 digest_at="09:00", digest_tz="Asia/Shanghai", now=clock.now, send=sent)
    n.watch_once()
    assert n.dispatcher.run_once() == 0            # before 09:00: no digest
    clock.advance(3600)
    n.watch_once()
    n.watch_once()
    assert n.dispatcher.run_once() == 1
    clock.advance(3600)
    n.watch_once()                                 # later the same day: already sent
    assert n.dispatcher.run_once() == 0
    [text] = sent.texts()
    assert "每日汇总 2025-12-31" in text


def test_schedule_failed_hook(store: SqliteStore) -> None:
    clock = FakeClock(T0)
    sent = Sent()
    n = Notifier(store, targets(events=["schedule_failed"], batch_window_s=0),
                 now=clock.now, send=sent)
    n.schedule_failed("nightly-stats", "no shop matched platform:pdd", at=T0)
    n.drain()
    assert n.dispatcher.run_once() == 1
    assert "Schedule nightly-stats failed" in sent.texts()[0]


def test_no_targets_starts_nothing(store: SqliteStore) -> None:
    n = Notifier(store, [])
    n.start()
    assert n._thread is None
    n.stop()
