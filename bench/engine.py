"""The engine: end-to-end no-op dispatch, event-loop lag, and gate accuracy against aiolimiter.

Measured in one run:

1. tasks/s end to end — ``n`` no-op tasks (100,000; ``--quick`` 10,000) queued beforehand with
   ``core.store.sqlite.bulk.load_rows``, then the real engine (store, dispatcher, rate gates,
   breakers,
   ``NoopExecutor``) runs them with ``run_until_idle``: every task is claimed (in batches, one
   commit per round), takes a global and a domain token, and is acknowledged through the store's
   writer thread. ``synchronous=FULL`` and ``NORMAL``, 64 and 256 slots. Gates are unlimited
   (rate 1e9/s, burst 1e9). 1,024 shops over 16 domains with the default
   ``queue.max_tasks_per_shop = 1``: 4× the largest slot count, so one-task-per-shop never
   starves the dispatcher. The clock starts after ``engine.start()`` (recovery, first snapshot)
   and stops when ``run_until_idle`` returns (every task must then be ``done``) or at a time
   box (60 s, ``--quick`` 8 s), whichever comes first: a slow engine is reported as the rate
   it kept over that time with the queue still deep (``completed`` and ``time_boxed`` in the
   params), instead of running for an hour.
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

The last lines compare against the targets of the issue (``*_vs_target``, with ``target`` and
``met`` in their params).

Run: ``python bench/engine.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import gc
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import Stopwatch, arg_parser, emit, note, percentiles, temp_dir

from core.build import build_engine
from core.config import Settings
from core.engine.gates import TokenBucket
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
GATE_CASES = ((50.0, 10.0), (5.0, 1.0))
"""(rate per second, burst) for the accuracy runs."""
ACQUIRERS = 20
WINDOWS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)

Results = dict[tuple[str, str, str], float]
"""(subject, metric, case) -> value, for the target lines at the end."""


@dataclass(frozen=True)
class Sizes:
    n: int
    """No-op tasks per engine run."""
    gate_s: float
    """Real seconds each limiter is hammered."""
    budget_s: float
    """Time box of one engine run: a slow engine reports its rate over this much work."""


FULL_SIZES = Sizes(n=100_000, gate_s=6.0, budget_s=60.0)
QUICK_SIZES = Sizes(n=10_000, gate_s=2.0, budget_s=8.0)


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


async def run_engine(store: SqliteStore, slots: int,
                     budget_s: float) -> tuple[float, list[float], int, bool]:
    """One ``run_until_idle`` over the queued tasks, stopped after ``budget_s`` if still going.

    Returns (seconds, loop lags, tasks completed in those seconds, whether it was cut short).
    """
    engine = build_engine(store.settings, store, executor="noop", slots=slots)
    await engine.start()
    sampler = LagSampler()
    sampler.start()
    try:
        t0 = time.perf_counter()
        runner = asyncio.create_task(engine.run_until_idle())
        done, _ = await asyncio.wait([runner], timeout=budget_s)
        seconds = time.perf_counter() - t0
        completed = engine.completed
        if done:
            runner.result()
    finally:
        await sampler.stop()
        await engine.stop()
    if not done:
        await runner
    return seconds, sampler.lags, completed, not done


def dispatch(root: Path, mode: str, slots: int, sizes: Sizes, out: Results) -> None:
    n = sizes.n
    path = root / f"engine-{mode}-{slots}.db"
    store = open_store(path, mode)
    try:
        ids = add_shops(store)
        with Stopwatch() as sub:
            load_rows(store, rows(ids, n))
        note(f"{mode} slots={slots}: {n} tasks queued in {sub.s:.1f}s; running the engine "
             f"(at most {sizes.budget_s:g}s)")
        gc.collect()
        seconds, lags, completed, cut = asyncio.run(run_engine(store, slots, sizes.budget_s))
        counts = store.counts()
    finally:
        store.close()
    if not cut and (completed != n or counts.get("done", 0) != n):
        raise RuntimeError(f"engine finished {completed} tasks ({counts}), expected {n} done")
    case = f"{mode}/{slots}"
    params: dict[str, Any] = {
        "mode": mode, "slots": slots, "n": n, "shops": SHOPS, "domains": DOMAINS,
        "max_tasks_per_shop": 1, "gates": "unlimited (rate 1e9/s, burst 1e9)"}
    rate = completed / seconds
    out[("shopfleet", "noop_tasks_per_s", case)] = rate
    note(f"{case}: {completed} done in {seconds:.1f}s = {rate:.0f}/s"
         + (" (time box reached)" if cut else ""))
    emit(BENCH, "shopfleet", "noop_tasks_per_s", rate, "1/s", seconds=round(seconds, 3),
         completed=completed, time_boxed=cut, **params)
    p50, p99 = percentiles(lags, [50, 99])
    out[("shopfleet", "loop_lag_p99_ms", case)] = p99 * 1000
    for metric, value in (("loop_lag_p50_ms", p50), ("loop_lag_p99_ms", p99),
                          ("loop_lag_max_ms", max(lags))):
        emit(BENCH, "shopfleet", metric, value * 1000, "ms", tick_ms=LAG_TICK_S * 1000,
             samples=len(lags), **params)


# -- gate accuracy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accuracy:
    issued: int
    over_issue: float
    by_window: dict[str, float]
    added_latency_ms: float
    achieved_rate: float


def over_issue(stamps: list[float], rate: float, burst: float,
               windows: tuple[float, ...]) -> dict[str, float]:
    """For each T: max over windows [t_i, t_i + T] of (tokens in it − (rate·T + burst))."""
    out: dict[str, float] = {}
    for T in windows:
        worst = 0
        for i, t in enumerate(stamps):
            j = bisect.bisect_right(stamps, t + T)
            worst = max(worst, j - i)
        out[f"{T:g}"] = max(0.0, worst - (rate * T + burst))
    return out


def accuracy(stamps: list[float], t0: float, seconds: float, rate: float,
             burst: float) -> Accuracy:
    stamps = sorted(stamps)
    windows = tuple(w for w in WINDOWS_S if w <= seconds)
    by_window = over_issue(stamps, rate, burst, windows)
    added = [s - (t0 + max(0.0, (k - burst + 1) / rate)) for k, s in enumerate(stamps)]
    span = (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    achieved = (len(stamps) - burst) / span if span > 0 else 0.0
    return Accuracy(len(stamps), max(by_window.values()), by_window,
                    1000 * sum(added) / len(added), achieved)


async def hammer(acquire: Callable[[], Awaitable[Any]], now: Callable[[], float],
                 seconds: float) -> tuple[float, list[float]]:
    """``ACQUIRERS`` coroutines take tokens for ``seconds``; (start, issue stamps)."""
    stamps: list[float] = []

    async def worker() -> None:
        while True:
            await acquire()
            stamps.append(now())  # no await since the decision: this is its moment

    t0 = now()
    workers = [asyncio.create_task(worker()) for _ in range(ACQUIRERS)]
    await asyncio.sleep(seconds)
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    return t0, stamps


async def gate_shopfleet(rate: float, burst: float, seconds: float) -> tuple[float, list[float]]:
    bucket = TokenBucket("bench", rate, burst)
    return await hammer(bucket.acquire, bucket.clock.now, seconds)


async def gate_aiolimiter(rate: float, burst: float, seconds: float) -> tuple[float, list[float]]:
    from aiolimiter import AsyncLimiter

    limiter = AsyncLimiter(burst, burst / rate)
    loop = asyncio.get_running_loop()
    return await hammer(limiter.acquire, loop.time, seconds)


def gates(sizes: Sizes, out: Results) -> None:
    import aiolimiter

    version = getattr(aiolimiter, "__version__", "?")
    for rate, burst in GATE_CASES:
        case = f"{rate:g}/s burst {burst:g}"
        for subject, fn in (("shopfleet", gate_shopfleet), ("aiolimiter", gate_aiolimiter)):
            t0, stamps = asyncio.run(fn(rate, burst, sizes.gate_s))
            acc = accuracy(stamps, t0, sizes.gate_s, rate, burst)
            params: dict[str, Any] = {"rate_per_s": rate, "burst": burst,
                                      "acquirers": ACQUIRERS, "seconds": sizes.gate_s,
                                      "issued": acc.issued,
                                      "ideal_issued": int(burst + rate * sizes.gate_s)}
            if subject == "aiolimiter":
                params["version"] = version
                params["as"] = f"AsyncLimiter(max_rate={burst:g}, time_period={burst / rate:g})"
            else:
                params["as"] = "TokenBucket (core.engine.gates)"
            out[(subject, "over_issue_tokens", case)] = acc.over_issue
            out[(subject, "added_latency_ms", case)] = acc.added_latency_ms
            emit(BENCH, subject, "over_issue_tokens", acc.over_issue, "tokens",
                 by_window_s=acc.by_window, **params)
            emit(BENCH, subject, "added_latency_ms", acc.added_latency_ms, "ms", **params)
            emit(BENCH, subject, "achieved_rate_per_s", acc.achieved_rate, "1/s", **params)


# -- targets ------------------------------------------------------------------------------------


def _target(metric: str, value: float, unit: str, target: str, met: bool,
            **params: Any) -> None:
    emit(BENCH, "shopfleet", metric, value, unit, target=target, met=met, **params)


def report_targets(out: Results) -> None:
    for (subject, metric, case), value in sorted(out.items()):
        if subject != "shopfleet":
            continue
        if metric == "noop_tasks_per_s":
            _target("noop_tasks_per_s_vs_target", value, "1/s", ">= 2000", value >= 2000,
                    case=case)
        elif metric == "loop_lag_p99_ms":
            _target("loop_lag_p99_vs_target_ms", value, "ms", "< 20", value < 20, case=case)
        elif metric == "over_issue_tokens":
            _target("over_issue_vs_target_tokens", value, "tokens", "== 0", value == 0,
                    case=case)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "engine benchmark")
    parser.add_argument("--only", choices=("dispatch", "gates"), default=None,
                        help="run one part only")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    out: Results = {}
    note(f"engine: sizes {sizes}")
    lags = asyncio.run(idle_lag(1.0))
    p50, p99 = percentiles(lags, [50, 99])
    for metric, value in (("loop_lag_p50_ms", p50), ("loop_lag_p99_ms", p99)):
        emit(BENCH, "idle", metric, value * 1000, "ms", tick_ms=LAG_TICK_S * 1000,
             samples=len(lags), note="an idle loop, for scale")
    if args.only in (None, "gates"):
        gates(sizes, out)
    if args.only in (None, "dispatch"):
        with temp_dir("shopfleet-bench-engine-", args.dir) as root:
            note(f"databases in {root}")
            for mode in MODES:
                for slots in SLOTS:
                    dispatch(root, mode, slots, sizes, out)
    report_targets(out)


if __name__ == "__main__":
    main()
