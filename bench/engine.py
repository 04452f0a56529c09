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
   Held part (``--only held``, also in the default run): tasks of 50 ms on 64 slots, the
   engine full and its tasks ending one by one — where a finished task's ack claims the next
   task for its slot — against the engine acking alone, in the same repetitions.
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
from collections.abc import Iterator
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
    summary,
    temp_dir,
)
from _engine_base import (
    BENCH,
    DOMAINS,
    LAG_TICK_S,
    SHOPS,
    LagSampler,
    add_shops,
    idle_lag,
    open_store,
    rows,
)
from _engine_gates import Results, gates
from _engine_scale import scale

from core.build import build_engine
from core.engine import NoopExecutor
from core.store import SqliteStore
from core.store.sqlite.bulk import load_rows

MODES = ("FULL", "NORMAL")
SLOTS = (64, 256)



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
    held_n: int
    """Tasks of ``HELD_S`` each per run of the held part."""


FULL_SIZES = Sizes(n=50_000, gate_s=6.0, budget_s=30.0, repeats=REPEATS,
                   scale_n=1_000_000, scale_s=120.0, held_n=10_000)
QUICK_SIZES = Sizes(n=10_000, gate_s=2.0, budget_s=8.0, repeats=2, scale_n=100_000,
                    scale_s=20.0, held_n=3_000)


# -- dispatch throughput and loop lag -------------------------------------------------------------


async def run_engine(store: SqliteStore, slots: int, budget_s: float, claim_on_ack: bool = True,
                     hold_s: float = 0.0) -> tuple[float, list[float], int, bool, int]:
    """One ``run_until_idle`` over the queued tasks, stopped after ``budget_s`` if still going;
    ``claim_on_ack=False``: every ack alone, the dispatcher claims (the engine before #20).

    Returns (seconds, loop lags, tasks completed in those seconds, whether it was cut short,
    tasks claimed together with an ack).
    """
    engine = build_engine(store.settings, store, executor=NoopExecutor(hold_s=hold_s),
                          slots=slots)
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
             frozen: bool = True, claim_on_ack: bool = True, hold_s: float = 0.0) -> Run:
    n = sizes.held_n if hold_s else sizes.n
    path = root / (f"engine-{mode}-{slots}-{rep}{'' if frozen else '-nf'}"
                   f"{'' if claim_on_ack else '-apart'}{'-held' if hold_s else ''}.db")
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
                store, slots, sizes.budget_s, claim_on_ack, hold_s))
        commits = writer.commits - commits
        counts = store.counts()
    finally:
        store.close()
    if not cut and (completed != n or counts.get("done", 0) != n):
        raise RuntimeError(f"engine finished {completed} tasks ({counts}), expected {n} done")
    rate = completed / seconds
    p99 = percentiles(lags, [99])[0]
    label = (f"{mode}/{slots}" + ("" if frozen else " (collector not frozen)")
             + ("" if claim_on_ack else " (ack, then claim)")
             + (f" (tasks of {hold_s * 1000:g} ms)" if hold_s else ""))
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


HELD_S = 0.05
HELD_SLOTS = 64


def held_all(root: Path, sizes: Sizes, quick: bool) -> None:
    """Tasks that take ``HELD_S`` each on ``HELD_SLOTS`` slots (at most 1,280 a second): the
    engine is full and its tasks end one by one, the case where a finished task's ack claims
    the next task for its slot; beside it, in the same repetitions, the engine acking alone
    and claiming in dispatcher rounds."""
    cases = [(mode, with_ack) for mode in MODES for with_ack in (True, False)]
    runs: dict[tuple[str, bool], list[Run]] = {c: [] for c in cases}
    for rep in range(sizes.repeats):
        order = cases[rep % len(cases):] + cases[:rep % len(cases)]
        for mode, with_ack in order:
            gc.collect()
            runs[(mode, with_ack)].append(dispatch(root, mode, HELD_SLOTS, sizes, rep,
                                                   claim_on_ack=with_ack, hold_s=HELD_S))
    for (mode, with_ack), rs in runs.items():
        subject = SUBJECTS[(True, with_ack)]
        params: dict[str, Any] = {
            "mode": mode, "slots": HELD_SLOTS, "tasks": sizes.held_n, "task_s": HELD_S,
            "ideal_per_s": HELD_SLOTS / HELD_S, "shops": SHOPS, "max_tasks_per_shop": 1,
            "time_boxed": sum(r.cut for r in rs), "budget_s": sizes.budget_s}
        emit_summary(BENCH, subject, "held_tasks_per_s", [r.rate for r in rs], "1/s",
                     quick=quick, **params)
        emit_summary(BENCH, subject, "held_commits_per_task",
                     [r.commits / max(r.completed, 1) for r in rs], "1", quick=quick,
                     **params)
        emit_summary(BENCH, subject, "held_claimed_with_ack_share",
                     [r.with_ack / max(r.completed, 1) for r in rs], "1", quick=quick,
                     **params)
        emit_summary(BENCH, subject, "held_loop_lag_p99_ms",
                     [percentiles(r.lags, [99])[0] * 1000 for r in rs], "ms", quick=quick,
                     **params)


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
    parser.add_argument("--only", choices=("dispatch", "held", "gates", "scale"),
                        default=None,
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
    if args.only in (None, "held"):
        with temp_dir("shopfleet-bench-engine-held-", args.dir) as root:
            held_all(root, sizes, args.quick)
    report_targets(out, args.quick)


if __name__ == "__main__":
    main()
