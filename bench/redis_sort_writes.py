"""What the Redis store's sort indexes (#15) cost the queue: claim+ack per second with and
without them, on the same store.

The store of ``bench/console_sort.py`` (N queued + N finished tasks over 12 shops, built in
SQLite and copied with ``shopfleet migrate``, so every index holds its state's tasks) is opened
twice: ``indexed`` with the store's own scripts, and ``no_indexes`` with the very same scripts
but an empty index table (``local SORTED = {}``: ``sort_members`` finds no index for any
state, so no member is computed or written) — the store as it was before #15, doing the same
logical work otherwise. A third subject, ``members_unwritten``, runs the store's scripts
with ``resort`` returning at once: every member is computed as ``indexed`` computes it, none
is written — so ``indexed`` minus it is the cost of the sixteen sorted-set writes, and it
minus ``no_indexes`` the cost of computing the members. Each repetition runs ``T`` claim+ack
cycles (one task at a time, the blocking API, one worker) with each subject in turn,
rotating which goes first; median, spread and the per-repetition ratio are printed, of tasks
per second and of the CPU time the ``redis-server`` process spent per task (user + system,
from ``/proc``: the server's cost, which a loaded machine delays but does not inflate, unlike
the rate). A claim moves a task
from ``queued`` (8 indexes) to ``running`` (none: at most the fleet's slots), an ack to
``done`` (8): the indexes' whole cost per task.

The ``no_indexes`` and ``members_unwritten`` subjects leave their tasks' members behind in the
queued indexes (they do not maintain them); the subjects claim different tasks, and a stale
member only adds one entry to sets of 100,000, so the comparison holds; the store is thrown
away afterwards.

Run: ``python bench/redis_sort_writes.py [--quick]`` (``--quick``: 5,000 + 5,000 rows, 300
cycles); JSON Lines on stdout, progress on stderr. Needs ``redis-server`` on the PATH.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import arg_parser, emit, emit_machine, note, temp_dir
from bench.console_sort import build
from core.testing.redis_server import RedisServer

BENCH = "redis_sort_writes"
REPS = 5


_RESORT = "local function resort(before, after)\n"


def open_bare(url: str, settings: object, *, compute: bool = False) -> object:
    """A RedisStore whose scripts keep no sort index (the same scripts, ``SORTED`` empty);
    with ``compute``, one that computes every member as the indexed store does but writes
    none (``resort`` returns at once)."""
    from core.store.redis import connection, sorts
    from core.store.redis.store import RedisStore

    real = connection.PRELUDE
    if compute:
        assert real.count(_RESORT) == 1
        connection.PRELUDE = real.replace(_RESORT, _RESORT + "  do return end\n")
    else:
        specs = sorts._lua_specs()
        assert real.count(specs) == 1
        connection.PRELUDE = real.replace(specs, "local SORTED = {}\n")
    try:
        return RedisStore(url, settings=settings)  # type: ignore[arg-type]
    finally:
        connection.PRELUDE = real


def cycles(store: object, server: psutil.Process, n: int) -> tuple[float, float]:
    """``n`` claim+ack cycles: tasks per second, and the CPU time (user + system) the
    ``redis-server`` process spent per cycle — the single-threaded server's cost, which
    bounds a fleet's throughput, and which a loaded machine delays but does not add to (the
    wall-clock rate it does)."""
    cpu0 = sum(server.cpu_times()[:2])
    t0 = time.perf_counter()
    for _ in range(n):
        c = store.claim("bench")  # type: ignore[attr-defined]
        assert c is not None
        store.ack(c.id, "bench")  # type: ignore[attr-defined]
    rate = n / (time.perf_counter() - t0)
    return rate, (sum(server.cpu_times()[:2]) - cpu0) * 1e6 / n


def main() -> int:
    args = arg_parser(__doc__ or "").parse_args()
    n, t = (5_000, 300) if args.quick else (100_000, 2_000)
    emit_machine(BENCH, args.dir)
    with temp_dir("shopfleet-sortw-", args.dir) as work, RedisServer() as redis:
        path = work / "sort.db"
        # No hard aging due: the built tasks were created up to a day ago, and the first claim
        # would otherwise move them all to the hard-aged band in one script (a mass the queue
        # never sees at once: tasks cross the limit one by one).
        settings = build(path, n).with_changes(priority={"hard_aging_min": 7 * 24 * 60.0})
        from core.store.redis.from_sqlite import migrate
        from core.store.redis.store import RedisStore

        report = migrate(path, redis.url, settings=settings, batch=500)
        assert report.ok, report.lines()
        note(f"{n} queued + {n} finished tasks in Redis")
        assert redis.proc is not None
        server_proc = psutil.Process(redis.proc.pid)
        stores = {"indexed": RedisStore(redis.url, settings=settings),
                  "no_indexes": open_bare(redis.url, settings),
                  "members_unwritten": open_bare(redis.url, settings, compute=True)}
        try:
            rates: dict[str, list[float]] = {s: [] for s in stores}
            server: dict[str, list[float]] = {s: [] for s in stores}
            ratios: list[float] = []
            server_ratios: list[float] = []
            compute_ratios: list[float] = []
            names = list(stores)
            for rep in range(REPS):
                order = names[rep % 3:] + names[:rep % 3]
                got = {s: cycles(stores[s], server_proc, t) for s in order}
                for s, (rate, us) in got.items():
                    rates[s].append(rate)
                    server[s].append(us)
                ratios.append(got["indexed"][0] / got["no_indexes"][0])
                server_ratios.append(got["indexed"][1] / got["no_indexes"][1])
                compute_ratios.append(got["members_unwritten"][1] / got["no_indexes"][1])
                note(f"repetition {rep + 1}/{REPS}: " + ", ".join(
                    f"{s} {rate:.0f}/s, {us:.0f} µs Redis CPU" for s, (rate, us) in got.items()))
            common = {"cycles": t, "reps": REPS, "rows_queued": n, "rows_finished": n}
            for s in names:
                emit(BENCH, s, "claim_ack_per_s", statistics.median(rates[s]), "1/s",
                     **common, min=round(min(rates[s]), 1), max=round(max(rates[s]), 1))
                emit(BENCH, s, "redis_cpu_us_per_claim_ack", statistics.median(server[s]),
                     "us", **common, min=round(min(server[s]), 1),
                     max=round(max(server[s]), 1))
            emit(BENCH, "indexed", "rate_ratio_to_no_indexes", statistics.median(ratios), "x",
                 reps=REPS, min=round(min(ratios), 3), max=round(max(ratios), 3))
            emit(BENCH, "indexed", "redis_cpu_ratio_to_no_indexes",
                 statistics.median(server_ratios), "x", reps=REPS,
                 min=round(min(server_ratios), 3), max=round(max(server_ratios), 3))
            emit(BENCH, "members_unwritten", "redis_cpu_ratio_to_no_indexes",
                 statistics.median(compute_ratios), "x", reps=REPS,
                 min=round(min(compute_ratios), 3), max=round(max(compute_ratios), 3))
        finally:
            for st in stores.values():
                st.close()  # type: ignore[attr-defined]
    emit_machine(BENCH, args.dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
