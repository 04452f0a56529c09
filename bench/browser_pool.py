"""Browser pool: the shipped ``collect_data`` flow through the real engine, against Crawlee.

Measured in one run, against the same demo site (its own process, so its HTTP threads do not
share our interpreter lock), the same Chromium (``/usr/bin/chromium``) and the same launch flags
(``core.browser.discovery.launch_args``, the demo host names mapped to loopback):

1. tasks/min — ``collect_data`` tasks (200; ``--quick`` 8), statistics page ``i+1``
   of shop ``i mod 9`` (all 9 demo shops: a shop runs one task at a time), submitted to a fresh
   SQLite store and run by ``build_engine`` (browser executor: pool, flow runner, gates,
   breakers, checkpoints after every step) with ``run_until_idle``; pools of 1, 2 and 4
   browsers (slots = browsers), ``warm = max_browsers`` launched before the clock starts;
   gates unlimited (rate 1e9/s). Once with ``pool.prewarm_contexts`` off (the default) and once
   on. Every shop logged in once before the clock (a first pass of 9 tasks), so the timed tasks
   reuse their saved sessions, as they would in daily use. Each task's extracted SKUs are
   checked against the site's catalogue (``verified`` in the params).
2. start-to-first-step — from the engine's ``TaskStateChanged(running)`` (the claim) to the
   task's first ``TaskProgress`` (its first step starts), p50/p90: *warm* over all the tasks of
   the runs above; *cold* from fresh engines whose pool has ``warm = 0`` (no browser yet), each
   given ``max_browsers`` tasks, repeated ``COLD_REPS`` times.
3. Crawlee for Python's ``PlaywrightCrawler`` (in a child process of this script) visiting the
   same pages at the same concurrency (``min = max = desired``), each page: the same checks and
   extraction as the flow (login form visible? table visible; all SKUs, views, orders) pushed
   to its in-memory dataset. Twice: a fresh context per page (``use_incognito_pages=True``, the
   isolation ShopFleet gives every task) and its default shared context. Crawlee's default
   allocation: one browser holding the concurrent pages (up to 20 per browser). Fingerprint
   injection off (``fingerprint_generator=None``: less work per page, the stronger peer),
   retries 1, memory storage, no logging setup. Login: each shop logs in once through the
   site's form with Playwright before the clock; a pre-navigation hook adds the shop's session
   cookie to the page's context (equivalent to ShopFleet loading the shop's saved session).
   Clock: from the browser's launch (``post_launch_hook``) to the last page closed
   (``post_page_close_hook``).

4. Shop profiles (#17): the same tasks with every shop's profile applied — ``none`` (no
   profile of its own: locale zh-CN only), ``profile`` (locale, time zone, user agent,
   viewport, an extra header) and ``profile+proxy`` (that plus proxy.py on loopback with a
   password, ``core.testing.proxy_server``) — interleaved in the same run, same pool (2
   browsers, spare contexts off: a profiled shop never takes a spare made for another
   profile), seconds per task and the overhead of ``profile`` over ``none`` (target: within
   10 %; the proxy hop is reported beside it). ``--only profiles`` runs just this part.

The last lines compare against the targets of the issue (``ratio_*`` and ``*_vs_target``, with
``target`` and ``met`` in their params); with ``--repeat R`` the targets use the median of the
R runs (runs are interleaved, so drift hits every subject alike).

Run: ``python bench/browser_pool.py [--quick] [--repeat R]``; JSON Lines on stdout, progress on
stderr. Needs ``crawlee[playwright]`` (the ``bench`` extra) for the peer; without it the peer
lines are skipped with a note.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import SiteProcess, arg_parser, emit, note, percentiles, temp_dir

from core.browser.discovery import launch_args, running_as_root
from core.build import build_engine, open_store
from core.config import Settings
from core.demo import demo_settings, register_demo_shops
from core.demosite import DemoShop, DemoSite, host_resolver_rules, stats_rows
from core.events import Event, TaskProgress, TaskStateChanged
from core.specs import TaskSpec
from core.vault import Vault

BENCH = "browser_pool"
CHROMIUM = "/usr/bin/chromium"
UNLIMITED = {"rate_per_s": 1e9, "burst": 1e9}
FLOW = "collect_data"


@dataclass(frozen=True)
class Sizes:
    pages: int
    """Tasks (pages) per timed run."""
    pools: tuple[int, ...]
    """Browser counts (= concurrency) measured."""
    cold_reps: int
    """Fresh cold engines per pool size for the start-to-first-step figure."""


FULL_SIZES = Sizes(pages=200, pools=(1, 2, 4), cold_reps=6)
QUICK_SIZES = Sizes(pages=8, pools=(2,), cold_reps=2)


# -- the demo site in its own process -------------------------------------------------------------


def work(shops: list[DemoShop], n: int) -> list[tuple[DemoShop, int]]:
    """The timed pages: statistics page ``i+1`` of shop ``i mod 9``."""
    return [(shops[i % len(shops)], i + 1) for i in range(n)]


def expected_skus(shop: str, page: int) -> list[str]:
    return [r[0] for r in stats_rows(shop, page)]


# -- ShopFleet ------------------------------------------------------------------------------------


def sf_settings(browsers: int, *, warm: int, prewarm: bool) -> Settings:
    return demo_settings(Settings()).with_changes(
        browser={"executable_path": CHROMIUM, "host_resolver_rules": host_resolver_rules()},
        pool={"max_browsers": browsers, "warm": warm, "prewarm_contexts": prewarm,
              "step_timeout_s": 30},
        gates={"global": UNLIMITED, "default_domain": UNLIMITED},
    )


@dataclass
class SfRun:
    seconds: float
    done: int
    failed: int
    verified: int
    start_latency_s: list[float] = field(default_factory=list)


class StartTimes:
    """Claim → first step, from the engine's events (stamped as they are published)."""

    def __init__(self) -> None:
        self.claimed: dict[int, float] = {}
        self.first_step: dict[int, float] = {}

    def __call__(self, ev: Event) -> None:
        now = time.perf_counter()
        if isinstance(ev, TaskStateChanged) and ev.state == "running":
            self.claimed.setdefault(ev.task_id, now)
        elif isinstance(ev, TaskProgress) and ev.task_id not in self.first_step:
            self.first_step[ev.task_id] = now

    def latencies(self) -> list[float]:
        return [self.first_step[t] - c for t, c in self.claimed.items() if t in self.first_step]


def apply_profiles(store: Any, vault: Vault, proxy_url: str | None) -> None:
    """Give every shop a profile (#17): locale, time zone, UA, viewport, a header[, proxy]."""
    from core.profile_store import save_profile
    from core.profiles import ProfileInput, parse_profile_fields

    for shop in store.shops():
        given = ProfileInput(proxy=proxy_url, locale="en-US", timezone="America/New_York",
                             user_agent="Mozilla/5.0 (X11; Linux x86_64) ShopFleetBench/1.0",
                             viewport="1366x768", headers=[f"X-Shop: {shop.name}"])
        save_profile(store, shop.name, parse_profile_fields(shop.profile, given), vault=vault)


async def sf_run(site: SiteProcess, home: Path, tag: str, items: list[tuple[DemoShop, int]], *,
                 browsers: int, warm: int, prewarm: bool, profile: str = "none",
                 proxy_url: str | None = None) -> SfRun:
    """One engine over a fresh store: submit ``items``, start the pool, run until idle."""
    settings = sf_settings(browsers, warm=warm, prewarm=prewarm)
    store = await asyncio.to_thread(open_store, settings, home / f"{tag}.db")
    try:
        vault = await asyncio.to_thread(Vault.open, home)
        await asyncio.to_thread(register_demo_shops, store, site.site, vault)
        if profile != "none":
            await asyncio.to_thread(apply_profiles, store, vault,
                                    proxy_url if profile == "profile+proxy" else None)
        engine = build_engine(settings, store, home=home, slots=browsers)
        times = StartTimes()
        engine.bus.subscribe(times)
        specs = [TaskSpec.model_validate({"type": FLOW, "shop": shop.name, "flow": FLOW,
                                          "params": {"page": page}}) for shop, page in items]
        ids = await engine.submit(specs)
        await engine.start()  # launches the warm browsers: before the clock
        try:
            t0 = time.perf_counter()
            await engine.run_until_idle()
            seconds = time.perf_counter() - t0
        finally:
            await engine.stop()
        counts = await asyncio.to_thread(store.counts)
        verified = 0
        for tid, (shop, page) in zip(ids, items, strict=True):
            rec = await asyncio.to_thread(store.task, tid)
            if rec.results and rec.results.get("skus") == expected_skus(shop.name, page):
                verified += 1
    finally:
        await asyncio.to_thread(store.close)
    return SfRun(seconds, counts.get("done", 0), counts.get("failed", 0), verified,
                 times.latencies())


# -- Crawlee (child process) ----------------------------------------------------------------------


def crawlee_available() -> bool:
    try:
        import crawlee  # noqa: F401
    except ImportError:
        return False
    return True


def crawlee_run(port: int, pages: int, concurrency: int, incognito: bool) -> dict[str, Any]:
    """Run the Crawlee child; returns its result dictionary."""
    job = json.dumps({"port": port, "pages": pages, "concurrency": concurrency,
                      "incognito": incognito})
    with tempfile.TemporaryDirectory(prefix="shopfleet-bench-crawlee-") as storage:
        env = dict(os.environ, CRAWLEE_STORAGE_DIR=storage, CRAWLEE_PURGE_ON_START="true",
                   CRAWLEE_HEADLESS="true", CRAWLEE_DEFAULT_BROWSER_PATH=CHROMIUM,
                   PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
        proc = subprocess.run([sys.executable, __file__, "--crawlee-child", job],
                              capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"crawlee child failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


async def crawlee_child(job: dict[str, Any]) -> dict[str, Any]:
    import logging

    from crawlee import ConcurrencySettings, Request
    from crawlee.browsers import BrowserPool
    from crawlee.crawlers import (
        PlaywrightCrawler,
        PlaywrightCrawlingContext,
        PlaywrightPreNavCrawlingContext,
    )
    from crawlee.storage_clients import MemoryStorageClient
    from playwright.async_api import async_playwright

    logging.getLogger("crawlee").setLevel(logging.WARNING)
    settings = sf_settings(1, warm=0, prewarm=False)
    args = launch_args(settings.browser, as_root=running_as_root())
    launch = {"executable_path": CHROMIUM, "args": args, "chromium_sandbox": False}
    shops = DemoSite(port=int(job["port"])).shops()
    items = work(shops, int(job["pages"]))
    conc = int(job["concurrency"])

    # Log every shop in once, before the clock, through the site's own form.
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(headless=True, **launch)
        context = await browser.new_context()
        page = await context.new_page()
        for shop in shops:
            await page.goto(f"{shop.base_url}/login?next=/shop/{shop.name}/stats")
            await page.fill("#username", shop.username)
            await page.fill("#password", shop.password)
            await page.click("#login-btn")
            await page.wait_for_selector("table#stats")
        cookies = (await context.storage_state())["cookies"]
        await browser.close()
    by_shop: dict[str, list[Any]] = {}
    for c in cookies:
        by_shop.setdefault(c["path"].rstrip("/").split("/")[-1], []).append(c)

    pool = BrowserPool.with_default_plugin(
        headless=True, browser_launch_options=launch, use_incognito_pages=bool(job["incognito"]))
    marks: dict[str, float] = {}

    @pool.post_launch_hook
    async def launched(_page_id: str, _controller: Any) -> None:
        marks.setdefault("launched", time.perf_counter())

    @pool.post_page_close_hook
    async def closed(_page_id: str, _controller: Any) -> None:
        marks["last_closed"] = time.perf_counter()

    crawler = PlaywrightCrawler(
        browser_pool=pool, storage_client=MemoryStorageClient(), configure_logging=False,
        max_request_retries=1,
        concurrency_settings=ConcurrencySettings(min_concurrency=conc, max_concurrency=conc,
                                                 desired_concurrency=conc))
    verified = [0]

    @crawler.pre_navigation_hook
    async def session(ctx: PlaywrightPreNavCrawlingContext) -> None:
        await ctx.page.context.add_cookies(by_shop[ctx.request.user_data["shop"]])

    @crawler.router.default_handler
    async def handler(ctx: PlaywrightCrawlingContext) -> None:
        page = ctx.page
        if await page.locator("#login-btn").is_visible():
            raise RuntimeError("the session was not accepted")
        await page.locator("table#stats").wait_for(state="visible")
        skus = await page.locator("#stats td.sku").all_inner_texts()
        views = await page.locator("#stats td.views").all_inner_texts()
        orders = await page.locator("#stats td.orders").all_inner_texts()
        await ctx.push_data({"skus": skus, "views": views, "orders": orders})
        shop, pno = ctx.request.user_data["shop"], int(ctx.request.user_data["page"])
        if skus == expected_skus(str(shop), pno):
            verified[0] += 1

    requests = [Request.from_url(f"{shop.base_url}/stats?page={pno}",
                                 user_data={"shop": shop.name, "page": pno})
                for shop, pno in items]
    final = await crawler.run(requests)
    import crawlee

    return {"seconds": marks["last_closed"] - marks["launched"],
            "finished": final.requests_finished, "failed": final.requests_failed,
            "verified": verified[0], "version": getattr(crawlee, "__version__", "?")}


# -- the run ------------------------------------------------------------------------------------


Results = dict[tuple[str, int], list[float]]
"""(configuration, browsers) -> tasks/min of each repetition."""


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def _ms(values: list[float]) -> tuple[float, float]:
    p50, p90 = percentiles(values, [50, 90])
    return p50 * 1000, p90 * 1000


async def shopfleet_part(site: SiteProcess, home: Path, sizes: Sizes, browsers: int, rep: int,
                         out: Results, warm_lat: dict[int, list[float]]) -> None:
    items = work(site.shops(), sizes.pages)
    for prewarm in (False, True):
        tag = f"r{rep}-b{browsers}-{'pre' if prewarm else 'plain'}"
        r = await sf_run(site, home, tag, items, browsers=browsers, warm=browsers,
                         prewarm=prewarm)
        rate = r.done * 60 / r.seconds
        key = "shopfleet+prewarm" if prewarm else "shopfleet"
        out.setdefault((key, browsers), []).append(rate)
        if not prewarm:
            warm_lat.setdefault(browsers, []).extend(r.start_latency_s)
        note(f"shopfleet {browsers} browsers prewarm={prewarm}: {r.done} done "
             f"({r.failed} failed, {r.verified} verified) in {r.seconds:.1f}s = "
             f"{rate:.0f}/min")
        emit(BENCH, "shopfleet", "tasks_per_min", rate, "1/min", browsers=browsers,
             slots=browsers, shops=9, pages=sizes.pages, prewarm_contexts=prewarm,
             warm=browsers, done=r.done, failed=r.failed, verified=r.verified,
             seconds=round(r.seconds, 2), rep=rep, flow=FLOW)
        p50, p90 = _ms(r.start_latency_s)
        emit(BENCH, "shopfleet", "claim_to_first_step_p50_ms", p50, "ms", pool="warm",
             browsers=browsers, prewarm_contexts=prewarm, p90_ms=round(p90, 1),
             samples=len(r.start_latency_s), rep=rep)


async def cold_part(site: SiteProcess, home: Path, sizes: Sizes) -> dict[int, list[float]]:
    shops = site.shops()
    cold: dict[int, list[float]] = {}
    k = 0
    for browsers in sizes.pools:
        for rep in range(sizes.cold_reps):
            items = [(shops[(k + j) % len(shops)], 300 + k + j) for j in range(browsers)]
            k += browsers
            r = await sf_run(site, home, f"cold-b{browsers}-{rep}", items, browsers=browsers,
                             warm=0, prewarm=False)
            cold.setdefault(browsers, []).extend(r.start_latency_s)
    return cold


PROFILE_VARIANTS = ("none", "profile", "profile+proxy")


async def profile_part(site: SiteProcess, home: Path, sizes: Sizes, rep: int, proxy_url: str,
                       per_task: dict[str, list[float]]) -> None:
    """#17: the same pages with no profile, a profile, and a profile through a proxy."""
    browsers = 2
    items = work(site.shops(), sizes.pages)
    order = PROFILE_VARIANTS if rep % 2 == 0 else tuple(reversed(PROFILE_VARIANTS))
    for variant in order:
        r = await sf_run(site, home, f"profile-r{rep}-{variant}", items, browsers=browsers,
                         warm=browsers, prewarm=False, profile=variant, proxy_url=proxy_url)
        spt = r.seconds / max(1, r.done)
        per_task.setdefault(variant, []).append(spt)
        note(f"profiles {variant}: {r.done} done ({r.failed} failed, {r.verified} verified) "
             f"in {r.seconds:.1f}s = {spt * 1000:.0f} ms/task")
        emit(BENCH, "shopfleet", "seconds_per_task", spt, "s", profile=variant,
             browsers=browsers, prewarm_contexts=False, pages=sizes.pages, done=r.done,
             failed=r.failed, verified=r.verified, rep=rep, flow=FLOW)


def report_profiles(per_task: dict[str, list[float]]) -> None:
    base = _median(per_task["none"])
    for variant in PROFILE_VARIANTS[1:]:
        value = _median(per_task[variant])
        spread = (min(per_task[variant]) / base, max(per_task[variant]) / base)
        _target("profile_overhead_ratio", value / base, "x",
                "<= 1.10" if variant == "profile" else "none (reported: the proxy hop)",
                value <= base * 1.10 if variant == "profile" else None, profile=variant,
                reps=len(per_task[variant]), median_s_per_task=round(value, 4),
                none_median_s_per_task=round(base, 4),
                spread=[round(spread[0], 3), round(spread[1], 3)])


def crawlee_part(site: SiteProcess, sizes: Sizes, browsers: int, rep: int,
                 out: Results) -> None:
    for incognito in (True, False):
        r = crawlee_run(site.port, sizes.pages, browsers, incognito)
        rate = r["finished"] * 60 / r["seconds"]
        key = "crawlee_fresh" if incognito else "crawlee_shared"
        out.setdefault((key, browsers), []).append(rate)
        note(f"crawlee concurrency {browsers} incognito={incognito}: {r['finished']} "
             f"finished ({r['failed']} failed, {r['verified']} verified) in "
             f"{r['seconds']:.1f}s = {rate:.0f}/min")
        emit(BENCH, "crawlee", "tasks_per_min", rate, "1/min", concurrency=browsers,
             contexts="fresh per page (use_incognito_pages=True)" if incognito
             else "shared (default)", browsers="one (Crawlee default, 20 pages each)",
             pages=sizes.pages, shops=9, finished=r["finished"], failed=r["failed"],
             verified=r["verified"], seconds=round(r["seconds"], 2), rep=rep,
             version=r["version"], login="pre-navigation hook adds the shop's "
             "session cookie (logged in once per shop before the clock)",
             fingerprints=False)


def _target(metric: str, value: float, unit: str, target: str, met: bool | None,
            **params: Any) -> None:
    emit(BENCH, "shopfleet", metric, value, unit, target=target, met=met, **params)


def report_targets(out: Results, warm: dict[int, list[float]], cold: dict[int, list[float]],
                   sizes: Sizes, have_peer: bool) -> None:
    for browsers in sizes.pools:
        sf = _median(out[("shopfleet", browsers)])
        pre = _median(out[("shopfleet+prewarm", browsers)])
        if have_peer:
            fresh = _median(out[("crawlee_fresh", browsers)])
            shared = _median(out[("crawlee_shared", browsers)])
            for variant, value in (("off", sf), ("on", pre)):
                _target("ratio_vs_crawlee_fresh", value / fresh, "x", ">= 1", value >= fresh,
                        browsers=browsers, prewarm_contexts=variant, reps=len(
                            out[("shopfleet", browsers)]))
                _target("ratio_vs_crawlee_shared", value / shared, "x", "none (reported)",
                        None, browsers=browsers, prewarm_contexts=variant)
        _target("ratio_prewarm_vs_plain", pre / sf, "x", "none (reported)", None,
                browsers=browsers,
                note="what pool.prewarm_contexts = true (a spare context per browser, made "
                     "while the current task runs) buys")
        if browsers in cold and browsers in warm:
            w50 = percentiles(warm[browsers], [50])[0]
            c50 = percentiles(cold[browsers], [50])[0]
            emit(BENCH, "shopfleet", "claim_to_first_step_p50_ms", c50 * 1000, "ms",
                 pool="cold", browsers=browsers, samples=len(cold[browsers]),
                 p90_ms=round(percentiles(cold[browsers], [90])[0] * 1000, 1))
            _target("warm_vs_cold_start_p50", w50 / c50, "x", "<= 0.333", w50 * 3 <= c50,
                    browsers=browsers, warm_p50_ms=round(w50 * 1000, 1),
                    cold_p50_ms=round(c50 * 1000, 1), warm_samples=len(warm[browsers]),
                    cold_samples=len(cold[browsers]))


async def profiles_only(sizes: Sizes, repeat: int, parent: str | None) -> None:
    from core.testing.proxy_server import LoopbackProxy

    site = SiteProcess()
    per_task: dict[str, list[float]] = {}
    try:
        with temp_dir("shopfleet-bench-profiles-", parent) as home, \
                LoopbackProxy(home / "proxy", user="bench", password="b3nch pw") as proxy:
            shops = site.shops()
            login = [(s, 500 - i) for i, s in enumerate(shops)]
            await sf_run(site, home, "login", login, browsers=2, warm=2, prewarm=False)
            for rep in range(repeat):
                await profile_part(site, home, sizes, rep, proxy.url(), per_task)
    finally:
        site.close()
    report_profiles(per_task)


async def main_async(sizes: Sizes, repeat: int, parent: str | None) -> None:
    have_peer = crawlee_available()
    if not have_peer:
        note("crawlee is not installed (pip install 'crawlee[playwright]'): peer skipped")
    site = SiteProcess()
    note(f"demo site on 127.0.0.1:{site.port} (own process)")
    out: Results = {}
    warm: dict[int, list[float]] = {}
    try:
        with temp_dir("shopfleet-bench-pool-", parent) as home:
            # Every shop logs in once (sessions saved in home/sessions) before any clock.
            shops = site.shops()
            login = [(s, 500 - i) for i, s in enumerate(shops)]
            r = await sf_run(site, home, "login", login, browsers=2, warm=2, prewarm=False)
            note(f"login pass: {r.done} done, {r.failed} failed")
            # Per pool size, ShopFleet and then Crawlee, back to back: on a shared machine the
            # load drifts, and neighbours in time see the same load.
            for rep in range(repeat):
                for browsers in sizes.pools:
                    await shopfleet_part(site, home, sizes, browsers, rep, out, warm)
                    if have_peer:
                        await asyncio.to_thread(crawlee_part, site, sizes, browsers, rep, out)
            cold = await cold_part(site, home, sizes)
            from core.testing.proxy_server import LoopbackProxy

            per_task: dict[str, list[float]] = {}
            with LoopbackProxy(home / "proxy", user="bench", password="b3nch pw") as proxy:
                for rep in range(repeat):
                    await profile_part(site, home, sizes, rep, proxy.url(), per_task)
    finally:
        site.close()
    report_targets(out, warm, cold, sizes, have_peer)
    report_profiles(per_task)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "browser pool benchmark")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run every configuration R times (interleaved); targets use medians")
    parser.add_argument("--only", choices=["profiles"], default="",
                        help="run one part: profiles (#17: per-task overhead of a profile)")
    parser.add_argument("--crawlee-child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.crawlee_child:
        result = asyncio.run(crawlee_child(json.loads(args.crawlee_child)))
        print(json.dumps(result), flush=True)
        return
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    note(f"browser_pool: sizes {sizes}, repeat {args.repeat}")
    if args.only == "profiles":
        asyncio.run(profiles_only(sizes, max(1, args.repeat), args.dir))
        return
    asyncio.run(main_async(sizes, max(1, args.repeat), args.dir))


if __name__ == "__main__":
    main()
