"""What the Redis store's ack-and-claim costs (#20): the combined script against an ack and a
claim as two calls, and what its record for a repeated call (``P:ack_claim:<id>``, kept for a
lease so a call repeated after a lost reply answers the same) adds.

One fresh ``redis-server`` (no persistence: the server's CPU, not the disk, is what is
compared), each subject under its own prefix with ``T × reps`` queued tasks over 12 shops.
Subjects, each ``T`` cycles of "finish the held task, hold the next" by one worker with the
blocking API:

* ``ack_and_claim`` — the store's script (what the engine calls);
* ``no_record`` — the same script without the record's ``SET … EX``: the record's own cost
  (the repair's other parts — reading back the claimed row's id, the replay branch that runs
  only on a repeat — stay in);
* ``ack_then_claim`` — ``ack`` then ``claim``: two scripts, two round trips.

Each repetition runs every subject in turn (rotating who goes first); median and min–max of
tasks per second and of the ``redis-server`` process' CPU per task (user + system from
``/proc``: the single-threaded server's cost, which bounds a fleet, and which a loaded machine
delays but does not inflate, unlike the rate), and the per-repetition ratios.

Run: ``python bench/redis_ack_claim.py [--quick]`` (``--quick``: 3,000 cycles a subject, 3
repetitions); JSON Lines on stdout, progress on stderr. Needs ``redis-server`` on the PATH.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import arg_parser, emit_machine, emit_summary, note
from core.config import Settings
from core.testing.redis_server import RedisServer

BENCH = "redis_ack_claim"
SHOPS = 12
_RECORD = "redis.call('SET', k('ack_claim:' .. ACK_ID)"


def open_store(url: str, settings: Settings, prefix: str, *, record: bool = True) -> Any:
    """A RedisStore under ``prefix``; without ``record``, its ack-and-claim script writes no
    record for a repeated call (the rest of the script as it is)."""
    from core.store.redis import connection
    from core.store.redis.store import RedisStore

    real = connection.SCRIPTS
    if not record:
        body = real["ack_and_claim"]
        start = body.index(_RECORD)
        end = body.index("\n", body.index("- NOW)))", start))  # the statement's last line
        connection.SCRIPTS = {**real, "ack_and_claim": body[:start] + body[end + 1:]}
        assert _RECORD not in connection.SCRIPTS["ack_and_claim"]
    try:
        store = RedisStore(url, settings=settings, prefix=prefix)
    finally:
        connection.SCRIPTS = real
    for i in range(SHOPS):
        store.add_shop(f"shop-{i}", platform="pdd", base_url=f"http://pdd.bench.test/s/{i}")
    return store


def fill(store: Any, n: int) -> None:
    from core.specs import TaskSpec

    specs = [TaskSpec.model_validate({"type": "collect_data", "flow": "collect_data",
                                      "shop": f"shop-{i % SHOPS}",
                                      "params": {"page": i}}) for i in range(n)]
    for j in range(0, n, 1000):
        store.submit_many(specs[j:j + 1000])


def run(store: Any, step: Callable[[Any, int], Any], server: psutil.Process, t: int
        ) -> tuple[float, float]:
    """``t`` cycles: tasks per second and the server's CPU µs per task."""
    held = store.claim("bench")
    assert held is not None
    cpu0 = sum(server.cpu_times()[:2])
    t0 = time.perf_counter()
    for _ in range(t):
        held = step(store, held.id)
        assert held is not None, "the queue ran dry"
    rate = t / (time.perf_counter() - t0)
    us = (sum(server.cpu_times()[:2]) - cpu0) * 1e6 / t
    store.ack(held.id, "bench")
    return rate, us


def combined(store: Any, tid: int) -> Any:
    return store.ack_and_claim(tid, "bench")


def separate(store: Any, tid: int) -> Any:
    store.ack(tid, "bench")
    return store.claim("bench")


def main() -> int:
    args = arg_parser(__doc__ or "").parse_args()
    t, reps = (3_000, 3) if args.quick else (20_000, 5)
    emit_machine(BENCH, args.dir)
    settings = Settings().with_changes(queue={"max_backlog": 10 * t * reps + 1000})
    with RedisServer() as redis:
        assert redis.proc is not None
        server = psutil.Process(redis.proc.pid)
        subjects: dict[str, tuple[Any, Callable[[Any, int], Any]]] = {
            "ack_and_claim": (open_store(redis.url, settings, "a"), combined),
            "no_record": (open_store(redis.url, settings, "b", record=False), combined),
            "ack_then_claim": (open_store(redis.url, settings, "c"), separate)}
        try:
            for store, _ in subjects.values():
                fill(store, t * reps + 10)
            note(f"{t * reps + 10} tasks queued for each subject")
            names = list(subjects)
            rates: dict[str, list[float]] = {s: [] for s in names}
            cpu: dict[str, list[float]] = {s: [] for s in names}
            ratio: dict[str, list[float]] = {"record_cpu": [], "combined_rate": [],
                                             "combined_cpu": []}
            for rep in range(reps):
                order = names[rep % 3:] + names[:rep % 3]
                got = {s: run(subjects[s][0], subjects[s][1], server, t) for s in order}
                for s, (rate, us) in got.items():
                    rates[s].append(rate)
                    cpu[s].append(us)
                ratio["record_cpu"].append(got["ack_and_claim"][1] / got["no_record"][1])
                ratio["combined_rate"].append(got["ack_and_claim"][0]
                                              / got["ack_then_claim"][0])
                ratio["combined_cpu"].append(got["ack_and_claim"][1] / got["ack_then_claim"][1])
                note(f"repetition {rep + 1}/{reps}: " + ", ".join(
                    f"{s} {r:.0f}/s {us:.1f} µs Redis CPU" for s, (r, us) in got.items()))
        finally:
            for store, _ in subjects.values():
                store.close()
    common = {"cycles": t, "reps": reps}
    for s in names:
        emit_summary(BENCH, s, "tasks_per_s", rates[s], "1/s", quick=args.quick, **common)
        emit_summary(BENCH, s, "redis_cpu_us_per_task", cpu[s], "us", quick=args.quick,
                     **common)
    for key, metric in {"record_cpu": "redis_cpu_ratio_to_no_record",
                        "combined_rate": "rate_ratio_to_ack_then_claim",
                        "combined_cpu": "redis_cpu_ratio_to_ack_then_claim"}.items():
        emit_summary(BENCH, "ack_and_claim", metric, ratio[key], "x", quick=args.quick,
                     **common)
    emit_machine(BENCH, args.dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
