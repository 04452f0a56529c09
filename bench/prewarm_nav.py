"""Prewarm in isolation (#20): does a page made ahead make the first navigation cheaper?

``bench/browser_pool.py`` found ``prewarm_contexts`` slower than making the context and page on
the task's path (the first navigation in a prepared page took 618 ms p50 against 272 ms, 2
browsers on 2 cores). This separates the two explanations: a prepared page whose renderer the
navigation cannot use (a second renderer process per task), or CPU taken by the spare being made
beside the task. One Chromium, nothing else running in it, a local page; each round, in turn:

1. ``plain`` — a new context, its page, the navigation at once (what a task without prewarm
   does): context+page time and navigation time;
2. ``spare`` — a context and page made 0.5 s ahead (what prewarm does), then the navigation;
3. ``spare_site`` — as 2, and the page has already committed a blank document of the site's
   origin, fulfilled by a route (no request leaves): the idea of keeping the site's renderer
   ready, measured before anything is built on it.

For each: the navigation's time (median, min–max) and the renderer processes Chromium started
during the navigation (0 means the prepared page's renderer was used). Run:
``python bench/prewarm_nav.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psutil
from _common import arg_parser, emit, emit_machine, emit_summary, note

from core.browser.discovery import launch_args, running_as_root
from core.config import Settings

BENCH = "prewarm_nav"
CHROMIUM = "/usr/bin/chromium"
AHEAD_S = 0.5
PAGE = (b"<!doctype html><html><head><title>stats</title></head><body><h1>Shop statistics</h1>"
        + b"".join(b"<p class=row>row %d</p>" % i for i in range(200)) + b"</body></html>")


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def renderers(browser_pid: int) -> int:
    """Chromium renderer processes under the browser process."""
    try:
        kids = psutil.Process(browser_pid).children(recursive=True)
    except psutil.Error:
        return 0
    n = 0
    for k in kids:
        try:
            if "--type=renderer" in k.cmdline():
                n += 1
        except psutil.Error:
            continue
    return n


def browser_pid() -> int:
    """The Chromium this process launched (its browser process: no ``--type=``)."""
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if cmd and "chrom" in cmd[0] and not any(a.startswith("--type=") for a in cmd):
            return int(p.pid)
    raise RuntimeError("the launched Chromium was not found")


async def run(rounds: int) -> dict[str, dict[str, list[float]]]:
    from playwright.async_api import async_playwright

    args = launch_args(Settings().browser, as_root=running_as_root())
    out: dict[str, dict[str, list[float]]] = {
        k: {"nav_ms": [], "renderers_started": [], "prepare_ms": []}
        for k in ("plain", "spare", "spare_site")}
    with site() as origin:
        url = f"{origin}/stats"
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=args,
                                               headless=True, chromium_sandbox=False)
            pid = browser_pid()
            try:
                for r in range(rounds):
                    for kind in ("plain", "spare", "spare_site"):
                        t0 = time.perf_counter()
                        ctx = await browser.new_context()
                        page = await ctx.new_page()
                        if kind == "spare_site":
                            blank = f"{origin}/__shopfleet_blank"
                            await page.route(blank, lambda rt: rt.fulfill(
                                status=200, content_type="text/html", body=""))
                            await page.goto(blank)
                            await page.unroute(blank)
                        prepared = time.perf_counter()
                        if kind != "plain":
                            await asyncio.sleep(AHEAD_S)
                        r0 = renderers(pid)
                        t1 = time.perf_counter()
                        await page.goto(url)
                        t2 = time.perf_counter()
                        out[kind]["nav_ms"].append((t2 - t1) * 1000)
                        out[kind]["prepare_ms"].append((prepared - t0) * 1000)
                        out[kind]["renderers_started"].append(max(0, renderers(pid) - r0))
                        await ctx.close()
                        await asyncio.sleep(0.2)
                    note(f"round {r + 1}/{rounds}: " + ", ".join(
                        f"{k} {v['nav_ms'][-1]:.0f} ms" for k, v in out.items()))
            finally:
                await browser.close()
    return out


def main() -> None:
    args = arg_parser(__doc__ or "").parse_args()
    rounds = 4 if args.quick else 20
    emit_machine(BENCH, args.dir)
    out = asyncio.run(run(rounds))
    for kind, m in out.items():
        emit_summary(BENCH, kind, "first_navigation_ms", m["nav_ms"], "ms", quick=args.quick,
                     ahead_s=0.0 if kind == "plain" else AHEAD_S)
        emit_summary(BENCH, kind, "prepare_ms", m["prepare_ms"], "ms", quick=args.quick,
                     note="context + page (+ the blank site document for spare_site)")
        emit(BENCH, kind, "renderers_started_at_navigation", sum(m["renderers_started"]),
             "processes", rounds=rounds)
    emit_machine(BENCH, args.dir)


if __name__ == "__main__":
    main()
