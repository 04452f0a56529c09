"""Preemption: how fast urgent work gets a busy shop's browser, and what it costs the rest.

Measured in one run, on real Chromium (``/usr/bin/chromium``) against the demo site (its own
process, so its HTTP threads do not share our interpreter lock; every page answers after a
``slow`` fault of ``SLOW_MS`` so page loads take a realistic while):

* **Background work.** Every one of the 9 demo shops is kept busy by a deep queue of long
  read-only ``collect_data`` tasks (inline steps: open the statistics page, log in if asked,
  then ``PAGES`` × (navigate to ``/stats?page=N``, extract the SKUs)). A shop runs one task at a
  time (``queue.max_tasks_per_shop = 1``); the pool has 2 browsers × 5 contexts and the engine
  ``SLOTS = 9`` slots, so every slot is busy. Gates are unlimited (pace is not what is measured).
  Before any clock, every shop's first task is past its login (browsers warm).
* **Urgent arrivals.** ``n`` (30; ``--quick`` 8) ``reply_customer`` tasks with priority 20
  (the preemption threshold is ``priority.preempt_threshold`` = 15), one every ``SPACING_S``,
  each for the next shop (round robin) whose slot is held by a background task that has started
  a step, is not yielding, has no urgent reply of ours waiting and has not had the storm limit's
  worth of arrivals in its window (the default limit, 2 preemptions per slot per minute, stays
  on; ``SPACING_S`` makes round robin visit a shop every ~31 s, so it is not reached, and
  refusals — reported — are not what is measured here). The pool keeps a spare context per
  browser (``prewarm_contexts = true``), the same in every run.
* **Latency** of one urgent task = its submission (wall clock, just before ``engine.submit``)
  → its first step starts (its first ``TaskProgress`` event): p50/p95/max, split into
  *notice* (submit, committed, → the holder is asked to yield: ``TaskPreempted``), *in flight*
  (asked → the holder's flow has stopped at a safe step: the step it was in finishes or its
  interruptible wait is cut; the executor's ``phase_timer`` ``flow`` record), *release* (the
  holder stopped → the urgent task is claimed: the release commit, the dispatcher's claim) and
  *first step* (claimed → its first step starts: the shop's session, the context, the flow's
  start). Target (fixed): notice + release + first step < 300 ms at p95 — everything but
  waiting for the step in flight — as the median over ``REPEATS`` (5; ``--quick`` 1)
  repetitions of the preemption run, each with its own p95; min–max printed.
* **The longest non-interruptible step** of the flows used (reported, no target):
  ``reply_customer``'s "send the reply" (a write click, ``interruptible: false``), from its
  ``TaskProgress`` to the next step's; and the longest step of the collectors a yield waits for
  at a step boundary.
* **Throughput cost.** Background ``collect_data`` tasks finished per minute over a fixed
  window (from the first arrival, ``n × SPACING_S + TAIL_S``), three times with the same
  background work: without urgent arrivals (``baseline``), with them and preemption on
  (``shopfleet``), with them and preemption off (``shopfleet_no_preemption``: the urgent
  replies wait for the shop's running task to end — the peer that shows what preemption buys).
  Also background *pages* per minute (the first time each page is extracted; pages replayed on
  resume are not counted) and each subject's ratio to the baseline.
* **Resume success rate** (``statistics().resume_success_rate``) and checks: every urgent reply
  recorded by the site exactly once, no failed tasks.

Runs are interleaved: the preemption run's repetitions alternate with the run without
preemption and the baseline. Run: ``python bench/preemption.py [--quick]``; JSON Lines on stdout,
progress on stderr. The full run (7 runs) takes about 25 minutes on a loaded 2-core machine,
``--quick`` (3 runs) about 4.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common
from _common import (
    REPEATS,
    arg_parser,
    emit,
    emit_machine,
    emit_summary,
    note,
    percentiles,
    temp_dir,
)

from core.build import build_engine, open_store
from core.config import Settings
from core.demo import demo_settings, register_demo_shops
from core.demosite import demo_login_steps, host_resolver_rules
from core.engine import Engine
from core.events import Event, TaskPreempted, TaskProgress, TaskStateChanged
from core.specs import TaskSpec
from core.vault import Vault

BENCH = "preemption"
CHROMIUM = "/usr/bin/chromium"
UNLIMITED = {"rate_per_s": 1e9, "burst": 1e9}
SLOW_MS = 1000
"""Every demo page answers this late (a realistic page load)."""
PAGES = 10
"""Statistics pages one background task visits."""
BROWSERS, CONTEXTS, SLOTS = 2, 5, 9
SPACING_S = 3.5
"""Between two urgent arrivals: round robin over 9 shops then visits a shop every ~31 s, within
the default storm limit (2 preemptions per slot per minute), which stays on."""
TAIL_S = 10.0
"""The throughput window runs this long after the last arrival (the last replies finish)."""
URGENT_PRIORITY = 20
SEND_STEP = "send the reply"
LOGIN_STEPS = 4
"""The collector's first steps: open the statistics page, log in if asked (3 steps)."""
TARGET_S = 0.300
"""Notice + release + urgent first step, p95 (fixed; the step in flight is not counted)."""


@dataclass(frozen=True)
class Sizes:
    urgent: int
    """Urgent arrivals in each run that has them."""
    slow_ms: int = 0
    reps: int = REPEATS
    """Repetitions of the preemption run."""


FULL_SIZES = Sizes(urgent=30, slow_ms=SLOW_MS)
QUICK_SIZES = Sizes(urgent=8, slow_ms=SLOW_MS, reps=1)


# -- the demo site in its own process -------------------------------------------------------------


class SiteProcess(_common.SiteProcess):
    """The demo site process, driven by its control API."""

    def _call(self, method: str, name: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.site.control_url}/{name}", data=data,
                                     method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def reset(self) -> None:
        self._call("POST", "reset", {})

    def set_slow(self, delay_ms: int) -> None:
        self._call("POST", "faults", {"fault": "slow", "delay_ms": delay_ms})

    def records(self, kind: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self._call("GET", f"records?kind={kind}")
        return out


# -- the workload ---------------------------------------------------------------------------------


def collector(shop: str, key: str) -> TaskSpec:
    """A long read-only task: PAGES statistics pages, each navigated to and extracted."""
    steps: list[dict[str, Any]] = [
        {"name": "open the statistics", "action": "navigate",
         "url": "{shop.base_url}/stats?page=1"},
        *demo_login_steps(),
    ]
    for p in range(1, PAGES + 1):
        steps += [{"name": f"page {p}", "action": "navigate",
                   "url": f"{{shop.base_url}}/stats?page={p}"},
                  {"name": f"extract {p}", "action": "extract", "locator": "td.sku",
                   "all": True, "into": f"skus_{p}"}]
    return TaskSpec.model_validate({"key": key, "type": "collect_data", "shop": shop,
                                    "steps": steps})


def urgent_reply(shop: str, text: str) -> TaskSpec:
    return TaskSpec.model_validate({"type": "reply_customer", "shop": shop,
                                    "flow": "reply_customer", "priority": URGENT_PRIORITY,
                                    "params": {"message_id": 3, "reply": text}})


def bench_settings(preemption: bool) -> Settings:
    return demo_settings(Settings()).with_changes(
        browser={"executable_path": CHROMIUM, "host_resolver_rules": host_resolver_rules()},
        pool={"max_browsers": BROWSERS, "warm": BROWSERS, "contexts_per_browser": CONTEXTS,
              "prewarm_contexts": True, "step_timeout_s": 30},
        gates={"global": UNLIMITED, "default_domain": UNLIMITED},
        preemption={"enabled": preemption},
        security={"inline_credentials": True},  # the collector logs in with inline steps
    )


# -- one run --------------------------------------------------------------------------------------


@dataclass
class Recorder:
    """Stamps from the engine's events (their own ``at``, the engine's wall clock)."""

    progress: dict[int, list[tuple[float, int, str]]] = field(default_factory=dict)
    states: dict[int, list[tuple[float, str]]] = field(default_factory=dict)
    asked_for: dict[int, tuple[float, int]] = field(default_factory=dict)
    """urgent task -> (when its holder was asked to yield, the holder)."""
    flow_ended: dict[int, list[float]] = field(default_factory=dict)
    """task -> when each of its attempts' flows stopped (the executor's phase timer)."""

    phases: dict[int, dict[str, float]] = field(default_factory=dict)
    """task -> phase -> seconds (its first attempt's record of each)."""

    def phase(self, task: int, phase: str, seconds: float) -> None:
        if phase == "flow":
            self.flow_ended.setdefault(task, []).append(time.time())
        self.phases.setdefault(task, {}).setdefault(phase, seconds)

    def stopped_after(self, task: int, at: float) -> float | None:
        return next((t for t in self.flow_ended.get(task, []) if t >= at), None)

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, TaskProgress):
            self.progress.setdefault(ev.task_id, []).append((ev.at, ev.step, ev.step_name))
        elif isinstance(ev, TaskStateChanged):
            self.states.setdefault(ev.task_id, []).append((ev.at, ev.state))
        elif isinstance(ev, TaskPreempted) and ev.for_task is not None:
            self.asked_for.setdefault(ev.for_task, (ev.at, ev.task_id))

    def first_step(self, tid: int) -> float | None:
        p = self.progress.get(tid)
        return p[0][0] if p else None

    def state_at(self, tid: int, state: str, after: float = 0.0) -> float | None:
        for at, st in self.states.get(tid, []):
            if st == state and at >= after:
                return at
        return None


@dataclass
class RunResult:
    subject: str
    window_s: float
    bg_done: int
    bg_pages: int
    latencies: list[float]
    parts: dict[str, list[float]]
    send_steps: list[float]
    boundary_steps: list[tuple[float, str]]
    engine_p50: float | None
    engine_p95: float | None
    resume_rate: float | None
    preemptions: int
    refused: int
    failed: int
    replies_once: bool
    urgent_done: int
    repeated_steps: int
    cpu_busy: float
    urgent_phases: dict[str, list[float]] = field(default_factory=dict)


def holder_phase(rec: Recorder, holder: int, at: float) -> str:
    """``replay`` if the holder was rebuilding its page after a resume when asked, else
    ``step`` (running a step of its own, or opening its context)."""
    starts = [t for t, st in rec.states.get(holder, []) if st == "running" and t <= at]
    if not starts:
        return "step"
    began = starts[-1]
    before = [step for t, step, _ in rec.progress.get(holder, []) if t < began]
    now = [step for t, step, _ in rec.progress.get(holder, []) if began <= t <= at]
    if before and (not now or now[-1] < max(before)):
        return "replay"
    return "step"


def repeated_steps(rec: Recorder, tid: int) -> int:
    """Steps started again after a resume (replayed, or interrupted and run again)."""
    seen, n = 0, 0
    for _, step, _ in rec.progress.get(tid, []):
        if step <= seen:
            n += 1
        seen = max(seen, step)
    return n


def step_durations(rec: Recorder, tids: set[int]) -> list[tuple[float, str]]:
    """(duration, step name) of each step followed directly by the next step in one attempt."""
    out = []
    for tid in tids:
        p = rec.progress.get(tid, [])
        for (at, step, name), (nxt, nstep, _) in itertools.pairwise(p):
            if nstep == step + 1:
                out.append((nxt - at, name))
    return out


async def one_run(site: SiteProcess, home: Path, subject: str, *, preemption: bool,
                  urgent: int, window_s: float, slow_ms: int, tag: str = "") -> RunResult:
    settings = bench_settings(preemption)
    tag = f"{subject}-{urgent}-{tag}"
    store = await asyncio.to_thread(open_store, settings, home / f"{tag}.db")
    run_home = home / tag
    run_home.mkdir()
    await asyncio.to_thread(site.reset)
    await asyncio.to_thread(site.set_slow, slow_ms)
    shops = [s.name for s in site.shops()]
    try:
        vault = await asyncio.to_thread(Vault.open, run_home)
        await asyncio.to_thread(register_demo_shops, store, site.site, vault)
        engine = build_engine(settings, store, home=run_home, slots=SLOTS)
        rec = Recorder()
        engine.bus.subscribe(rec)
        engine.executor.phase_timer = rec.phase  # type: ignore[attr-defined]
        # Deep enough that no shop runs dry: a task takes several seconds.
        per_shop = int((window_s + 90) / 2)
        specs = [collector(shop, f"bg-{shop}-{k}") for k in range(per_shop) for shop in shops]
        bg_ids = set(await engine.submit(specs))
        runner = asyncio.create_task(engine.run())
        try:
            await warm_up(engine, rec, bg_ids, len(shops))
            t0, cpu0 = time.time(), cpu_times()
            urgent_ids: dict[int, float] = {}
            if urgent:
                urgent_ids = await arrivals(engine, rec, shops, bg_ids, urgent, subject)
            await asyncio.sleep(max(0.0, t0 + window_s - time.time()))
            t1, cpu1 = time.time(), cpu_times()
            cpu_busy = 1 - (cpu1[0] - cpu0[0]) / max(1e-9, cpu1[1] - cpu0[1])
            if urgent_ids:
                await wait_for(lambda: all(rec.first_step(t) is not None
                                           and rec.state_at(t, "done") is not None
                                           for t in urgent_ids), 120)
            # The suspended holders resume and finish: the resume success rate needs them.
            holders = {h for _, h in rec.asked_for.values()}
            with contextlib.suppress(RuntimeError):
                await wait_for(lambda: all(rec.state_at(h, "done") is not None
                                           or rec.state_at(h, "failed") is not None
                                           for h in holders), 120)
            stats = engine.statistics()
        finally:
            await engine.stop()
            await runner
        bg_done = sum(1 for t in bg_ids
                      if (at := rec.state_at(t, "done")) is not None and t0 <= at < t1)
        bg_pages = 0
        for t in bg_ids:  # a page counts once: the first time its extract step starts
            seen = 0
            for at, step, name in rec.progress.get(t, []):
                if step > seen:
                    seen = step
                    if name.startswith("extract") and t0 <= at < t1:
                        bg_pages += 1
        latencies = [first - sub for tid, sub in urgent_ids.items()
                     if (first := rec.first_step(tid)) is not None]
        parts: dict[str, list[float]] = {k: [] for k in (
            "notice", "in_flight", "release", "first_step", "not_in_flight",
            "asked_to_suspended", "in_flight_in_replay", "in_flight_in_step")}
        for tid, sub in urgent_ids.items():
            asked = rec.asked_for.get(tid)
            claimed = rec.state_at(tid, "running")
            first = rec.first_step(tid)
            if asked is None or claimed is None or first is None:
                continue
            stopped = rec.stopped_after(asked[1], asked[0])
            suspended = rec.state_at(asked[1], "suspended", after=asked[0])
            if stopped is None or stopped > claimed:
                continue  # the holder did not yield for it (the slot freed otherwise)
            notice, in_flight = asked[0] - sub, stopped - asked[0]
            release, first_step = claimed - stopped, first - claimed
            parts["notice"].append(notice)
            parts["in_flight"].append(in_flight)
            parts["release"].append(release)
            parts["first_step"].append(first_step)
            parts["not_in_flight"].append(notice + release + first_step)
            if suspended is not None:
                parts["asked_to_suspended"].append(suspended - asked[0])
            phase = holder_phase(rec, asked[1], asked[0])
            parts[f"in_flight_in_{phase}"].append(in_flight)
        urgent_phases: dict[str, list[float]] = {}
        for tid in urgent_ids:
            for phase, secs in rec.phases.get(tid, {}).items():
                if phase in ("shop", "session_load", "acquire", "session_apply", "context",
                             "page"):
                    urgent_phases.setdefault(phase, []).append(secs)
        repeated = sum(repeated_steps(rec, t) for t in bg_ids)
        sends = [d for d, name in step_durations(rec, set(urgent_ids)) if name == SEND_STEP]
        boundary = [(d, name) for d, name in step_durations(rec, bg_ids)
                    if not name.startswith(("page", "open"))]
        replies = await asyncio.to_thread(site.records, "reply")
        texts = Counter(r.get("text") for r in replies)
        want = {f"{subject} urgent {i}" for i in range(len(urgent_ids))}
        once = set(texts) == want and all(v == 1 for v in texts.values())
        counts = await asyncio.to_thread(store.counts)
        return RunResult(
            subject=subject, window_s=t1 - t0, bg_done=bg_done, bg_pages=bg_pages,
            latencies=latencies, parts=parts, send_steps=sends, boundary_steps=boundary,
            engine_p50=stats.preemption_latency_p50_s, engine_p95=stats.preemption_latency_p95_s,
            resume_rate=stats.resume_success_rate, preemptions=stats.preemptions_per_hour,
            refused=stats.preemptions_refused_per_hour, failed=int(counts.get("failed", 0)),
            replies_once=once,
            urgent_done=sum(1 for t in urgent_ids if rec.state_at(t, "done") is not None),
            repeated_steps=repeated, cpu_busy=cpu_busy, urgent_phases=urgent_phases)
    finally:
        await asyncio.to_thread(store.close)


def cpu_times() -> tuple[float, float]:
    """(idle, total) jiffies of the whole machine (other work on it shows up too)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


async def wait_for(cond: Any, timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            raise RuntimeError("the benchmark's workload did not reach its state in time")
        await asyncio.sleep(0.05)


async def warm_up(engine: Engine, rec: Recorder, bg_ids: set[int], shops: int) -> None:
    """Until every shop's background task is past its login (the browsers are warm)."""
    def ready() -> bool:
        running = {task.shop for task, ctl in engine.running_tasks()
                   if task.id in bg_ids and ctl.step > LOGIN_STEPS}
        return len(running) >= shops

    await wait_for(ready, 180)
    note(f"warm: {len(engine.running_tasks())} running")


def busy_holder(engine: Engine, shop: str, bg_ids: set[int]) -> bool:
    for task, ctl in engine.running_tasks():
        if task.shop == shop and task.id in bg_ids:
            return ctl.first_step_at is not None and not ctl.yield_requested
    return False


async def arrivals(engine: Engine, rec: Recorder, shops: list[str], bg_ids: set[int], n: int,
                   subject: str) -> dict[int, float]:
    """Submit ``n`` urgent replies, one every SPACING_S, each for a busy shop (round robin)."""
    out: dict[int, float] = {}
    shop_of: dict[int, str] = {}
    storm = engine.settings.preemption
    nxt = 0
    start = time.monotonic()
    for i in range(n):
        await asyncio.sleep(max(0.0, start + i * SPACING_S - time.monotonic()))
        while True:
            waiting = {shop_of[t] for t in out if rec.state_at(t, "done") is None}
            # Keep within the storm limit: refusals are not what is measured here.
            recent = Counter(shop_of[t] for t, at in out.items()
                             if at > time.time() - storm.storm_window_s - 1)
            pick = None
            for k in range(len(shops)):
                shop = shops[(nxt + k) % len(shops)]
                if (shop not in waiting and recent[shop] < storm.storm_limit
                        and busy_holder(engine, shop, bg_ids)):
                    pick, nxt = shop, (nxt + k + 1) % len(shops)
                    break
            if pick is not None:
                break
            await asyncio.sleep(0.02)
        submitted = time.time()
        [tid] = await engine.submit([urgent_reply(pick, f"{subject} urgent {i}")])
        out[tid], shop_of[tid] = submitted, pick
    return out


# -- reporting ------------------------------------------------------------------------------------


def report(runs: dict[str, list[RunResult]], urgent: int, slow_ms: int, quick: bool) -> None:
    base = runs["baseline"][0]
    common = {"urgent": urgent, "spacing_s": SPACING_S, "shops": 9, "slots": SLOTS,
              "browsers": BROWSERS, "contexts_per_browser": CONTEXTS, "pages_per_task": PAGES,
              "slow_ms": slow_ms, "storm_limit": Settings().preemption.storm_limit,
              "prewarm_contexts": True}
    emit(BENCH, "shopfleet", "background_tasks_per_min", base.bg_done * 60 / base.window_s,
         "1/min", case="baseline", urgent_arrivals=0, window_s=round(base.window_s, 1),
         done=base.bg_done, machine_cpu_busy=round(base.cpu_busy, 3),
         **{k: v for k, v in common.items() if k != "urgent"})
    emit(BENCH, "shopfleet", "background_pages_per_min", base.bg_pages * 60 / base.window_s,
         "1/min", case="baseline", urgent_arrivals=0, window_s=round(base.window_s, 1))
    for subject in ("shopfleet", "shopfleet_no_preemption"):
        reps = runs[subject]
        lat = [x for r in reps for x in r.latencies]
        p50, p95 = percentiles(lat, [50, 95])
        emit(BENCH, subject, "latency_p50_s", p50, "s", n=len(lat), runs=len(reps), **common)
        emit(BENCH, subject, "latency_p95_s", p95, "s", n=len(lat), runs=len(reps))
        emit(BENCH, subject, "latency_max_s", max(lat), "s", n=len(lat))
        for r in reps:
            if r.engine_p50 is not None and r.engine_p95 is not None:
                emit(BENCH, subject, "engine_latency_p95_s", r.engine_p95, "s",
                     source="statistics()", p50_s=round(r.engine_p50, 4),
                     note="from the task's creation")
        if subject == "shopfleet":
            for part in ("notice", "in_flight", "release", "first_step", "not_in_flight",
                         "asked_to_suspended", "in_flight_in_replay", "in_flight_in_step"):
                values = [x for r in reps for x in r.parts[part]]
                if values:
                    q50, q95 = percentiles(values, [50, 95])
                    emit(BENCH, subject, f"{part}_s", q95, "s", stat="p95",
                         p50_s=round(q50, 4), max_s=round(max(values), 4), n=len(values),
                         pooled_runs=len(reps))
            phases: dict[str, list[float]] = {}
            for r in reps:
                for phase, values in r.urgent_phases.items():
                    phases.setdefault(phase, []).extend(values)
            for phase, values in sorted(phases.items()):
                q50, q95 = percentiles(values, [50, 95])
                emit(BENCH, subject, "urgent_first_step_phase_ms", q50 * 1000, "ms",
                     phase=phase, p95_ms=round(q95 * 1000, 1), n=len(values),
                     note="the urgent task's claim -> first step, by phase (session_load "
                     "includes waiting for the holder's session save)")
            per_rep = [percentiles(r.parts["not_in_flight"], [95])[0] for r in reps
                       if r.parts["not_in_flight"]]
            if per_rep:
                line = emit_summary(BENCH, subject, "not_in_flight_p95_s", per_rep, "s",
                                    quick=quick, target=f"< {TARGET_S:g} s",
                                    met=None if quick else
                                    percentiles(per_rep, [50])[0] < TARGET_S,
                                    parts="notice + release + urgent first step (the step "
                                    "in flight excluded)", arrivals_per_run=urgent)
                note(f"not in flight p95 per run: {[round(x, 3) for x in per_rep]} -> "
                     f"{line['value']}")
        tpm = [r.bg_done * 60 / r.window_s for r in reps]
        emit_summary(BENCH, subject, "background_tasks_per_min", tpm, "1/min", quick=quick,
                     case="urgent", urgent_arrivals=urgent,
                     machine_cpu_busy=round(reps[0].cpu_busy, 3))
        emit_summary(BENCH, subject, "background_pages_per_min",
                     [r.bg_pages * 60 / r.window_s for r in reps], "1/min", quick=quick,
                     case="urgent")
        if base.bg_done:
            emit_summary(BENCH, subject, "throughput_ratio_vs_baseline",
                         [(r.bg_done / r.window_s) / (base.bg_done / base.window_s)
                          for r in reps], "ratio", quick=quick, measure="tasks/min")
        if base.bg_pages:
            emit_summary(BENCH, subject, "pages_ratio_vs_baseline",
                         [(r.bg_pages / r.window_s) / (base.bg_pages / base.window_s)
                          for r in reps], "ratio", quick=quick, measure="pages/min")
        pre = sum(r.preemptions for r in reps)
        emit(BENCH, subject, "preemptions", pre, "count",
             refused=sum(r.refused for r in reps), runs=len(reps))
        if pre:
            emit(BENCH, subject, "steps_rerun_per_preemption",
                 sum(r.repeated_steps for r in reps) / pre, "steps",
                 note="background steps started again after a resume (replayed navigations, "
                 "interrupted steps)")
        rates = [r.resume_rate for r in reps if r.resume_rate is not None]
        if rates:
            emit(BENCH, subject, "resume_success_rate", min(rates), "ratio", stat="min")
        ok = all(r.replies_once and r.failed == 0 and r.urgent_done == len(r.latencies)
                 for r in reps)
        emit(BENCH, subject, "checks_ok", float(ok), "bool",
             replies_recorded_once=all(r.replies_once for r in reps),
             failed_tasks=sum(r.failed for r in reps),
             urgent_done=sum(r.urgent_done for r in reps))
    sends = [x for r in runs["shopfleet"] for x in r.send_steps]
    if sends:
        emit(BENCH, "shopfleet", "longest_non_interruptible_step_s", max(sends), "s",
             step=SEND_STEP, flow="reply_customer", n=len(sends),
             p50=round(percentiles(sends, [50])[0], 4))
    boundary = [x for r in runs["shopfleet"] for x in r.boundary_steps]
    if boundary:
        d, name = max(boundary)
        emit(BENCH, "shopfleet", "longest_collector_boundary_step_s", d, "s", step=name,
             note="interruptible, but a yield waits for it to end (not a navigation)")


async def main_async(sizes: Sizes, parent: str | None, quick: bool) -> None:
    emit_machine(BENCH, parent)
    site = SiteProcess()
    note(f"demo site on 127.0.0.1:{site.port} (own process)")
    window = sizes.urgent * SPACING_S + TAIL_S
    runs: dict[str, list[RunResult]] = {}
    # The preemption run's repetitions, with the two comparison runs between them.
    plan: list[tuple[str, bool, int]] = []
    for rep in range(sizes.reps):
        plan.append(("shopfleet", True, sizes.urgent))
        if rep == 0:
            plan.append(("shopfleet_no_preemption", False, sizes.urgent))
        if rep == min(1, sizes.reps - 1):
            plan.append(("baseline", True, 0))
    try:
        with temp_dir("shopfleet-bench-preempt-", parent) as home:
            for k, (subject, preempt, urgent) in enumerate(plan):
                note(f"{subject}: {urgent} urgent arrivals, window {window:.0f}s")
                t = time.monotonic()
                r = await one_run(site, home, subject, preemption=preempt, urgent=urgent,
                                  window_s=window, slow_ms=sizes.slow_ms, tag=f"{k}")
                runs.setdefault(subject, []).append(r)
                note(f"{subject}: done in {time.monotonic() - t:.0f}s; bg {r.bg_done} tasks, "
                     f"{r.bg_pages} pages; latencies {sorted(round(x, 2) for x in r.latencies)}")
    finally:
        site.close()
    report(runs, sizes.urgent, sizes.slow_ms, quick)
    emit_machine(BENCH, parent)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "preemption benchmark")
    parser.add_argument("--slow-ms", type=int, default=SLOW_MS,
                        help=f"every demo page answers this late (default {SLOW_MS})")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    sizes = Sizes(urgent=sizes.urgent, slow_ms=args.slow_ms, reps=sizes.reps)
    note(f"preemption: sizes {sizes}")
    asyncio.run(main_async(sizes, args.dir, args.quick))


if __name__ == "__main__":
    main()
