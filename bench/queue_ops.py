"""Queue operations: ShopFleet's SQLite store against raw sqlite3, persist-queue and huey.

Measured in one run, on the same disk, every subject in a fresh database file:

1. enqueue/s — ShopFleet ``submit_many`` in batches of 1000 vs raw sqlite3 ``executemany`` in
   one transaction per batch of 1000 vs persist-queue ``SQLiteAckQueue.put`` and huey
   ``SqliteStorage.enqueue`` (neither has a batch API: one commit per task); also raw
   ``executemany`` into ShopFleet's own schema (``raw_sqlite3_shopfleet_schema``), which tells
   the cost of the schema (indexes, event-log triggers) from the cost of the store's code;
2. claim+ack/s, one task at a time, every claim and every ack committed on its own;
3. ShopFleet claim+ack/s with 16 claimer threads (group commit), with operations per commit;
4. claim latency p50/p99 with 1,000,000 tasks queued (``--quick``: 100,000), the claim call
   alone, each claim followed by its ack; time-boxed (90 s, ``--quick`` 6 s) per subject and
   mode, ``n`` says how many claims were timed;
5. RSS growth of a fresh process that queues 1,000,000 tasks through ``submit_many``.

ShopFleet and raw sqlite3 run in ``synchronous=FULL`` and then ``NORMAL`` (WAL both times);
the peers run once, in their own default (durable) configuration, reported in their params.
ShopFleet gets 64 shops with the default ``queue.max_tasks_per_shop = 1``, so 16 claimers always
find an eligible shop. The last lines compare against the targets of the issue
(``ratio_*`` and ``*_vs_target`` metrics, with ``target`` and ``met`` in their params).

Run: ``python bench/queue_ops.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import Stopwatch, arg_parser, emit, note, percentiles, rss_mb, temp_dir

from core.config import Settings
from core.specs import TaskSpec
from core.store import SqliteStore, new_owner_id
from core.store.sqlite.bulk import group_commit_stats, load_rows
from core.store.sqlite.schema import migrate

BENCH = "queue_ops"
SHOPS = 64
BATCH = 1000
THREADS = 16
WARMUP = 100
TASK_TYPE = "collect_data"
BASE_PRIORITY = 3.0
SPEC_JSON = '{"params":{},"flow":"collect_data"}'  # what the store keeps for such a task
MODES = ("FULL", "NORMAL")
_SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


@dataclass(frozen=True)
class Sizes:
    """How much work each measurement does."""

    n: int
    """Tasks enqueued, then claimed and acked one at a time, per subject and mode."""
    concurrent_n: int
    """Claim+ack pairs done by the 16 claimer threads."""
    big: int
    """Tasks queued for the latency measurement."""
    latency_claims: int
    """Timed claims (each followed by its ack) at ``big`` queued, after a warm-up."""
    rss_n: int
    """Tasks queued in the fresh process whose RSS is measured."""
    latency_budget_s: float
    """Time box of one latency run (subject and mode)."""


FULL_SIZES = Sizes(n=20_000, concurrent_n=20_000, big=1_000_000, latency_claims=2_000,
                   rss_n=1_000_000, latency_budget_s=90.0)
QUICK_SIZES = Sizes(n=2_000, concurrent_n=2_000, big=100_000, latency_claims=500,
                    rss_n=100_000, latency_budget_s=6.0)

Results = dict[tuple[str, str, str], float]
"""(subject, metric, mode) -> value, for the target lines at the end."""


# -- ShopFleet ------------------------------------------------------------------------------------


def sf_open(path: Path, mode: str, **queue: Any) -> SqliteStore:
    changes: dict[str, dict[str, Any]] = {"store": {"synchronous": mode}}
    if queue:
        changes["queue"] = queue
    return SqliteStore(path, settings=Settings().with_changes(**changes))


def sf_shops(store: SqliteStore) -> list[int]:
    """64 shops (ids), so that one-task-per-shop never starves the claimers."""
    existing = {s.name: s.id for s in store.shops()}
    ids = []
    for i in range(SHOPS):
        name = f"s{i}"
        if name not in existing:
            existing[name] = store.add_shop(name, platform="pdd",
                                            base_url=f"https://s{i}.example").id
        ids.append(existing[name])
    return ids


def sf_specs() -> list[TaskSpec]:
    """One spec per shop; batches reuse them (specs are frozen), so building costs nothing."""
    return [TaskSpec.model_validate({"type": TASK_TYPE, "shop": f"s{i}", "flow": TASK_TYPE,
                                     "params": {}}) for i in range(SHOPS)]


def sf_rows(shop_ids: list[int], n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"type": TASK_TYPE, "shop_id": shop_ids[i % SHOPS], "base": BASE_PRIORITY,
               "spec": SPEC_JSON}


def sf_enqueue(store: SqliteStore, n: int) -> float:
    specs = sf_specs()
    with Stopwatch() as sw:
        for start in range(0, n, BATCH):
            store.submit_many([specs[i % SHOPS] for i in range(start, min(n, start + BATCH))])
    return n / sw.s


def sf_claim_ack(store: SqliteStore, n: int) -> float:
    owner = new_owner_id()
    with Stopwatch() as sw:
        for _ in range(n):
            task = store.claim(owner)
            if task is None:
                raise RuntimeError("shopfleet: queue ran dry during claim+ack")
            store.ack(task.id, owner)
    return n / sw.s


def sf_concurrent(path: Path, mode: str, n: int) -> tuple[float, float, int]:
    """claim+ack/s with ``THREADS`` claimers; also ops per commit and empty claims."""
    store = sf_open(path, mode)
    try:
        ids = sf_shops(store)
        # Extra tasks so that the last claims still find a task of an idle shop.
        load_rows(store, sf_rows(ids, n + SHOPS * 4))
        lock = threading.Lock()
        left = [n]
        empty = [0]
        errors: list[BaseException] = []
        start = threading.Barrier(THREADS + 1)

        def claimer() -> None:
            owner = new_owner_id()
            start.wait()
            try:
                while True:
                    with lock:
                        if left[0] <= 0:
                            return
                        left[0] -= 1
                    task = store.claim(owner)
                    if task is None:
                        with lock:
                            left[0] += 1
                            empty[0] += 1
                        continue
                    store.ack(task.id, owner)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=claimer, name=f"claimer-{i}")
                   for i in range(THREADS)]
        for t in threads:
            t.start()
        commits0, ops0 = group_commit_stats(store)
        start.wait()
        with Stopwatch() as sw:
            for t in threads:
                t.join()
        commits1, ops1 = group_commit_stats(store)
        if errors:
            raise errors[0]
        return n / sw.s, (ops1 - ops0) / max(1, commits1 - commits0), empty[0]
    finally:
        store.close()


def sf_latency(store: SqliteStore, claims: int, budget_s: float) -> Latency:
    owner = new_owner_id()

    def claim() -> int | None:
        task = store.claim(owner)
        return None if task is None else task.id

    return timed_claims(claim, lambda tid: store.ack(tid, owner), claims, budget_s)


@dataclass(frozen=True)
class Latency:
    """Claim latencies (ms) of one latency run."""

    p50: float
    p99: float
    n: int
    """Claims timed (fewer than asked when the time box ran out)."""
    warmup: int
    time_boxed: bool


def timed_claims(claim: Callable[[], int | None], ack: Callable[[int], None], claims: int,
                 budget_s: float) -> Latency:
    """Time the claim call alone, each claim followed by its ack, after a short warm-up.

    Time-boxed: a slow store stops after ``budget_s`` (with at least 20 timed claims), so one
    pathological subject cannot hold the whole run hostage; ``n`` says how many were timed.
    """
    times: list[float] = []
    warm = 0
    began = time.perf_counter()
    boxed = False
    while len(times) < claims:
        t0 = time.perf_counter()
        tid = claim()
        dt = time.perf_counter() - t0
        if tid is None:
            raise RuntimeError("the queue ran dry during the latency run")
        ack(tid)
        spent = time.perf_counter() - began
        if warm < WARMUP and spent < budget_s * 0.1:
            warm += 1
            continue
        times.append(dt * 1000)
        if spent > budget_s and len(times) >= 20:
            boxed = True
            break
    p50, p99 = percentiles(times, [50, 99])
    return Latency(p50=p50, p99=p99, n=len(times), warmup=warm, time_boxed=boxed)


# -- raw sqlite3 ----------------------------------------------------------------------------------

RAW_SCHEMA = """
CREATE TABLE tasks (
    id          INTEGER PRIMARY KEY,
    type        TEXT NOT NULL,
    shop        TEXT NOT NULL,
    state       TEXT NOT NULL,
    prio        INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    owner       TEXT,
    lease_until REAL,
    payload     TEXT NOT NULL
);
CREATE INDEX tasks_ready ON tasks (prio DESC, id) WHERE state = 'queued';
"""
RAW_INSERT = ("INSERT INTO tasks (type, shop, state, prio, created_at, payload) "
              "VALUES (?, ?, 'queued', ?, ?, ?)")
RAW_CLAIM = ("UPDATE tasks SET state = 'running', owner = ?, lease_until = ? WHERE id = "
             "(SELECT id FROM tasks WHERE state = 'queued' ORDER BY prio DESC, id LIMIT 1) "
             "RETURNING id, payload")
RAW_ACK = ("UPDATE tasks SET state = 'done', owner = NULL, lease_until = NULL "
           "WHERE id = ? AND state = 'running' AND owner = ?")


def raw_open(path: Path, mode: str) -> sqlite3.Connection:
    # Autocommit: every statement is its own transaction, the cheapest durable unit there is.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {mode}")
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tasks'").fetchone():
        conn.executescript(RAW_SCHEMA)
    return conn


def raw_rows(start: int, stop: int) -> list[tuple[Any, ...]]:
    now = time.time()
    # A falling priority key, like the aging key of tasks submitted one after another.
    return [(TASK_TYPE, f"s{i % SHOPS}", 3000 - i, now, SPEC_JSON) for i in range(start, stop)]


def raw_fill(conn: sqlite3.Connection, n: int, batch: int) -> None:
    for start in range(0, n, batch):
        rows = raw_rows(start, min(n, start + batch))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(RAW_INSERT, rows)
        conn.execute("COMMIT")


def raw_enqueue(conn: sqlite3.Connection, n: int) -> float:
    batches = [raw_rows(s, min(n, s + BATCH)) for s in range(0, n, BATCH)]
    with Stopwatch() as sw:
        for rows in batches:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(RAW_INSERT, rows)
            conn.execute("COMMIT")
    return n / sw.s


def raw_same_schema_enqueue(path: Path, mode: str, n: int) -> float:
    """executemany into ShopFleet's own schema (its indexes and event-log triggers), no Python
    layer: what the SQL of a submission costs, to tell it from the cost of the store's code."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {mode}")
        migrate(conn)
        conn.executemany(
            "INSERT INTO shops (name, platform, base_url, domain, created_at) "
            "VALUES (?, 'pdd', ?, ?, 0)",
            [(f"s{i}", f"https://s{i}.example", f"s{i}.example") for i in range(SHOPS)])
        shop_ids = [int(r[0]) for r in conn.execute("SELECT id FROM shops ORDER BY id")]
        now = time.time()
        batches = [[(TASK_TYPE, shop_ids[i % SHOPS], BASE_PRIORITY, -i, now, now, now, 3,
                     SPEC_JSON) for i in range(s, min(n, s + BATCH))]
                   for s in range(0, n, BATCH)]
        with Stopwatch() as sw:
            for rows in batches:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "INSERT INTO tasks (type, shop_id, state, state_reason, base, prio_key, "
                    "created_at, updated_at, not_before, max_attempts, spec) "
                    "VALUES (?, ?, 'queued', 'submitted', ?, ?, ?, ?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
        return n / sw.s
    finally:
        conn.close()


def raw_claim(conn: sqlite3.Connection, owner: str) -> tuple[int, dict[str, Any]] | None:
    rows = conn.execute(RAW_CLAIM, (owner, time.time() + 120.0)).fetchall()
    if not rows:
        return None
    return int(rows[0][0]), json.loads(rows[0][1])


def raw_ack(conn: sqlite3.Connection, task_id: int, owner: str) -> None:
    if conn.execute(RAW_ACK, (task_id, owner)).rowcount != 1:
        raise RuntimeError(f"raw: task {task_id} was not running")


def raw_claim_ack(conn: sqlite3.Connection, n: int) -> float:
    owner = new_owner_id()
    with Stopwatch() as sw:
        for _ in range(n):
            got = raw_claim(conn, owner)
            if got is None:
                raise RuntimeError("raw: queue ran dry during claim+ack")
            raw_ack(conn, got[0], owner)
    return n / sw.s


def raw_latency(conn: sqlite3.Connection, claims: int, budget_s: float) -> Latency:
    owner = new_owner_id()

    def claim() -> int | None:
        got = raw_claim(conn, owner)
        return None if got is None else got[0]

    return timed_claims(claim, lambda tid: raw_ack(conn, tid, owner), claims, budget_s)


# -- peers ----------------------------------------------------------------------------------------


def _sync_name(conn: sqlite3.Connection) -> str:
    value = int(conn.execute("PRAGMA synchronous").fetchone()[0])
    return _SYNC_NAMES.get(value, str(value))


def _journal(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).upper()


def peer_persist_queue(root: Path, n: int, out: Results) -> None:
    from persistqueue import SQLiteAckQueue

    q = SQLiteAckQueue(str(root / "persist-queue"))  # defaults: auto_commit, one connection
    conn: sqlite3.Connection = q._conn  # to report its real durability settings
    params = {"mode": _sync_name(conn), "journal": _journal(conn), "n": n,
              "config": "SQLiteAckQueue defaults (auto_commit=True)"}
    payload = {"type": TASK_TYPE, "shop": "s0", "flow": TASK_TYPE, "params": {}}
    with Stopwatch() as sw:
        for _ in range(n):
            q.put(payload)
    _record(out, "persist-queue", "enqueue_per_s", n / sw.s, "1/s",
            batch=1, api="put (no batch API: one commit per task)", **params)
    with Stopwatch() as sw:
        for _ in range(n):
            item = q.get(block=False, raw=True)
            q.ack(id=item["pqid"])
    _record(out, "persist-queue", "claim_ack_per_s", n / sw.s, "1/s",
            api="get + ack (FIFO, no priority)", **params)
    q.close()


def peer_huey(root: Path, n: int, out: Results) -> None:
    from huey.storage import SqliteStorage

    storage = SqliteStorage(name="bench", filename=str(root / "huey.db"))  # defaults
    params = {"mode": _sync_name(storage.conn), "journal": _journal(storage.conn), "n": n,
              "config": "SqliteStorage defaults (fsync=None: SQLite's default synchronous)"}
    payload = json.dumps({"type": TASK_TYPE, "shop": "s0", "flow": TASK_TYPE,
                          "params": {}}).encode()
    with Stopwatch() as sw:
        for _ in range(n):
            storage.enqueue(payload, priority=BASE_PRIORITY)
    _record(out, "huey", "enqueue_per_s", n / sw.s, "1/s",
            batch=1, api="enqueue (no batch API: one commit per task)", **params)
    with Stopwatch() as sw:
        for _ in range(n):
            if storage.dequeue() is None:
                raise RuntimeError("huey: queue ran dry")
    _record(out, "huey", "claim_ack_per_s", n / sw.s, "1/s",
            api="dequeue (deletes on take: claim and ack are one commit, no lease)", **params)
    storage.close()


# -- RSS in a fresh process -----------------------------------------------------------------------


def rss_child(path: Path, n: int) -> None:
    """Run in a fresh process: queue ``n`` tasks through ``submit_many``; print one JSON."""
    store = sf_open(path, "FULL", max_backlog=max(n * 2, 100_000))
    sf_shops(store)
    specs = sf_specs()
    gc.collect()
    before = rss_mb()
    with Stopwatch() as sw:
        for start in range(0, n, BATCH):
            store.submit_many([specs[i % SHOPS] for i in range(start, min(n, start + BATCH))])
    gc.collect()
    after = rss_mb()
    queued = store.counts()["queued"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    store.close()
    print(json.dumps({"before": before, "after": after, "peak": peak, "queued": queued,
                      "seconds": sw.s}))


def measure_rss(root: Path, n: int, out: Results) -> None:
    proc = subprocess.run(
        [sys.executable, __file__, "--rss-child", str(n), "--rss-db", str(root / "rss.db")],
        capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the RSS process failed:\n{proc.stderr}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    params = {"mode": "FULL", "n": n, "queued": got["queued"], "batch": BATCH,
              "api": "submit_many", "max_backlog": max(n * 2, 100_000),
              "process": "fresh subprocess; before = store open with 64 shops, no tasks"}
    _record(out, "shopfleet", "rss_before_mb", got["before"], "MiB", **params)
    _record(out, "shopfleet", "rss_after_mb", got["after"], "MiB", **params)
    _record(out, "shopfleet", "rss_peak_mb", got["peak"], "MiB", **params)
    _record(out, "shopfleet", "rss_growth_mb", got["after"] - got["before"], "MiB", **params)
    _record(out, "shopfleet", "fill_per_s", n / got["seconds"], "1/s", **params)


# -- the run --------------------------------------------------------------------------------------


def _record(out: Results, subject: str, metric: str, value: float, unit: str,
            **params: Any) -> None:
    emit(BENCH, subject, metric, value, unit, **params)
    out[(subject, metric, str(params.get("mode", "")))] = value


def _timed(what: str, fn: Callable[[], None]) -> None:
    note(f"{what} ...")
    with Stopwatch() as sw:
        fn()
    note(f"{what}: {sw.s:.1f}s")


def run_mode(root: Path, mode: str, sizes: Sizes, out: Results) -> None:
    n = sizes.n

    def shopfleet() -> None:
        store = sf_open(root / f"shopfleet-{mode}.db", mode)
        try:
            sf_shops(store)
            _record(out, "shopfleet", "enqueue_per_s", sf_enqueue(store, n), "1/s",
                    mode=mode, n=n, batch=BATCH, api="submit_many", shops=SHOPS)
            _record(out, "shopfleet", "claim_ack_per_s", sf_claim_ack(store, n), "1/s",
                    mode=mode, n=n, api="claim + ack", shops=SHOPS, max_tasks_per_shop=1)
        finally:
            store.close()

    def raw() -> None:
        conn = raw_open(root / f"raw-{mode}.db", mode)
        try:
            _record(out, "raw_sqlite3", "enqueue_per_s", raw_enqueue(conn, n), "1/s",
                    mode=mode, n=n, batch=BATCH, api="executemany, one transaction a batch")
            _record(out, "raw_sqlite3", "claim_ack_per_s", raw_claim_ack(conn, n), "1/s",
                    mode=mode, n=n, api="UPDATE … RETURNING claim, UPDATE ack, autocommit each")
        finally:
            conn.close()
        rate = raw_same_schema_enqueue(root / f"raw-schema-{mode}.db", mode, n)
        _record(out, "raw_sqlite3_shopfleet_schema", "enqueue_per_s", rate, "1/s", mode=mode,
                n=n, batch=BATCH, api="executemany into ShopFleet's tables, indexes, triggers")

    def concurrent() -> None:
        rate, per_commit, empty = sf_concurrent(root / f"shopfleet-conc-{mode}.db", mode,
                                                sizes.concurrent_n)
        common = {"mode": mode, "n": sizes.concurrent_n, "threads": THREADS, "shops": SHOPS,
                  "max_tasks_per_shop": 1}
        _record(out, "shopfleet", "claim_ack_concurrent_per_s", rate, "1/s",
                empty_claims=empty, **common)
        _record(out, "shopfleet", "ops_per_commit", per_commit, "1", **common)

    _timed(f"shopfleet {mode}", shopfleet)
    _timed(f"raw sqlite3 {mode}", raw)
    _timed(f"shopfleet {THREADS} threads {mode}", concurrent)


def run_latency(root: Path, sizes: Sizes, out: Results) -> None:
    big = sizes.big

    def shopfleet() -> None:
        path = root / "shopfleet-big.db"
        store = sf_open(path, "NORMAL")
        try:
            ids = sf_shops(store)
            load_rows(store, sf_rows(ids, big))
        finally:
            store.close()
        for mode in MODES:
            store = sf_open(path, mode)
            try:
                queued = store.counts()["queued"]
                lat = sf_latency(store, sizes.latency_claims, sizes.latency_budget_s)
            finally:
                store.close()
            params = {"mode": mode, "n": lat.n, "queued": queued, "warmup": lat.warmup,
                      "time_boxed": lat.time_boxed, "shops": SHOPS}
            _record(out, "shopfleet", "claim_p50_ms", lat.p50, "ms", **params)
            _record(out, "shopfleet", "claim_p99_ms", lat.p99, "ms", **params)

    def raw() -> None:
        conn = raw_open(root / "raw-big.db", "NORMAL")
        try:
            raw_fill(conn, big, 10_000)
            for mode in MODES:
                conn.execute(f"PRAGMA synchronous = {mode}")
                queued = conn.execute(
                    "SELECT count(*) FROM tasks WHERE state = 'queued'").fetchone()[0]
                lat = raw_latency(conn, sizes.latency_claims, sizes.latency_budget_s)
                params = {"mode": mode, "n": lat.n, "queued": queued, "warmup": lat.warmup,
                          "time_boxed": lat.time_boxed}
                _record(out, "raw_sqlite3", "claim_p50_ms", lat.p50, "ms", **params)
                _record(out, "raw_sqlite3", "claim_p99_ms", lat.p99, "ms", **params)
        finally:
            conn.close()

    _timed(f"shopfleet latency at {big} queued", shopfleet)
    _timed(f"raw sqlite3 latency at {big} queued", raw)


def _target(metric: str, value: float, unit: str, target: str, met: bool,
            **params: Any) -> None:
    emit(BENCH, "shopfleet", metric, value, unit, target=target, met=met, **params)


def report_targets(out: Results, sizes: Sizes) -> None:
    peers = ("persist-queue", "huey")
    for mode in MODES:
        sf = out[("shopfleet", "claim_ack_per_s", mode)]
        raw = out[("raw_sqlite3", "claim_ack_per_s", mode)]
        _target("ratio_claim_ack_vs_raw", sf / raw, "x", ">= 0.5", sf / raw >= 0.5, mode=mode)
        peer_rates = {p: v for (p, m, _), v in out.items()
                      if p in peers and m == "claim_ack_per_s"}
        best_peer = max(peer_rates, key=lambda p: peer_rates[p])
        ratio = sf / peer_rates[best_peer]
        _target("ratio_claim_ack_vs_best_peer", ratio, "x", ">= 1", ratio >= 1.0, mode=mode,
                best_peer=best_peer, peers_mode="their defaults (see their lines)")
        sf_enq = out[("shopfleet", "enqueue_per_s", mode)]
        raw_enq = out[("raw_sqlite3", "enqueue_per_s", mode)]
        _target("ratio_enqueue_vs_raw", sf_enq / raw_enq, "x", ">= 0.5",
                sf_enq / raw_enq >= 0.5, mode=mode, batch=BATCH)
        same = out[("raw_sqlite3_shopfleet_schema", "enqueue_per_s", mode)]
        emit(BENCH, "shopfleet", "ratio_enqueue_vs_raw_same_schema", sf_enq / same, "x",
             mode=mode, batch=BATCH, note="informational: no target; the SQL of the same schema")
    conc = out[("shopfleet", "claim_ack_concurrent_per_s", "FULL")]
    seq = out[("shopfleet", "claim_ack_per_s", "FULL")]
    _target("ratio_concurrent_vs_sequential", conc / seq, "x", ">= 2", conc / seq >= 2.0,
            mode="FULL", threads=THREADS)
    for mode in MODES:
        p99 = out[("shopfleet", "claim_p99_ms", mode)]
        _target("claim_p99_vs_target_ms", p99, "ms", "< 2", p99 < 2.0, mode=mode,
                queued=sizes.big)
    growth = out[("shopfleet", "rss_growth_mb", "FULL")]
    _target("rss_growth_vs_target_mb", growth, "MiB", "< 50", growth < 50.0, mode="FULL",
            queued=sizes.rss_n)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "queue benchmark")
    parser.add_argument("--rss-child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--rss-db", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        rss_child(Path(args.rss_db), args.rss_child)
        return
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    out: Results = {}
    note(f"queue_ops: sqlite {sqlite3.sqlite_version}, sizes {sizes}")
    with temp_dir("shopfleet-bench-queue-", args.dir) as root:
        note(f"databases in {root}")
        for mode in MODES:
            run_mode(root, mode, sizes, out)
            if mode == "FULL":
                _timed("persist-queue", lambda: peer_persist_queue(root, sizes.n, out))
                _timed("huey", lambda: peer_huey(root, sizes.n, out))
        run_latency(root, sizes, out)
        _timed(f"rss with {sizes.rss_n} queued", lambda: measure_rss(root, sizes.rss_n, out))
    report_targets(out, sizes)


if __name__ == "__main__":
    main()
