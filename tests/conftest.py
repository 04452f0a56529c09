"""Shared fixtures: a fake clock, stores on real SQLite files, demo shops."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from pytestqt.qtbot import QtBot

from core.config import Settings
from core.store import SqliteStore
from core.testing import FakeClock

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# A Qt wait is on a signal or a condition; its timeout is only a backstop against a hang,
# never a speed check. pytest-qt's default (5 s) is shorter than a reader-thread round trip on
# CI's shared 2-core machine at load 20-30 (another full suite beside this one), so no wait in
# this suite gives up in less than a minute.
QT_BACKSTOP_MS = 60_000


def _with_backstop(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wait(self: Any, *args: Any, timeout: int = 5000, **kw: Any) -> Any:
        if 0 < timeout < QT_BACKSTOP_MS:
            timeout = QT_BACKSTOP_MS
        return method(self, *args, timeout=timeout, **kw)
    return wait


for _name in ("waitUntil", "waitSignal", "waitSignals", "waitCallback"):
    setattr(QtBot, _name, _with_backstop(getattr(QtBot, _name)))

# The same for property tests: Hypothesis' default 200 ms deadline per example (and its
# too-slow health check) is a speed check, and a stall on a loaded machine fails the test as
# "flaky". Tests that set their own settings keep them.
hypothesis.settings.register_profile(
    "shopfleet", deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])
hypothesis.settings.load_profile("shopfleet")

SHOPS = [("pdd-1", "pdd"), ("pdd-2", "pdd"), ("temu-1", "temu"), ("tiktok-1", "tiktok")]


def add_demo_shops(store: Any, *, username: str | None = None) -> None:
    """The four test shops on ``*.shopfleet.test`` (any store); ``username``: a login
    pattern such as ``"{shop}-user"``."""
    for shop, platform in SHOPS:
        store.add_shop(shop, platform=platform,
                       base_url=f"http://{platform}.shopfleet.test/shop/{shop}",
                       **({"username": username.format(shop=shop)} if username else {}))


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the real user data folder or the OS keychain (subprocesses inherit both:
    a worker and the test must find the same vault key)."""
    monkeypatch.setenv("SHOPFLEET_HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("SHOPFLEET_KEYCHAIN", "0")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


StoreFactory = Callable[..., SqliteStore]


@pytest.fixture
def make_store(tmp_path: Path, clock: FakeClock) -> Iterator[StoreFactory]:
    """Open a store on a fresh file with demo shops; keyword args override settings sections."""
    opened: list[SqliteStore] = []

    def make(*, shops: bool = True, name: str = "q.db", **sections: dict[str, Any]) -> SqliteStore:
        settings = Settings().with_changes(**sections) if sections else Settings()
        store = SqliteStore(tmp_path / name, settings=settings, clock=clock)
        opened.append(store)
        if shops:
            add_demo_shops(store)
        return store

    yield make
    for s in opened:
        s.close()


# -- Redis (scale-out): one private redis-server per test session, flushed per test ---------

@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """A real ``redis-server`` on loopback (started once per session)."""
    import shutil

    from tests.helpers import missing_tool

    if not shutil.which("redis-server"):
        missing_tool("redis-server is not installed (make setup installs it)")
    from core.testing.redis_server import RedisServer

    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: Any) -> str:
    """The session's Redis, emptied for this test."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return str(redis_server.url)
