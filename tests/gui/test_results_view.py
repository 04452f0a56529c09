"""#19 in the console: the Results view previews, filters, searches and exports what tasks
collected; the Tickets and Knowledge base search bars find Chinese words inside sentences;
the status bar names a failing notification target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from core import SqliteStore
from core.notify import NotifyEvent
from core.tickets import Signature, normalise_error
from desktop.models import Reader
from desktop.results_view import NotifyStatus, ResultsView, SearchBar
from tests.gui.conftest import Run
from tests.helpers import spec

pytestmark = pytest.mark.gui


@pytest.fixture
def reader() -> Iterator[Reader]:
    r = Reader()
    yield r
    r.close()


def _done(store: SqliteStore, shop: str, results: dict[str, Any]) -> None:
    t = store.submit(spec("collect_data", shop, params={"page": 1}))
    assert store.claim("w") is not None
    store.ack(t, "w", results=results)


def test_preview_filter_search_and_export(store: SqliteStore, reader: Reader, run: Run,
                                          qtbot: Any, tmp_path: Path) -> None:
    _done(store, "pdd-1", {"sku": ["A1", "A2"], "note": "买家说物流太慢了"})
    _done(store, "temu-1", {"sku": ["T1"], "note": "great"})
    view = ResultsView(store, reader)
    qtbot.addWidget(view)
    assert run(view.refresh()) == 3
    assert view.table.rowCount() == 3
    header = [view.table.horizontalHeaderItem(i).text() for i in range(view.table.columnCount())]
    assert header[:2] == ["task_id", "shop"] and "sku" in header
    view.shops_box.setText("platform:temu")
    assert run(view.refresh()) == 1 and view.rows[0]["sku"] == "T1"
    view.shops_box.setText("nosuch-*")           # bad input: said, nothing read
    assert run(view.refresh()) == 0 and "--shops" in view.message.text()
    view.shops_box.setText("")
    view.since_box.setText("yesterday")
    assert run(view.refresh()) == 0 and "--since" in view.message.text()
    view.since_box.setText("")
    view.search_box.setText("物流太慢")
    assert run(view.refresh()) == 2 and {r["shop"] for r in view.rows} == {"pdd-1"}
    view.search_box.setText("")
    out = tmp_path / "r.xlsx"
    assert run(view.export_to(str(out), "xlsx", "shop")) == 3
    book = openpyxl.load_workbook(out, read_only=True)
    assert sorted(book.sheetnames) == ["pdd-1", "temu-1"]
    rows = list(book["pdd-1"].iter_rows(values_only=True))
    book.close()
    assert rows[1][rows[0].index("note")] == "买家说物流太慢了"


def test_ticket_and_answer_search_bars(store: SqliteStore, reader: Reader, run: Run,
                                       qtbot: Any) -> None:
    t = store.submit(spec("collect_data", "pdd-2", params={"page": 1}))
    assert store.claim("w") is not None
    err = "找不到按钮：确认上架商品"
    k = store.open_ticket(t, "w", signature=Signature("pdd", "upload_product", "提交",
                                                      "page_changed", normalise_error(err)),
                          step=1, error=err, evidence=None)
    store.ticket_book().answer(k, "retry", note="页面改版，上架按钮换了位置")
    tickets = SearchBar("tickets", store, reader)
    kb = SearchBar("kb", store, reader)
    qtbot.addWidget(tickets)
    qtbot.addWidget(kb)
    tickets.box.setText("确认上架")
    assert run(tickets.search()) == 1 and not tickets.hits.isHidden()
    kb.box.setText("换了位置")
    assert run(kb.search()) == 1 and kb.rows[0]["note"] == "页面改版，上架按钮换了位置"
    kb.box.setText("发货")
    assert run(kb.search()) == 0 and kb.hits.isHidden()


def test_a_failing_target_is_named_in_the_status_bar(store: SqliteStore, reader: Reader,
                                                     run: Run, qtbot: Any) -> None:
    label = NotifyStatus(store, reader)
    qtbot.addWidget(label)
    assert run(label.refresh()) == [] and label.isHidden()
    box = store.outbox()
    box.enqueue("ops-dingtalk", NotifyEvent(id="ticket:1", kind="ticket", at=0.0), now=0.0)
    batch = box.due_batch("ops-dingtalk", now=1.0, limit=10)
    assert batch is not None
    box.mark_failed(batch.id, now=1.0, error="HTTP 500", next_at=60.0)
    assert run(label.refresh()) == ["ops-dingtalk"]
    assert not label.isHidden() and "ops-dingtalk (HTTP 500" in label.text()
