"""#19: the daily digest's counts come from one store query, the same on every store."""

from __future__ import annotations

from core.notify import ShopCounts
from core.testing import FakeClock
from core.tickets import Signature, normalise_error
from tests.contract.conftest import StoreFactory
from tests.helpers import spec


def test_counts_snapshot_per_shop_tickets_and_signatures(store_factory: StoreFactory,
                                                         clock: FakeClock) -> None:
    store = store_factory(queue={"max_attempts": 1, "retry_backoff_s": 0})
    early = store.submit(spec("collect_data", "pdd-1"))
    assert store.claim("w") is not None
    store.ack(early, "w", results={})                   # before the day: not counted
    clock.advance(3600)
    day_start = clock.now()
    for shop in ("pdd-1", "pdd-1", "temu-1"):
        t = store.submit(spec("collect_data", shop))
        assert store.claim("w") is not None
        store.ack(t, "w", results={})
    t = store.submit(spec("collect_data", "temu-1"))
    assert store.claim("w") is not None
    store.fail(t, "w", error_class="site_failed", message="HTTP 502", retry=False)
    for shop in ("pdd-2", "pdd-2"):
        t = store.submit(spec("upload_product", shop))
        assert store.claim("w") is not None
        err = "找不到按钮"
        store.open_ticket(t, "w", signature=Signature("pdd", "upload_product", "submit",
                                                      "page_changed", normalise_error(err)),
                          step=1, error=err, evidence=None)
    store.submit(spec("collect_data", "tiktok-1"))      # queued
    clock.advance(60)
    snap = store.counts_snapshot(day_start, clock.now())
    assert snap.day_start == day_start
    assert list(snap.shops) == [ShopCounts("pdd-1", done=2), ShopCounts("pdd-2", tickets=2),
                                ShopCounts("temu-1", done=1, failed=1)]
    assert snap.queued == 1 and snap.tickets_open == 2
    assert list(snap.signatures) == [("pdd upload_product · submit · page_changed", 2)]
    later = store.counts_snapshot(clock.now() + 1, clock.now() + 86400)
    assert [s.shop for s in later.shops] == ["pdd-2"] and later.signatures == []
