"""#15 item 8: clicking any header of a task table sorts it in the store query.

Every column of the pending and history tables is clicked with the mouse, once for each
direction. The first page must be the store's first rows in that column's order (checked with
an order computed in the test from the rows themselves), and scrolling down (the model's next
keyset page) must continue that order to the last row, every row once. History opens on its
finish time, newest first.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt

from core import SqliteStore, task_rows
from desktop.models import PAGE
from tests.contract.test_pages import expected
from tests.gui.conftest import Run
from tests.gui.test_console import pause_all_but, quick, show

pytestmark = pytest.mark.gui

TYPES = ("reply_customer", "campaign_signup", "upload_product", "collect_data")
SHOPS = ("pdd-1", "pdd-2", "temu-1", "tiktok-1")


def _click_header(qtbot: Any, view: Any, column: int) -> None:
    header = view.horizontalHeader()
    view.scrollTo(view.model().index(0, column))
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(x, header.height() // 2))


def _all_ids(run: Run, model: Any, view: Any, n: int) -> list[int]:
    """Scroll to the end (the view asks the model for its next pages) and read every row."""
    while model.rowCount() < n:
        before = model.rowCount()
        view.scrollToBottom()
        if model.canFetchMore():
            model.fetchMore()
        run.until(lambda b=before: model.rowCount() > b and not model._busy)
    return [model.row_at(i).id for i in range(model.rowCount())]


def _check_every_header(qtbot: Any, run: Run, window: Any, store: SqliteStore, tab: str,
                        ids: list[int]) -> set[str]:
    show(window, run, tab)
    panel, model = window.panels[tab], window.models[tab]
    rows = list(task_rows(store, ids).values())
    rows = [r for r in rows if r.state in {"queued"} | ({"done", "failed", "cancelled"}
                                                         if tab == "history" else set())]
    assert len(rows) > PAGE, "more rows than a page: page two is read"
    sorted_by: set[str] = set()
    for column, col in enumerate(model.columns):
        assert col.sort is not None, f"{tab}: the {col.key} column does not sort"
        for _ in range(2):  # a click sorts by the column; a second reverses it
            before = (model.sort_name, model.descending)
            _click_header(qtbot, panel.view, column)
            run.until(lambda b=before: (model.sort_name, model.descending) != b
                      and not model._busy and not model.stale and model.rowCount() > 0)
            assert model.sort_name == col.sort
            header = panel.view.horizontalHeader()
            assert header.sortIndicatorSection() == column
            want = expected(rows, col.sort, bool(model.descending))
            first = [model.row_at(i).id for i in range(model.rowCount())]
            assert first == want[:len(first)] and len(first) == PAGE, (tab, col.key)
            assert _all_ids(run, model, panel.view, len(want)) == want, (tab, col.key)
            sorted_by.add(col.sort)
    return sorted_by


def test_every_header_sorts_through_the_store_and_page_two_continues(
        qtbot: Any, console: Any, run: Run, store: SqliteStore) -> None:
    pause_all_but(store)
    specs = []
    for k in range(PAGE + 60):
        kw: dict[str, Any] = {"priority": k % 7}
        if k % 3 == 0:
            kw["deadline"] = f"2031-01-0{1 + k % 5}T10:00:00+00:00"
        specs.append(quick(SHOPS[(k // 3) % 4], type=TYPES[k % 4], flow="collect_data",
                           **kw))
    ids = store.submit_many(specs)
    pending = _check_every_header(qtbot, run, console, store, "pending", ids)
    assert pending == {"id", "score", "type", "shop", "platform", "waited", "deadline",
                       "attempts", "hard", "reason"}

    # History: finished in another order than submitted, some failed, some cancelled.
    for shop in SHOPS:
        store.set_shop_paused(shop, False)
    left = set(ids)
    n = 0
    while True:
        got = store.claim_many("w", 50)
        if not got:
            break
        for c in reversed(got):
            n += 1
            if n % 5 == 0:
                store.fail(c.id, "w", error_class="site_failed", message=f"500 #{n % 3}",
                           retry=False)
            else:
                store.ack(c.id, "w")
            left.discard(c.id)
    for tid in sorted(left)[:5]:
        store.cancel(tid)
    hist = console.models["history"]
    show(console, run, "history")
    assert hist.sort_name == "finished"
    rows = list(task_rows(store, ids).values())
    finished = [r for r in rows if r.state in ("done", "failed", "cancelled")]
    assert [hist.row_at(i).id for i in range(hist.rowCount())] == \
        expected(finished, "finished", False)[:PAGE]       # newest finished first
    history = _check_every_header(qtbot, run, console, store, "history", ids)
    assert history == {"id", "type", "shop", "platform", "state", "finished", "took",
                       "attempts", "error_class", "error"}
