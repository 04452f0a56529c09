"""The fleet in the console: every worker with its pool and heartbeat, a silent one marked lost
(its tasks back in the queue), and a task another machine runs preempted from here."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from core import SqliteStore, TaskState, open_store
from core.testing import FakeClock
from tests.conftest import SHOPS, add_demo_shops
from tests.gui.conftest import Run, make_settings
from tests.helpers import spec

pytestmark = pytest.mark.gui

FAR = "far-away-host"
"""A host name that is not this machine: its worker's leases are not "dead local owners"."""


def _info(host: str, pid: int, *, slots: int, running: list[int], done: int) -> dict[str, Any]:
    return {"host": host, "pid": pid, "slots": slots, "running": len(running),
            "store": "sqlite:test", "done": done, "browsers": len(running),
            "running_ids": running}


def _cell(window: Any, owner: str, column: str) -> Any:
    model = window.models["workers"]
    c = [col.key for col in model.columns].index(column)
    return model.index(model.row_of(owner), c)


@pytest.fixture
def fleet_store(tmp_path: Path) -> Iterator[tuple[SqliteStore, FakeClock]]:
    # The store's clock reaches the wall clock (which the console's "ago" column reads) once
    # the test has let a worker fall silent.
    clock = FakeClock(time.time() - make_settings().queue.worker_lost_after_s - 5)
    s = open_store(make_settings(), tmp_path / "fleet.db", clock=clock)
    add_demo_shops(s, username="{shop}-user")
    for shop, _ in SHOPS:
        s.update_shop(shop, password_enc=b"x")
    yield s, clock  # type: ignore[misc]
    s.close()


@pytest.fixture
def console(qtbot: Any, run: Run, fleet_store: tuple[SqliteStore, FakeClock],
            tmp_path: Path) -> Iterator[Any]:
    """The console on the fleet's store, without an engine of its own (a pure console)."""
    from desktop.window import ConsoleContext, MainWindow

    store, _ = fleet_store
    w = MainWindow(ConsoleContext(settings=store.settings, store=store, host=None,
                                  config_path=tmp_path / "shopfleet.toml"))
    w.show()
    yield w
    run(w.shutdown(), timeout_ms=30_000)
    w.deleteLater()


def test_workers_table_shows_alive_and_lost_workers(
        console: Any, run: Run, fleet_store: tuple[SqliteStore, FakeClock],
        monkeypatch: pytest.MonkeyPatch) -> None:
    store, clock = fleet_store
    silent, busy = f"{FAR}/111/aaaa1111", "near-host/222/bbbb2222"
    tid = store.submit(spec(shop="pdd-1", params={"page": 1}))
    claimed = store.claim(silent)
    assert claimed is not None and claimed.id == tid
    store.heartbeat(silent, _info(FAR, 111, slots=4, running=[tid], done=17))
    store.heartbeat(busy, _info("near-host", 222, slots=8, running=[], done=3))
    lost_after = store.settings.queue.worker_lost_after_s
    clock.advance(lost_after + 5)  # the first one falls silent; the second keeps beating
    store.heartbeat(busy, _info("near-host", 222, slots=8, running=[], done=5))
    assert store.recover_lost_workers(lost_after) == [tid]

    console.show_tab("workers")
    model = console.models["workers"]
    run.until(lambda: model.rowCount() == 2)
    assert model.snapshot(silent).state == "lost"
    assert model.snapshot(busy).state == "alive"
    assert _cell(console, silent, "state").data() == "Lost"
    assert _cell(console, busy, "state").data() == "Online"
    assert _cell(console, silent, "host").data() == FAR
    assert _cell(console, silent, "owner").data() == "111/aaaa1111"
    assert _cell(console, silent, "slots").data() == "4"
    assert _cell(console, busy, "slots").data() == "8"
    assert _cell(console, busy, "done").data() == "5"
    # The age of the last heartbeat, read on the console's clock (pinned here: 7 s after the
    # busy worker's last beat).
    monkeypatch.setattr("desktop.columns._now", lambda: clock.now() + 7)
    assert _cell(console, busy, "heartbeat").data() == "7s ago"
    assert _cell(console, silent, "heartbeat").data() == f"{int(lost_after) + 5 + 7}s ago"
    assert model.snapshot(silent).heartbeat_at == model.snapshot(busy).heartbeat_at - (
        lost_after + 5)
    # Lost is what the operator must notice: red; alive has no highlight.
    color = _cell(console, silent, "state").data(Qt.ItemDataRole.ForegroundRole)
    from desktop import palette

    assert color is not None and color.color() == palette.signal("error")
    assert _cell(console, busy, "state").data(Qt.ItemDataRole.ForegroundRole) is None
    console._update_titles()
    assert console.view_title(console.current_key()) == "Workers (1 · 1 lost)"
    # The lost worker's task went back to the queue; the status bar says where the store is.
    assert store.task(tid).state is TaskState.QUEUED
    url = str(store.url)
    assert console.status_store.text() == f"store: {url if len(url) <= 40 else '…' + url[-39:]}"
    assert url in console.status_store.toolTip()


def test_preempting_a_task_another_worker_runs(request: pytest.FixtureRequest, run: Run
                                               ) -> None:
    """Another process holds the task: the in-flight table shows it with its worker, and
    Preempt reaches it through the store (that worker suspends it at its next safe step)."""
    store: SqliteStore = request.getfixturevalue("store")
    far = f"{FAR}/4242/cafe0001"
    tid = store.submit(spec(shop="temu-1", params={"page": 1}))
    claimed = store.claim(far)  # before this console's engine starts: the other one has it
    assert claimed is not None and claimed.id == tid

    def beat() -> bool:
        """The other worker is alive: it beats while the test waits (silent for the default
        worker_lost_after_s, a loaded machine's wait would make this console requeue it)."""
        store.heartbeat(far, _info(FAR, 4242, slots=2, running=[tid], done=0))
        return True

    beat()
    window = request.getfixturevalue("window")

    window.show_tab("in_flight")
    model = window.models["in_flight"]
    run.until(lambda: beat() and model.row_of(tid) >= 0)
    row = model.snapshot(tid)
    assert row.remote and row.worker == FAR
    c = [col.key for col in model.columns].index("worker")
    assert model.index(model.row_of(tid), c).data() == FAR
    panel = window.panels["in_flight"]
    panel.select_ids([tid])
    window._update_actions()
    assert window.acts["preempt"].isEnabled()
    window.acts["preempt"].trigger()
    assert f"#{tid} (" in window.last_confirm.text()
    window.last_confirm.button(QMessageBox.StandardButton.Yes).click()
    run.until(lambda: beat() and tid in store.preempt_requests([tid]))
    assert store.task(tid).state is TaskState.RUNNING  # cooperative: the holder stops it
    assert store.task(tid).lease_owner == far
