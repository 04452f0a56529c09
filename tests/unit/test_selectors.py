"""Shop groups: tags and selectors (core.selectors)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import SpecError
from core.selectors import (
    ShopRef,
    normalize_tag,
    normalize_tags,
    parse_selector,
    select_shops,
)

SHOPS = [
    ShopRef("pdd-1", "pdd", frozenset({"north", "vip"})),
    ShopRef("pdd-2", "pdd", frozenset({"south"})),
    ShopRef("pdd-3", "PDD", frozenset({"north", "paused"})),
    ShopRef("temu-1", "temu", frozenset({"north"})),
    ShopRef("temu-2", "temu", frozenset()),
    ShopRef("tiktok-华北", "tiktok", frozenset({"华北"})),
]


def names(selector: str) -> list[str]:
    return [s.name for s in select_shops(selector, SHOPS)]


@pytest.mark.parametrize(("selector", "expected"), [
    ("pdd-*", ["pdd-1", "pdd-2", "pdd-3"]),
    ("platform:pdd", ["pdd-1", "pdd-2", "pdd-3"]),          # platform ignores case
    ("platform:PDD", ["pdd-1", "pdd-2", "pdd-3"]),
    ("tag:north", ["pdd-1", "pdd-3", "temu-1"]),
    ("TAG:North", ["pdd-1", "pdd-3", "temu-1"]),
    ("platform:pdd tag:north", ["pdd-1", "pdd-3"]),           # space: AND
    ("platform:pdd+tag:north", ["pdd-1", "pdd-3"]),           # plus: AND
    ("tag:north,tag:south", ["pdd-1", "pdd-2", "pdd-3", "temu-1"]),  # comma: OR
    ("platform:pdd -tag:paused", ["pdd-1", "pdd-2"]),         # minus: NOT
    ("platform:pdd !tag:paused", ["pdd-1", "pdd-2"]),         # bang: NOT
    ("-tag:north", ["pdd-2", "temu-2", "tiktok-华北"]),        # NOT alone: all but those
    ("platform:temu tag:north, pdd-2", ["pdd-2", "temu-1"]),
    ("*", [s.name for s in SHOPS]),
    ("shop:temu-?", ["temu-1", "temu-2"]),
    ("pdd-[12]", ["pdd-1", "pdd-2"]),
    ("tag:华北", ["tiktok-华北"]),
    ("tag:no*", ["pdd-1", "pdd-3", "temu-1"]),                # tag globs
    ("platform:t*", ["temu-1", "temu-2", "tiktok-华北"]),
    ("PDD-*", None),                                          # names are case-sensitive
])
def test_selectors_pick_the_shops_an_operator_means(selector: str,
                                                    expected: list[str] | None) -> None:
    if expected is None:
        with pytest.raises(SpecError):
            names(selector)
        return
    assert names(selector) == sorted(expected)


def test_canonical_text_round_trips() -> None:
    sel = parse_selector("platform:PDD+tag:North, !pdd-2")
    assert str(sel) == "platform:pdd tag:north,shop:* -shop:pdd-2"
    again = parse_selector(str(sel))
    assert [sel.matches(s) for s in SHOPS] == [again.matches(s) for s in SHOPS]
    assert sel.text == "platform:PDD+tag:North, !pdd-2"


@pytest.mark.parametrize(("selector", "reason"), [
    ("", "empty selector"),
    ("   ", "empty selector"),
    ("tag:north,,tag:south", "term 2"),
    ("tag:north,", "term 2"),
    ("+", "term 1"),
    ("color:red", "unknown kind 'color:'"),
    ("tag:", "tag: needs a value"),
    ("platform:", "platform: needs a value"),
    ("-", "must be followed by"),
    ("tag:a:b", "not a name, tag or glob"),
    ("tag:'north'", "not a name, tag or glob"),
])
def test_bad_selectors_name_the_field_and_why(selector: str, reason: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_selector(selector, field="--shops")
    assert err.value.field == "--shops"
    assert reason in err.value.reason


def test_a_selector_that_picks_no_shop_is_an_error_not_an_empty_firing() -> None:
    with pytest.raises(SpecError) as err:
        select_shops("tag:west", SHOPS)
    assert err.value.field == "--shops"
    assert "'tag:west' matches none of the 6 shops" in err.value.reason
    with pytest.raises(SpecError, match="matches none of the 0 shops"):
        select_shops("*", [])


def test_select_sorts_by_name_whatever_the_input_order() -> None:
    assert [s.name for s in select_shops("*", list(reversed(SHOPS)))] == \
        sorted(s.name for s in SHOPS)


@pytest.mark.parametrize(("tag", "stored"), [
    ("North", "north"), (" vip ", "vip"), ("华北", "华北"), ("a.b-c_d", "a.b-c_d"),
    ("Ｎ", "ｎ"),  # full-width letters are letters (lower-cased, kept full-width)
    ("e\u0301", "\u00e9"),  # NFC: a combining accent is stored composed
])
def test_tags_are_normalised(tag: str, stored: str) -> None:
    assert normalize_tag(tag) == stored


@pytest.mark.parametrize(("tag", "reason"), [
    ("", "empty"), ("   ", "empty"), ("-north", "start with"), ("_x", "start with"),
    ("north east", "only letters"), ("a,b", "only letters"), ("a:b", "only letters"),
    ("a*", "only letters"), ("x" * 41, "longer than 40"),
])
def test_bad_tags_are_refused(tag: str, reason: str) -> None:
    with pytest.raises(SpecError) as err:
        normalize_tag(tag, field="tag")
    assert err.value.field == "tag"
    assert reason in err.value.reason


def test_tag_lists_dedupe_sort_and_name_the_bad_position() -> None:
    assert normalize_tags(["b", "A", "a"]) == ("a", "b")
    with pytest.raises(SpecError) as err:
        normalize_tags(["ok", "bad tag"])
    assert err.value.field == "tags[1]"
    with pytest.raises(SpecError, match="at most 32 tags"):
        normalize_tags([f"t{i}" for i in range(33)])


_tag = st.from_regex(r"[a-z0-9][a-z0-9_.\-]{0,10}", fullmatch=True)
_shop = st.builds(ShopRef, name=st.from_regex(r"[a-z]{1,4}-[0-9]{1,2}", fullmatch=True),
                  platform=st.sampled_from(["pdd", "temu", "tiktok"]),
                  tags=st.frozensets(_tag, max_size=3))


@given(shop=_shop, tag=_tag, platform=st.sampled_from(["pdd", "temu", "tiktok"]))
def test_operators_mean_boolean_logic(shop: ShopRef, tag: str, platform: str) -> None:
    a, b = f"tag:{tag}", f"platform:{platform}"
    in_a, in_b = tag in shop.tags, shop.platform == platform
    assert parse_selector(a).matches(shop) is in_a
    assert parse_selector(f"{a} {b}").matches(shop) is (in_a and in_b)
    assert parse_selector(f"{a},{b}").matches(shop) is (in_a or in_b)
    assert parse_selector(f"-{a}").matches(shop) is (not in_a)
    assert parse_selector(f"{b} !{a}").matches(shop) is (in_b and not in_a)
    assert parse_selector(shop.name).matches(shop)
    # a tag is always a valid selector value once normalised
    assert parse_selector(f"tag:{normalize_tag(tag)}").matches(
        ShopRef("x", "y", frozenset({normalize_tag(tag)})))
