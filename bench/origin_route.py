"""What a network route that aborts foreign documents costs a page load (issue #13).

One page with ``N`` same-origin images (60; ``--quick`` 20) served by ``python -m http.server``
in its own process, loaded in real Chromium (``/usr/bin/chromium``), a fresh context per load,
``wait_until="load"``. Three subjects, interleaved, ``REPS`` loads each (30; ``--quick`` 8):

* ``no_route`` — no interception (what ShopFleet ships: origins are checked by the runner
  after every step and on every frame navigation and popup);
* ``route_regex`` — ``context.route`` with a negative-lookahead regex of the shop's origin:
  Playwright's driver intercepts every request and matches it itself, only foreign URLs reach
  the Python handler (which aborts documents and continues the rest);
* ``route_all`` — ``context.route("**/*")`` with the handler judging every request in Python.

Prints the median and the spread (p10–p90) of the load time per subject in ms.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arg_parser, emit, note, percentiles
from playwright.async_api import async_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run"]
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


async def main(quick: bool) -> None:
    n = 20 if quick else 60
    reps = 8 if quick else 30
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for k in range(n):
            (root / f"i{k}.png").write_bytes(PNG)
        imgs = "".join(f"<img src='i{k}.png?v={k}'>" for k in range(n))
        (root / "index.html").write_text(f"<!doctype html><p>page</p>{imgs}")
        server = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind",
                                   "127.0.0.1", "--directory", d],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            port = int(re.search(r"port (\d+)", line).group(1))  # type: ignore[union-attr]
            origin = f"http://127.0.0.1:{port}"
            url = f"{origin}/index.html"
            pw = await async_playwright().start()
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            foreign = re.compile(rf"^(?!{re.escape(origin)}/)")
            handled = {"route_regex": 0, "route_all": 0}

            async def judge(route: Any, subject: str) -> None:
                handled[subject] += 1
                req = route.request
                if req.resource_type == "document" and not req.url.startswith(origin + "/"):
                    await route.abort("blockedbyclient")
                else:
                    await route.continue_()

            def handler(subject: str) -> Any:
                async def h(route: Any) -> None:
                    await judge(route, subject)
                return h

            times: dict[str, list[float]] = {"no_route": [], "route_regex": [], "route_all": []}
            for _ in range(reps):
                for subject in times:
                    ctx = await browser.new_context()
                    if subject == "route_regex":
                        await ctx.route(foreign, handler(subject))
                    elif subject == "route_all":
                        await ctx.route("**/*", handler(subject))
                    page = await ctx.new_page()
                    t0 = time.perf_counter()
                    await page.goto(url, wait_until="load")
                    times[subject].append((time.perf_counter() - t0) * 1000)
                    await ctx.close()
            await browser.close()
            await pw.stop()
        finally:
            server.terminate()
            server.wait()
    for subject, vals in times.items():
        p10, p90 = percentiles(vals, [10, 90])
        emit("origin_route", subject, "page_load_ms", statistics.median(vals), "ms",
             images=n, reps=reps, p10=round(p10, 2), p90=round(p90, 2))
    note(f"requests seen by the Python handler: {handled}")


if __name__ == "__main__":
    args = arg_parser(__doc__ or "").parse_args()
    asyncio.run(main(args.quick))
