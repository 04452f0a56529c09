"""The step runner driving real Chromium against a tiny seller site served on 127.0.0.1.

One event loop, one site and one browser are shared by the module; each test gets a fresh
browser context, as the pool gives each task.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import struct
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from html import escape
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.async_api import Browser, Page, async_playwright

from core.errors import (
    NeedsHuman,
    NetworkDown,
    PageChanged,
    RateLimited,
    SiteFailed,
    TaskError,
)
from core.flows import Checkpoint, Flow, RunResult, ShopInfo, parse_flow, run_flow
from tests.helpers import missing_tool

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-gpu", "--no-first-run"]
SECRET = "pa55-Word-7731"
T = TypeVar("T")


@dataclass
class SiteState:
    replies: list[str] = field(default_factory=list)
    logins: int = 0


STATE = SiteState()


def page(body: str, title: str = "Seller centre") -> bytes:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body>{body}<script>console.log('page ' + location.pathname)</script>"
            "</body></html>").encode()


class Site(http.server.BaseHTTPRequestHandler):
    """A seller centre: login, a message list, a message with a reply form, failure pages."""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _logged_in(self) -> bool:
        sid = SimpleCookie(self.headers.get("Cookie", "")).get("sid")
        return sid is not None and sid.value == "ok"

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        if path == "/messages":
            if not self._logged_in():
                self._send(200, page(
                    "<form id='login-form' method='post' action='/login'>"
                    "<input id='user' name='user'><input id='pass' name='pass' type='password'>"
                    "<button id='login-btn'>Log in</button></form>"))
            else:
                self._send(200, page("<a class='msg-link-8812' href='/messages/8812'>"
                                     "Order 8812: where is my parcel?</a>"))
        elif path == "/messages/8812":
            thread = "".join(f"<li>{escape(r)}</li>" for r in STATE.replies)
            # The conversation says when a reply went out (what a resumed run finds).
            sent = "<p class='success-msg'>Reply sent</p>" if STATE.replies else ""
            self._send(200, page(
                f"<ul class='thread'>{thread}</ul>{sent}"
                "<form method='post' action='/messages/8812/reply'>"
                "<textarea id='reply' name='reply'></textarea>"
                "<button id='submit-btn'>Send</button></form>"))
        elif path in ("/messages/8812/send", "/messages/8812/send-and-drop"):
            # A write by URL (#15): the reply goes out; "-and-drop" then closes the connection
            # without an answer (the site took it, the browser sees ERR_EMPTY_RESPONSE).
            STATE.replies.append(parse_qs(urlparse(self.path).query).get("reply", [""])[0])
            if path.endswith("-and-drop"):
                self.close_connection = True
                return
            self._send(200, page("<p class='success-msg'>Reply sent</p>"))
        elif path == "/messages/8812/drop-form":
            # The reply form, posting where the site takes the reply and then drops the
            # connection without an answer.
            self._send(200, page(
                "<form method='post' action='/messages/8812/reply-and-drop'>"
                "<textarea id='reply' name='reply'></textarea>"
                "<button id='submit-btn'>Send</button></form>"))
        elif path == "/messages/8812/sent":
            self._send(200, page("<p class='success-msg'>Reply sent</p>"))
        elif path == "/unavailable":
            # A maintenance page that (badly) echoes a filled password field.
            self._send(503, page(
                "<h1>Service unavailable</h1><form>"
                f"<input type='password' id='pw' name='pw' value='{SECRET}'>"
                "<input id='api_token' name='api_token' value='tok-55667788'></form>"))
        elif path == "/busy":
            self._send(503, page("<h1>Slow down</h1>"), {"Retry-After": "7"})
        elif path == "/captcha":
            self._send(200, page("<div id='captcha'>Slide to verify you are human</div>"))
        else:
            self._send(404, page("<h1>Not found</h1>"))

    def do_POST(self) -> None:
        path = urlparse(self.path).path
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode())
        if path == "/login":
            STATE.logins += 1
            if form.get("pass", [""])[0] == SECRET:
                self._send(303, b"", {"Location": "/messages",
                                      "Set-Cookie": "sid=ok; Path=/; HttpOnly"})
            else:
                self._send(200, page("<p class='login-error'>Wrong password</p>"))
        elif path == "/messages/8812/reply":
            STATE.replies.append(form.get("reply", [""])[0])
            self._send(303, b"", {"Location": "/messages/8812/sent"})
        elif path == "/messages/8812/reply-and-drop":
            STATE.replies.append(form.get("reply", [""])[0])
            self.close_connection = True  # taken, and no answer: ERR_EMPTY_RESPONSE
        else:
            self._send(404, page("<h1>Not found</h1>"))

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


class Chromium:
    """One event loop and one browser for the module."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pw: Any = None
        self.browser: Browser | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    async def start(self) -> None:
        self.pw = await async_playwright().start()
        self.browser = await self.pw.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                                     headless=True)

    async def stop(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        if self.pw is not None:
            await self.pw.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    if not os.path.exists(CHROMIUM):
        missing_tool(f"no Chromium at {CHROMIUM}")
    c = Chromium()
    c.run(c.start())
    yield c
    c.run(c.stop())
    c.loop.close()


@pytest.fixture(autouse=True)
def _fresh_site() -> None:
    STATE.replies.clear()
    STATE.logins = 0


def shop(base_url: str, password: str = SECRET) -> ShopInfo:
    return ShopInfo(name="pdd-1", platform="pdd", base_url=base_url, username="alice",
                    password=password)


REPLY = {
    "name": "reply_customer",
    "start_url": "{shop.base_url}/messages",
    "steps": [
        {"action": "type_text", "locator": "#user", "text": "{shop.username}",
         "if_visible": "#login-form"},
        {"action": "type_text", "locator": "#pass", "text": "{shop.password}",
         "if_visible": "#login-form"},
        {"action": "click", "locator": "#login-btn", "if_visible": "#login-form"},
        {"action": "click", "locator": ".msg-link-{params.message_id}"},
        {"action": "type_text", "locator": "#reply", "text": "{params.reply}"},
        {"action": "click", "locator": "#submit-btn", "write": True,
         "verify": {"locator": ".thread", "text": "{params.reply}"}},
        {"action": "wait_element", "locator": ".success-msg"},
        {"action": "extract", "locator": ".success-msg", "into": "status"},
    ],
}
PARAMS = {"message_id": "8812", "reply": "Shipped today, tracking SF123"}


async def run_in_context(c: Chromium, flow: Flow, base_url: str, tmp_path: Path, *,
                         checkpoint: Checkpoint | None = None, params: dict[str, Any] | None = None,
                         saved: list[Checkpoint] | None = None,
                         password: str = SECRET, unresolved: str | None = None) -> RunResult:
    """``unresolved``: requests to URLs matching this glob fail as a name that does not
    resolve (``net::ERR_NAME_NOT_RESOLVED``, the request never leaves the browser)."""
    assert c.browser is not None
    context = await c.browser.new_context()
    try:
        pg: Page = await context.new_page()
        if unresolved is not None:
            await pg.route(unresolved, lambda route: route.abort("namenotresolved"))
        store = saved if saved is not None else []

        async def save(cp: Checkpoint) -> None:
            store.append(Checkpoint.from_dict(json.loads(json.dumps(cp.to_dict()))))

        return await run_flow(
            pg, flow, params=PARAMS if params is None else params,
            shop=shop(base_url, password), checkpoint=checkpoint, save_checkpoint=save,
            evidence_dir=tmp_path / "evidence", step_timeout_s=30.0)
    finally:
        await context.close()


def fail(c: Chromium, flow: Flow, base_url: str, tmp_path: Path, **kw: Any) -> TaskError:
    with pytest.raises(TaskError) as info:
        c.run(run_in_context(c, flow, base_url, tmp_path, **kw))
    return info.value


def flow_of(*steps: dict[str, Any]) -> Flow:
    return parse_flow({"name": "t", "start_url": "{shop.base_url}/messages", "steps": list(steps)})


def test_reply_flow_logs_in_writes_once_and_extracts(chromium: Chromium, base_url: str,
                                                     tmp_path: Path) -> None:
    saved: list[Checkpoint] = []
    result = chromium.run(run_in_context(chromium, parse_flow(REPLY), base_url, tmp_path,
                                         saved=saved))
    assert result.status == "done"
    assert result.results == {"status": "Reply sent"}
    assert STATE.replies == [PARAMS["reply"]] and STATE.logins == 1

    # A new attempt resumed right after the write (fresh context: logged out again) logs in
    # again, rebuilds the page and does not send the reply twice.
    after_write = next(cp for cp in saved if cp.next_step == 6)
    chromium.run(run_in_context(chromium, parse_flow(REPLY), base_url, tmp_path,
                                checkpoint=after_write))
    assert STATE.replies == [PARAMS["reply"]] and STATE.logins == 2


def test_interrupted_write_is_checked_with_verify_not_resent(chromium: Chromium, base_url: str,
                                                             tmp_path: Path) -> None:
    STATE.replies.append(PARAMS["reply"])  # the write reached the site before the crash
    result = chromium.run(run_in_context(chromium, parse_flow(REPLY), base_url, tmp_path,
                                         checkpoint=Checkpoint(next_step=5, write_in_flight=5)))
    assert result.status == "done" and result.checkpoint.writes_done == [5]
    assert STATE.replies == [PARAMS["reply"]]


def write_by_url(to: str) -> Flow:
    return parse_flow({"name": "t", "start_url": "{shop.base_url}/messages", "steps": [
        {"action": "navigate", "url": "{shop.base_url}/messages/8812/" + to
         + "?reply={params.reply}", "write": True, "name": "send"},
        {"action": "wait_element", "locator": ".success-msg"}]})


def test_a_write_whose_host_does_not_resolve_never_left_and_runs_on_the_next_attempt(
        chromium: Chromium, base_url: str, tmp_path: Path) -> None:
    """#15, a real DNS failure on a write step: the module's browser has no resolver rule
    for seller.shopfleet.test (".test" never resolves): net::ERR_NAME_NOT_RESOLVED, the
    request never left, so the write is not left in flight (no write_unknown ticket on the
    next attempt). A browser that resolves the name (the network back) runs it: once."""
    port = urlparse(base_url).port
    named = f"http://seller.shopfleet.test:{port}"
    saved: list[Checkpoint] = []
    err = fail(chromium, write_by_url("send"), named, tmp_path, saved=saved)
    assert type(err) is NetworkDown and "ERR_NAME_NOT_RESOLVED" in str(err), err
    assert any(cp.write_in_flight == 0 for cp in saved)       # durable before it went
    assert (saved[-1].next_step, saved[-1].write_in_flight, saved[-1].writes_done) == \
        (0, None, [])
    assert STATE.replies == []

    async def network_back() -> RunResult:
        assert chromium.pw is not None
        browser = await chromium.pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=[*ARGS, "--host-resolver-rules=MAP seller.shopfleet.test 127.0.0.1"])
        try:
            context = await browser.new_context()
            pg = await context.new_page()

            async def save(cp: Checkpoint) -> None:
                saved.append(cp)

            return await run_flow(pg, write_by_url("send"), params=PARAMS, shop=shop(named),
                                  checkpoint=saved[-1], save_checkpoint=save,
                                  evidence_dir=tmp_path / "evidence", step_timeout_s=30.0)
        finally:
            await browser.close()

    result = chromium.run(network_back())
    assert result.status == "done" and result.checkpoint.writes_done == [0]
    assert STATE.replies == [PARAMS["reply"]]


def test_a_write_whose_connection_dropped_after_the_request_stays_in_flight(
        chromium: Chromium, base_url: str, tmp_path: Path) -> None:
    """The site received the write, then the connection closed without an answer
    (ERR_EMPTY_RESPONSE): the outcome is unknown — the write stays in flight, and the next
    attempt without ``verify`` hands it to a person instead of sending it again."""
    saved: list[Checkpoint] = []
    err = fail(chromium, write_by_url("send-and-drop"), base_url, tmp_path, saved=saved)
    assert type(err) is NetworkDown and "ERR_EMPTY_RESPONSE" in str(err), err
    assert saved[-1].write_in_flight == 0
    # The site received it (Chromium's own network stack may resend a GET once after an empty
    # answer: a reason to write by POST; nothing of ours sent it).
    received = len(STATE.replies)
    assert received >= 1 and set(STATE.replies) == {PARAMS["reply"]}
    err = fail(chromium, write_by_url("send-and-drop"), base_url, tmp_path,
               checkpoint=saved[-1])
    assert isinstance(err, NeedsHuman) and err.error_class == "write_unknown", err
    assert len(STATE.replies) == received                       # not sent again


def reply_by_click(form: str) -> Flow:
    return parse_flow({"name": "t", "start_url": "{shop.base_url}/messages/8812" + form,
                       "steps": [
        {"action": "type_text", "locator": "#reply", "text": "{params.reply}"},
        {"action": "click", "locator": "#submit-btn", "write": True, "name": "send"},
        {"action": "wait_element", "locator": ".success-msg"}]})


def test_a_click_write_whose_post_dropped_stays_in_flight(chromium: Chromium, base_url: str,
                                                         tmp_path: Path) -> None:
    """A click posts the reply, the site takes it and drops the connection: no exception,
    only Chromium's error page. The write is not confirmed by that page — it stays in
    flight (outcome unknown), and the next attempt hands it to a person, never sends it
    twice. (Before: the error page passed every check and the write was marked done.)"""
    saved: list[Checkpoint] = []
    err = fail(chromium, reply_by_click("/drop-form"), base_url, tmp_path, saved=saved)
    assert type(err) is NetworkDown and "ERR_EMPTY_RESPONSE" in str(err), err
    assert err.step == 1
    assert (saved[-1].next_step, saved[-1].write_in_flight, saved[-1].writes_done) == \
        (1, 1, [])
    # The site received it (Chromium's network stack may resend a request once after an
    # empty answer on a reused connection; nothing of ours sent it).
    received = len(STATE.replies)
    assert received >= 1 and set(STATE.replies) == {PARAMS["reply"]}
    err = fail(chromium, reply_by_click("/drop-form"), base_url, tmp_path,
               checkpoint=saved[-1])
    assert isinstance(err, NeedsHuman) and err.error_class == "write_unknown", err
    assert len(STATE.replies) == received                         # not sent again


def test_a_click_write_whose_post_never_left_runs_on_the_next_attempt(
        chromium: Chromium, base_url: str, tmp_path: Path) -> None:
    """The click's form post fails before it leaves the browser (the name does not
    resolve): the write did not happen — not marked done (the reply would be lost) and not
    left in flight (a needless ticket); the next attempt sends it, once."""
    saved: list[Checkpoint] = []
    err = fail(chromium, reply_by_click(""), base_url, tmp_path, saved=saved,
               unresolved="**/messages/8812/reply")
    assert type(err) is NetworkDown and "ERR_NAME_NOT_RESOLVED" in str(err), err
    assert any(cp.write_in_flight == 1 for cp in saved)            # durable before it went
    assert (saved[-1].next_step, saved[-1].write_in_flight, saved[-1].writes_done) == \
        (1, None, [])
    assert STATE.replies == []
    result = chromium.run(run_in_context(chromium, reply_by_click(""), base_url, tmp_path,
                                         checkpoint=saved[-1], saved=saved))
    assert result.status == "done" and result.checkpoint.writes_done == [1]
    assert STATE.replies == [PARAMS["reply"]]


def test_503_is_site_failed_with_evidence_and_no_secrets(chromium: Chromium, base_url: str,
                                                         tmp_path: Path) -> None:
    flow = flow_of({"action": "type_text", "locator": "#pass", "text": "{shop.password}"},
                   {"action": "navigate", "url": "{shop.base_url}/unavailable"})
    err = fail(chromium, flow, base_url, tmp_path)
    assert type(err) is SiteFailed and err.step == 1 and "503" in str(err)

    png = Path(err.evidence["screenshot"]).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width > 100 and height > 100
    dom = Path(err.evidence["dom"]).read_text(encoding="utf-8")
    assert "Service unavailable" in dom
    assert SECRET not in dom and "tok-55667788" not in dom
    assert "[redacted]" in dom
    console = Path(err.evidence["console"]).read_text(encoding="utf-8")
    assert "page /unavailable" in console
    steps = json.loads(Path(err.evidence["steps"]).read_text(encoding="utf-8"))
    assert [(s["index"], s["status"]) for s in steps["steps"]] == [
        (None, "done"), (0, "done"), (1, "failed")]
    assert SECRET not in json.dumps(steps)


def test_503_with_retry_after_is_rate_limited(chromium: Chromium, base_url: str,
                                              tmp_path: Path) -> None:
    err = fail(chromium, flow_of({"action": "navigate", "url": "{shop.base_url}/busy"}),
               base_url, tmp_path)
    assert isinstance(err, RateLimited)
    assert (err.retry_after_s, err.domain, err.step) == (7.0, "127.0.0.1", 0)


def test_missing_locator_is_page_changed(chromium: Chromium, base_url: str,
                                         tmp_path: Path) -> None:
    err = fail(chromium, flow_of({"action": "click", "locator": "#no-such-button",
                                  "timeout_s": 1}), base_url, tmp_path)
    assert isinstance(err, PageChanged) and err.step == 0
    assert "#no-such-button" in str(err)
    assert Path(err.evidence["screenshot"]).exists()


def test_captcha_needs_a_human(chromium: Chromium, base_url: str, tmp_path: Path) -> None:
    err = fail(chromium, flow_of({"action": "navigate", "url": "{shop.base_url}/captcha"},
                                 {"action": "click", "locator": "#reply"}), base_url, tmp_path)
    assert isinstance(err, NeedsHuman) and err.step == 0


def test_rejected_login_needs_a_human(chromium: Chromium, base_url: str, tmp_path: Path) -> None:
    err = fail(chromium, parse_flow(REPLY), base_url, tmp_path, password="wrong-password")
    assert isinstance(err, NeedsHuman) and err.step == 2
    assert STATE.replies == []
