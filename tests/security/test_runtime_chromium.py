"""Attacks on the trust boundary, tried in real Chromium: a shop site on one loopback port,
an attacker's listener on another. Each attack is stopped at run time, and neither the
listener, the results, the evidence nor the logs ever hold the password in any encoding."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.async_api import async_playwright

from core.errors import CredentialBlocked, OriginBlocked, SpecError, TaskError
from core.flows import Checkpoint, ShopInfo, parse_flow, run_flow
from core.flows.placeholders import resolve_url
from tests.helpers import missing_tool
from tests.security.helpers import SECRET, Listener, files_leaking, leaks

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-gpu", "--no-first-run"]


LOGIN = ("<form method='post' action='/welcome'><input id='user' name='user'>"
         "<input id='pass' name='pass' type='password'><input id='q' name='q'>"
         "<div id='ce' contenteditable='true'></div><button id='go'>Log in</button></form>")
SHOP_PAGES = {
    "/login": (200, {}, LOGIN),
    "/welcome": (302, {"Location": "ATTACKER/after-login"}, ""),
    "/iframe": (200, {}, "<p>hi</p><iframe src='ATTACKER/frame'></iframe>"),
    "/popup": (200, {}, "<button id='go' onclick=\"window.open('ATTACKER/popup')\">x</button>"),
    "/popup2": (200, {}, "<button id='go' onclick=\"var w = window.open(''); "
                "setTimeout(function () { w.location = 'ATTACKER/later'; }, 50)\">x</button>"),
    "/base": (200, {}, "<base href='ATTACKER/'><a id='go' href='steal'>x</a>"),
    "/link": (200, {}, "<a id='go' href='ATTACKER/steal'>x</a>"),
    "/blank": (200, {}, "<a id='go' href='ATTACKER/steal' target='_blank'>x</a>"),
    "/stats": (200, {}, "<p id='p'>stats</p>"),
}


@pytest.fixture(scope="module")
def sites() -> Iterator[tuple[Listener, Listener]]:
    attacker = Listener({})
    shop = Listener(SHOP_PAGES)
    shop.attacker = attacker.url
    attacker.attacker = attacker.url
    yield shop, attacker
    shop.close()
    attacker.close()


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    if not os.path.exists(CHROMIUM):
        missing_tool(f"no Chromium at {CHROMIUM}")
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


@pytest.fixture(scope="module")
def browser(loop: asyncio.AbstractEventLoop) -> Iterator[Any]:
    pw = loop.run_until_complete(async_playwright().start())
    b = loop.run_until_complete(pw.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                                   headless=True))
    yield b
    loop.run_until_complete(b.close())
    loop.run_until_complete(pw.stop())


def attempt(loop: asyncio.AbstractEventLoop, browser: Any, shop_url: str, steps: list[Any],
            evidence: Path, *, params: dict[str, Any] | None = None,
            start: str = "{shop.base_url}/login", route: bool = False, retries: int = 0
            ) -> tuple[Any, list[dict[str, Any]]]:
    """Run a flow in a fresh context; returns (RunResult or the TaskError, checkpoints)."""
    flow = parse_flow({"name": "t", "start_url": start, "steps": steps})
    shop = ShopInfo(name="s", platform="pdd", base_url=shop_url, username="alice",
                    password=SECRET)
    saved: list[dict[str, Any]] = []

    async def save(cp: Checkpoint) -> None:
        saved.append(cp.to_dict())

    async def go() -> Any:
        ctx = await browser.new_context()
        try:
            page = await ctx.new_page()
            try:
                return await run_flow(page, flow, params=params or {}, shop=shop,
                                      checkpoint=None, save_checkpoint=save,
                                      evidence_dir=evidence, step_timeout_s=10,
                                      route_foreign_documents=route,
                                      step_retries=retries, step_retry_wait_s=0)
            except TaskError as exc:
                return exc
        finally:
            await ctx.close()

    return loop.run_until_complete(go()), saved


def assert_no_leak(out: Any, saved: list[dict[str, Any]], attacker: Listener, evidence: Path,
                   caplog: pytest.LogCaptureFixture) -> None:
    assert not any(leaks(r) for r in attacker.seen), attacker.seen
    text = str(out) + repr(getattr(out, "results", "")) + repr(getattr(out, "evidence", ""))
    assert not leaks(text)
    assert not any(leaks(repr(cp)) for cp in saved)
    if evidence.exists():
        assert files_leaking(evidence) == []
    assert not leaks(caplog.text)


TYPE_PW = {"action": "type_text", "locator": "#pass", "text": "{shop.password}"}


@pytest.mark.parametrize("case", ["navigate", "data", "file", "javascript"])
def test_navigate_to_a_foreign_page_is_stopped_before_loading(
        case: str, sites: tuple[Listener, Listener], loop: Any, browser: Any, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    shop, attacker = sites
    attacker.seen.clear()
    url = {"navigate": f"{attacker.url}/steal",
           "data": "data:text/html,<div id=q contenteditable>x</div>",
           "file": "file:///etc/", "javascript": "javascript:alert(1)"}[case]
    steps = [TYPE_PW, {"action": "navigate", "url": url},
             {"action": "type_text", "locator": "#q", "text": "{shop.password}"},
             {"action": "extract", "locator": "#q", "into": "got"}]
    out, saved = attempt(loop, browser, shop.url, steps, tmp_path / "ev")
    assert isinstance(out, OriginBlocked), out
    assert out.step == 1 and "steps[1] (navigate).url" in str(out)
    assert attacker.seen == []
    assert (tmp_path / "ev" / "screenshot.png").exists()
    assert_no_leak(out, saved, attacker, tmp_path / "ev", caplog)


@pytest.mark.parametrize("route", [False, True], ids=["checks", "checks+route"])
@pytest.mark.parametrize("path,step", [
    ("/iframe", None), ("/popup", "#go"), ("/base", "#go"), ("/link", "#go"),
    ("/blank", "#go")])
def test_a_page_frame_or_popup_on_a_foreign_origin_stops_the_task(
        path: str, step: str | None, route: bool, sites: tuple[Listener, Listener], loop: Any,
        browser: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shop, attacker = sites
    attacker.seen.clear()
    steps: list[dict[str, Any]] = [{"action": "navigate", "url": "{shop.base_url}" + path}]
    if step:
        steps.append({"action": "click", "locator": step})
    steps.append({"action": "extract", "locator": "body", "into": "after"})
    out, saved = attempt(loop, browser, shop.url, steps, tmp_path / "ev", route=route)
    assert isinstance(out, OriginBlocked), out
    assert attacker.url.replace("http://", "") in str(out)
    if route:  # the route aborts the request before it leaves the browser
        assert attacker.seen == []
    assert "after" not in (saved[-1]["results"] if saved else {})
    assert "evidence" and out.evidence.get("steps")
    assert_no_leak(out, saved, attacker, tmp_path / "ev", caplog)


@pytest.mark.parametrize("route", [False, True], ids=["checks", "checks+route"])
def test_a_blank_popup_sent_elsewhere_later_never_loads_a_foreign_page_unnoticed(
        route: bool, sites: tuple[Listener, Listener], loop: Any, browser: Any,
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shop, attacker = sites
    attacker.seen.clear()
    steps = [{"action": "navigate", "url": "{shop.base_url}/popup2"},
             {"action": "click", "locator": "#go"},
             {"action": "wait_element", "locator": "#nothing", "state": "hidden"},
             {"action": "extract", "locator": "body", "into": "after"}]
    out, saved = attempt(loop, browser, shop.url, steps, tmp_path / "ev", route=route)
    # The runner's window.open wrapper closes the window right after the click's script,
    # before the page's timer can send it elsewhere: nothing foreign loads, on any machine.
    later = [r for r in attacker.seen if r.startswith("GET /later")]
    assert not isinstance(out, TaskError), out
    assert out.status == "done" and later == [], (out, attacker.seen)
    assert_no_leak(out, saved, attacker, tmp_path / "ev", caplog)


def test_a_redirect_to_a_foreign_origin_after_login_stops_the_task(
        sites: tuple[Listener, Listener], loop: Any, browser: Any, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    shop, attacker = sites
    attacker.seen.clear()
    steps = [{"action": "type_text", "locator": "#user", "text": "{shop.username}"}, TYPE_PW,
             {"action": "click", "locator": "#go"},
             {"action": "extract", "locator": "body", "into": "after"}]
    out, saved = attempt(loop, browser, shop.url, steps, tmp_path / "ev")
    assert isinstance(out, OriginBlocked) and out.step == 2, out
    assert any(r.startswith("GET /after-login") for r in attacker.seen)
    # The screenshot was taken with the password field masked; nothing leaks anywhere.
    assert_no_leak(out, saved, attacker, tmp_path / "ev", caplog)


@pytest.mark.parametrize("locator", ["#q", "#ce"])
def test_the_password_goes_only_into_a_password_input(
        locator: str, sites: tuple[Listener, Listener], loop: Any, browser: Any,
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shop, attacker = sites
    steps = [{"action": "type_text", "locator": locator, "text": "{shop.password}"},
             {"action": "extract", "locator": locator, "into": "got"}]
    out, saved = attempt(loop, browser, shop.url, steps, tmp_path / "ev")
    assert isinstance(out, CredentialBlocked), out
    assert "steps[0] (type_text).text" in str(out) and "nothing was typed" in str(out)
    assert_no_leak(out, saved, attacker, tmp_path / "ev", caplog)


def test_extracting_the_password_field_and_encoded_forms_in_the_dom_yield_no_password(
        sites: tuple[Listener, Listener], loop: Any, browser: Any, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    shop, attacker = sites
    # The page itself shows the password in several encodings (a careless shop).
    import html as _html
    import json as _json
    shown = " | ".join([_html.escape(SECRET), quote(SECRET, safe=""), quote(SECRET).lower(),
                        _html.escape(_json.dumps(SECRET))])
    shop.pages["/careless"] = (200, {}, LOGIN + f"<p id='p' data-v='{_html.escape(SECRET)}'>"
                               f"{shown}</p><input id='pw2' type='password' "
                               f"value='{_html.escape(SECRET)}'>")
    steps = [TYPE_PW,
             {"action": "extract", "locator": "#pass", "attribute": "value", "into": "v"},
             {"action": "extract", "locator": "#pw2", "attribute": "value", "into": "v2"},
             {"action": "extract", "locator": "#p", "into": "text"},
             {"action": "extract", "locator": "#p", "attribute": "data-v", "into": "attr"},
             {"action": "screenshot", "into": "shot"},
             {"action": "assert_text", "locator": "#p", "text": "not there", "timeout_s": 1}]
    out, saved = attempt(loop, browser, shop.url, steps, tmp_path / "ev",
                         start="{shop.base_url}/careless")
    assert out.__class__.__name__ == "PageChanged", out
    results = saved[-1]["results"]
    assert results["text"] and "[redacted]" in results["text"]
    assert (tmp_path / "ev" / "dom.html").exists()
    assert_no_leak(out, saved, attacker, tmp_path / "ev", caplog)


def test_a_symlinked_evidence_folder_is_not_written_through(
        sites: tuple[Listener, Listener], loop: Any, browser: Any, tmp_path: Path) -> None:
    shop, _ = sites
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "ev").symlink_to(outside)
    out, _ = attempt(loop, browser, shop.url, [{"action": "screenshot", "into": "x"}],
                     tmp_path / "ev")
    assert isinstance(out, TaskError) and "symlink" in str(out), out
    assert "could not write" in out.evidence.get("notes", "")
    assert list(outside.rglob("*")) == []


def test_evidence_files_are_private(sites: tuple[Listener, Listener], loop: Any, browser: Any,
                                    tmp_path: Path) -> None:
    shop, _ = sites
    out, _ = attempt(loop, browser, shop.url,
                     [{"action": "screenshot", "into": "x"},
                      {"action": "click", "locator": "#nothing", "timeout_s": 1}],
                     tmp_path / "ev")
    assert isinstance(out, TaskError)
    files = [p for p in (tmp_path / "ev").rglob("*")]
    assert files
    for p in files:
        assert (p.stat().st_mode & 0o777) == (0o700 if p.is_dir() else 0o600), p


def test_params_with_dots_question_marks_and_hashes_stay_in_their_segment(
        sites: tuple[Listener, Listener], loop: Any, browser: Any, tmp_path: Path) -> None:
    shop, _ = sites
    shop.seen.clear()
    flow_dir = Path(__file__).parents[2] / "resources" / "flows"
    import json as _json
    stats = _json.loads((flow_dir / "collect_data.json").read_text())
    reply = _json.loads((flow_dir / "reply_customer.json").read_text())
    values = {"x": "../../admin?x=1#frag"}
    url = resolve_url(reply["start_url"].replace("{params.message_id}", "{params.x}"),
                      values, {"base_url": shop.url})
    assert url == f"{shop.url}/messages/..%2F..%2Fadmin%3Fx%3D1%23frag"
    url = resolve_url(stats["start_url"].replace("{params.page}", "{params.x}"),
                      values, {"base_url": shop.url})
    assert url == f"{shop.url}/stats?page=..%2F..%2Fadmin%3Fx%3D1%23frag"
    with pytest.raises(SpecError):
        resolve_url(reply["start_url"].replace("{params.message_id}", "{params.x}"),
                    {"x": ".."}, {"base_url": shop.url})
    out, _ = attempt(loop, browser, shop.url,
                     [{"action": "navigate", "url": "{shop.base_url}/stats?page={params.x}"}],
                     tmp_path / "ev", params=values, start="{shop.base_url}/stats?page={params.x}")
    assert out.status == "done"
    pages = [s for s in shop.seen if not s.startswith("GET /favicon")]
    assert pages and all(s.startswith("GET /stats?page=..%2F..%2Fadmin%3Fx%3D1%23frag")
                         for s in pages)


def test_a_network_error_is_the_sites_failure_not_a_foreign_page(
        loop: Any, browser: Any, tmp_path: Path) -> None:
    # Chromium shows chrome-error://chromewebdata/ for a failed load: that is no foreign
    # origin. A refused connection is the network path's state (#15: NetworkDown, a kind of
    # SiteFailed that pauses the domain without spending attempts), never OriginBlocked.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it once closed
    for _ in range(2):
        out, _ = attempt(loop, browser, f"http://127.0.0.1:{port}",
                         [{"action": "navigate", "url": "{shop.base_url}/x"},
                          {"action": "navigate", "url": "{shop.base_url}/y"}],
                         tmp_path / "ev", start="{shop.base_url}/x", retries=1)
        assert out.__class__.__name__ == "NetworkDown", out
