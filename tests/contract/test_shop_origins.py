"""Every store keeps a shop's allowed origins (normalised), and the submission check that
every store runs refuses a URL outside them."""

from __future__ import annotations

import json

import pytest

from core.config import Settings
from core.errors import InvalidInput, SpecError
from core.specs import parse_specs
from core.store.base import Store
from core.validation import FlowChecker
from tests.contract.conftest import StoreFactory


def test_allowed_origins_are_kept_normalised(store: Store) -> None:
    assert store.shop("pdd-1").allowed_origins == ()
    rec = store.set_shop_origins("pdd-1", ["https://CDN.example.com/a", "http://x.test:81",
                                           "https://cdn.example.com:443"])
    assert rec.allowed_origins == ("https://cdn.example.com:443", "http://x.test:81")
    assert store.shop("pdd-1").allowed_origins == rec.allowed_origins
    assert [s.allowed_origins for s in store.shops() if s.name == "pdd-1"] == [
        rec.allowed_origins]
    assert store.shop("pdd-2").allowed_origins == ()
    with pytest.raises(InvalidInput, match="allowed_origins"):
        store.set_shop_origins("pdd-1", ["file:///etc"])
    assert store.shop("pdd-1").allowed_origins == rec.allowed_origins
    with pytest.raises(InvalidInput, match="no shop"):
        store.set_shop_origins("nope", [])
    assert store.set_shop_origins("pdd-1", []).allowed_origins == ()


def test_submission_refuses_a_url_outside_the_shops_origins(
        store_factory: StoreFactory) -> None:
    store = store_factory(validator=FlowChecker(Settings()))
    task = {"type": "collect_data", "shop": "pdd-1", "steps": [
        {"action": "navigate", "url": "http://pdd.shopfleet.test/shop/pdd-1/x"},
        {"action": "navigate", "url": "https://cdn.example.com/x"}]}
    with pytest.raises(SpecError, match=r"steps\[1\] \(navigate\)\.url: origin https://cdn"):
        store.submit_many(parse_specs(json.dumps(task)))
    store.set_shop_origins("pdd-1", ["https://cdn.example.com"])
    assert len(store.submit_many(parse_specs(json.dumps(task)))) == 1
