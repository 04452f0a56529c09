"""Browser pool: the shipped ``collect_data`` flow through the real engine, against Crawlee.

Measured in one run, against the same demo site (its own process, so its HTTP threads do not
share our interpreter lock), the same Chromium (``/usr/bin/chromium``) and the same launch flags
(``core.browser.discovery.launch_args``, the demo host names mapped to loopback):

1. tasks/min — ``collect_data`` tasks (``pages``: 60; ``--quick`` 8), statistics page ``i+1``
   of shop ``i mod 9`` (all 9 demo shops: a shop runs one task at a time), submitted to a fresh
   SQLite store (FULL) and run by ``build_engine`` (browser executor: pool, flow runner, gates,
   breakers, checkpoints) with ``run_until_idle``; gates unlimited (rate 1e9/s); the browsers
   are launched before the clock starts. At concurrency ``c`` in 1, 2 and 4, matched both ways:

   * ``shopfleet`` — ``c`` browsers × 1 context (slots = c), ``prewarm_contexts`` off (default);
   * ``shopfleet+prewarm`` — the same with ``prewarm_contexts = true``;
   * ``shopfleet_1browser`` — 1 browser × ``c`` contexts (``contexts_per_browser = c``,
     prewarm on), beside Crawlee's one browser × ``c`` pages;
   * ``crawlee_fresh`` / ``crawlee_shared`` — Crawlee for Python's ``PlaywrightCrawler`` at the
     same concurrency, one browser holding the pages (its default), a fresh context per page
     (``use_incognito_pages=True``, the isolation ShopFleet gives every task) or its default
     shared context;
   * ``crawlee_per_browser`` — Crawlee with one page per browser (``max_open_pages_per_browser
     = 1``, fresh context per page): ``c`` browsers, beside ShopFleet's ``c`` browsers.

   Every ShopFleet task opens a fresh context with its shop's saved session (every shop logged
   in once before any clock), and pays durability Crawlee does not: its claim and ack (FULL
   commits), checkpoints (written in the background; the last one skipped when the ack
   follows), the session saved (encrypted, fsync) when it changed. Crawlee keeps its queue and
   dataset in memory and saves nothing. Fingerprint injection off (less work per page, the
   stronger peer), retries 1. Crawlee login: each shop logs in once through the site's form
   before the clock; a pre-navigation hook adds its session cookie. Crawlee's clock: browser
   launch to last page closed. Each task's extracted SKUs are checked against the catalogue
   (``verified``).
   Repetitions are interleaved (ShopFleet and Crawlee alternating, the order reversed every
   other repetition): ``REPEATS`` (5) for the subjects of the targets (``shopfleet``,
   ``shopfleet+prewarm``, ``crawlee_shared``) at concurrency 2; ``--reps-other`` (default 1)
   for every other subject and concurrency (figures without a target).
2. Per-phase breakdown of a ShopFleet task (p50/p95 over every task of the target
   concurrency), through the executor's ``phase_timer`` hook and the pool's: claim (one
   ``claim_many`` call), shop (record + password decrypt), session load/decrypt, browser
   acquire, context, page (or ``session_apply`` into a spare), gate, each step by action,
   checkpoints, flow, ack — and after the task, in the background: session read, save, close.
3. Claim → first step p50 (``TaskStateChanged(running)`` → first ``TaskProgress``): warm pool
   (all tasks above) against a cold pool (fresh engines with ``warm = 0``, ``max_browsers``
   tasks each, ``cold_reps`` times). Target: warm ≤ 0.33 × cold and warm < 100 ms.
4. Chromium's memory: the process tree of the pool's browsers (psutil: the browser and its
   children, RSS and PSS), idle per browser right after start, and per context: (tree at the
   most contexts alive − idle tree) / contexts alive, sampled every 0.5 s during the runs.
5. Loop lag of the engine's loop during the browser runs (a 10 ms ticker: how late it wakes),
   p50/p99/max.

Targets (fixed; printed with met/unmet, never on ``--quick``): at 2 browsers ShopFleet tasks/min
≥ 1.0 × Crawlee shared (with a fresh context per task kept); prewarm never slower than without
(ratio ≥ 1.0); warm claim → first step p50 ≤ 0.33 × cold and < 100 ms.

6. ``--only profiles`` (#17): per-task time of the same pages with every shop given a profile
   (locale, time zone, user agent, viewport, a header), and with a profile through a proxy
   (proxy.py on loopback), against none, interleaved; target: a profile's ratio ≤ 1.10.

Run: ``python bench/browser_pool.py [--quick] [--reps-other N] [--only profiles]``; JSON Lines
on stdout, progress on stderr. A smaller look: ``--pools 2 --reps 3 --pages 40 --subjects
shopfleet,shopfleet+prewarm,crawlee_shared`` (the target subjects at 2 browsers only).
Needs ``crawlee[playwright]`` (the ``bench`` extra) for the peer; without it the peer lines
are skipped with a note.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from _common import (
    REPEATS,
    SiteProcess,
    arg_parser,
    emit,
    emit_machine,
    emit_summary,
    note,
    percentiles,
    temp_dir,
)

from core.browser.discovery import launch_args, running_as_root
from core.build import build_engine, open_store
from core.config import Settings
from core.demo import demo_settings, register_demo_shops
from core.demosite import DemoShop, DemoSite, host_resolver_rules, stats_rows
from core.engine import Engine
from core.events import Event, TaskProgress, TaskStateChanged
from core.specs import TaskSpec
from core.vault import Vault

BENCH = "browser_pool"
CHROMIUM = "/usr/bin/chromium"
UNLIMITED = {"rate_per_s": 1e9, "burst": 1e9}
FLOW = "collect_data"
TARGET_C = 2
"""The concurrency the targets are read at (2 browsers)."""


@dataclass(frozen=True)
class Sizes:
    pages: int
    """Tasks (pages) per timed run."""
    pools: tuple[int, ...]
    """Concurrencies measured."""
    reps: int
    """Interleaved repetitions at the target concurrency."""
    reps_other: int
    """Repetitions at the other concurrencies (no target there)."""
    cold_reps: int
    """Fresh cold engines for the start-to-first-step figure."""


FULL_SIZES = Sizes(pages=60, pools=(1, 2, 4), reps=REPEATS, reps_other=1, cold_reps=4)
QUICK_SIZES = Sizes(pages=8, pools=(2,), reps=2, reps_other=1, cold_reps=2)


def work(shops: list[DemoShop], n: int) -> list[tuple[DemoShop, int]]:
    """The timed pages: statistics page ``i+1`` of shop ``i mod 9``."""
    return [(shops[i % len(shops)], i + 1) for i in range(n)]


def expected_skus(shop: str, page: int) -> list[str]:
    return [r[0] for r in stats_rows(shop, page)]


# -- ShopFleet ------------------------------------------------------------------------------------


def sf_settings(browsers: int, *, warm: int, prewarm: bool, contexts: int = 1) -> Settings:
    return demo_settings(Settings()).with_changes(
        browser={"executable_path": CHROMIUM, "host_resolver_rules": host_resolver_rules()},
        pool={"max_browsers": browsers, "warm": warm, "prewarm_contexts": prewarm,
              "contexts_per_browser": contexts, "step_timeout_s": 30},
        gates={"global": UNLIMITED, "default_domain": UNLIMITED},
    )


@dataclass
class SfRun:
    seconds: float
    done: int
    failed: int
    verified: int
    start_latency_s: list[float] = field(default_factory=list)
    phases: dict[str, list[float]] = field(default_factory=dict)
    lag_ms: list[float] = field(default_factory=list)
    idle_tree: dict[str, float] = field(default_factory=dict)
    peak: dict[str, float] = field(default_factory=dict)


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


def instrument(engine: Engine, phases: dict[str, list[float]],
               stamps: dict[tuple[int, str], tuple[float, float]]) -> None:
    """Phase timing: the executor's and pool's hook, and the claim and ack store calls;
    ``stamps`` keeps (end, seconds) of each task's first record of a phase."""
    def record(task: int, phase: str, seconds: float) -> None:
        phases.setdefault(phase, []).append(seconds)
        stamps.setdefault((task, phase), (time.perf_counter(), seconds))

    engine.executor.phase_timer = record  # type: ignore[attr-defined]
    astore = engine.astore
    claim_many, ack = astore.claim_many, astore.ack

    async def timed_claim(*a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = await claim_many(*a, **kw)
        if out:
            phases.setdefault("claim", []).append(time.perf_counter() - t)
        return out

    async def timed_ack(*a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = await ack(*a, **kw)
        phases.setdefault("ack", []).append(time.perf_counter() - t)
        return out

    astore.claim_many = timed_claim  # type: ignore[method-assign]
    astore.ack = timed_ack  # type: ignore[method-assign]


def browser_pids(engine: Engine) -> list[int]:
    pool = engine.executor.pool  # type: ignore[attr-defined]
    return [b.handle.pid for b in pool._browsers if b.handle.pid and not b.dead]


def tree_memory(pids: list[int]) -> dict[str, float]:
    """RSS and PSS (MiB) of the browsers' process trees (blocking: run it in a thread)."""
    rss = pss = 0.0
    procs = 0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for p in tree:
            try:
                mi = p.memory_full_info()
            except psutil.Error:
                continue
            rss += mi.rss
            pss += getattr(mi, "pss", mi.rss)
            procs += 1
    return {"rss_mb": rss / 2**20, "pss_mb": pss / 2**20, "processes": procs}


async def lag_probe(out: list[float], stop: asyncio.Event) -> None:
    """How late a 10 ms ticker on the engine's loop wakes (ms)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t = loop.time()
        await asyncio.sleep(0.01)
        out.append(max(0.0, (loop.time() - t - 0.01) * 1000))


async def memory_probe(engine: Engine, peak: dict[str, float], stop: asyncio.Event) -> None:
    pool = engine.executor.pool  # type: ignore[attr-defined]
    while not stop.is_set():
        contexts = pool.stats().contexts_alive
        mem = await asyncio.to_thread(tree_memory, browser_pids(engine))
        if contexts and mem["pss_mb"] > peak.get("pss_mb", 0):
            peak.update(mem, contexts=contexts, browsers=len(browser_pids(engine)))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)


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
                 browsers: int, warm: int, prewarm: bool, contexts: int = 1,
                 measure: bool = False, profile: str = "none",
                 proxy_url: str | None = None) -> SfRun:
    """One engine over a fresh store: submit ``items``, start the pool, run until idle
    (``profile``: #17, every shop with a profile, "profile+proxy" through ``proxy_url``)."""
    settings = sf_settings(browsers, warm=warm, prewarm=prewarm, contexts=contexts)
    store = await asyncio.to_thread(open_store, settings, home / f"{tag}.db")
    run = SfRun(0.0, 0, 0, 0)
    try:
        vault = await asyncio.to_thread(Vault.open, home)
        await asyncio.to_thread(register_demo_shops, store, site.site, vault)
        if profile != "none":
            await asyncio.to_thread(apply_profiles, store, vault,
                                    proxy_url if profile == "profile+proxy" else None)
        engine = build_engine(settings, store, home=home, slots=browsers * contexts)
        times = StartTimes()
        engine.bus.subscribe(times)
        stamps: dict[tuple[int, str], tuple[float, float]] = {}
        if measure:
            instrument(engine, run.phases, stamps)
        specs = [TaskSpec.model_validate({"type": FLOW, "shop": shop.name, "flow": FLOW,
                                          "params": {"page": page}}) for shop, page in items]
        ids = await engine.submit(specs)
        await engine.start()  # launches the warm browsers: before the clock
        stop = asyncio.Event()
        probes: list[asyncio.Task[None]] = []
        if measure:
            await asyncio.sleep(1.0)  # the warm browsers settle (spares made)
            run.idle_tree = await asyncio.to_thread(tree_memory, browser_pids(engine))
            run.idle_tree["browsers"] = len(browser_pids(engine))
            probes = [asyncio.create_task(lag_probe(run.lag_ms, stop)),
                      asyncio.create_task(memory_probe(engine, run.peak, stop))]
        try:
            t0 = time.perf_counter()
            await engine.run_until_idle()
            run.seconds = time.perf_counter() - t0
        finally:
            stop.set()
            await asyncio.gather(*probes, return_exceptions=True)
            await engine.stop()
        counts = await asyncio.to_thread(store.counts)
        for tid, (shop, page) in zip(ids, items, strict=True):
            rec = await asyncio.to_thread(store.task, tid)
            if rec.results and rec.results.get("skus") == expected_skus(shop.name, page):
                run.verified += 1
    finally:
        await asyncio.to_thread(store.close)
    run.done, run.failed = counts.get("done", 0), counts.get("failed", 0)
    run.start_latency_s = times.latencies()
    for tid, claimed in times.claimed.items():  # where claim -> first step goes
        load, ready = stamps.get((tid, "session_load")), (
            stamps.get((tid, "session_apply")) or stamps.get((tid, "page")))
        first = times.first_step.get(tid)
        if load is None or ready is None or first is None:
            continue
        entered = load[0] - load[1]
        for part, v in (("claimed_to_executor", entered - claimed),
                        ("executor_to_context_ready", ready[0] - entered),
                        ("context_ready_to_first_step", first - ready[0])):
            run.phases.setdefault(f"start:{part}", []).append(v)
    return run


# -- Crawlee (child process) ----------------------------------------------------------------------


def crawlee_available() -> bool:
    try:
        import crawlee  # noqa: F401
    except ImportError:
        return False
    return True


def crawlee_run(port: int, pages: int, concurrency: int, incognito: bool,
                per_browser: bool = False) -> dict[str, Any]:
    """Run the Crawlee child; returns its result dictionary."""
    job = json.dumps({"port": port, "pages": pages, "concurrency": concurrency,
                      "incognito": incognito, "per_browser": per_browser})
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
    from crawlee.browsers import BrowserPool, PlaywrightBrowserPlugin
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

    if job.get("per_browser"):
        # One page per browser: as many browsers as pages at once, like ShopFleet's.
        pool = BrowserPool(plugins=[PlaywrightBrowserPlugin(
            browser_launch_options={**launch, "headless": True},
            use_incognito_pages=bool(job["incognito"]), max_open_pages_per_browser=1)])
    else:
        pool = BrowserPool.with_default_plugin(
            headless=True, browser_launch_options=launch,
            use_incognito_pages=bool(job["incognito"]))
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
"""(subject, concurrency) -> tasks/min of each repetition."""

SF_SUBJECTS = {
    "shopfleet": "c browsers x 1 context, prewarm_contexts off",
    "shopfleet+prewarm": "c browsers x 1 context, prewarm_contexts on",
    "shopfleet_1browser": "1 browser x c contexts (contexts_per_browser=c), prewarm on",
}
CRAWLEE_SUBJECTS = {
    "crawlee_fresh": "1 browser x c pages, fresh context per page (use_incognito_pages)",
    "crawlee_shared": "1 browser x c pages, one shared context (its default)",
    "crawlee_per_browser": "c browsers x 1 page (max_open_pages_per_browser=1), fresh "
                           "context per page",
}
SF_DURABILITY = ("claim+ack FULL commits; checkpoints (background, last skipped before the "
                 "ack); session saved encrypted+fsync when changed; fresh context per task "
                 "with the shop's saved session")
CRAWLEE_DURABILITY = "none: in-memory queue and dataset; session cookie added per page"


@dataclass
class Collected:
    rates: Results = field(default_factory=dict)
    by_rep: dict[tuple[str, int, int], float] = field(default_factory=dict)
    """(subject, concurrency, repetition) -> tasks/min of a complete run (every task done)."""
    warm_lat: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    phases: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    lag_ms: dict[str, list[float]] = field(default_factory=dict)
    memory: dict[str, list[SfRun]] = field(default_factory=dict)


async def shopfleet_one(site: SiteProcess, home: Path, sizes: Sizes, subject: str, c: int,
                        rep: int, out: Collected) -> None:
    items = work(site.shops(), sizes.pages)
    browsers, contexts = (1, c) if subject == "shopfleet_1browser" else (c, 1)
    prewarm = subject != "shopfleet"
    measure = c == TARGET_C
    r = await sf_run(site, home, f"r{rep}-c{c}-{subject}", items, browsers=browsers,
                     warm=browsers, prewarm=prewarm, contexts=contexts, measure=measure)
    rate = r.done * 60 / r.seconds
    out.rates.setdefault((subject, c), []).append(rate)
    if r.done == sizes.pages:
        out.by_rep[(subject, c, rep)] = rate
    out.warm_lat.setdefault((subject, c), []).extend(r.start_latency_s)
    if measure:
        for phase, values in r.phases.items():
            out.phases.setdefault(subject, {}).setdefault(phase, []).extend(values)
        out.lag_ms.setdefault(subject, []).extend(r.lag_ms)
        out.memory.setdefault(subject, []).append(r)
    note(f"{subject} c={c} rep {rep}: {r.done} done ({r.failed} failed, {r.verified} "
         f"verified) in {r.seconds:.1f}s = {rate:.0f}/min")
    emit(BENCH, subject, "tasks_per_min", rate, "1/min", concurrency=c, browsers=browsers,
         contexts_per_browser=contexts, prewarm_contexts=prewarm, pages=sizes.pages, shops=9,
         done=r.done, failed=r.failed, verified=r.verified, seconds=round(r.seconds, 2),
         rep=rep, flow=FLOW, setup=SF_SUBJECTS[subject], durability=SF_DURABILITY)


def crawlee_one(site: SiteProcess, sizes: Sizes, subject: str, c: int, rep: int,
                out: Collected) -> None:
    r = crawlee_run(site.port, sizes.pages, c, incognito=subject != "crawlee_shared",
                    per_browser=subject == "crawlee_per_browser")
    rate = r["finished"] * 60 / r["seconds"]
    out.rates.setdefault((subject, c), []).append(rate)
    if r["finished"] == sizes.pages:
        out.by_rep[(subject, c, rep)] = rate
    note(f"{subject} c={c} rep {rep}: {r['finished']} finished ({r['failed']} failed, "
         f"{r['verified']} verified) in {r['seconds']:.1f}s = {rate:.0f}/min")
    emit(BENCH, subject, "tasks_per_min", rate, "1/min", concurrency=c, pages=sizes.pages,
         shops=9, finished=r["finished"], failed=r["failed"], verified=r["verified"],
         seconds=round(r["seconds"], 2), rep=rep, version=r["version"],
         setup=CRAWLEE_SUBJECTS[subject], durability=CRAWLEE_DURABILITY, fingerprints=False)


TARGET_SUBJECTS = {"shopfleet", "shopfleet+prewarm", "crawlee_shared"}
"""The subjects of the targets: ``REPEATS`` interleaved repetitions at concurrency 2."""

ONLY: set[str] = set()
"""``--subjects``: run only these (a developer's look at one subject; no peer ratios then)."""


def subjects_at(c: int, have_peer: bool) -> list[str]:
    """ShopFleet and Crawlee alternating; at c = 1 the matched variants are the same runs."""
    sf = ["shopfleet", "shopfleet+prewarm", "shopfleet_1browser"]
    cr = ["crawlee_shared", "crawlee_fresh", "crawlee_per_browser"]
    if c == 1:
        sf, cr = sf[:2], cr[:2]
    order = [x for pair in zip(sf, cr, strict=True) for x in pair] if have_peer else sf
    return [x for x in order if not ONLY or x in ONLY]


async def cold_part(site: SiteProcess, home: Path, sizes: Sizes, out: Collected) -> None:
    shops = site.shops()
    k = 0
    c = TARGET_C
    for rep in range(sizes.cold_reps):
        items = [(shops[(k + j) % len(shops)], 300 + k + j) for j in range(c)]
        k += c
        r = await sf_run(site, home, f"cold-{rep}", items, browsers=c, warm=0, prewarm=False)
        out.warm_lat.setdefault(("cold", c), []).extend(r.start_latency_s)


def _pcts(values: list[float]) -> tuple[float, float]:
    p50, p95 = percentiles(values, [50, 95])
    return p50, p95


def report(out: Collected, sizes: Sizes, have_peer: bool, quick: bool) -> None:
    for (subject, c), rates in sorted(out.rates.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        emit_summary(BENCH, subject, "tasks_per_min_summary", rates, "1/min", quick=quick,
                     concurrency=c)
    c = TARGET_C

    def target(metric: str, value: float, unit: str, rule: str, met: bool,
               **params: Any) -> None:
        emit(BENCH, "shopfleet", metric, value, unit, target=rule,
             met=None if quick else met, indicative=quick, concurrency=c, **params)

    def paired(a: str, b: str) -> list[float]:
        """a/b within each repetition both completed (neighbours in time, one load)."""
        return [out.by_rep[(a, c, rep)] / out.by_rep[(b, c, rep)]
                for (subj, cc, rep) in out.by_rep
                if subj == a and cc == c and (b, c, rep) in out.by_rep]

    sf_subjects = ("shopfleet", "shopfleet+prewarm", "shopfleet_1browser")
    if have_peer:
        for peer in CRAWLEE_SUBJECTS:
            for subject in sf_subjects:
                ratios = paired(subject, peer)
                if not ratios:
                    continue
                shared = peer == "crawlee_shared"
                emit_summary(BENCH, subject, f"ratio_vs_{peer}", ratios, "x", quick=quick,
                             concurrency=c, target=">= 1.0" if shared else "none (reported)",
                             met=None if quick or not shared
                             else percentiles(ratios, [50])[0] >= 1.0,
                             note="per repetition, complete runs only; median, min-max")
    ratios = paired("shopfleet+prewarm", "shopfleet")
    if ratios:
        emit_summary(BENCH, "shopfleet", "ratio_prewarm_vs_plain", ratios, "x", quick=quick,
                     concurrency=c, target=">= 1.0 (never slower)",
                     met=None if quick else percentiles(ratios, [50])[0] >= 1.0,
                     note="per repetition, complete runs only")
    incomplete = [f"{k[0]} c={k[1]}" for k, v in out.rates.items()
                  if len(v) > len([1 for kk in out.by_rep if kk[:2] == k])]
    if incomplete:
        emit(BENCH, "shopfleet", "incomplete_runs", len(incomplete), "count",
             runs=incomplete, note="runs where not every task finished are left out of the "
             "ratios (a starved demo site opens its breaker; the tasks wait, no attempt spent)")
    cold = out.warm_lat.get(("cold", c))
    for subject in SF_SUBJECTS:
        warm = out.warm_lat.get((subject, c))
        if not warm:
            continue
        w50, w95 = _pcts(warm)
        emit(BENCH, subject, "claim_to_first_step_ms", w50 * 1000, "ms", pool="warm",
             concurrency=c, p95_ms=round(w95 * 1000, 1), samples=len(warm))
        if cold:
            c50 = percentiles(cold, [50])[0]
            target("warm_vs_cold_start_p50", w50 / c50, "x", "<= 0.33 and warm < 100 ms",
                   w50 <= 0.33 * c50 and w50 < 0.1, variant=subject,
                   warm_p50_ms=round(w50 * 1000, 1), cold_p50_ms=round(c50 * 1000, 1),
                   warm_samples=len(warm), cold_samples=len(cold))
    if cold:
        c50, c95 = _pcts(cold)
        emit(BENCH, "shopfleet", "claim_to_first_step_ms", c50 * 1000, "ms", pool="cold",
             concurrency=c, p95_ms=round(c95 * 1000, 1), samples=len(cold))
    for subject, phases in out.phases.items():
        for phase, values in sorted(phases.items()):
            p50, p95 = _pcts(values)
            emit(BENCH, subject, "phase_ms", p50 * 1000, "ms", phase=phase,
                 p95_ms=round(p95 * 1000, 2), n=len(values), concurrency=c,
                 on_task_path=phase not in ("session_read", "session_save", "close"),
                 note="start:* split claim -> first step" if phase.startswith("start:")
                 else "")
    for subject, lag in out.lag_ms.items():
        if lag:
            p50, p99 = percentiles(lag, [50, 99])
            emit(BENCH, subject, "loop_lag_ms", p99, "ms", stat="p99", p50_ms=round(p50, 2),
                 max_ms=round(max(lag), 2), samples=len(lag), concurrency=c)
    for subject, runs in out.memory.items():
        per_browser = [r.idle_tree["pss_mb"] / r.idle_tree["browsers"] for r in runs
                       if r.idle_tree.get("browsers")]
        per_ctx = [(r.peak["pss_mb"] - r.idle_tree["pss_mb"]) / r.peak["contexts"]
                   for r in runs if r.peak.get("contexts") and r.idle_tree.get("browsers")]
        if per_browser:
            emit_summary(BENCH, subject, "chromium_pss_per_browser_mb", per_browser, "MiB",
                         quick=quick, note="idle browser's process tree (with its spare "
                         "context when prewarm is on)",
                         rss_mb=round(runs[0].idle_tree["rss_mb"]
                                      / max(1, runs[0].idle_tree["browsers"]), 1))
        if per_ctx:
            emit_summary(BENCH, subject, "chromium_pss_per_context_mb", per_ctx, "MiB",
                         quick=quick, note="(tree at the most contexts alive - idle tree) / "
                         "contexts alive", contexts=runs[0].peak.get("contexts"))


async def main_async(sizes: Sizes, parent: str | None, quick: bool) -> None:
    have_peer = crawlee_available()
    if not have_peer:
        note("crawlee is not installed (pip install 'crawlee[playwright]'): peer skipped")
    emit_machine(BENCH, parent)
    site = SiteProcess()
    note(f"demo site on 127.0.0.1:{site.port} (own process)")
    out = Collected()
    try:
        with temp_dir("shopfleet-bench-pool-", parent) as home:
            # Every shop logs in once (sessions saved in home/sessions) before any clock.
            login = [(s, 500 - i) for i, s in enumerate(site.shops())]
            r = await sf_run(site, home, "login", login, browsers=2, warm=2, prewarm=False)
            note(f"login pass: {r.done} done, {r.failed} failed")
            # Repetition by repetition, every subject of a concurrency back to back, ShopFleet
            # and Crawlee alternating: on a shared machine the load drifts, and neighbours in
            # time see the same load.
            for rep in range(max(sizes.reps, sizes.reps_other)):
                for c in sizes.pools:
                    order = [x for x in subjects_at(c, have_peer)
                             if rep < (sizes.reps if c == TARGET_C and x in TARGET_SUBJECTS
                                       else sizes.reps_other)]
                    if rep % 2:
                        order = order[::-1]
                    for subject in order:
                        if subject in SF_SUBJECTS:
                            await shopfleet_one(site, home, sizes, subject, c, rep, out)
                        else:
                            await asyncio.to_thread(crawlee_one, site, sizes, subject, c,
                                                    rep, out)
            await cold_part(site, home, sizes, out)
    finally:
        site.close()
    report(out, sizes, have_peer, quick)
    emit_machine(BENCH, parent)


# -- #17: the per-task overhead of a shop's profile ------------------------------------------

PROFILE_VARIANTS = ("none", "profile", "profile+proxy")


async def profile_part(site: SiteProcess, home: Path, pages: int, rep: int, proxy_url: str,
                       per_task: dict[str, list[float]]) -> None:
    """The same pages with no profile, a profile, and a profile through a proxy (the order
    alternates between repetitions)."""
    browsers = 2
    items = work(site.shops(), pages)
    order = PROFILE_VARIANTS if rep % 2 == 0 else tuple(reversed(PROFILE_VARIANTS))
    for variant in order:
        r = await sf_run(site, home, f"profile-r{rep}-{variant}", items, browsers=browsers,
                         warm=browsers, prewarm=False, profile=variant, proxy_url=proxy_url)
        spt = r.seconds / max(1, r.done)
        per_task.setdefault(variant, []).append(spt)
        note(f"profiles {variant}: {r.done} done ({r.failed} failed, {r.verified} verified) "
             f"in {r.seconds:.1f}s = {spt * 1000:.0f} ms/task")
        emit(BENCH, "shopfleet", "seconds_per_task", spt, "s", profile=variant,
             browsers=browsers, pages=pages, done=r.done, failed=r.failed,
             verified=r.verified, rep=rep, flow=FLOW)


async def profiles_only(pages: int, repeat: int, parent: str | None, quick: bool) -> None:
    """``--only profiles``: per-task time with a profile against none, interleaved; target:
    a profile costs at most 10 % (the proxy hop is reported, not targeted)."""
    from core.testing.proxy_server import LoopbackProxy

    emit_machine(BENCH, parent)
    site = SiteProcess()
    per_task: dict[str, list[float]] = {}
    try:
        with temp_dir("shopfleet-bench-profiles-", parent) as home, \
                LoopbackProxy(home / "proxy", user="bench", password="b3nch pw") as proxy:
            shops = site.shops()
            login = [(s, 500 - i) for i, s in enumerate(shops)]
            await sf_run(site, home, "login", login, browsers=2, warm=2, prewarm=False)
            for rep in range(repeat):
                await profile_part(site, home, pages, rep, proxy.url(), per_task)
    finally:
        site.close()
    base = percentiles(per_task["none"], [50])[0]
    for variant in PROFILE_VARIANTS[1:]:
        ratios = [v / b for v, b in zip(per_task[variant], per_task["none"], strict=True)]
        targeted = variant == "profile"
        med = percentiles(ratios, [50])[0]
        emit_summary(BENCH, "shopfleet", "profile_overhead_ratio", ratios, "x", quick=quick,
                     profile=variant, none_median_s_per_task=round(base, 4),
                     target="<= 1.10" if targeted else "none (reported: the proxy hop)",
                     **({"met": med <= 1.10} if targeted and not quick else {}))
    emit_machine(BENCH, parent)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "browser pool benchmark")
    parser.add_argument("--reps-other", type=int, default=None,
                        help="repetitions at concurrencies other than 2 (default 1)")
    parser.add_argument("--pages", type=int, default=None, help="tasks per timed run")
    parser.add_argument("--pools", default="",
                        help="comma-separated concurrencies to measure (default 1,2,4; "
                             "--quick 2)")
    parser.add_argument("--reps", type=int, default=None,
                        help="interleaved repetitions at concurrency 2 (default 5)")
    parser.add_argument("--subjects", default="",
                        help="comma-separated subjects to run (default: all)")
    parser.add_argument("--only", choices=["profiles"], default="",
                        help="run one part: profiles (#17: per-task overhead of a profile)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="with --only profiles: repetitions (default 5, --quick 2)")
    parser.add_argument("--crawlee-child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    ONLY.update(x for x in args.subjects.split(",") if x)
    if args.crawlee_child:
        result = asyncio.run(crawlee_child(json.loads(args.crawlee_child)))
        print(json.dumps(result), flush=True)
        return
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    if args.reps_other is not None:
        sizes = Sizes(sizes.pages, sizes.pools, sizes.reps, args.reps_other, sizes.cold_reps)
    if args.pages is not None:
        sizes = Sizes(args.pages, sizes.pools, sizes.reps, sizes.reps_other, sizes.cold_reps)
    if args.pools:
        pools = tuple(int(x) for x in args.pools.split(",") if x)
        sizes = Sizes(sizes.pages, pools, sizes.reps, sizes.reps_other, sizes.cold_reps)
    if args.reps is not None:
        sizes = Sizes(sizes.pages, sizes.pools, args.reps, sizes.reps_other, sizes.cold_reps)
    note(f"browser_pool: sizes {sizes}")
    if args.only == "profiles":
        repeat = args.repeat or (2 if args.quick else REPEATS)
        asyncio.run(profiles_only(sizes.pages, repeat, args.dir, args.quick))
        return
    asyncio.run(main_async(sizes, args.dir, args.quick))


if __name__ == "__main__":
    main()
