"""GUI fixtures: a qasync loop inside pytest-qt's QApplication, an engine on its own thread
with the scripted FakeExecutor, and the console window over a fresh store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from core import EngineHost, Settings, SqliteStore, open_store
from core.testing import FakeExecutor
from desktop.collector import MainThreadCollector
from tests.conftest import SHOPS

T = TypeVar("T")


@pytest.fixture(autouse=True)
def main_thread_collector(qapp: QApplication) -> Iterator[MainThreadCollector]:
    """As in the console: cycles are collected on this (the window's) thread only, never on
    an engine thread (where destroying widgets deadlocks). At the end, what the test left is
    collected here, before the next test starts its engine thread."""
    collector = MainThreadCollector(qapp)
    yield collector
    collector.stop()
    collector.deleteLater()


@pytest.fixture
def qloop(qapp: QApplication, tmp_path: Path) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync loop marked as running: Qt events processed by qtbot run its callbacks."""
    qapp.setOrganizationName("ShopFleetTests")
    qapp.setApplicationName("ShopFleetTests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                      str(tmp_path / "qsettings"))
    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    yield loop
    # Not loop.stop(): it calls QApplication.exit(), which breaks the next test's loop.
    loop._QEventLoop__is_running = False  # type: ignore[attr-defined]
    asyncio.events._set_running_loop(None)
    loop.close()
    asyncio.set_event_loop(None)


class Run:
    """Run a coroutine on the qasync loop from a test, spinning Qt until it is done."""

    def __init__(self, qtbot: Any) -> None:
        self.qtbot = qtbot

    # Timeouts are backstops against a hang, never speed checks (see QT_BACKSTOP_MS in
    # tests/conftest.py: no Qt wait here gives up in less than a minute).
    def __call__(self, aw: Awaitable[T], timeout_ms: int = 120_000) -> T:
        task = asyncio.ensure_future(aw)
        self.qtbot.waitUntil(task.done, timeout=timeout_ms)
        return task.result()

    def until(self, cond: Callable[[], Any], timeout_ms: int = 60_000) -> None:
        self.qtbot.waitUntil(lambda: bool(cond()), timeout=timeout_ms)


@pytest.fixture
def run(qtbot: Any, qloop: asyncio.AbstractEventLoop) -> Run:
    return Run(qtbot)


def make_settings() -> Settings:
    return Settings().with_changes(
        queue={"retry_backoff_s": 0.2, "max_attempts": 2, "recover_every_s": 1},
        gates={"global": {"rate_per_s": 1000, "burst": 1000},
               "default_domain": {"rate_per_s": 1000, "burst": 1000}},
        breakers={"failures": 2, "backoff_s": 60})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = open_store(make_settings(), tmp_path / "console.db")
    for shop, platform in SHOPS:
        s.add_shop(shop, platform=platform,
                   base_url=f"http://{platform}.shopfleet.test/shop/{shop}",
                   username=f"{shop}-user")
        s.update_shop(shop, password_enc=b"x")
    yield s
    s.close()


@pytest.fixture
def executor() -> FakeExecutor:
    return FakeExecutor()


@pytest.fixture
def host(store: SqliteStore, executor: FakeExecutor) -> Iterator[EngineHost]:
    from desktop.launch import engine_host

    h = engine_host(store.settings, store, executor=executor)
    h.start()
    yield h
    h.stop()


@pytest.fixture
def window(qtbot: Any, run: Run, store: SqliteStore, host: EngineHost,
           tmp_path: Path) -> Iterator[Any]:
    from desktop.window import ConsoleContext, MainWindow

    ctx = ConsoleContext(settings=store.settings, store=store, host=host,
                         config_path=tmp_path / "shopfleet.toml")
    w = MainWindow(ctx)
    w.show()
    yield w
    # Not qtbot.addWidget: it would close the window before this shutdown runs.
    run(w.shutdown(), timeout_ms=60_000)
    w.deleteLater()


@pytest.fixture
def console(qtbot: Any, run: Run, store: SqliteStore, tmp_path: Path) -> Iterator[Any]:
    """A console with no engine: only the store changes what it shows (deterministic)."""
    from desktop.window import ConsoleContext, MainWindow

    ctx = ConsoleContext(settings=store.settings, store=store, host=None,
                         config_path=tmp_path / "shopfleet.toml")
    w = MainWindow(ctx)
    w.show()
    yield w
    run(w.shutdown(), timeout_ms=60_000)
    w.deleteLater()
