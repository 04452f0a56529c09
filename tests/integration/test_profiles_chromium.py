"""Shop profiles on real Chromium (#17): one shop through a real proxy (proxy.py, with a
password) and one direct, in the same browser process at the same time, against the demo
site's echo page. Each page reports its own locale, time zone and user agent; the site's
request log shows the proxy's ``Via`` for the proxied shop only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.browser.pool import BrowserPool
from core.config import Settings
from core.demo import demo_settings
from core.demosite import DemoSite
from core.profiles import ShopProfile, context_options_for
from core.store.records import ShopRecord
from core.testing.proxy_server import LoopbackProxy
from tests.security.helpers import SECRET, leaks

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSite]:
    with DemoSite() as s:
        yield s


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[LoopbackProxy]:
    with LoopbackProxy(tmp_path / "proxy", user="shop-a", password=SECRET) as p:
        yield p


def record(name: str, profile: ShopProfile) -> ShopRecord:
    return ShopRecord(id=1, name=name, platform="pdd", base_url="http://pdd.shopfleet.test",
                      domain="pdd.shopfleet.test", username="", has_password=False,
                      paused=False, profile=profile)


async def read_echo(page: Any, url: str) -> dict[str, Any]:
    await page.goto(url)
    await page.wait_for_selector("body[data-ready='1']", state="attached")
    return dict(await page.evaluate("window.shopfleetEcho"))


def test_two_profiles_in_one_browser_through_a_real_proxy_and_direct(
        site: DemoSite, proxy: LoopbackProxy, tmp_path: Path) -> None:
    site.reset()
    settings = demo_settings(Settings()).with_changes(
        pool={"max_browsers": 1, "warm": 1, "contexts_per_browser": 2, "step_timeout_s": 30})
    a = record("shop-a", ShopProfile(proxy=proxy.url(with_password=False), locale="en-US",
                                     timezone="America/New_York", user_agent="ShopFleetTest/A",
                                     viewport=(1024, 700)))
    b = record("shop-b", ShopProfile(locale="ja-JP", timezone="Asia/Tokyo",
                                     user_agent="ShopFleetTest/B"))
    opt_a = context_options_for(a, settings, proxy_password=SECRET)
    opt_b = context_options_for(b, settings)
    url = site.base_url("pdd", "pdd-1").rsplit("/shop/", 1)[0] + "/echo"
    both_open = asyncio.Event()
    opened = 0

    async def visit(name: str, options: Any, pool: BrowserPool) -> tuple[int, dict[str, Any]]:
        nonlocal opened
        async with pool.task_context(name, options) as tc:
            opened += 1
            if opened == 2:
                both_open.set()
            await both_open.wait()  # both contexts are alive in the browser at once
            echo = await read_echo(tc.page, f"{url}?shop={name}")
            # a loopback address goes through the shop's proxy too (``<-loopback>``)
            echo["by_ip"] = await read_echo(
                tc.page, f"http://127.0.0.1:{site.port}/echo?shop={name}-ip")
            return tc.browser_id, echo

    async def main() -> list[tuple[int, dict[str, Any]]]:
        async with BrowserPool(settings.pool, settings.browser) as pool:
            return list(await asyncio.gather(visit("shop-a", opt_a, pool),
                                             visit("shop-b", opt_b, pool)))

    (browser_a, echo_a), (browser_b, echo_b) = asyncio.run(main())
    assert browser_a == browser_b  # one browser process, two profiles
    assert echo_a["navigator_language"] == "en-US"
    assert echo_a["timezone"] == "America/New_York"
    assert echo_a["user_agent"] == "ShopFleetTest/A"
    assert echo_a["viewport"] == [1024, 700]
    assert echo_a["server"]["headers"]["Accept-Language"].startswith("en-US")
    assert "proxy.py" in echo_a["server"]["headers"].get("Via", "")
    assert echo_b["navigator_language"] == "ja-JP"
    assert echo_b["timezone"] == "Asia/Tokyo"
    assert echo_b["user_agent"] == "ShopFleetTest/B"
    assert echo_b["server"]["headers"]["Accept-Language"].startswith("ja-JP")
    assert "Via" not in echo_b["server"]["headers"]
    # the site's request log: the proxy's connections for shop-a, direct ones for shop-b
    log = [r for r in site.requests() if r["path"].startswith("/echo")]
    via = {r["path"].split("=", 1)[1]: r["via"] for r in log}
    assert "proxy.py" in via["shop-a"] and via["shop-b"] == ""
    assert "proxy.py" in via["shop-a-ip"] and via["shop-b-ip"] == ""
    assert "proxy.py" in echo_a["by_ip"]["server"]["headers"].get("Via", "")
    # and the proxy's own log has shop-a's request (and none of shop-b's)
    text = proxy.log_text()
    assert "/echo?shop=shop-a" in text and "shop=shop-b" not in text
    assert not leaks(text) and not leaks(json.dumps(echo_a))


def test_a_proxy_killed_mid_run_holds_only_its_shop_and_no_ticket_and_no_leak(
        site: DemoSite, proxy: LoopbackProxy, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """The engine on real Chromium: pdd-1 goes through proxy.py (with a password), pdd-2 (same
    platform and domain) and temu-1 go direct. The proxy is killed once pdd-1 finished a task:
    pdd-1's other tasks wait (no attempt spent, no ticket) while the others finish; back on
    its port, the proxy's half-open probe lets them finish. The password is nowhere."""
    import logging

    from core import build_engine, open_store
    from core.demo import register_demo_shops
    from core.engine import BreakerState
    from core.events import Event, ShopProxyChanged
    from core.profile_store import save_profile
    from core.profiles import ProfileInput, parse_profile_fields, shop_json
    from core.store import TaskState
    from core.vault import Vault
    from tests.helpers import collect, run_with, wait_until
    from tests.security.helpers import files_leaking

    caplog.set_level(logging.DEBUG)
    site.reset()
    settings = demo_settings(Settings()).with_changes(
        breakers={"failures": 2, "window_s": 60, "backoff_s": 1, "backoff_max_s": 2},
        queue={"max_attempts": 3, "retry_backoff_s": 0.2, "retry_backoff_max_s": 1},
        pool={"max_browsers": 2, "warm": 1, "step_timeout_s": 15})
    store = open_store(settings, tmp_path / "e.db")
    vault = Vault.open(tmp_path)
    register_demo_shops(store, site, vault)
    change = parse_profile_fields(store.shop("pdd-1").profile,
                                  ProfileInput(proxy=proxy.url(), locale="en-US"))
    save_profile(store, "pdd-1", change, vault=vault)
    proxied = store.submit_many([collect("pdd-1", i) for i in (1, 2, 3, 4)])
    direct = store.submit_many([collect("pdd-2", i) for i in (1, 2, 3)]
                               + [collect("temu-1", i) for i in (1, 2, 3)])
    engine = build_engine(settings, store, home=tmp_path)
    seen: list[Event] = []
    engine.bus.subscribe(seen.append)

    def done(ids: list[int]) -> bool:
        return all(store.task(t).state is TaskState.DONE for t in ids)

    async def scenario() -> None:
        await wait_until(lambda: any(store.task(t).state is TaskState.DONE for t in proxied))
        await asyncio.to_thread(proxy.kill)
        await wait_until(lambda: any(isinstance(e, ShopProxyChanged) and e.down for e in seen))
        await wait_until(lambda: done(direct))
        waiting = [store.task(t) for t in proxied if store.task(t).state is not TaskState.DONE]
        assert waiting, "pdd-1's tasks wait for its proxy"
        assert all(t.state in (TaskState.QUEUED, TaskState.RUNNING) for t in waiting)
        assert "pdd-1" in engine.proxy_trouble()
        assert engine.breakers.get("pdd.shopfleet.test").state is BreakerState.CLOSED
        await asyncio.to_thread(proxy.start)  # back on the same port
        await wait_until(lambda: done(proxied))

    run_with(engine, scenario)
    assert store.ticket_book().tickets(state=None) == []
    assert all(store.task(t).attempts == 1 for t in proxied + direct)  # none spent on the proxy
    changes = [(e.shop, e.down) for e in seen if isinstance(e, ShopProxyChanged)]
    assert changes[0] == ("pdd-1", True) and changes[-1] == ("pdd-1", False)
    assert {e.shop for e in seen if isinstance(e, ShopProxyChanged)} == {"pdd-1"}
    # pdd-1's requests came through the proxy, pdd-2's did not. proxy.py adds its Via header
    # to the first request of a kept-alive connection only, so connections (the site
    # its request log numbers them) are what is told apart.
    reqs = [r for r in site.requests(platform="pdd") if "/shop/" in r["path"]]
    proxied_conns = {r["conn"] for r in reqs if "proxy.py" in r["via"]}
    wrong = [(r["path"], r["conn"]) for r in reqs
             if (r["conn"] in proxied_conns) != r["path"].startswith("/shop/pdd-1/")]
    assert proxied_conns and wrong == []
    # the proxy password: not in logs, --json, evidence or the database
    assert not leaks(caplog.text)
    assert not leaks(json.dumps([shop_json(s) for s in store.shops()]))
    store.close()
    assert files_leaking(tmp_path) == []


def test_shop_check_reports_what_the_site_sees_and_a_dead_proxy(
        site: DemoSite, proxy: LoopbackProxy, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from core.cli import main

    db = str(tmp_path / "c.db")
    echo = site.base_url("pdd", "pdd-1").rsplit("/shop/", 1)[0] + "/echo"
    assert main(["shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                 site.base_url("pdd", "pdd-1"), "--proxy", proxy.url(), "--locale", "de-DE",
                 "--timezone", "Europe/Berlin", "--db", db]) == 0
    assert main(["shop", "add", "pdd-2", "--platform", "pdd", "--base-url",
                 site.base_url("pdd", "pdd-2"), "--db", db]) == 0
    capsys.readouterr()
    code = main(["shop", "check", "pdd-1", "--echo-url", echo, "--json", "--db", db])
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert code == 0, got
    assert got["proxy_answers"] is True and got["ok"] is True
    assert got["navigator_language"] == "de-DE" and got["timezone"] == "Europe/Berlin"
    assert got["accept_language"].startswith("de-DE")
    assert got["exit_address"] == "127.0.0.1"
    assert got["warnings"] == ["pdd: no proxy while other shops of the platform use one: pdd-2"]
    assert not leaks(out) and not leaks(err)

    proxy.kill()
    code = main(["shop", "check", "pdd-1", "--echo-url", echo, "--db", db])
    out, err = capsys.readouterr()
    assert code == 1
    assert "does NOT answer" in out and "ERR_PROXY_CONNECTION_FAILED" in out
    assert not leaks(out) and not leaks(err)


def test_run_flow_opens_the_shop_with_its_profile(
        site: DemoSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``shopfleet run-flow`` (core.workbench, which record and pick share) makes the shop's
    context with its profile, like its tasks get it: the echo page on the shop's own origin
    reports the shop's locale, time zone and user agent."""
    from core.cli import main
    from tests.integration.test_run_flow_cli import setup_shop

    site.reset()
    db = str(tmp_path / "rf.db")
    setup_shop(db, site, monkeypatch)
    assert main(["shop", "set", "temu-2", "--locale", "en-GB", "--timezone",
                 "Pacific/Auckland", "--user-agent", "ShopFleetTest/RunFlow", "--db", db]) == 0
    origin = site.base_url("temu", "temu-2").rsplit("/shop/", 1)[0]
    flow = tmp_path / "echo_flow.json"
    flow.write_text(json.dumps({
        "name": "echo_flow", "start_url": f"{origin}/echo",
        "steps": [{"action": "navigate", "url": f"{origin}/echo"},
                  {"action": "wait_element", "locator": "body[data-ready='1']",
                   "state": "attached"},
                  {"action": "extract", "locator": "#echo", "into": "echo"}]}))
    capsys.readouterr()
    code = main(["run-flow", str(flow), "--shop", "temu-2", "--db", db])
    out = capsys.readouterr().out
    assert code == 0, out
    echo = json.loads(json.loads(out.split("done; results:\n", 1)[1])["echo"])
    assert echo["navigator_language"] == "en-GB"
    assert echo["timezone"] == "Pacific/Auckland"
    assert echo["user_agent"] == "ShopFleetTest/RunFlow"
    assert echo["server"]["headers"]["Accept-Language"].startswith("en-GB")
