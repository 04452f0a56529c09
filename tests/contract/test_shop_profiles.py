"""Every store keeps a shop's profile (#17) and its encrypted proxy password, so every worker
of a fleet applies the same profile."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from core.profiles import ShopProfile
from core.store import TaskState
from core.store.base import Store
from tests.contract.conftest import StoreFactory
from tests.helpers import spec

PROFILE = ShopProfile(proxy="http://u@127.0.0.1:8899", locale="en-US",
                      timezone="America/New_York", user_agent="UA/1", viewport=(1280, 720),
                      geolocation=(40.7, -74.0), headers=(("X-Shop", "one"),))


def test_a_shops_profile_and_proxy_password_are_kept(store: Store) -> None:
    assert store.shop("pdd-1").profile == ShopProfile()
    assert not store.shop("pdd-1").has_proxy_password
    assert store.shop_proxy_password_enc("pdd-1") is None
    rec = store.set_shop_profile("pdd-1", PROFILE, proxy_password_enc=b"\x00token\xff")
    assert rec.profile == PROFILE and rec.has_proxy_password
    assert store.shop("pdd-1").profile == PROFILE
    assert [s.profile for s in store.shops() if s.name == "pdd-1"] == [PROFILE]
    assert store.shop_proxy_password_enc("pdd-1") == b"\x00token\xff"
    assert store.shop("pdd-2").profile == ShopProfile()
    # the shop's own password is another thing
    assert store.shop_password_enc("pdd-1") is None
    # a new proxy without a password drops the old one
    rec = store.set_shop_profile("pdd-1", PROFILE, proxy_password_enc=None)
    assert not rec.has_proxy_password and store.shop_proxy_password_enc("pdd-1") is None
    # a profile without a proxy never keeps a proxy password
    rec = store.set_shop_profile("pdd-1", ShopProfile(locale="de-DE"),
                                 proxy_password_enc=b"stale")
    assert rec.profile == ShopProfile(locale="de-DE") and not rec.has_proxy_password
    assert store.shop_proxy_password_enc("pdd-1") is None


def test_profiles_of_unknown_shops_are_refused(store: Store) -> None:
    with pytest.raises(InvalidInput, match="no shop"):
        store.set_shop_profile("nope", PROFILE, proxy_password_enc=None)
    with pytest.raises(InvalidInput, match="no shop"):
        store.shop_proxy_password_enc("nope")


def test_claims_skip_shops_whose_proxy_is_down_and_probe_one(
        store_factory: StoreFactory) -> None:
    """A shop's proxy breaker (#17) holds that shop's tasks only: the other shop of the same
    domain is still served; half-open, the shop gives one probe task."""
    store = store_factory(priority={"aging_per_min": 0}, queue={"max_tasks_per_shop": 2})
    a1 = store.submit(spec("reply_customer", "pdd-1"))
    a2 = store.submit(spec("reply_customer", "pdd-1"))
    b = store.submit(spec("collect_data", "pdd-2"))
    got = store.claim_many("w", 10, exclude_shops=["pdd-1"])
    assert [t.id for t in got] == [b]
    assert store.task(a1).state is TaskState.QUEUED and store.task(a2).state is TaskState.QUEUED
    got = store.claim_many("w", 10, probe_shops=["pdd-1"])
    assert [t.id for t in got] == [a1]           # one probe, though the shop may run two
    assert store.task(a2).state is TaskState.QUEUED
    assert [t.id for t in store.claim_many("w", 10)] == [a2]
