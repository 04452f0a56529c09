"""#15: the detail pane follows the current view's selection — switching from Pending to
History does not leave the pending task in the pane; a view with no selection shows none; a
read that lands after the view changed is dropped."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from core import SqliteStore
from tests.gui.conftest import Run
from tests.gui.test_console import quick, select, show

pytestmark = pytest.mark.gui



def placeholder(window: Any) -> bool:
    return window.detail.task_id is None and window.detail.header.text().startswith(
        "Select a task")


def test_the_detail_pane_follows_the_current_views_selection(
        console: Any, run: Run, store: SqliteStore) -> None:
    queued = store.submit(quick("pdd-1"))
    finished = store.submit(quick("pdd-2"))
    store.cancel(finished)
    show(console, run, "pending")
    select(console, run, "pending", queued)
    run.until(lambda: console.detail.task_id == queued)
    show(console, run, "history")                        # no selection there: an empty pane
    run.until(lambda: placeholder(console))
    select(console, run, "history", finished)
    run.until(lambda: console.detail.task_id == finished)
    show(console, run, "pending")                        # back: its own selection again
    run.until(lambda: console.detail.task_id == queued)
    show(console, run, "shops")                          # no task view: nothing stale kept
    run.until(lambda: placeholder(console))
    show(console, run, "history")
    run.until(lambda: console.detail.task_id == finished)


def test_a_detail_read_that_lands_after_the_view_changed_is_dropped(
        console: Any, run: Run, store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Select in Pending, switch to History before the task's detail is read: the late
    read does not put the pending task in the History view's pane."""
    import desktop.window_selection as ws

    queued = store.submit(quick("pdd-1"))
    release, reads = threading.Event(), []
    real = ws.task_detail

    def slow(*a: Any, **k: Any) -> Any:
        assert release.wait(30)
        reads.append(a[1])
        return real(*a, **k)
    monkeypatch.setattr(ws, "task_detail", slow)
    loads_done: list[int] = []
    real_load = console._load_detail

    async def load(task_id: int) -> None:
        await real_load(task_id)
        loads_done.append(task_id)
    console._load_detail = load
    show(console, run, "pending")
    select(console, run, "pending", queued)              # its read waits on `release`
    console.show_tab("history")     # (not show(): the reads queue behind the blocked one)
    release.set()
    run.until(lambda: loads_done == [queued])            # the late read has landed
    assert reads == [queued] and placeholder(console)

