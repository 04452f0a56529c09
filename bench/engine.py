"""The engine: end-to-end no-op dispatch, event-loop lag, gate accuracy against aiolimiter, and
the engine on a queue of a million tasks.

Measured in one run (``emit_machine`` first: CPUs, load, fsync time):

1. tasks/s end to end — ``n`` no-op tasks (100,000; ``--quick`` 10,000) queued beforehand with
   ``core.store.sqlite.bulk.load_rows``, then the real engine (store, dispatcher, rate gates,
   breakers, ``NoopExecutor``) runs them with ``run_until_idle``: tasks are claimed in rounds
   (one commit a round), each takes a global and a domain token, and is acknowledged through
   the store's writer thread — together with the claim of the next task for its slot (one
   transaction, #20) when that slot is the only one to fill. Peer in the same run: the engine
   acking alone and leaving every claim to its dispatcher's rounds (``claim_on_ack = False``,
   the engine before #20); both print ``commits_per_task`` and ``claimed_with_ack_share``
   beside their rate.
   ``synchronous=FULL`` and ``NORMAL``, 64 and 256 slots. Gates are unlimited
   (rate 1e9/s, burst 1e9). 1,024 shops over 16 domains with the default
   ``queue.max_tasks_per_shop = 1``: 4× the largest slot count, so one-task-per-shop never
   starves the dispatcher. The clock starts after ``engine.start()`` (recovery, first snapshot)
   and stops when ``run_until_idle`` returns (every task must then be ``done``) or at a time
   box (30 s, ``--quick`` 8 s), whichever comes first: a slow engine is reported as the rate
   it kept over that time with the queue still deep (``completed`` and ``time_boxed`` in the
   params), instead of running for an hour. ``REPEATS`` (5; ``--quick`` 2) repetitions,
   interleaved: each repetition runs every case once, in a rotated order, each on a fresh
   file; every line is the median with min, max and n.
2. event-loop lag p50/p99/max during that run: a coroutine sleeps 10 ms again and again and
   records how late it wakes (``idle`` lines give the same figure on an idle loop).
3. gate accuracy: ShopFleet's ``TokenBucket`` and ``aiolimiter.AsyncLimiter`` (as a leaky bucket
   of capacity ``burst`` draining ``rate`` per second: ``AsyncLimiter(burst, burst / rate)``)
   under ``ACQUIRERS`` coroutines that take tokens as fast as they are given, for a few seconds
   of real time. Each token is stamped on the limiter's own clock right after ``acquire``
   returns (no suspension in between, so the stamp is the moment of the decision).
   ``over_issue_tokens`` is the most tokens seen in any window of length ``T`` beyond
   ``rate·T + burst``, the worst over the ``T`` in ``WINDOWS_S`` (each ``T`` in the params);
   ``added_latency_ms`` is the mean of (stamp of the k-th token − the k-th token of the ideal
   schedule: ``burst`` at once, then one every ``1/rate``).

4. at scale (``--only scale``): 1,000,000 tasks queued (``--quick`` 100,000) — priorities of
   the four task types (10, 9, 5, 3), 10% created 40 minutes ago (hard-aged once the store's
   thresholds run), 10% delayed (``not_before`` spread over the next two minutes) — then
   (a) the cost of each periodic job's store call on that queue (status, queue bands, open
   tickets, lease recovery, lost workers, heartbeat, snapshot and minute rows, preemption
   reads: p50 and max of repeated calls, run the way the jobs run them: in a thread), and
   (b) the engine (256 slots, FULL) on it for a time box (120 s, ``--quick`` 20 s): dispatch
   rate, claim round p50/p99 (each ``claim_many`` as the dispatcher awaits it), loop lag,
   the process's RSS before and after, and what ``statistics()`` costs on the loop.

The last lines compare against the targets of the issue (``*_vs_target``, with ``target`` and
``met`` in their params).

Run: ``python bench/engine.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import (
    REPEATS,
    Stopwatch,
    arg_parser,
    emit,
    emit_machine,
    emit_summary,
    note,
    percentiles,
    rss_mb,
    summary,
    temp_dir,
)
from _engine_gates import Results, gates

from core.build import build_engine
from core.config import Settings
from core.store import SqliteStore
from core.store.sqlite.bulk import load_rows

BENCH = "engine"
SHOPS = 1024
DOMAINS = 16
TASK_TYPE = "collect_data"
BASE_PRIORITY = 3.0
SPEC_JSON = '{"params":{},"flow":"collect_data"}'
MODES = ("FULL", "NORMAL")
SLOTS = (64, 256)
UNLIMITED = {"rate_per_s": 1e9, "burst": 1e9}
LAG_TICK_S = 0.010



@dataclass(frozen=True)
class Sizes:
    n: int
    """No-op tasks per engine run."""
    gate_s: float
    """Real seconds each limiter is hammered."""
    budget_s: float
    """Time box of one engine run: a slow engine reports its rate over this much work."""
    repeats: int
    """Interleaved repetitions of each dispatch case."""
    scale_n: int
    """Tasks queued for the scale run."""
    scale_s: float
    """Time box of the engine on the deep queue."""


FULL_SIZES = Sizes(n=50_000, gate_s=6.0, budget_s=30.0, repeats=REPEATS,
                   scale_n=1_000_000, scale_s=120.0)
QUICK_SIZES = Sizes(n=10_000, gate_s=2.0, budget_s=8.0, repeats=2, scale_n=100_000,
                    scale_s=20.0)


# -- dispatch throughput and loop lag -------------------------------------------------------------


def open_store(path: Path, mode: str) -> SqliteStore:
    settings = Settings().with_changes(store={"synchronous": mode},
                                       gates={"global": UNLIMITED, "default_domain": UNLIMITED})
    return SqliteStore(path, settings=settings)


def add_shops(store: SqliteStore) -> list[int]:
    return [store.add_shop(f"s{i}", platform="pdd",
                           base_url=f"https://d{i % DOMAINS}.example/shop/s{i}").id
            for i in range(SHOPS)]


def rows(shop_ids: list[int], n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"type": TASK_TYPE, "shop_id": shop_ids[i % SHOPS], "base": BASE_PRIORITY,
               "spec": SPEC_JSON}


class LagSampler:
    """Sleeps ``LAG_TICK_S`` again and again; records how late each wake-up is, in seconds."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(LAG_TICK_S)
            self.lags.append(max(0.0, time.perf_counter() - t0 - LAG_TICK_S))

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="lag-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def idle_lag(seconds: float) -> list[float]:
    sampler = LagSampler()
    sampler.start()
    await asyncio.sleep(seconds)
    await sampler.stop()
    return sampler.lags


async def run_engine(store: SqliteStore, slots: int, budget_s: float, claim_on_ack: bool = True
                     ) -> tuple[float, list[float], int, bool, int]:
    """One ``run_until_idle`` over the queued tasks, stopped after ``budget_s`` if still going;
    ``claim_on_ack=False``: every ack alone, the dispatcher claims (the engine before #20).

    Returns (seconds, loop lags, tasks completed in those seconds, whether it was cut short,
    tasks claimed together with an ack).
    """
    engine = build_engine(store.settings, store, executor="noop", slots=slots)
    engine.claim_on_ack = claim_on_ack
    await engine.start()
    sampler = LagSampler()
    sampler.start()
    try:
        t0 = time.perf_counter()
        runner = asyncio.create_task(engine.run_until_idle())
        done, _ = await asyncio.wait([runner], timeout=budget_s)
        seconds = time.perf_counter() - t0
        completed = engine.completed
        with_ack = engine.claimed_with_ack
        if done:
            runner.result()
    finally:
        await sampler.stop()
        await engine.stop()
    if not done:
        await runner
    return seconds, sampler.lags, completed, not done, with_ack


@dataclass
class Run:
    """One engine run's figures."""

    rate: float
    seconds: float
    completed: int
    cut: bool
    lags: list[float]
    commits: int
    """The store's commits during the run (every write of the engine and its jobs)."""
    with_ack: int
    """Tasks claimed together with an ack (the others in dispatcher rounds)."""


@contextlib.contextmanager
def collector_not_frozen() -> Iterator[None]:
    """The engine as before #20 in one respect: the objects alive at its start are not frozen
    out of the collector's full passes (the peer that shows what the freeze does)."""
    from core.engine import collector

    started, stopped = collector.engine_started, collector.engine_stopped
    collector.engine_started = collector.engine_stopped = lambda: None  # type: ignore[assignment]
    try:
        yield
    finally:
        collector.engine_started, collector.engine_stopped = started, stopped  # type: ignore[assignment]


def dispatch(root: Path, mode: str, slots: int, sizes: Sizes, rep: int,
             frozen: bool = True, claim_on_ack: bool = True) -> Run:
    n = sizes.n
    path = root / (f"engine-{mode}-{slots}-{rep}{'' if frozen else '-nf'}"
                   f"{'' if claim_on_ack else '-apart'}.db")
    store = open_store(path, mode)
    try:
        ids = add_shops(store)
        with Stopwatch() as sub:
            load_rows(store, rows(ids, n))
        note(f"{mode} slots={slots}: {n} tasks queued in {sub.s:.1f}s; running the engine "
             f"(at most {sizes.budget_s:g}s)")
        gc.collect()
        writer = store._writer_or_refuse()
        commits = writer.commits
        with contextlib.nullcontext() if frozen else collector_not_frozen():
            seconds, lags, completed, cut, with_ack = asyncio.run(run_engine(
                store, slots, sizes.budget_s, claim_on_ack))
        commits = writer.commits - commits
        counts = store.counts()
    finally:
        store.close()
    if not cut and (completed != n or counts.get("done", 0) != n):
        raise RuntimeError(f"engine finished {completed} tasks ({counts}), expected {n} done")
    rate = completed / seconds
    p99 = percentiles(lags, [99])[0]
    label = (f"{mode}/{slots}" + ("" if frozen else " (collector not frozen)")
             + ("" if claim_on_ack else " (ack, then claim)"))
    note(f"{label} #{rep + 1}: {completed} done in {seconds:.1f}s = {rate:.0f}/s, "
         f"lag p99 {p99 * 1000:.1f} ms, {commits / max(completed, 1):.3f} commits a task, "
         f"{with_ack} claimed with an ack" + (" (time box reached)" if cut else ""))
    return Run(rate, seconds, completed, cut, lags, commits, with_ack)


SUBJECTS = {(True, True): "shopfleet",
            (False, True): "shopfleet, collector not frozen (before #20)",
            (True, False): "shopfleet, ack then claim (before #20)"}
"""(collector frozen, claim with the ack) -> subject."""


def dispatch_all(root: Path, sizes: Sizes, quick: bool, out: Results) -> None:
    """Every case ``sizes.repeats`` times, interleaved (the order rotates each repetition);
    each repetition also samples an idle loop for 2 s (what the machine alone does to a
    loop's lag, now), runs 256 slots in both modes with the collector not frozen (the peer
    of the freeze) and every mode and slot count with each ack alone and the claims left to
    the dispatcher (the peer of the claim made with the ack)."""
    cases = [(mode, slots, True, True) for mode in MODES for slots in SLOTS] + [
        (mode, 256, False, True) for mode in MODES] + [
        (mode, slots, True, False) for mode in MODES for slots in SLOTS]
    runs: dict[tuple[str, int, bool, bool], list[Run]] = {c: [] for c in cases}
    idle: list[list[float]] = []
    for rep in range(sizes.repeats):
        idle.append(asyncio.run(idle_lag(2.0)))
        order = cases[rep % len(cases):] + cases[:rep % len(cases)]
        for mode, slots, frozen, with_ack in order:
            gc.collect()
            runs[(mode, slots, frozen, with_ack)].append(dispatch(
                root, mode, slots, sizes, rep, frozen, with_ack))
    emit_summary(BENCH, "idle", "loop_lag_p99_ms",
                 [percentiles(lags, [99])[0] * 1000 for lags in idle], "ms", quick=quick,
                 tick_ms=LAG_TICK_S * 1000, seconds=2.0,
                 note="an idle loop in this process, sampled once a repetition: the "
                      "machine's own share of the lag")
    for (mode, slots, frozen, with_ack), rs in runs.items():
        case = f"{mode}/{slots}"
        subject = SUBJECTS[(frozen, with_ack)]
        ours = frozen and with_ack
        params: dict[str, Any] = {
            "mode": mode, "slots": slots, "tasks": sizes.n, "shops": SHOPS, "domains": DOMAINS,
            "max_tasks_per_shop": 1, "gates": "unlimited (rate 1e9/s, burst 1e9)",
            "time_boxed": sum(r.cut for r in rs), "budget_s": sizes.budget_s}
        rates = [r.rate for r in rs]
        if ours:
            out[("shopfleet", "noop_tasks_per_s", case)] = summary(rates)["median"]
        emit_summary(BENCH, subject, "noop_tasks_per_s", rates, "1/s", quick=quick,
                     completed=[r.completed for r in rs], **params)
        emit_summary(BENCH, subject, "commits_per_task",
                     [r.commits / max(r.completed, 1) for r in rs], "1", quick=quick,
                     note="the store's commits during the run over tasks done (the engine's "
                          "jobs included)", **params)
        emit_summary(BENCH, subject, "claimed_with_ack_share",
                     [r.with_ack / max(r.completed, 1) for r in rs], "1", quick=quick,
                     note="tasks claimed in the transaction of an ack, over tasks done",
                     **params)
        per_run = {name: [percentiles(r.lags, [q])[0] * 1000 for r in rs]
                   for name, q in (("loop_lag_p50_ms", 50), ("loop_lag_p99_ms", 99))}
        per_run["loop_lag_max_ms"] = [max(r.lags) * 1000 for r in rs]
        if ours:
            out[("shopfleet", "loop_lag_p99_ms", case)] = summary(
                per_run["loop_lag_p99_ms"])["median"]
        for metric, values in per_run.items():
            emit_summary(BENCH, subject, metric, values, "ms", quick=quick,
                         tick_ms=LAG_TICK_S * 1000, samples=[len(r.lags) for r in rs],
                         **params)


# -- the engine on a deep queue (#20 item 6) -------------------------------------------------

SCALE_TYPES = (("reply_customer", 10.0), ("campaign_signup", 9.0), ("upload_product", 5.0),
               ("collect_data", 3.0))
SCALE_AGED_S = 40 * 60
"""Created this long ago: past the default 30-minute hard-aging limit."""
SCALE_DELAY_S = 120.0
SCALE_SLOTS = 256
JOB_CALLS = 7
"""Calls of each periodic job's store call (p50 and max reported)."""


def scale_rows(shop_ids: list[int], n: int, now: float) -> Iterator[dict[str, Any]]:
    """Mixed priorities; every 10th task aged 40 minutes, every 10th (offset 5) delayed."""
    for i in range(n):
        typ, base = SCALE_TYPES[i % len(SCALE_TYPES)]
        row: dict[str, Any] = {"type": typ, "shop_id": shop_ids[i % SHOPS], "base": base,
                               "spec": SPEC_JSON}
        if i % 10 == 0:
            row["created_at"] = now - SCALE_AGED_S - (i % 600)
        elif i % 10 == 5:
            row["not_before"] = now + (i % 1200) * SCALE_DELAY_S / 1200
        yield row


def old_bands(store: SqliteStore, low_below: float) -> dict[str, int]:
    """``queue_bands`` as it was before #20 (the peer of the line above it)."""
    from core.priority import KEY_EPOCH, KEY_SCALE

    p = store.settings.priority
    shift = round((store.clock.now() - KEY_EPOCH) * p.aging_per_min / 60 * KEY_SCALE)
    hi = round(p.preempt_threshold * KEY_SCALE) - shift
    lo = round(low_below * KEY_SCALE) - shift
    conn = store._reader()
    conn.execute("BEGIN")
    try:
        q = ("SELECT count(*) FROM tasks INDEXED BY tasks_ready "
             "WHERE state = 'queued' AND band = ?")
        hard = conn.execute(q, (1,)).fetchone()[0]
        urgent = conn.execute(q + " AND prio_key >= ?", (0, hi)).fetchone()[0]
        low = conn.execute(q + " AND prio_key < ?", (0, lo)).fetchone()[0]
        total0 = conn.execute(q, (0,)).fetchone()[0]
    finally:
        conn.execute("COMMIT")
    return {"hard_aged": hard, "urgent": urgent, "low": low, "normal": total0 - urgent - low}


def job_costs(store: SqliteStore, quick: bool, n: int) -> None:
    """Each periodic job's store call on the deep queue, called as the jobs call it: in a
    thread (``asyncio.to_thread``), timed around the await."""
    p = store.settings.priority
    owner = "bench-worker"
    low = min(p.types.values(), default=0.0) + 1.0
    jobs: dict[str, tuple[str, Callable[[], Any]]] = {
        "status": ("metrics, every 1 s", store.status),
        "queue_bands": ("metrics, every 1 s (at most 2% of the time)",
                        lambda: store.queue_bands(urgent_at=p.preempt_threshold,
                                                  low_below=low)),
        "queue_bands_before_20": ("the same bands as before #20: four index counts, one "
                                  "of them every queued row", lambda: old_bands(store, low)),
        "open_tickets": ("metrics, every 1 s", lambda: store.ticket_book().open_count()),
        "engine_snapshot": ("metrics, every 5 s",
                            lambda: store.set_meta("engine_snapshot", '{"x": 1}')),
        "minute_row": ("metrics, every 60 s",
                       lambda: store.record_minute(int(time.time() // 60), {"done": 1})),
        "heartbeat": ("heartbeat, every 5 s",
                      lambda: store.heartbeat(owner, {"host": "bench", "pid": 1, "slots": 1})),
        "recover_expired": ("lease recovery, every 15 s", store.recover_expired),
        "recover_lost_workers": ("lease recovery, every 15 s",
                                 lambda: store.recover_lost_workers(30.0)),
        "urgent_waiting": ("preemption, every 0.1 s while running",
                           lambda: store.urgent_waiting(p.preempt_threshold)),
        "counts": ("run_until_idle, when idle", store.counts),
        "next_due": ("run_until_idle, when idle", store.next_due),
    }

    async def timed(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        await asyncio.to_thread(fn)
        return (time.perf_counter() - t0) * 1000

    async def run_all() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {name: [] for name in jobs}
        for _ in range(JOB_CALLS):  # interleaved: one call of each job a round
            for name, (_, fn) in jobs.items():
                out[name].append(await timed(fn))
        return out

    times = asyncio.run(run_all())
    new = store.queue_bands(urgent_at=p.preempt_threshold, low_below=low)
    if new != old_bands(store, low):  # the two must count the same
        raise RuntimeError(f"queue_bands {new} differs from the full count "
                           f"{old_bands(store, low)}")
    for name, values in times.items():
        emit(BENCH, "shopfleet", "periodic_job_ms", percentiles(values, [50])[0], "ms",
             job=name, when=jobs[name][0], max_ms=round(max(values), 3), calls=len(values),
             queued=n, indicative=quick)
        note(f"job {name}: p50 {percentiles(values, [50])[0]:.2f} ms, max "
             f"{max(values):.2f} ms")


async def run_deep(store: SqliteStore, budget_s: float) -> dict[str, Any]:
    """The engine on the deep queue for ``budget_s``: rate, claim rounds, lag, snapshot cost."""
    engine = build_engine(store.settings, store, executor="noop", slots=SCALE_SLOTS)
    claims: list[float] = []
    claimed: list[int] = []
    real_claim = engine.astore.claim_many

    async def timed_claim(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        got = await real_claim(*a, **kw)
        claims.append(time.perf_counter() - t0)
        claimed.append(len(got))
        return got

    engine.astore.claim_many = timed_claim  # type: ignore[method-assign]
    await engine.start()
    sampler = LagSampler()
    sampler.start()
    snapshot_ms: list[float] = []

    async def snapshots() -> None:
        while True:
            await asyncio.sleep(1.0)
            t0 = time.perf_counter()
            engine.statistics()  # on the loop, as the metrics job and the window call it
            snapshot_ms.append((time.perf_counter() - t0) * 1000)

    snap_task = asyncio.create_task(snapshots())
    try:
        t0 = time.perf_counter()
        runner = asyncio.create_task(engine.run_until_idle())
        done, _ = await asyncio.wait([runner], timeout=budget_s)
        seconds = time.perf_counter() - t0
        completed = engine.completed
        if done:
            runner.result()
    finally:
        snap_task.cancel()
        await sampler.stop()
        await engine.stop()
    if not done:
        await runner
    return {"seconds": seconds, "completed": completed, "cut": not done, "claims": claims,
            "claimed": claimed, "lags": sampler.lags, "snapshot_ms": snapshot_ms}


def scale(root: Path, n: int, budget_s: float, quick: bool) -> None:
    mode = "FULL"
    store = open_store(root / "engine-scale.db", mode)
    try:
        ids = add_shops(store)
        rss0 = rss_mb()
        with Stopwatch() as sub:
            load_rows(store, scale_rows(ids, n, store.clock.now()))
        counts = store.counts()
        note(f"scale: {n} tasks loaded in {sub.s:.0f}s ({counts.get('queued')} queued, "
             f"{counts.get('scheduled')} scheduled)")
        params: dict[str, Any] = {"mode": mode, "queued": n, "slots": SCALE_SLOTS,
                                  "shops": SHOPS, "domains": DOMAINS,
                                  "mix": "types 10/9/5/3, 10% aged 40 min, 10% delayed 0-2 min",
                                  "indicative": quick}
        emit(BENCH, "shopfleet", "scale_load_s", sub.s, "s", **params)
        job_costs(store, quick, n)
        gc.collect()
        rss1 = rss_mb()
        r = asyncio.run(run_deep(store, budget_s))
        rss2 = rss_mb()
        left = store.counts()
    finally:
        store.close()
    rate = r["completed"] / r["seconds"]
    params.update(seconds=round(r["seconds"], 1), completed=r["completed"],
                  time_boxed=r["cut"], left_queued=left.get("queued"),
                  left_scheduled=left.get("scheduled"))
    note(f"scale: {r['completed']} done in {r['seconds']:.0f}s = {rate:.0f}/s")
    emit(BENCH, "shopfleet", "scale_noop_tasks_per_s", rate, "1/s", **params)
    c50, c99 = percentiles(r["claims"], [50, 99])
    emit(BENCH, "shopfleet", "scale_claim_round_ms", c50 * 1000, "ms",
         p99_ms=round(c99 * 1000, 3), max_ms=round(max(r["claims"]) * 1000, 3),
         rounds=len(r["claims"]), tasks_per_round=round(sum(r["claimed"]) /
                                                        max(1, len(r["claimed"])), 1),
         **params)
    l50, l99 = percentiles(r["lags"], [50, 99])
    emit(BENCH, "shopfleet", "scale_loop_lag_p99_ms", l99 * 1000, "ms",
         p50_ms=round(l50 * 1000, 3), max_ms=round(max(r["lags"]) * 1000, 3),
         samples=len(r["lags"]), tick_ms=LAG_TICK_S * 1000, **params)
    if r["snapshot_ms"]:
        emit(BENCH, "shopfleet", "scale_statistics_ms", percentiles(r["snapshot_ms"], [50])[0],
             "ms", max_ms=round(max(r["snapshot_ms"]), 3), calls=len(r["snapshot_ms"]),
             note="engine.statistics() on the loop", **params)
    emit(BENCH, "shopfleet", "scale_rss_mb", rss2, "MiB", before_load=round(rss0, 1),
         after_load=round(rss1, 1), engine_growth_mb=round(rss2 - rss1, 1), **params)


# -- targets ------------------------------------------------------------------------------------


def _target(metric: str, value: float, unit: str, target: str, met: bool | None,
            **params: Any) -> None:
    if met is None:  # --quick: indicative, never met/unmet
        emit(BENCH, "shopfleet", metric, value, unit, target=target, indicative=True, **params)
    else:
        emit(BENCH, "shopfleet", metric, value, unit, target=target, met=met, **params)


def report_targets(out: Results, quick: bool) -> None:
    """Medians against the issue's fixed targets (``--quick``: indicative only)."""
    for (subject, metric, case), value in sorted(out.items()):
        if subject != "shopfleet":
            continue
        if metric == "noop_tasks_per_s":
            _target("noop_tasks_per_s_vs_target", value, "1/s", ">= 2000",
                    None if quick else value >= 2000, case=case, of="median")
        elif metric == "loop_lag_p99_ms":
            _target("loop_lag_p99_vs_target_ms", value, "ms", "< 20",
                    None if quick else value < 20, case=case, of="median")
        elif metric == "over_issue_tokens":
            _target("over_issue_vs_target_tokens", value, "tokens", "== 0",
                    None if quick else value == 0, case=case)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "engine benchmark")
    parser.add_argument("--only", choices=("dispatch", "gates", "scale"), default=None,
                        help="run one part only (the scale run is not part of the default)")
    parser.add_argument("--scale-n", type=int, default=None,
                        help="tasks queued for the scale run (default 1,000,000; --quick "
                             "100,000)")
    parser.add_argument("--scale-s", type=float, default=None,
                        help="time box of the engine on the deep queue, seconds")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    emit_machine(BENCH, args.dir)
    out: Results = {}
    note(f"engine: sizes {sizes}")
    if args.only == "scale":
        with temp_dir("shopfleet-bench-engine-scale-", args.dir) as root:
            scale(root, args.scale_n or sizes.scale_n, args.scale_s or sizes.scale_s,
                  args.quick)
        return
    lags = asyncio.run(idle_lag(1.0))
    p50, p99 = percentiles(lags, [50, 99])
    for metric, value in (("loop_lag_p50_ms", p50), ("loop_lag_p99_ms", p99)):
        emit(BENCH, "idle", metric, value * 1000, "ms", tick_ms=LAG_TICK_S * 1000,
             samples=len(lags), note="an idle loop, for scale")
    if args.only in (None, "gates"):
        gates(sizes.gate_s, out)
    if args.only in (None, "dispatch"):
        with temp_dir("shopfleet-bench-engine-", args.dir) as root:
            note(f"databases in {root}")
            dispatch_all(root, sizes, args.quick, out)
    report_targets(out, args.quick)


if __name__ == "__main__":
    main()
