"""Every store keeps a shop's profile (#17) and its encrypted proxy password, so every worker
of a fleet applies the same profile."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from core.profiles import ShopProfile
from core.store.base import Store

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
