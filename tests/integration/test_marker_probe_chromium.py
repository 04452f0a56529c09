"""The runner's one-round-trip read of the human markers answers as Playwright's
``locator(marker).first.is_visible()`` does, in real Chromium (hidden, empty, ``display:
contents``, shadow roots, the first of several matches, a page that rewrote the DOM functions).
"""

from __future__ import annotations

import asyncio
import os

import pytest
from playwright.async_api import Route, async_playwright

from core.flows.guards import READ_AFTER_STEP_JS, SIMPLE_MARKER, WINDOW_RECORD_JS
from tests.helpers import missing_tool

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
URL = "http://seller.test/page"

HTML = """<!doctype html><html><body>
<div id="shown">x</div>
<div id="none" style="display:none">x</div>
<div id="hidden" style="visibility:hidden">x</div>
<div id="empty"></div>
<div id="opacity" style="opacity:0">x</div>
<span id="contents" style="display:contents"><b>x</b></span>
<span id="contents-empty" style="display:contents"></span>
<span id="contents-text" style="display:contents">text</span>
<div class="twice" style="display:none">a</div><div class="twice">b</div>
<div class="order" style="display:none">light</div>
<div id="host"></div>
<details><summary>s</summary><div id="in-details">x</div></details>
<div data-captcha="1">x</div>
<div class="login-error" style="visibility:hidden"><span id="shown-in-hidden"
  style="visibility:visible">x</span></div>
<script>
  const root = document.getElementById('host').attachShadow({mode: 'open'});
  root.innerHTML = '<div class="in-shadow">s</div><div id="shadow-hidden" '
    + 'style="visibility:hidden">s</div><div class="order">shadow</div>';
  // A page that rewrites the DOM functions: Playwright's check runs in its own world, the
  // probe uses the ones it kept before the page ran.
  Element.prototype.getBoundingClientRect = () => ({width: 0, height: 0});
  window.getComputedStyle = () => null;
  Document.prototype.querySelectorAll = () => [];
</script>
</body></html>"""

MARKERS = ["#shown", "#none", "#hidden", "#empty", "#opacity", "#contents", "#contents-empty",
           "#contents-text", ".twice", ".order", ".in-shadow", "#shadow-hidden", "#in-details",
           "[data-captcha]", "div[data-captcha=\"1\"]", ".login-error", "#shown-in-hidden",
           "#missing"]
EXPECTED = [True, False, False, False, True, True, False, True, False, False, True, False,
            False, True, True, False, True, False]


def test_the_probe_answers_as_is_visible_does() -> None:
    if not os.path.exists(CHROMIUM):
        missing_tool(f"no Chromium at {CHROMIUM}")
    assert all(SIMPLE_MARKER.fullmatch(m) for m in MARKERS)

    async def main() -> tuple[list[bool], object, list[bool]]:
        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"],
                env={**os.environ})
            try:
                ctx = await browser.new_context()
                page = await ctx.new_page()

                async def serve(route: Route) -> None:
                    await route.fulfill(status=200, content_type="text/html", body=HTML)

                await page.route("**/*", serve)
                await page.add_init_script(script=WINDOW_RECORD_JS)
                await page.goto(URL)
                playwright_says = [await page.locator(m).first.is_visible() for m in MARKERS]
                got = await page.evaluate(READ_AFTER_STEP_JS, MARKERS)
                # The page cannot replace the probe either.
                await page.evaluate("() => { try { window.__shopfleetMarkers = () => "
                                    "[false]; } catch (e) {} }")
                again = await page.evaluate(READ_AFTER_STEP_JS, ["#shown"])
                return playwright_says, got, again["visible"]
            finally:
                await browser.close()

    playwright_says, got, again = asyncio.run(main())
    assert playwright_says == EXPECTED  # the cases mean what they say
    assert isinstance(got, dict) and got["opened"] == []
    assert got["visible"] == playwright_says
    assert again == [True]
