"""A shop's profile (#17): operator input checked field by field, platform defaults merged,
and the options a context is made with (proxy with ``<-loopback>``, Accept-Language from the
locale, geolocation granted) — never the proxy password in a ``repr`` or in ``shops --json``."""

from __future__ import annotations

import json

import pytest

from core.config import Settings, settings_from_dict
from core.errors import ConfigError, InvalidInput
from core.profiles import (
    ContextOptions,
    ProfileInput,
    ShopProfile,
    check_exits,
    context_options_for,
    exit_warnings,
    parse_profile_fields,
    parse_proxy,
    profile_input_from_form,
    shop_json,
)
from core.store.records import ShopRecord

EMPTY = ShopProfile()


def shop(name: str = "pdd-1", platform: str = "pdd", profile: ShopProfile = EMPTY,
         **kw: object) -> ShopRecord:
    return ShopRecord(id=1, name=name, platform=platform, base_url="http://x.test",
                      domain="x.test", username="", has_password=False, paused=False,
                      profile=profile, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("given", "field", "reason"), [
    (ProfileInput(proxy="ftp://h:1"), "--proxy", "must start with http://, https:// or socks5"),
    (ProfileInput(proxy="http://"), "--proxy", "names no host"),
    (ProfileInput(proxy="http://h:99999"), "--proxy", "is not a proxy URL"),
    (ProfileInput(proxy="http://h:1/path"), "--proxy", "nothing after it"),
    (ProfileInput(proxy="http://h :1"), "--proxy", "spaces"),
    (ProfileInput(proxy="socks5://u:pw@h:1080"), "--proxy", "not supported by Chromium"),
    (ProfileInput(locale="chinese"), "--locale", "not a locale"),
    (ProfileInput(locale="zh_CN"), "--locale", "not a locale"),
    (ProfileInput(timezone="Mars/Base"), "--timezone", "unknown time zone"),
    (ProfileInput(timezone="../../etc/passwd"), "--timezone", "not a time zone"),
    (ProfileInput(user_agent="a\r\nX-Evil: 1"), "--user-agent", "printable"),
    (ProfileInput(viewport="big"), "--viewport", "WIDTHxHEIGHT"),
    (ProfileInput(viewport="10x10"), "--viewport", "between"),
    (ProfileInput(geolocation="91,0"), "--geolocation", "latitude"),
    (ProfileInput(geolocation="nan,1"), "--geolocation", "latitude"),
    (ProfileInput(headers=["Cookie: a=1"]), "--header", "browser's own"),
    (ProfileInput(headers=["Accept-Language: en"]), "--header", "follows the locale"),
    (ProfileInput(headers=["X-A: b\nc"]), "--header", "control characters"),
    (ProfileInput(headers=["no colon"]), "--header", "NAME:VALUE"),
])
def test_bad_input_names_the_field(given: ProfileInput, field: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_profile_fields(ShopProfile(), given)
    assert err.value.field == field
    assert reason in err.value.reason


def test_a_bad_proxy_is_named_without_repeating_its_password() -> None:
    with pytest.raises(InvalidInput) as err:
        parse_proxy("ftp://user:hunter2@h:1")
    assert "hunter2" not in str(err.value)


def test_the_proxy_password_is_split_off_and_kept_out_of_the_profile() -> None:
    change = parse_profile_fields(ShopProfile(), ProfileInput(
        proxy="http://us%40er:p%3Ass@127.0.0.1:8899", locale="en-US",
        timezone="America/New_York", user_agent="UA/1", viewport="1280x720",
        geolocation="40.7,-74.0", headers=["X-Shop: one"]))
    p = change.profile
    assert p.proxy == "http://us%40er@127.0.0.1:8899"
    assert change.proxy_changed and change.proxy_password == "p:ss"
    assert "p:ss" not in repr(change) and "p:ss" not in p.to_json()
    assert ShopProfile.from_json(p.to_json()) == p
    # a field left out stays; "" clears it
    again = parse_profile_fields(p, ProfileInput(locale="", viewport="800x600"))
    assert again.profile.locale == "" and again.profile.viewport == (800, 600)
    assert again.profile.timezone == "America/New_York" and not again.proxy_changed


def test_context_options_follow_profile_then_platform_then_builtins() -> None:
    settings = settings_from_dict({"platforms": {"pdd": {
        "locale": "zh-CN", "timezone": "Asia/Shanghai", "viewport": "1366x768",
        "headers": {"X-Platform": "pdd"}}}})
    plain = context_options_for(shop(platform="temu"), settings)
    assert plain == ContextOptions()  # zh-CN, system time zone, the browser's UA
    assert plain.playwright_kwargs() == {
        "locale": "zh-CN", "extra_http_headers": {"Accept-Language": "zh-CN,zh;q=0.9"}}
    profiled = ShopProfile(proxy="http://u@127.0.0.1:9", locale="en-US",
                           geolocation=(1.5, 2.5), headers=(("X-Shop", "a"),))
    o = context_options_for(shop(profile=profiled), settings, proxy_password="pw")
    kw = o.playwright_kwargs()
    assert kw["locale"] == "en-US" and kw["timezone_id"] == "Asia/Shanghai"
    assert kw["viewport"] == {"width": 1366, "height": 768}
    assert kw["extra_http_headers"] == {"X-Platform": "pdd", "X-Shop": "a",
                                        "Accept-Language": "en-US,en;q=0.9"}
    assert kw["geolocation"] == {"latitude": 1.5, "longitude": 2.5}
    assert kw["permissions"] == ["geolocation"]
    assert kw["proxy"] == {"server": "http://127.0.0.1:9", "bypass": "<-loopback>",
                           "username": "u", "password": "pw"}
    assert "pw" not in repr(o).replace("proxy_password", "")
    assert "pw" not in json.dumps(o.describe())


def test_platform_defaults_are_checked_when_the_config_is_read() -> None:
    with pytest.raises(ConfigError, match="timezone"):
        settings_from_dict({"platforms": {"pdd": {"timezone": "Nowhere/Land"}}})
    with pytest.raises(ConfigError, match="headers"):
        settings_from_dict({"platforms": {"pdd": {"headers": {"Host": "x"}}}})


def test_shops_json_shows_the_proxy_without_a_password() -> None:
    rec = shop(profile=ShopProfile(proxy="http://u@h:1"), has_proxy_password=True)
    out = json.dumps(shop_json(rec))
    assert '"proxy": "http://u@h:1"' in out and '"has_proxy_password": true' in out


def test_exit_warnings_name_shared_exits_and_shops_going_direct() -> None:
    a = shop("a", profile=ShopProfile(proxy="http://u@h:1"))
    b = shop("b", profile=ShopProfile(proxy="http://v@h:1"))
    c = shop("c")
    d = shop("d", platform="temu")
    warnings = exit_warnings([a, b, c, d])
    assert warnings == ["pdd: shops a, b share proxy http://h:1",
                        "pdd: no proxy while other shops of the platform use one: c"]
    assert exit_warnings([a, d]) == []
    # measured exits (shop check) count over the configured proxies
    assert exit_warnings([a, d], exits={"a": "1.2.3.4", "d": "1.2.3.4"}) == []
    assert exit_warnings([a, shop("e", profile=ShopProfile(proxy="http://h:2"))],
                         exits={"a": "9.9.9.9", "e": "9.9.9.9"}) == [
        "pdd: shops a, e share exit 9.9.9.9"]


def test_settings_default_has_profiles_section() -> None:
    assert Settings().profiles.echo_url == ""
    with pytest.raises(ConfigError, match="echo_url"):
        settings_from_dict({"profiles": {"echo_url": "file:///etc/passwd"}})


def test_a_shop_list_row_becomes_profile_input() -> None:
    from core.profiles import profile_input_from_row

    given = profile_input_from_row({"locale": "en-US", "viewport": "", "headers": "A: 1; B: 2"})
    change = parse_profile_fields(ShopProfile(viewport=(800, 600), timezone="Asia/Tokyo"),
                                  given, prefix="row 3: ")
    assert change.profile == ShopProfile(locale="en-US", timezone="Asia/Tokyo",
                                         headers=(("A", "1"), ("B", "2")))
    with pytest.raises(InvalidInput) as err:
        parse_profile_fields(ShopProfile(), profile_input_from_row({"timezone": "Mars/Base"}),
                             prefix="row 3: ")
    assert err.value.field == "row 3: timezone"


def test_check_exits_names_the_shops_of_each_warning() -> None:
    a = shop("a", profile=ShopProfile(proxy="http://u@h:1"))
    b = shop("b", profile=ShopProfile(proxy="http://v@h:1"))
    c = shop("c")
    warnings = check_exits([c, b, a, shop("d", platform="temu")])
    assert [(w.platform, w.shops, w.kind, w.address) for w in warnings] == [
        ("pdd", ("a", "b"), "proxy", "http://h:1"), ("pdd", ("c",), "direct", "")]


def form(**kw: object) -> ProfileInput:
    fields: dict[str, object] = {"shown_proxy": "", "proxy": "", "proxy_password": "",
                                 "locale": "", "timezone": "", "user_agent": "",
                                 "viewport": "", "geolocation": "", "headers": []}
    return profile_input_from_form(**{**fields, **kw})  # type: ignore[arg-type]


def test_the_dialog_keeps_the_stored_proxy_password_unless_told_otherwise() -> None:
    shown = "http://shop-user@127.0.0.1:8899"
    # left as shown, no password typed: the proxy (and its stored password) is unchanged
    assert form(shown_proxy=shown, proxy=shown, had_password=True).proxy is None
    # a password typed goes with the proxy, quoted into its URL
    typed = form(shown_proxy=shown, proxy=shown, proxy_password="p@ss:w/rd")
    change = parse_profile_fields(EMPTY, typed, prefix="")
    assert change.proxy_changed and change.proxy_password == "p@ss:w/rd"
    assert change.profile.proxy == shown
    # a changed proxy never takes the stored password along to another server
    with pytest.raises(InvalidInput) as e:
        form(shown_proxy=shown, proxy="http://shop-user@10.0.0.1:8899", had_password=True)
    assert e.value.field == "proxy_password"
    with pytest.raises(InvalidInput) as e:
        form(proxy="http://10.0.0.1:8899", proxy_password="pw")  # no user to send it as
    assert e.value.field == "proxy_password"
    # cleared: no proxy, whatever was typed as its password
    assert form(shown_proxy=shown, proxy=" ", proxy_password="pw").proxy == ""
    # the other fields are all given (an empty one clears it); blank header lines dropped
    got = form(locale="en-US", headers=["X-A: 1", "  "])
    assert (got.locale, got.timezone, got.headers) == ("en-US", "", ["X-A: 1"])
