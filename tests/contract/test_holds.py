"""Shop holds (#15 takeover): a lease on a shop that keeps every worker sharing the store from
claiming its tasks while a person drives its browser; it runs out on its own when its holder
stops renewing it (a console that crashed mid-takeover blocks nothing for good)."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput, Refused
from core.store import TaskState
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec


def test_a_held_shop_is_not_claimed_until_released(store_factory: StoreFactory) -> None:
    store = store_factory()
    t1 = store.submit(spec(shop="pdd-1", priority=50))
    t2 = store.submit(spec(shop="pdd-2"))
    hold = store.hold_shop("pdd-1", "takeover:a", lease_s=60, what="takeover of ticket #3")
    assert (hold.shop, hold.owner, hold.what) == ("pdd-1", "takeover:a",
                                                  "takeover of ticket #3")
    got = store.shop_hold("pdd-1")
    assert got is not None and got.owner == "takeover:a"
    c = store.claim("w")
    assert c is not None and c.id == t2              # the better task's shop is held
    assert store.claim("w") is None
    assert store.claim_many("w", 5) == []
    store.release_shop_hold("pdd-1", "takeover:a")
    assert store.shop_hold("pdd-1") is None
    c = store.claim("w")
    assert c is not None and c.id == t1


def test_a_hold_runs_out_unless_renewed(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    tid = store.submit(spec(shop="pdd-1"))
    store.hold_shop("pdd-1", "takeover:a", lease_s=30)
    clock.advance(20)
    store.hold_shop("pdd-1", "takeover:a", lease_s=30)   # renewed: 30 s from now
    clock.advance(20)
    assert store.claim("w") is None
    assert store.shop_hold("pdd-1") is not None
    clock.advance(11)                                    # the holder died: nobody renews
    assert store.shop_hold("pdd-1") is None
    c = store.claim("w")
    assert c is not None and c.id == tid and store.task(tid).state is TaskState.RUNNING


def test_one_holder_at_a_time(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    store.hold_shop("pdd-1", "takeover:a", lease_s=30, what="takeover on host-a")
    with pytest.raises(Refused, match="host-a"):
        store.hold_shop("pdd-1", "takeover:b", lease_s=30)
    store.release_shop_hold("pdd-1", "takeover:b")       # not its hold: nothing happens
    assert store.shop_hold("pdd-1") is not None
    clock.advance(31)
    store.hold_shop("pdd-1", "takeover:b", lease_s=30)   # the old one ran out
    h = store.shop_hold("pdd-1")
    assert h is not None and h.owner == "takeover:b"


def test_hold_requests_are_checked(store_factory: StoreFactory) -> None:
    store = store_factory()
    for kw, field in (({"owner": "", "lease_s": 5}, "owner"),
                      ({"owner": "a", "lease_s": 0}, "lease_s"),
                      ({"owner": "a", "lease_s": float("inf")}, "lease_s"),
                      ({"owner": "a", "lease_s": 5, "what": "x" * 500}, "what")):
        with pytest.raises(InvalidInput) as err:
            store.hold_shop("pdd-1", **kw)  # type: ignore[arg-type]
        assert err.value.field == field
    with pytest.raises(InvalidInput):
        store.hold_shop("no-such-shop", "a", lease_s=5)
    assert store.shop_hold("pdd-1") is None


def test_the_shops_rows_show_a_live_hold_read_with_them(
        store_factory: StoreFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Shops view's rows carry the hold (who, until when) from the read that lists the
    shops, not from a read per row; a hold that ran out or was released is not shown."""
    store = store_factory()
    store.hold_shop("pdd-1", "takeover:a", lease_s=30, what="takeover of ticket #3 on host-a")

    def per_row(*_a: object) -> None:
        raise AssertionError("shop_rows read a hold per row")
    monkeypatch.setattr(store, "shop_hold", per_row)
    rows = {r.name: r for r in store.shop_rows()}
    held = rows["pdd-1"].hold
    assert held is not None and (held.owner, held.what) == ("takeover:a",
                                                            "takeover of ticket #3 on host-a")
    assert held.until == pytest.approx(clock.now() + 30)
    assert all(r.hold is None for n, r in rows.items() if n != "pdd-1")
    clock.advance(31)                                    # ran out: not shown
    assert all(r.hold is None for r in store.shop_rows())
    store.hold_shop("pdd-2", "takeover:b", lease_s=30)
    assert [r.name for r in store.shop_rows() if r.hold is not None] == ["pdd-2"]
    store.release_shop_hold("pdd-2", "takeover:b")
    assert all(r.hold is None for r in store.shop_rows())
