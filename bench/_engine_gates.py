"""Gate accuracy for ``bench/engine.py`` (part 3 of its docstring): ShopFleet's ``TokenBucket``
against ``aiolimiter.AsyncLimiter`` under ``ACQUIRERS`` coroutines taking tokens as fast as they
are given (split out of ``bench/engine.py``, which had grown past 600 lines)."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from _common import emit

from core.engine.gates import TokenBucket

BENCH = "engine"
GATE_CASES = ((50.0, 10.0), (5.0, 1.0))
"""(rate per second, burst) for the accuracy runs."""
ACQUIRERS = 20
WINDOWS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)

Results = dict[tuple[str, str, str], float]
"""(subject, metric, case) -> median value, for the target lines at the end."""


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


def gates(seconds: float, out: Results) -> None:
    """Both limiters under every case of :data:`GATE_CASES`, ``seconds`` of real time each."""
    import aiolimiter

    version = getattr(aiolimiter, "__version__", "?")
    for rate, burst in GATE_CASES:
        case = f"{rate:g}/s burst {burst:g}"
        for subject, fn in (("shopfleet", gate_shopfleet), ("aiolimiter", gate_aiolimiter)):
            t0, stamps = asyncio.run(fn(rate, burst, seconds))
            acc = accuracy(stamps, t0, seconds, rate, burst)
            params: dict[str, Any] = {"rate_per_s": rate, "burst": burst,
                                      "acquirers": ACQUIRERS, "seconds": seconds,
                                      "issued": acc.issued,
                                      "ideal_issued": int(burst + rate * seconds)}
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
