"""Scale-out: throughput of 1, 2 and 3 worker processes sharing one Redis, and one worker's
no-op throughput on Redis and on SQLite, measured side by side in one run.

1. **held tasks** — each worker is a real ``shopfleet worker`` process (``--executor noop
   --hold-ms 200 --slots 4``): every task takes its gate tokens and is then held 200 ms, standing
   in for browser time. 1, 2 and 3 workers in turn on a fresh Redis database; the queue is
   filled beforehand (``n × workers`` tasks over 48 shops on 3 domains, gates wide open so they
   never bind). Throughput = tasks whose gate grant falls in the measured span ÷ span, the span
   running from the first grant to the last (each worker logs its grants with
   ``--exec-log``), so process start-up is not counted. Ideal: workers × 4 slots ÷ 0.2 s.
   Target: 3 workers ≥ 2.7 × one worker.
2. **no-op** — one worker (``--slots 16``, no hold) on Redis and on SQLite (``synchronous =
   FULL``, the default), the same tasks, the same span rule: what the store itself costs.

A private ``redis-server`` on loopback (no persistence) is started for the run.

Run: ``python bench/scale_out.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import arg_parser, emit, note, temp_dir
from core.build import open_store
from core.config import load_settings
from core.testing.fleet_client import specs_for
from core.testing.redis_server import RedisServer

BENCH = "scale_out"
HOLD_MS = 200
SLOTS = 4
SHOPS = [f"{p}-{i}" for p in ("pdd", "temu", "tiktok") for i in range(16)]
CONFIG = """
[queue]
max_tasks_per_shop = 1
heartbeat_s = 1
[gates.global]
rate_per_s = 100000
burst = 100000
[gates.default_domain]
rate_per_s = 100000
burst = 100000
"""


def _fill(url: str, cfg: Path, n: int) -> None:
    store = open_store(load_settings(cfg), url=url, validate=False)
    try:
        for name in SHOPS:
            platform = name.split("-")[0]
            store.add_shop(name, platform=platform,
                           base_url=f"http://{platform}.bench.test/shop/{name}")
        for start in range(0, n, 1000):
            store.submit_many(specs_for(min(1000, n - start), SHOPS, start=start))
    finally:
        store.close()


def _grants(logs: list[Path]) -> list[float]:
    """Gate grant times from the workers' ``--exec-log`` lines (``task_id domain granted_at
    owner shop started_at ended_at issued_at``, see ``core.worker.ExecLog``); a line a
    worker is still writing (fewer fields) is not counted yet."""
    out = []
    for log in logs:
        if log.exists():
            out += [float(parts[2]) for parts in map(str.split, log.read_text().splitlines())
                    if len(parts) >= EXEC_LOG_FIELDS]
    return sorted(out)


EXEC_LOG_FIELDS = 8
"""Fields of an ``--exec-log`` line. (It was 4 when this bench was written; the worker's
line grew to 8 and the bench, counting 4-field lines only, waited out its deadline.)"""


def _run(url: str, cfg: Path, work: Path, *, workers: int, n: int, slots: int,
         hold_ms: float, tag: str) -> dict[str, float]:
    """Start ``workers`` processes on a filled queue; wait until ``n`` tasks ran."""
    logs = [work / f"{tag}-{i}.log" for i in range(workers)]
    errs = [work / f"{tag}-{i}.stderr" for i in range(workers)]
    procs = []
    for i, log in enumerate(logs):
        with open(errs[i], "wb") as err:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "core.cli", "worker", "--store", url, "--config",
                 str(cfg), "--executor", "noop", "--hold-ms", str(hold_ms), "--slots",
                 str(slots), "--exec-log", str(log), "--quiet"],
                env={**os.environ, "SHOPFLEET_HOME": str(work / f"home-{tag}-{i}")},
                stdout=subprocess.DEVNULL, stderr=err))
    deadline = time.monotonic() + 900
    try:
        while len(_grants(logs)) < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{tag}: only {len(_grants(logs))} of {n} tasks ran")
            for p, err_path in zip(procs, errs, strict=True):
                if p.poll() is not None:
                    raise RuntimeError(f"{tag}: a worker exited: "
                                       f"{err_path.read_text(errors='replace')}")
            time.sleep(0.2)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
    grants = _grants(logs)[:n]
    span = grants[-1] - grants[0]
    return {"tasks": len(grants), "span_s": span,
            "tasks_per_s": (len(grants) - 1) / span if span > 0 else 0.0}


def main() -> int:
    args = arg_parser(__doc__ or "").parse_args()
    per_worker = 120 if args.quick else 600
    noop_n = 2000 if args.quick else 10000
    with temp_dir("shopfleet-scale-", args.dir) as work, RedisServer() as redis:
        cfg = work / "bench.toml"
        cfg.write_text(CONFIG)
        import redis as redis_py

        client = redis_py.Redis.from_url(redis.url)
        held: dict[int, float] = {}
        for workers in (1, 2, 3):
            client.flushall()
            n = per_worker * workers
            _fill(redis.url, cfg, n)
            note(f"held tasks: {workers} worker(s), {n} tasks")
            r = _run(redis.url, cfg, work, workers=workers, n=n, slots=SLOTS,
                     hold_ms=HOLD_MS, tag=f"held{workers}")
            held[workers] = r["tasks_per_s"]
            emit(BENCH, f"redis_{workers}_workers", "tasks_per_s", r["tasks_per_s"], "tasks/s",
                 workers=workers, slots_per_worker=SLOTS, hold_ms=HOLD_MS, tasks=r["tasks"],
                 span_s=round(r["span_s"], 3),
                 ideal_tasks_per_s=workers * SLOTS * 1000 / HOLD_MS)
        for workers in (2, 3):
            ratio = held[workers] / held[1] if held[1] else 0.0
            emit(BENCH, f"redis_{workers}_vs_1_worker", "ratio", ratio, "x", workers=workers,
                 target=2.7 if workers == 3 else None,
                 met=(ratio >= 2.7) if workers == 3 else None)

        noop: dict[str, float] = {}
        client.flushall()
        _fill(redis.url, cfg, noop_n)
        note(f"no-op: one worker on Redis, {noop_n} tasks")
        r = _run(redis.url, cfg, work, workers=1, n=noop_n, slots=16, hold_ms=0, tag="noop-r")
        noop["redis"] = r["tasks_per_s"]
        emit(BENCH, "redis_1_worker_noop", "tasks_per_s", r["tasks_per_s"], "tasks/s",
             slots=16, tasks=r["tasks"], span_s=round(r["span_s"], 3))
        db = f"sqlite:{work / 'noop.db'}"
        _fill(db, cfg, noop_n)
        note(f"no-op: one worker on SQLite, {noop_n} tasks")
        r = _run(db, cfg, work, workers=1, n=noop_n, slots=16, hold_ms=0, tag="noop-s")
        noop["sqlite"] = r["tasks_per_s"]
        emit(BENCH, "sqlite_1_worker_noop", "tasks_per_s", r["tasks_per_s"], "tasks/s",
             slots=16, tasks=r["tasks"], span_s=round(r["span_s"], 3), synchronous="FULL")
        emit(BENCH, "redis_vs_sqlite_noop", "ratio",
             noop["redis"] / noop["sqlite"] if noop["sqlite"] else 0.0, "x")
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
