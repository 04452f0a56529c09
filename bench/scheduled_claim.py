"""Claim latency with many delayed tasks (#18): scheduled tasks stay out of the claim path.

Two queues, built alike in fresh stores (64 shops, ``max_tasks_per_shop`` 1):

* ``with_scheduled`` — ``n`` tasks (1,000,000; ``--quick`` 40,000): the best-scored half
  (base 10) scheduled a day ahead, the other half (base 3) queued now;
* ``without`` — the same queue without them: only the ``n/2`` queued tasks.

If scheduled tasks sat in the claim index, every claim would walk past ``n/2`` better-scored
rows that are not due. The claim call alone is timed, each claim followed by its ack, in
interleaved rounds (``rounds`` × ``claims`` per queue, alternating; p50/p99 per round, the
median over rounds printed with its spread), on SQLite
(``synchronous=NORMAL``, WAL) and on Redis (a throwaway loopback ``redis-server``, filled by
``shopfleet migrate`` from the SQLite files, i.e. by the store's own indexing Lua). Target:
the ``with_scheduled`` p99 within 2× of ``without`` (``ratio_p99`` lines, ``target`` and
``met`` in their params).

Run: ``python bench/scheduled_claim.py [--quick] [--no-redis]``; JSON Lines on stdout,
progress on stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import arg_parser, emit, note, percentiles, temp_dir

from core.config import Settings
from core.store import SqliteStore, new_owner_id
from core.store.base import Store
from core.store.sqlite.bulk import load_rows

BENCH = "scheduled_claim"
SHOPS = 64
SPEC_JSON = '{"params":{},"flow":"collect_data"}'
TARGET_RATIO = 2.0


def settings() -> Settings:
    return Settings().with_changes(store={"synchronous": "NORMAL"},
                                   queue={"max_backlog": 10_000_000})


def rows(shop_ids: list[int], n: int, *, scheduled: bool, now: float
         ) -> Iterator[dict[str, Any]]:
    """``n`` rows; with ``scheduled`` the even ones are the best-scored half, a day ahead."""
    for i in range(n):
        if i % 2 == 0:
            if scheduled:
                yield {"type": "collect_data", "shop_id": shop_ids[i % SHOPS], "base": 10.0,
                       "spec": SPEC_JSON, "not_before": now + 86400.0}
            continue
        yield {"type": "collect_data", "shop_id": shop_ids[i % SHOPS], "base": 3.0,
               "spec": SPEC_JSON}


def build(path: Path, n: int, *, scheduled: bool) -> dict[str, int]:
    store = SqliteStore(path, settings=settings())
    try:
        ids = [store.add_shop(f"s{i}", platform="pdd", base_url=f"https://s{i}.example").id
               for i in range(SHOPS)]
        load_rows(store, rows(ids, n, scheduled=scheduled, now=store.clock.now()))
        c = store.counts()
        return {"queued": c["queued"], "scheduled": c["scheduled"]}
    finally:
        store.close()


def claim_times(store: Store, owner: str, k: int) -> list[float]:
    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        task = store.claim(owner)
        dt = time.perf_counter() - t0
        if task is None:
            raise RuntimeError("the queue ran dry")
        store.ack(task.id, owner)
        out.append(dt * 1000)
    return out


def interleaved(stores: dict[str, Store], rounds: int, claims: int
                ) -> dict[str, list[list[float]]]:
    owners = {name: new_owner_id() for name in stores}
    for name, s in stores.items():  # warm-up: caches, scripts loaded
        claim_times(s, owners[name], 50)
    times: dict[str, list[list[float]]] = {name: [] for name in stores}
    for r in range(rounds):
        for name, s in stores.items():
            times[name].append(claim_times(s, owners[name], claims))
        note(f"round {r + 1}/{rounds} done")
    return times


def report(subject: str, times: dict[str, list[list[float]]], params: dict[str, Any]) -> None:
    """Per queue: p50 and p99 of each round, their median over rounds and spread (min, max);
    the ratio compares the medians of the per-round p99 (robust to a noisy neighbour)."""
    p99 = {}
    for name, per_round in times.items():
        p50s = [percentiles(ts, [50])[0] for ts in per_round]
        p99s = [percentiles(ts, [99])[0] for ts in per_round]
        p50 = percentiles(p50s, [50])[0]
        p99[name] = percentiles(p99s, [50])[0]
        claims = sum(len(ts) for ts in per_round)
        emit(BENCH, subject, "claim_p50_ms", p50, "ms", queue=name, claims=claims,
             spread=[round(min(p50s), 4), round(max(p50s), 4)], **params)
        emit(BENCH, subject, "claim_p99_ms", p99[name], "ms", queue=name, claims=claims,
             spread=[round(min(p99s), 4), round(max(p99s), 4)], **params)
    ratio = p99["with_scheduled"] / p99["without"]
    emit(BENCH, subject, "ratio_p99", ratio, "1", target=TARGET_RATIO,
         met=ratio <= TARGET_RATIO, **params)


def run_sqlite(paths: dict[str, Path], n: int, rounds: int, claims: int,
               counts: dict[str, dict[str, int]]) -> None:
    stores: dict[str, Store] = {name: SqliteStore(p, settings=settings())
                                for name, p in paths.items()}
    try:
        times = interleaved(stores, rounds, claims)
    finally:
        for s in stores.values():
            s.close()
    report("shopfleet_sqlite", times, {"n": n, "mode": "NORMAL", "rounds": rounds,
                                       "shops": SHOPS, "counts": counts})


def run_redis(paths: dict[str, Path], n: int, rounds: int, claims: int,
              counts: dict[str, dict[str, int]]) -> None:
    from core.store.redis.from_sqlite import migrate
    from core.store.redis.store import RedisStore
    from core.testing.redis_server import RedisServer

    with RedisServer() as server:
        stores: dict[str, Store] = {}
        try:
            for name, p in paths.items():
                t0 = time.perf_counter()
                rep = migrate(p, server.url, settings=settings(), prefix=f"b-{name}")
                note(f"redis {name}: copied in {time.perf_counter() - t0:.0f} s "
                     f"(verified: {rep.verification.ok if rep.verification else '-'})")
                stores[name] = RedisStore(server.url, settings=settings(), prefix=f"b-{name}")
            times = interleaved(stores, rounds, claims)
        finally:
            for s in stores.values():
                s.close()
    report("shopfleet_redis", times, {"n": n, "rounds": rounds, "shops": SHOPS,
                                      "counts": counts, "durability": "no AOF (loopback)"})


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    parser.add_argument("--no-redis", action="store_true", help="SQLite only")
    parser.add_argument("--no-sqlite", action="store_true", help="Redis only")
    parser.add_argument("--n", type=int, default=None, help="tasks per queue (default 1M)")
    args = parser.parse_args()
    n = args.n or (40_000 if args.quick else 1_000_000)
    rounds, claims = (7, 200) if args.quick else (15, 400)
    with temp_dir("shopfleet-sched-", args.dir) as root:
        paths = {"with_scheduled": root / "with.db", "without": root / "without.db"}
        counts: dict[str, dict[str, int]] = {}
        for name, p in paths.items():
            t0 = time.perf_counter()
            counts[name] = build(p, n, scheduled=name == "with_scheduled")
            note(f"built {name}: {counts[name]} in {time.perf_counter() - t0:.0f} s")
        run: list[tuple[str, Callable[..., None]]] = [] if args.no_sqlite else [
            ("sqlite", run_sqlite)]
        if not args.no_redis:
            run.append(("redis", run_redis))
        for label, fn in run:
            note(f"timing {label}")
            fn(paths, n, rounds, claims, counts)


if __name__ == "__main__":
    main()
