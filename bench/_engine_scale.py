"""The engine on a deep queue for ``bench/engine.py`` (part 4 of its docstring, ``--only
scale``; split out of ``bench/engine.py``, which had grown past 600 lines)."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _common import Stopwatch, emit, note, percentiles, rss_mb
from _engine_base import (
    BENCH,
    DOMAINS,
    LAG_TICK_S,
    SHOPS,
    SPEC_JSON,
    LagSampler,
    add_shops,
    open_store,
)

from core.build import build_engine
from core.store import SqliteStore
from core.store.sqlite.bulk import load_rows

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
