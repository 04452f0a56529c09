"""The demo seller site: pages, login, recorded writes, fault switches, control API, CLI.

Most tests talk plain HTTP with urllib, routed through the site itself as an HTTP proxy so the
real host names (``pdd.shopfleet.test``) and per-host cookies work without DNS. Two tests drive
Debian's Chromium with the host-resolver rule: the shipped flows, step by step, and the crash
page.
"""

from __future__ import annotations

import hashlib
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.demosite import (
    FAULTS,
    PLATFORM_HOSTS,
    DemoSite,
    assets_dir,
    host_resolver_rules,
    register_cli,
    stats_rows,
)
from core.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSite]:
    with DemoSite() as s:
        yield s


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> None:
    if "site" in request.fixturenames:
        request.getfixturevalue("site").reset()


@dataclass
class Page:
    status: int
    url: str
    body: str
    headers: dict[str, str]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Client:
    """A tiny browser: cookies per host, the site as proxy, optional redirect following."""

    def __init__(self, site: DemoSite, *, follow: bool = True) -> None:
        self.site = site
        handlers: list[urllib.request.BaseHandler] = [
            urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{site.port}"}),
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
        ]
        if not follow:
            handlers.append(_NoRedirect())
        self.opener = urllib.request.build_opener(*handlers)

    def open(self, url: str, data: bytes | None = None,
             headers: dict[str, str] | None = None) -> Page:
        req = urllib.request.Request(url, data=data, headers=headers or {})
        try:
            with self.opener.open(req, timeout=30) as resp:
                return Page(resp.status, resp.url, resp.read().decode(), dict(resp.headers))
        except urllib.error.HTTPError as err:
            return Page(err.code, err.url, err.read().decode(), dict(err.headers))

    def get(self, url: str) -> Page:
        return self.open(url)

    def post(self, url: str, fields: dict[str, str]) -> Page:
        return self.open(url, urllib.parse.urlencode(fields).encode())

    def login(self, platform: str, shop: str, password: str | None = None) -> Page:
        base = self.site.base_url(platform, shop)
        return self.post(f"{base}/login", {"username": shop,
                                           "password": password or f"demo-pass-{shop}"})


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = "----shopfleet-test-boundary-7f3a"
    out = b""
    for name, value in fields.items():
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                f"{value}\r\n").encode()
    for name, (filename, content) in files.items():
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                f"filename=\"{filename}\"\r\nContent-Type: image/png\r\n\r\n").encode()
        out += content + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def has_id(body: str, ident: str) -> bool:
    return f'id="{ident}"' in body


def control(site: DemoSite, method: str, name: str, payload: object = None) -> tuple[int, Any]:
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(f"{site.control_url}/{name}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


# --- shops, hosts, login -------------------------------------------------------------------

def test_every_platform_has_three_shops_on_its_own_host(site: DemoSite) -> None:
    shops = site.shops()
    assert [s.name for s in shops] == [f"{p}-{i}" for p in ("pdd", "temu", "tiktok")
                                       for i in (1, 2, 3)]
    pdd1 = shops[0]
    assert pdd1.base_url == f"http://pdd.shopfleet.test:{site.port}/shop/pdd-1"
    assert (pdd1.username, pdd1.password) == ("pdd-1", "demo-pass-pdd-1")
    assert PLATFORM_HOSTS["tiktok"] == "tiktok.shopfleet.test"
    assert host_resolver_rules() == "MAP *.shopfleet.test 127.0.0.1"
    with pytest.raises(InvalidInput):
        site.base_url("temu", "pdd-1")


def test_a_shop_page_sends_a_logged_out_user_to_the_login_form(site: DemoSite) -> None:
    page = Client(site).get(site.base_url("pdd", "pdd-1") + "/messages/5")
    assert page.status == 200
    assert "/shop/pdd-1/login?next=%2Fshop%2Fpdd-1%2Fmessages%2F5" in page.url
    assert all(has_id(page.body, i) for i in ("username", "password", "login-btn"))


def test_login_returns_to_the_page_asked_for_and_the_session_is_per_shop(site: DemoSite) -> None:
    client = Client(site)
    base = site.base_url("pdd", "pdd-1")
    page = client.post(f"{base}/login", {"username": "pdd-1", "password": "demo-pass-pdd-1",
                                         "next": "/shop/pdd-1/messages/5"})
    assert page.url.endswith("/shop/pdd-1/messages/5")
    assert has_id(page.body, "reply") and has_id(page.body, "submit-btn")
    # Still logged in on the next visit; a different shop asks for its own login.
    assert has_id(client.get(f"{base}/stats").body, "stats")
    assert has_id(client.get(site.base_url("pdd", "pdd-2") + "/stats").body, "login-btn")
    assert [r["ok"] for r in site.logins()] == [True]


def test_a_wrong_password_shows_an_error_and_does_not_log_in(site: DemoSite) -> None:
    client = Client(site)
    page = client.login("temu", "temu-2", password="guess")
    assert 'class="login-error"' in page.body
    assert has_id(client.get(site.base_url("temu", "temu-2") + "/messages").body, "login-btn")
    assert site.logins(shop="temu-2")[0]["ok"] is False


def test_a_shop_is_only_served_on_its_platforms_host(site: DemoSite) -> None:
    wrong = f"http://temu.shopfleet.test:{site.port}/shop/pdd-1/messages"
    assert Client(site).get(wrong).status == 404
    index = Client(site).get(f"http://127.0.0.1:{site.port}/")
    assert "pdd.shopfleet.test" in index.body and "demo-pass-tiktok-3" in index.body


# --- writes --------------------------------------------------------------------------------

def test_a_reply_is_recorded_once_and_shown_on_the_message(site: DemoSite) -> None:
    client = Client(site)
    client.login("pdd", "pdd-1")
    url = site.base_url("pdd", "pdd-1") + "/messages/7"
    page = client.post(url, {"reply": "Shipped today, thanks!"})
    assert 'class="success-msg"' in page.body
    assert "Shipped today, thanks!" in page.body.split('id="sent-replies"')[1]
    client.get(page.url)  # reloading the confirmation does not post again
    [rec] = site.records()
    assert {k: rec[k] for k in ("kind", "shop", "platform", "message_id", "text")} == {
        "kind": "reply", "shop": "pdd-1", "platform": "pdd", "message_id": 7,
        "text": "Shipped today, thanks!"}
    assert isinstance(rec["at"], float)


def test_an_empty_reply_or_a_logged_out_post_writes_nothing(site: DemoSite) -> None:
    url = site.base_url("tiktok", "tiktok-1") + "/messages/3"
    logged_out = Client(site).post(url, {"reply": "hello"})
    assert has_id(logged_out.body, "login-btn")
    client = Client(site)
    client.login("tiktok", "tiktok-1")
    assert 'class="form-error"' in client.post(url, {"reply": "   "}).body
    assert site.records() == []


def test_an_upload_records_the_image_it_received(site: DemoSite) -> None:
    image = (assets_dir() / "product.png").read_bytes()
    assert image.startswith(b"\x89PNG\r\n\x1a\n")
    client = Client(site)
    client.login("temu", "temu-1")
    body, ctype = multipart({"title": "Blue mug", "price": "12.50", "category": "home"},
                            {"image": ("product.png", image)})
    page = client.open(site.base_url("temu", "temu-1") + "/products/new", body,
                       {"Content-Type": ctype})
    assert 'class="success-msg"' in page.body
    assert "Blue mug" in page.body.split('id="recent-uploads"')[1]
    [rec] = site.records(kind="upload")
    assert (rec["shop"], rec["title"], rec["price"], rec["category"]) == (
        "temu-1", "Blue mug", "12.50", "home")
    assert rec["image_bytes"] == len(image)
    assert rec["image_sha256"] == hashlib.sha256(image).hexdigest()


def test_an_upload_without_an_image_is_refused(site: DemoSite) -> None:
    client = Client(site)
    client.login("temu", "temu-1")
    body, ctype = multipart({"title": "Mug", "price": "3", "category": "home"}, {})
    page = client.open(site.base_url("temu", "temu-1") + "/products/new", body,
                       {"Content-Type": ctype})
    assert "Choose an image" in page.body
    assert site.records() == []


def test_a_campaign_signup_needs_the_agreement_and_is_recorded(site: DemoSite) -> None:
    client = Client(site)
    client.login("pdd", "pdd-3")
    url = site.base_url("pdd", "pdd-3") + "/campaigns/4"
    page = client.get(url)
    assert re.search(r'class="deadline" id="deadline" data-deadline="\d+"', page.body)
    assert '<span id="signup-status">Not registered</span>' in page.body
    assert 'class="form-error"' in client.post(url, {}).body
    assert site.records() == []
    page = client.post(url, {"agree": "yes"})
    assert 'class="success-msg"' in page.body
    assert '<span id="signup-status">Signed up</span>' in page.body
    [rec] = site.records()
    assert (rec["kind"], rec["shop"], rec["campaign_id"]) == ("campaign_signup", "pdd-3", 4)


def test_stats_pages_are_deterministic_per_shop_and_page(site: DemoSite) -> None:
    client = Client(site)
    client.login("tiktok", "tiktok-2")
    for page_no in (1, 200):
        page = client.get(site.base_url("tiktok", "tiktok-2") + f"/stats?page={page_no}")
        rows = re.findall(r'<td class="sku">([^<]+)</td><td class="views">(\d+)</td>'
                          r'<td class="orders">(\d+)</td>', page.body)
        assert [(s, int(v), int(o)) for s, v, o in rows] == stats_rows("tiktok-2", page_no)
        assert len(rows) == 20
    assert stats_rows("tiktok-2", 1) != stats_rows("tiktok-3", 1)
    # The same in another process (its own hash seed): nothing depends on the process.
    other = subprocess.run(
        [sys.executable, "-c", "import json; from core.demosite import stats_rows; "
         "print(json.dumps(stats_rows('tiktok-2', 1)))"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "7"})
    assert [tuple(r) for r in json.loads(other.stdout)] == stats_rows("tiktok-2", 1)


# --- faults ----------------------------------------------------------------------------------

def test_error_5xx_hits_only_its_platform_and_wears_off_after_times(site: DemoSite) -> None:
    site.set_fault("error_5xx", platform="pdd", status=500, times=2)
    client = Client(site)
    pdd = site.base_url("pdd", "pdd-1") + "/login"
    first, second, third = client.get(pdd), client.get(pdd), client.get(pdd)
    assert (first.status, second.status, third.status) == (500, 500, 200)
    assert 'id="site-error" data-status="500"' in first.body
    assert "Retry-After" not in first.headers
    assert client.get(site.base_url("temu", "temu-1") + "/login").status == 200
    assert site.faults() == []


def test_rate_limit_answers_429_with_retry_after(site: DemoSite) -> None:
    site.set_fault("rate_limit", retry_after=7)
    page = Client(site).get(site.base_url("tiktok", "tiktok-1") + "/stats")
    assert page.status == 429
    assert page.headers["Retry-After"] == "7"
    assert 'data-status="429" data-retry-after="7"' in page.body


def test_slow_delays_every_page(site: DemoSite) -> None:
    site.set_fault("slow", platform="temu", delay_ms=300)
    started = time.monotonic()
    page = Client(site).get(site.base_url("temu", "temu-1") + "/login")
    assert time.monotonic() - started >= 0.3
    assert page.status == 200 and has_id(page.body, "login-btn")
    assert site.requests(platform="temu")[-1]["fault"] == "slow"


def test_layout_changed_renames_locators_but_the_site_still_works(site: DemoSite) -> None:
    site.set_fault("layout_changed", platform="pdd")
    client = Client(site)
    login = client.get(site.base_url("pdd", "pdd-1") + "/messages/1")
    assert not has_id(login.body, "login-btn") and has_id(login.body, "v2-login-btn")
    assert client.login("pdd", "pdd-1").status == 200  # form field names did not change
    page = client.post(site.base_url("pdd", "pdd-1") + "/messages/1", {"reply": "ok"})
    assert 'class="v2-success-msg"' in page.body and 'class="success-msg"' not in page.body
    assert len(site.records()) == 1


def test_captcha_replaces_forms_and_blocks_writes(site: DemoSite) -> None:
    client = Client(site)
    client.login("temu", "temu-3")
    site.set_fault("captcha", platform="temu")
    url = site.base_url("temu", "temu-3") + "/messages/2"
    page = client.get(url)
    assert re.search(r'id="captcha"[^>]*data-captcha="\w+"', page.body)
    assert not has_id(page.body, "reply") and not has_id(page.body, "login-btn")
    client.post(url, {"reply": "hi"})
    assert site.records() == []


def test_crash_serves_the_crash_page_and_after_write_still_records(site: DemoSite) -> None:
    site.set_fault("crash", platform="tiktok", times=1)
    client = Client(site)
    assert "'x'.repeat(2 ** 28).split('')" in client.get(
        site.base_url("tiktok", "tiktok-1") + "/login").body
    client.login("tiktok", "tiktok-1")
    site.set_fault("crash", platform="tiktok", after_write=True, times=1)
    url = site.base_url("tiktok", "tiktok-1") + "/messages/9"
    assert has_id(client.get(url).body, "reply")  # reads are not touched by after_write
    page = client.post(url, {"reply": "sent before the crash"})
    assert has_id(page.body, "crash-page")
    assert [r["text"] for r in site.records()] == ["sent before the crash"]


def test_error_after_write_records_the_write_and_fails_the_response(site: DemoSite) -> None:
    client = Client(site)
    client.login("pdd", "pdd-2")
    site.set_fault("error_5xx", after_write=True, retry_after=3)
    page = client.post(site.base_url("pdd", "pdd-2") + "/campaigns/1", {"agree": "yes"})
    assert page.status == 503 and page.headers["Retry-After"] == "3"
    assert len(site.records(kind="campaign_signup")) == 1


def test_bad_faults_are_refused_with_the_field_named(site: DemoSite) -> None:
    with pytest.raises(InvalidInput) as exc:
        site.set_fault("flood")
    assert exc.value.field == "fault"
    with pytest.raises(InvalidInput) as exc:
        site.set_fault("slow", delay=5)
    assert exc.value.field == "delay"
    with pytest.raises(InvalidInput):
        site.set_fault("error_5xx", status=404)
    with pytest.raises(InvalidInput):
        site.set_fault("captcha", platform="amazon")
    assert set(FAULTS) == {"slow", "error_5xx", "rate_limit", "layout_changed", "crash",
                           "captcha", "network_down"}


# --- control API and CLI ---------------------------------------------------------------------

def test_control_api_sets_faults_reads_records_and_resets(site: DemoSite) -> None:
    client = Client(site)
    client.login("pdd", "pdd-1")
    client.post(site.base_url("pdd", "pdd-1") + "/messages/1", {"reply": "first"})
    status, records = control(site, "GET", "records?kind=reply&shop=pdd-1")
    assert status == 200 and [r["text"] for r in records] == ["first"]
    assert control(site, "GET", "records?shop=pdd-2")[1] == []

    status, _ = control(site, "POST", "faults", {"fault": "rate_limit", "platform": "pdd",
                                                 "retry_after": 2, "times": 1})
    assert status == 200
    assert control(site, "GET", "faults")[1][0]["fault"] == "rate_limit"
    assert client.get(site.base_url("pdd", "pdd-1") + "/messages").status == 429
    assert client.get(site.base_url("pdd", "pdd-1") + "/messages").status == 200

    status, err = control(site, "POST", "faults", {"fault": "meteor"})
    assert status == 400 and err["field"] == "fault"

    control(site, "POST", "faults", {"fault": "captcha"})
    assert control(site, "POST", "faults/clear", {})[0] == 200
    assert site.faults() == []

    assert control(site, "POST", "reset", {})[0] == 200
    assert site.records() == []
    # Sessions are gone too: the shop asks for a login again.
    assert has_id(client.get(site.base_url("pdd", "pdd-1") + "/messages").body, "login-btn")


def test_register_cli_adds_the_demo_site_subcommand() -> None:
    import argparse

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config")
    parser = argparse.ArgumentParser(prog="shopfleet")
    register_cli(parser.add_subparsers(dest="command"), common)
    args = parser.parse_args(["demo-site", "--port", "9123", "--config", "x.toml"])
    assert (args.port, args.config) == (9123, "x.toml") and callable(args.handler)


def test_demo_site_command_serves_another_process_until_interrupted() -> None:
    with subprocess.Popen([sys.executable, "-m", "core.demosite", "--port", "0"], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        _serve_then_interrupt(proc)


def _serve_then_interrupt(proc: subprocess.Popen[str]) -> None:
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Serving"):
                break
        out = "".join(lines)
        assert "pdd-1 / demo-pass-pdd-1" in out and "--host-resolver-rules" in out
        port = int(re.search(r"on 127\.0\.0\.1:(\d+)", out).group(1))  # type: ignore[union-attr]
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"http://127.0.0.1:{port}/_control/records", timeout=30) as resp:
            assert json.loads(resp.read()) == []
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- a real browser --------------------------------------------------------------------------

CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-gpu", "--no-first-run"]


@pytest.fixture(scope="module")
def chromium(site: DemoSite) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=[*CHROMIUM_ARGS, f"--host-resolver-rules={host_resolver_rules()}"])
        try:
            yield browser
        finally:
            browser.close()


FLOW_PARAMS = {
    "reply_customer": {"message_id": "42", "reply": "Your parcel ships tomorrow."},
    "campaign_signup": {"campaign_id": "3"},
    "upload_product": {"title": "Red teapot", "price": "19.90", "category": "home",
                       "image": "product.png"},
    "collect_data": {"page": "150"},
}


@pytest.mark.browser
@pytest.mark.slow
def test_shipped_flows_run_in_chromium_against_the_demo_hosts(site: DemoSite,
                                                               tmp_path: Path) -> None:
    """ShopFleet's own engine, pool and step runner (core/flows/runner.py) run each shipped
    flow by name on the real browser; the site's records show what was written."""
    from core import Settings, TaskSpec, build_engine, demo_settings, open_store
    from core.demo import register_demo_shops
    from core.store import TaskState
    from core.vault import Vault
    from tests.helpers import run_with, wait_until

    settings = demo_settings(Settings()).with_changes(
        pool={"max_browsers": 1, "warm": 1, "step_timeout_s": 20})
    store = open_store(settings, tmp_path / "flows.db")
    register_demo_shops(store, site, Vault.open(tmp_path))
    # One shop: the four run one after another on one shop's session.
    ids = {name: store.submit(TaskSpec.model_validate(
        {"type": name, "shop": "temu-2", "flow": name, "params": params}))
        for name, params in FLOW_PARAMS.items()}
    engine = build_engine(settings, store, home=tmp_path)

    async def scenario() -> None:
        await wait_until(lambda: all(store.task(t).state in (
            TaskState.DONE, TaskState.FAILED) for t in ids.values()), 240)

    try:
        run_with(engine, scenario)
        tasks = {name: store.task(t) for name, t in ids.items()}
    finally:
        store.close()
    assert {n: (t.state, t.last_error) for n, t in tasks.items()} == {
        n: (TaskState.DONE, None) for n in ids}
    rows = stats_rows("temu-2", 150)
    results = tasks["collect_data"].results or {}
    assert {k: results.get(k) for k in ("skus", "views", "orders")} == {
        "skus": [r[0] for r in rows], "views": [str(r[1]) for r in rows],
        "orders": [str(r[2]) for r in rows]}

    # Each write landed exactly once, with the task's parameters.
    assert [r["ok"] for r in site.logins()][-1] is True
    kinds = sorted((r["kind"], r["shop"]) for r in site.records())
    assert kinds == [("campaign_signup", "temu-2"), ("reply", "temu-2"), ("upload", "temu-2")]
    by_kind = {r["kind"]: r for r in site.records()}
    reply, signup, upload = by_kind["reply"], by_kind["campaign_signup"], by_kind["upload"]
    assert (reply["message_id"], reply["text"]) == (42, "Your parcel ships tomorrow.")
    assert signup["campaign_id"] == 3
    image = (assets_dir() / "product.png").read_bytes()
    assert (upload["title"], upload["price"], upload["category"], upload["image_sha256"]) == (
        "Red teapot", "19.90", "home", hashlib.sha256(image).hexdigest())
    # Every request went to the shop's own demo host.
    assert site.requests(platform="temu") and not site.requests(platform="pdd")


@pytest.mark.browser
@pytest.mark.slow
def test_the_crash_fault_kills_the_renderer_and_spares_the_browser(site: DemoSite,
                                                                   chromium: Any) -> None:
    from playwright.sync_api import Error as PlaywrightError

    site.set_fault("crash", platform="pdd", times=1)
    context = chromium.new_context()
    try:
        page = context.new_page()
        crashed = threading.Event()
        page.on("crash", lambda _page: crashed.set())
        with pytest.raises(PlaywrightError, match="crash"):
            page.goto(site.base_url("pdd", "pdd-1") + "/messages")
        # The fault wore off and the browser lives on: a new page loads normally. (Opening it
        # is also a round trip that lets the sync API dispatch any pending "crash" event.)
        fresh = context.new_page()
        assert crashed.is_set()
        fresh.goto(site.base_url("pdd", "pdd-1") + "/messages")
        assert fresh.locator("#login-btn").is_visible()
    finally:
        context.close()
