"""#19: what a finished task collected comes out as one export row per record, on every store;
text search is SQLite's (Redis says so plainly)."""

from __future__ import annotations

import pytest

from core.errors import Refused
from core.export import ResultFilter
from core.store.base import Store
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec


def _finish(store: Store, shop: str, results: dict[str, object] | None, *,
            type_: str = "collect_data", flow: str = "orders") -> int:
    t = store.submit(spec(type_, shop, flow=flow))
    claimed = store.claim("w")
    assert claimed is not None and claimed.id == t
    store.ack(t, "w", results=results)
    return t


def test_one_row_per_record_with_the_task_columns(store_factory: StoreFactory,
                                                  clock: FakeClock) -> None:
    store = store_factory()
    a = _finish(store, "pdd-1", {"title": "旗舰店订单", "ids": ["A1", "A2", "A3"],
                                 "price": ["12.50", "=1+1"]})
    clock.advance(60)
    b = _finish(store, "temu-1", {"reviews": [{"who": "王", "text": "物流太慢"}]},
                flow="reviews")
    _finish(store, "tiktok-1", None)  # nothing collected: no rows
    rows = list(store.iter_results(ResultFilter()))
    assert [(r["task_id"], r["shop"]) for r in rows] == [(a, "pdd-1")] * 3 + [(b, "temu-1")]
    assert rows[0] == {"task_id": a, "shop": "pdd-1", "platform": "pdd",
                       "type": "collect_data", "flow": "orders",
                       "finished_at": rows[0]["finished_at"], "title": "旗舰店订单",
                       "ids": "A1", "price": "12.50"}
    assert rows[2]["ids"] == "A3" and "price" not in rows[2]
    assert rows[3]["reviews.text"] == "物流太慢" and rows[3]["flow"] == "reviews"


def test_filters_by_type_shop_time_and_flow(store_factory: StoreFactory,
                                            clock: FakeClock) -> None:
    store = store_factory()
    t0 = clock.now()
    a = _finish(store, "pdd-1", {"x": 1})
    clock.advance(3600)
    b = _finish(store, "pdd-2", {"x": 2}, flow="other")
    c = _finish(store, "temu-1", {"x": 3}, type_="upload_product", flow="upload_product")

    def ids(flt: ResultFilter, limit: int | None = None) -> list[object]:
        return [r["task_id"] for r in store.iter_results(flt, limit=limit)]

    assert ids(ResultFilter()) == [a, b, c]
    assert ids(ResultFilter(types=("upload_product",))) == [c]
    assert ids(ResultFilter(shops=("pdd-1", "temu-1"))) == [a, c]
    assert ids(ResultFilter(shops=())) == []
    assert ids(ResultFilter(since=t0 + 1800)) == [b, c]
    assert ids(ResultFilter(until=t0 + 1800)) == [a]
    assert ids(ResultFilter(flow="other")) == [b]
    assert ids(ResultFilter(), limit=2) == [a, b]


def test_search_is_sqlite_only_and_says_so(store_factory: StoreFactory,
                                           store_kind: str) -> None:
    store = store_factory()
    _finish(store, "pdd-1", {"note": "客户申请退款，物流太慢了"})
    if store_kind == "redis":
        with pytest.raises(Refused, match="only on the SQLite store"):
            store.search("results", "物流太慢")
        return
    assert [r["shop"] for r in store.search("results", "物流太慢")] == ["pdd-1"]
    assert [r["shop"] for r in store.search("results", "退款")] == ["pdd-1"]
    assert store.search("results", "发货") == []
