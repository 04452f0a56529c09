"""Queue operations: ShopFleet's SQLite store against raw sqlite3 on the same schema and the
peers (persist-queue, huey, Redis), like for like, in both ``synchronous`` modes.

Every subject runs in ``synchronous=FULL`` and then ``NORMAL`` (WAL); Redis runs with
``appendfsync always`` beside FULL and ``everysec`` beside NORMAL. Each ratio compares figures of
one mode. Every figure with a target is measured in ``REPEATS`` interleaved repetitions (the
subjects take turns, in a rotating order, each on a fresh database file), printed as the median
with min, max and n; a ratio is computed per repetition (subjects measured minutes apart on a
loaded machine are not compared) and printed the same way. ``--quick`` figures are indicative:
fewer repetitions, smaller sizes, no met/unmet.

Subjects of claim+ack/s, one task at a time:

- ``shopfleet`` — ``claim`` then ``ack``: two commits a task (the blocking API: a call goes to
  the store's writer thread and waits for its commit);
- ``shopfleet_ack_and_claim`` — ``ack_and_claim``: the ack of a task and the claim of the next
  in one transaction, one commit a task; ``shopfleet_async_ack_and_claim`` the same from an
  asyncio loop through ``AsyncStore`` (the engine's path);
- ``raw_sqlite3`` — plain ``sqlite3`` on ShopFleet's own schema and logical work: the best
  queued task in priority order (``band, prio_key, id`` through the claim index), a lease
  (owner, expiry, attempt), the event-log and state-count rows its triggers write, the spec
  decoded; the ack checks the lease. Autocommit: each statement its own commit (two a task);
  ``raw_sqlite3_ack_and_claim`` runs the ack and the next claim in one transaction. Raw gets
  ShopFleet's checkpoint arrangement (a background PASSIVE checkpoint every 0.5 s), so the
  ratio compares code, not where checkpoints run;
- ``persist-queue`` — ``SQLiteAckQueue`` ``get`` + ``ack``, the like-for-like peer (a lease of
  sorts: an unacked state that a restart resumes), two commits a task, FIFO, no event log;
- ``huey`` — ``SqliteStorage.dequeue``: deletes on take, one commit, no lease, no history;
- ``redis`` — a private ``redis-server``; claim and ack are Lua scripts over the same logical
  work (priority sorted set, lease sorted set, task hash, an event list per task), one fsync
  each with ``appendfsync always``.

enqueue/s in batches of 1,000: ShopFleet ``submit_many`` (validated specs in) against raw
``executemany`` into ShopFleet's own schema, one transaction a batch, from the same task
fields (shop lookup, payload JSON and priority key built inside the timing, as any caller
must); ``raw_sqlite3_prebuilt`` times the SQL alone (rows built beforehand, informational).
Redis gets one script call per batch; persist-queue and huey have no batch API (one commit a
task, said on their lines).

Also: pages written per claim+ack (WAL frames per task, by b-tree through ``dbstat``), claim+ack
with 16 claimer threads (group commit), claim latency p50/p99 with 1,000,000 tasks queued
(chunks of ShopFleet and raw sqlite3 alternating), and the RSS growth of a fresh process that
queues 1,000,000 tasks through ``submit_many``.

Run: ``python bench/queue_ops.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import sqlite3
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
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

from core.config import Settings
from core.priority import index_key, static_points
from core.specs import TaskSpec
from core.store import AsyncStore, SqliteStore, new_owner_id
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
LEASE_S = 120.0
_SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
_REDIS_FSYNC = {"FULL": "always", "NORMAL": "everysec"}


@dataclass(frozen=True)
class Sizes:
    """How much work each measurement does."""

    repeats: int
    n: int
    """Tasks claimed and acked one at a time, per subject, mode and repetition."""
    enqueue_n: int
    """Tasks enqueued in batches of 1,000 per subject, mode and repetition."""
    peer_enqueue_n: int
    """Tasks enqueued one commit each by the peers without a batch API."""
    concurrent_n: int
    """Claim+ack pairs done by the 16 claimer threads."""
    big: int
    """Tasks queued for the latency measurement."""
    latency_claims: int
    """Timed claims (each followed by its ack) per subject, mode and repetition."""
    rss_n: int
    """Tasks queued in the fresh process whose RSS is measured."""
    rss_repeats: int


FULL_SIZES = Sizes(repeats=REPEATS, n=3000, enqueue_n=10_000, peer_enqueue_n=1000,
                   concurrent_n=5000, big=1_000_000, latency_claims=400, rss_n=1_000_000,
                   rss_repeats=REPEATS)
QUICK_SIZES = Sizes(repeats=3, n=400, enqueue_n=2000, peer_enqueue_n=300, concurrent_n=1000,
                    big=100_000, latency_claims=150, rss_n=100_000, rss_repeats=1)

Samples = dict[tuple[str, str, str], list[float]]
"""(subject, metric, mode) -> one value per repetition."""


def _add(out: Samples, subject: str, metric: str, mode: str, value: float) -> None:
    out.setdefault((subject, metric, mode), []).append(value)


def _fmt(rate: float) -> str:
    return f"{rate:,.0f}"


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


def sf_rows(shop_ids: list[int], n: int) -> Any:
    for i in range(n):
        yield {"type": TASK_TYPE, "shop_id": shop_ids[i % SHOPS], "base": BASE_PRIORITY,
               "spec": SPEC_JSON}


def sf_filled(path: Path, mode: str, n: int) -> SqliteStore:
    store = sf_open(path, mode)
    load_rows(store, sf_rows(sf_shops(store), n))
    return store


def sf_enqueue(path: Path, mode: str, n: int) -> float:
    store = sf_open(path, mode)
    try:
        sf_shops(store)
        specs = sf_specs()
        batches = [[specs[i % SHOPS] for i in range(s, min(n, s + BATCH))]
                   for s in range(0, n, BATCH)]
        with Stopwatch() as sw:
            for batch in batches:
                store.submit_many(batch)
        return n / sw.s
    finally:
        store.close()


def sf_claim_ack(path: Path, mode: str, n: int) -> float:
    store = sf_filled(path, mode, n + 1)
    try:
        owner = new_owner_id()
        with Stopwatch() as sw:
            for _ in range(n):
                task = store.claim(owner)
                if task is None:
                    raise RuntimeError("shopfleet: queue ran dry during claim+ack")
                store.ack(task.id, owner)
        return n / sw.s
    finally:
        store.close()


def sf_ack_and_claim(path: Path, mode: str, n: int) -> float:
    """n tasks done: the first claim is timed alone, then every ack carries the next claim."""
    store = sf_filled(path, mode, n + 1)
    try:
        owner = new_owner_id()
        with Stopwatch() as sw:
            task = store.claim(owner)
            for _ in range(n - 1):
                if task is None:
                    raise RuntimeError("shopfleet: queue ran dry during ack_and_claim")
                task = store.ack_and_claim(task.id, owner)
            assert task is not None
            store.ack(task.id, owner)
        return n / sw.s
    finally:
        store.close()


def sf_async_ack_and_claim(path: Path, mode: str, n: int) -> float:
    """The same through :class:`AsyncStore` on an asyncio loop (the engine's path)."""
    store = sf_filled(path, mode, n + 1)

    async def run() -> float:
        astore = AsyncStore(store)
        owner = new_owner_id()
        with Stopwatch() as sw:
            task = await astore.claim(owner)
            for _ in range(n - 1):
                if task is None:
                    raise RuntimeError("shopfleet: queue ran dry during ack_and_claim")
                task = await astore.ack_and_claim(task.id, owner)
            assert task is not None
            await astore.ack(task.id, owner)
        return n / sw.s

    try:
        return asyncio.run(run())
    finally:
        store.close()


def sf_concurrent(path: Path, mode: str, n: int) -> tuple[float, float, int]:
    """claim+ack/s with ``THREADS`` claimers; also ops per commit and empty claims."""
    store = sf_filled(path, mode, n + SHOPS * 4)  # the last claims still find an idle shop
    try:
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


# -- raw sqlite3 on ShopFleet's own schema --------------------------------------------------------

RAW_INSERT = (
    "INSERT INTO tasks (type, shop_id, state, state_reason, base, prio_key, created_at, "
    "updated_at, not_before, queued_at, max_attempts, spec) "
    "VALUES (?, ?, 'queued', 'submitted', ?, ?, ?, ?, ?, ?, 3, ?)")
RAW_CLAIM = (
    "UPDATE tasks SET state = 'running', state_reason = 'claimed', lease_owner = ?, "
    "lease_until = ?, attempts = attempts + 1, started_at = ?, updated_at = ? "
    "WHERE id = (SELECT id FROM tasks INDEXED BY tasks_ready WHERE state = 'queued' "
    "ORDER BY band DESC, prio_key DESC, id LIMIT 1) "
    "RETURNING id, shop_id, attempts, spec")
RAW_ACK = (
    "UPDATE tasks SET state = 'done', state_reason = 'finished', finished_at = ?, "
    "updated_at = ?, lease_owner = NULL, lease_until = NULL "
    "WHERE id = ? AND state = 'running' AND lease_owner = ?")
_RAW_KEY_STATIC = static_points(base=BASE_PRIORITY, urgency=0.0, attempts=0, bump=0.0,
                                retry_bonus=Settings().priority.retry_bonus)
_RAW_AGING_PER_S = Settings().priority.aging_per_min / 60.0


class RawCheckpointer:
    """ShopFleet's checkpoint arrangement for raw sqlite3 too (a PASSIVE checkpoint every
    0.5 s on its own thread and connection, the commit path's auto-checkpoint only as a
    backstop at 10,000 pages): the comparison is then the code, not where checkpoints run."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="raw-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None)
        try:
            while not self._stop.wait(0.5):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


class RawConnection(sqlite3.Connection):
    """A plain connection that stops its checkpointer when closed."""

    checkpointer: RawCheckpointer | None = None

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
            self.checkpointer = None
        super().close()


def raw_open(path: Path, mode: str, *, checkpoints: bool = True
             ) -> tuple[RawConnection, dict[str, int]]:
    """ShopFleet's schema (its migrations: tables, indexes, triggers) and 64 shops, through
    plain ``sqlite3`` in autocommit mode; returns the connection and the shop ids by name.
    ``checkpoints=False``: no checkpoint at all (counting WAL frames)."""
    conn = sqlite3.connect(path, isolation_level=None, factory=RawConnection)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {mode}")
    if checkpoints:
        conn.execute("PRAGMA wal_autocheckpoint = 10000")
        conn.checkpointer = RawCheckpointer(path)
    else:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    migrate(conn)
    if not conn.execute("SELECT 1 FROM shops").fetchone():
        conn.executemany(
            "INSERT INTO shops (name, platform, base_url, domain, created_at) "
            "VALUES (?, 'pdd', ?, ?, 0)",
            [(f"s{i}", f"https://s{i}.example", f"s{i}.example") for i in range(SHOPS)])
    return conn, {str(r[0]): int(r[1]) for r in conn.execute("SELECT name, id FROM shops")}


def raw_rows(tasks: list[dict[str, Any]], shops: dict[str, int]) -> list[tuple[Any, ...]]:
    """Rows from task fields, as any caller of raw SQL must build them: the shop's id, the
    priority key (per task: a batch may mix priorities) and the payload's JSON."""
    now = time.time()
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    return [(t["type"], shops[t["shop"]], BASE_PRIORITY,
             index_key(_RAW_KEY_STATIC, now, _RAW_AGING_PER_S), now, now, now, now,
             dumps({"params": t["params"], "flow": t["flow"]})) for t in tasks]


def raw_tasks(n: int) -> list[dict[str, Any]]:
    return [{"type": TASK_TYPE, "shop": f"s{i % SHOPS}", "flow": TASK_TYPE, "params": {}}
            for i in range(n)]


def raw_fill(conn: sqlite3.Connection, shops: dict[str, int], n: int, batch: int) -> None:
    for start in range(0, n, batch):
        rows = raw_rows(raw_tasks(min(n, start + batch) - start), shops)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(RAW_INSERT, rows)
        conn.execute("COMMIT")


def raw_enqueue(path: Path, mode: str, n: int, *, prebuilt: bool) -> float:
    conn, shops = raw_open(path, mode)
    try:
        tasks = [raw_tasks(min(n, s + BATCH) - s) for s in range(0, n, BATCH)]
        built = [raw_rows(t, shops) for t in tasks] if prebuilt else []
        with Stopwatch() as sw:
            for i, batch in enumerate(tasks):
                rows = built[i] if prebuilt else raw_rows(batch, shops)
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(RAW_INSERT, rows)
                conn.execute("COMMIT")
        return n / sw.s
    finally:
        conn.close()


def raw_claim(conn: sqlite3.Connection, owner: str) -> tuple[int, dict[str, Any]] | None:
    now = time.time()
    rows = conn.execute(RAW_CLAIM, (owner, now + LEASE_S, now, now)).fetchall()
    if not rows:
        return None
    return int(rows[0][0]), json.loads(rows[0][3])


def raw_ack(conn: sqlite3.Connection, task_id: int, owner: str) -> None:
    now = time.time()
    if conn.execute(RAW_ACK, (now, now, task_id, owner)).rowcount != 1:
        raise RuntimeError(f"raw: task {task_id} was not running")


def raw_filled(path: Path, mode: str, n: int, *, checkpoints: bool = True
               ) -> RawConnection:
    conn, shops = raw_open(path, mode, checkpoints=checkpoints)
    raw_fill(conn, shops, n, 10_000)
    return conn


def raw_claim_ack(path: Path, mode: str, n: int) -> float:
    conn = raw_filled(path, mode, n + 1)
    try:
        owner = new_owner_id()
        with Stopwatch() as sw:
            for _ in range(n):
                got = raw_claim(conn, owner)
                if got is None:
                    raise RuntimeError("raw: queue ran dry during claim+ack")
                raw_ack(conn, got[0], owner)
        return n / sw.s
    finally:
        conn.close()


def raw_ack_and_claim(path: Path, mode: str, n: int) -> float:
    conn = raw_filled(path, mode, n + 1)
    try:
        owner = new_owner_id()
        with Stopwatch() as sw:
            got = raw_claim(conn, owner)
            for _ in range(n - 1):
                if got is None:
                    raise RuntimeError("raw: queue ran dry during ack+claim")
                conn.execute("BEGIN IMMEDIATE")
                raw_ack(conn, got[0], owner)
                got = raw_claim(conn, owner)
                conn.execute("COMMIT")
            assert got is not None
            raw_ack(conn, got[0], owner)
        return n / sw.s
    finally:
        conn.close()


# -- peers ----------------------------------------------------------------------------------------


def _sync_name(conn: sqlite3.Connection) -> str:
    value = int(conn.execute("PRAGMA synchronous").fetchone()[0])
    return _SYNC_NAMES.get(value, str(value))


def _journal(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).upper()


PAYLOAD = {"type": TASK_TYPE, "shop": "s0", "flow": TASK_TYPE, "params": {}}


def pq_open(root: Path, mode: str) -> Any:
    from persistqueue import SQLiteAckQueue

    q = SQLiteAckQueue(str(root))  # defaults: auto_commit, one connection
    q._conn.execute(f"PRAGMA synchronous = {mode}")
    assert _sync_name(q._conn) == mode and _journal(q._conn) == "WAL"
    return q


def pq_enqueue(root: Path, mode: str, n: int) -> float:
    q = pq_open(root, mode)
    try:
        with Stopwatch() as sw:
            for _ in range(n):
                q.put(PAYLOAD)
        return n / sw.s
    finally:
        q.close()


def pq_claim_ack(root: Path, mode: str, n: int) -> float:
    q = pq_open(root, mode)
    try:
        for _ in range(n):
            q.put(PAYLOAD)
        with Stopwatch() as sw:
            for _ in range(n):
                item = q.get(block=False, raw=True)
                q.ack(id=item["pqid"])
        return n / sw.s
    finally:
        q.close()


def huey_open(path: Path, mode: str) -> Any:
    from huey.storage import SqliteStorage

    storage = SqliteStorage(name="bench", filename=str(path))  # WAL, its defaults
    storage.conn.execute(f"PRAGMA synchronous = {mode}")
    assert _sync_name(storage.conn) == mode and _journal(storage.conn) == "WAL"
    return storage


def huey_enqueue(path: Path, mode: str, n: int) -> float:
    storage = huey_open(path, mode)
    data = json.dumps(PAYLOAD).encode()
    try:
        with Stopwatch() as sw:
            for _ in range(n):
                storage.enqueue(data, priority=BASE_PRIORITY)
        return n / sw.s
    finally:
        storage.close()


def huey_claim_ack(path: Path, mode: str, n: int) -> float:
    storage = huey_open(path, mode)
    data = json.dumps(PAYLOAD).encode()
    try:
        for _ in range(n):
            storage.enqueue(data, priority=BASE_PRIORITY)
        with Stopwatch() as sw:
            for _ in range(n):
                if storage.dequeue() is None:
                    raise RuntimeError("huey: queue ran dry")
        return n / sw.s
    finally:
        storage.close()


# Redis: the same logical work as ShopFleet's claim and ack, one script each.
_REDIS_ENQUEUE = """
local now = ARGV[1]
for i = 2, #ARGV, 2 do
  local id = redis.call('INCR', 'seq')
  redis.call('HSET', 'task:' .. id, 'spec', ARGV[i + 1], 'state', 'queued', 'attempts', 0)
  redis.call('ZADD', 'ready', ARGV[i], id)
  redis.call('RPUSH', 'events:' .. id, now .. ' >queued submitted')
end
return #ARGV / 2
"""
_REDIS_CLAIM = """
local top = redis.call('ZPOPMAX', 'ready')
if #top == 0 then return false end
local id = top[1]
redis.call('HSET', 'task:' .. id, 'state', 'running', 'owner', ARGV[1], 'lease_until', ARGV[2])
redis.call('HINCRBY', 'task:' .. id, 'attempts', 1)
redis.call('ZADD', 'leases', ARGV[2], id)
redis.call('RPUSH', 'events:' .. id, ARGV[3] .. ' queued>running claimed')
return {id, redis.call('HGET', 'task:' .. id, 'spec')}
"""
_REDIS_ACK = """
local k = 'task:' .. KEYS[1]
if redis.call('HGET', k, 'state') ~= 'running' or redis.call('HGET', k, 'owner') ~= ARGV[1]
then return redis.error_reply('lease lost') end
redis.call('HSET', k, 'state', 'done', 'finished_at', ARGV[2])
redis.call('HDEL', k, 'owner', 'lease_until')
redis.call('ZREM', 'leases', KEYS[1])
redis.call('RPUSH', 'events:' .. KEYS[1], ARGV[2] .. ' running>done finished')
return 1
"""


class RedisPeer:
    """A private durable ``redis-server`` (append-only file) and the three scripts."""

    def __init__(self) -> None:
        import redis

        from core.testing.redis_server import RedisServer

        self.server = RedisServer(durable=True).start()
        self.r = redis.Redis.from_url(self.server.url)
        self.enqueue = self.r.register_script(_REDIS_ENQUEUE)
        self.claim = self.r.register_script(_REDIS_CLAIM)
        self.ack = self.r.register_script(_REDIS_ACK)

    def reset(self, mode: str) -> dict[str, Any]:
        self.r.flushall()
        self.r.config_set("appendfsync", _REDIS_FSYNC[mode])
        return {"appendonly": self.r.config_get("appendonly")["appendonly"],
                "appendfsync": self.r.config_get("appendfsync")["appendfsync"]}

    def fill(self, n: int) -> None:
        key = index_key(_RAW_KEY_STATIC, time.time(), _RAW_AGING_PER_S)
        for s in range(0, n, BATCH):
            args: list[Any] = [repr(time.time())]
            for _ in range(min(n, s + BATCH) - s):
                args += [key, SPEC_JSON]
            self.enqueue(args=args)

    def enqueue_rate(self, n: int) -> float:
        tasks = [raw_tasks(min(n, s + BATCH) - s) for s in range(0, n, BATCH)]
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        with Stopwatch() as sw:
            for batch in tasks:
                key = index_key(_RAW_KEY_STATIC, time.time(), _RAW_AGING_PER_S)
                args: list[Any] = [repr(time.time())]
                for t in batch:
                    args += [key, dumps({"params": t["params"], "flow": t["flow"]})]
                self.enqueue(args=args)
        return n / sw.s

    def claim_ack_rate(self, n: int) -> float:
        self.fill(n)
        owner = new_owner_id()
        with Stopwatch() as sw:
            for _ in range(n):
                now = time.time()
                got = self.claim(args=[owner, repr(now + LEASE_S), repr(now)])
                if not got:
                    raise RuntimeError("redis: queue ran dry")
                json.loads(got[1])
                self.ack(keys=[got[0]], args=[owner, repr(time.time())])
        return n / sw.s

    def close(self) -> None:
        self.r.close()
        self.server.close()


# -- pages written per claim+ack ------------------------------------------------------------------


def wal_pages(path: Path) -> tuple[list[int], int]:
    """Page numbers of the frames in ``path``'s WAL (in order) and how many commits."""
    data = Path(f"{path}-wal").read_bytes()
    if len(data) < 32:
        return [], 0
    page_size = struct.unpack(">I", data[8:12])[0]
    pages, commits, off = [], 0, 32
    while off + 24 <= len(data):
        page, size_after = struct.unpack(">II", data[off:off + 8])
        pages.append(page)
        commits += size_after != 0
        off += 24 + page_size
    return pages, commits


def btree_of_page(path: Path) -> dict[int, str]:
    conn = sqlite3.connect(path)
    try:
        return {int(p): str(n) for n, p in conn.execute("SELECT name, pageno FROM dbstat")}
    finally:
        conn.close()


def truncate_wal(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise RuntimeError("could not empty the WAL before counting pages")
    finally:
        conn.close()


def count_pages(path: Path, tasks: int, run: Callable[[], None]) -> tuple[float, float,
                                                                        dict[str, float]]:
    """Run ``run`` (which finishes ``tasks`` tasks) with the WAL emptied first and never
    checkpointed during it; (pages per task, commits per task, pages per task by b-tree)."""
    truncate_wal(path)
    run()
    pages, commits = wal_pages(path)
    names = btree_of_page(path)
    per = Counter(names.get(p, "(free list)") for p in pages)
    return (len(pages) / tasks, commits / tasks,
            {k: round(v / tasks, 2) for k, v in per.most_common()})


def _sf_pages(path: Path, together: bool, k: int) -> tuple[float, float, dict[str, float]]:
    store = sf_filled(path, "NORMAL", 20_000)
    try:
        # No checkpoint may reset the WAL while frames are counted.
        assert store._checkpointer is not None
        store._checkpointer.close()
        store._call(lambda c: c.execute("PRAGMA wal_autocheckpoint = 0").fetchall())
        owner = new_owner_id()
        first = store.claim(owner)
        assert first is not None
        held = [first.id]

        def run() -> None:
            for _ in range(k):
                if together:
                    task = store.ack_and_claim(held[0], owner)
                else:
                    store.ack(held[0], owner)
                    task = store.claim(owner)
                assert task is not None
                held[0] = task.id

        return count_pages(path, k, run)
    finally:
        store.close()


def _raw_pages(path: Path, together: bool, k: int) -> tuple[float, float, dict[str, float]]:
    conn = raw_filled(path, "NORMAL", 20_000, checkpoints=False)
    try:
        owner = new_owner_id()
        got = raw_claim(conn, owner)
        assert got is not None
        held = [got[0]]

        def run() -> None:
            for _ in range(k):
                if together:
                    conn.execute("BEGIN IMMEDIATE")
                raw_ack(conn, held[0], owner)
                nxt = raw_claim(conn, owner)
                if together:
                    conn.execute("COMMIT")
                assert nxt is not None
                held[0] = nxt[0]

        return count_pages(path, k, run)
    finally:
        conn.close()


def measure_pages(root: Path) -> None:
    """WAL frames per finished task for ShopFleet's two paths and raw sqlite3's two, on the
    same schema with 20,000 queued: what the commits write, b-tree by b-tree."""
    k = 300
    for subject, fn, together in (("shopfleet", _sf_pages, False),
                                  ("shopfleet_ack_and_claim", _sf_pages, True),
                                  ("raw_sqlite3", _raw_pages, False),
                                  ("raw_sqlite3_ack_and_claim", _raw_pages, True)):
        per_task, commits, by_tree = fn(root / f"pages-{subject}.db", together, k)
        emit(BENCH, subject, "pages_per_claim_ack", per_task, "pages", mode="NORMAL",
             tasks=k, commits_per_task=round(commits, 2), queued=20_000, by_btree=by_tree)


# -- latency at 1M queued -------------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    p50: float
    p99: float
    n: int


def timed_claims(claim: Callable[[], int | None], ack: Callable[[int], None],
                 claims: int) -> Latency:
    """Time the claim call alone, each claim followed by its ack."""
    times: list[float] = []
    for _ in range(claims):
        t0 = time.perf_counter()
        tid = claim()
        dt = time.perf_counter() - t0
        if tid is None:
            raise RuntimeError("the queue ran dry during the latency run")
        ack(tid)
        times.append(dt * 1000)
    p50, p99 = percentiles(times, [50, 99])
    return Latency(p50=p50, p99=p99, n=len(times))


def _latency_chunks(store: SqliteStore, conn: sqlite3.Connection, mode: str, sizes: Sizes,
                    out: Samples) -> int:
    owner = new_owner_id()

    def sf_claim() -> int | None:
        task = store.claim(owner)
        return None if task is None else task.id

    def sf_ack(task_id: int) -> None:
        store.ack(task_id, owner)

    def rw_claim() -> int | None:
        got = raw_claim(conn, owner)
        return None if got is None else got[0]

    def rw_ack(task_id: int) -> None:
        raw_ack(conn, task_id, owner)

    timed_claims(sf_claim, sf_ack, WARMUP)
    timed_claims(rw_claim, rw_ack, WARMUP)
    pair = [("shopfleet", sf_claim, sf_ack), ("raw_sqlite3", rw_claim, rw_ack)]
    for rep in range(sizes.repeats):
        for subject, claim, ack in (pair if rep % 2 == 0 else pair[::-1]):
            lat = timed_claims(claim, ack, sizes.latency_claims)
            _add(out, subject, "claim_p50_ms", mode, lat.p50)
            _add(out, subject, "claim_p99_ms", mode, lat.p99)
    return int(store.counts()["queued"])


def run_latency(root: Path, sizes: Sizes, out: Samples) -> None:
    """Claim latency at ``big`` queued: ShopFleet and raw sqlite3 (its own schema) in
    alternating chunks, ``repeats`` chunks each per mode, after a warm-up."""
    big = sizes.big
    sf_path = root / "shopfleet-big.db"
    store = sf_filled(sf_path, "NORMAL", big)
    store.close()
    conn, shops = raw_open(root / "raw-big.db", "NORMAL")
    raw_fill(conn, shops, big, 10_000)
    try:
        for mode in MODES:
            conn.execute(f"PRAGMA synchronous = {mode}")
            store = sf_open(sf_path, mode)
            try:
                queued = _latency_chunks(store, conn, mode, sizes, out)
            finally:
                store.close()
            for subject in ("shopfleet", "raw_sqlite3"):
                for metric in ("claim_p50_ms", "claim_p99_ms"):
                    emit_summary(BENCH, subject, metric, out[(subject, metric, mode)], "ms",
                                 quick=QUICK[0], mode=mode, queued=queued,
                                 claims_per_repetition=sizes.latency_claims,
                                 schema="ShopFleet's")
    finally:
        conn.close()


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


def measure_rss(root: Path, sizes: Sizes, out: Samples) -> None:
    n = sizes.rss_n
    got: dict[str, Any] = {}
    for rep in range(sizes.rss_repeats):
        db = root / f"rss-{rep}.db"
        proc = subprocess.run(
            [sys.executable, __file__, "--rss-child", str(n), "--rss-db", str(db)],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"the RSS process failed:\n{proc.stderr}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        _add(out, "shopfleet", "rss_growth_mb", "FULL", got["after"] - got["before"])
        _add(out, "shopfleet", "rss_peak_mb", "FULL", got["peak"])
        _add(out, "shopfleet", "fill_per_s", "FULL", n / got["seconds"])
        for f in root.glob(f"rss-{rep}.db*"):
            f.unlink()
    params = {"mode": "FULL", "queued": got["queued"], "batch": BATCH, "api": "submit_many",
              "process": "fresh subprocess; growth = after − store open with 64 shops"}
    emit_summary(BENCH, "shopfleet", "rss_growth_mb", out[("shopfleet", "rss_growth_mb",
                                                            "FULL")], "MiB", quick=QUICK[0],
                 **params)
    emit_summary(BENCH, "shopfleet", "rss_peak_mb", out[("shopfleet", "rss_peak_mb", "FULL")],
                 "MiB", quick=QUICK[0], **params)
    emit_summary(BENCH, "shopfleet", "fill_per_s", out[("shopfleet", "fill_per_s", "FULL")],
                 "1/s", quick=QUICK[0], **params)


# -- the interleaved repetitions ------------------------------------------------------------------

QUICK = [False]

CLAIM_SUBJECTS: dict[str, tuple[str, int]] = {
    # subject: (what it does, commits per task)
    "shopfleet": ("claim + ack (blocking API, writer thread)", 2),
    "shopfleet_ack_and_claim": ("ack_and_claim: ack and next claim in one transaction", 1),
    "shopfleet_async_ack_and_claim": ("AsyncStore.ack_and_claim on an asyncio loop", 1),
    "raw_sqlite3": ("ShopFleet's schema: priority claim with lease + ack, event-log and "
                    "state-count rows by its triggers; autocommit each", 2),
    "raw_sqlite3_ack_and_claim": ("as raw_sqlite3, the ack and the next claim in one "
                                  "transaction", 1),
    "persist-queue": ("the like-for-like peer: SQLiteAckQueue get + ack (an unacked state "
                      "a restart resumes), FIFO, no priority, no event log", 2),
    "huey": ("SqliteStorage.dequeue: deletes on take, no lease, no history", 1),
    "redis": ("Lua claim (priority zset, lease zset, task hash, event list) + Lua ack", 2),
}
PEERS = ("persist-queue", "huey", "redis")


def claim_rate(subject: str, root: Path, mode: str, n: int, rep: int,
               redis_peer: RedisPeer | None) -> float:
    path = root / f"{subject}-{mode}-{rep}.db"
    if subject == "shopfleet":
        return sf_claim_ack(path, mode, n)
    if subject == "shopfleet_ack_and_claim":
        return sf_ack_and_claim(path, mode, n)
    if subject == "shopfleet_async_ack_and_claim":
        return sf_async_ack_and_claim(path, mode, n)
    if subject == "raw_sqlite3":
        return raw_claim_ack(path, mode, n)
    if subject == "raw_sqlite3_ack_and_claim":
        return raw_ack_and_claim(path, mode, n)
    if subject == "persist-queue":
        return pq_claim_ack(root / f"pq-{mode}-{rep}", mode, n)
    if subject == "huey":
        return huey_claim_ack(path, mode, n)
    assert redis_peer is not None
    redis_peer.reset(mode)
    return redis_peer.claim_ack_rate(n)


ENQUEUE_SUBJECTS: dict[str, str] = {
    "shopfleet": "submit_many of validated TaskSpecs, batches of 1,000",
    "raw_sqlite3": "executemany into ShopFleet's schema, one transaction a batch; rows built "
                   "from the task fields in the timing (shop id, payload JSON, priority key)",
    "raw_sqlite3_prebuilt": "the same SQL with the rows built before the timing (SQL alone)",
    "redis": "one Lua script call a batch of 1,000 (one fsync)",
    "persist-queue": "put: no batch API, one commit a task",
    "huey": "enqueue: no batch API, one commit a task",
}


def enqueue_rate(subject: str, root: Path, mode: str, sizes: Sizes, rep: int,
                 redis_peer: RedisPeer | None) -> float:
    path = root / f"enq-{subject}-{mode}-{rep}.db"
    n = sizes.enqueue_n
    if subject == "shopfleet":
        return sf_enqueue(path, mode, n)
    if subject == "raw_sqlite3":
        return raw_enqueue(path, mode, n, prebuilt=False)
    if subject == "raw_sqlite3_prebuilt":
        return raw_enqueue(path, mode, n, prebuilt=True)
    if subject == "persist-queue":
        return pq_enqueue(root / f"enq-pq-{mode}-{rep}", mode, sizes.peer_enqueue_n)
    if subject == "huey":
        return huey_enqueue(path, mode, sizes.peer_enqueue_n)
    assert redis_peer is not None
    redis_peer.reset(mode)
    return redis_peer.enqueue_rate(n)


def _clean(root: Path) -> None:
    """Drop the files of a finished repetition (the disk stays small and warm alike)."""
    import shutil

    for p in root.iterdir():
        if p.name.startswith(("pages-", "shopfleet-big", "raw-big")):
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def run_repetitions(root: Path, sizes: Sizes, out: Samples, redis_peer: RedisPeer | None
                    ) -> None:
    claim_subjects = [s for s in CLAIM_SUBJECTS if s != "redis" or redis_peer is not None]
    enq_subjects = [s for s in ENQUEUE_SUBJECTS if s != "redis" or redis_peer is not None]
    for mode in MODES:
        for rep in range(sizes.repeats):
            # A rotating order: no subject always runs first (cold) or last (warm).
            shift = rep % len(claim_subjects)
            order = claim_subjects[shift:] + claim_subjects[:shift]
            with Stopwatch() as sw:
                for subject in order:
                    rate = claim_rate(subject, root, mode, sizes.n, rep, redis_peer)
                    _add(out, subject, "claim_ack_per_s", mode, rate)
                shift = rep % len(enq_subjects)
                for subject in enq_subjects[shift:] + enq_subjects[:shift]:
                    rate = enqueue_rate(subject, root, mode, sizes, rep, redis_peer)
                    _add(out, subject, "enqueue_per_s", mode, rate)
                rate, per_commit, empty = sf_concurrent(
                    root / f"conc-{mode}-{rep}.db", mode, sizes.concurrent_n)
                _add(out, "shopfleet", "claim_ack_concurrent_per_s", mode, rate)
                _add(out, "shopfleet", "ops_per_commit", mode, per_commit)
                _add(out, "shopfleet", "empty_claims", mode, empty)
            _clean(root)
            line = ", ".join(f"{s} {_fmt(out[(s, 'claim_ack_per_s', mode)][-1])}"
                             for s in claim_subjects)
            note(f"{mode} repetition {rep + 1}/{sizes.repeats} ({sw.s:.0f}s): claim+ack/s "
                 f"{line}")


def report(out: Samples, sizes: Sizes, redis_params: dict[str, dict[str, Any]]) -> None:
    quick = QUICK[0]
    for mode in MODES:
        for subject, (what, commits) in CLAIM_SUBJECTS.items():
            key = (subject, "claim_ack_per_s", mode)
            if key not in out:
                continue
            extra = redis_params.get(mode, {}) if subject == "redis" else {}
            emit_summary(BENCH, subject, "claim_ack_per_s", out[key], "1/s", quick=quick,
                         mode=mode, tasks=sizes.n, api=what, commits_per_task=commits,
                         **extra)
        for subject, what in ENQUEUE_SUBJECTS.items():
            key = (subject, "enqueue_per_s", mode)
            if key not in out:
                continue
            extra = redis_params.get(mode, {}) if subject == "redis" else {}
            n = sizes.peer_enqueue_n if subject in ("persist-queue", "huey") else sizes.enqueue_n
            emit_summary(BENCH, subject, "enqueue_per_s", out[key], "1/s", quick=quick,
                         mode=mode, tasks=n, api=what, **extra)
        common = {"mode": mode, "tasks": sizes.concurrent_n, "threads": THREADS, "shops": SHOPS,
                  "max_tasks_per_shop": 1}
        emit_summary(BENCH, "shopfleet", "claim_ack_concurrent_per_s",
                     out[("shopfleet", "claim_ack_concurrent_per_s", mode)], "1/s",
                     quick=quick, empty_claims=sum(out[("shopfleet", "empty_claims", mode)]),
                     **common)
        emit_summary(BENCH, "shopfleet", "ops_per_commit",
                     out[("shopfleet", "ops_per_commit", mode)], "1", quick=quick, **common)


def _ratios(out: Samples, a: tuple[str, str], b: tuple[str, str], mode: str) -> list[float]:
    """Per-repetition ratios a/b (each pair measured in the same repetition)."""
    xs = out[(a[0], a[1], mode)]
    ys = out[(b[0], b[1], mode)]
    return [x / y for x, y in zip(xs, ys, strict=True)]


def _target(metric: str, values: list[float], unit: str, target: str, ok: Callable[[float],
            bool], **params: Any) -> None:
    s = summary(values)
    if QUICK[0]:
        emit_summary(BENCH, "shopfleet", metric, values, unit, quick=True, target=target,
                     **params)
    else:
        emit_summary(BENCH, "shopfleet", metric, values, unit, quick=False, target=target,
                     met=ok(s["median"]), **params)


def report_targets(out: Samples, sizes: Sizes) -> None:
    peers = [p for p in PEERS if (p, "claim_ack_per_s", "FULL") in out]
    for mode in MODES:
        _target("ratio_claim_ack_vs_raw",
                _ratios(out, ("shopfleet", "claim_ack_per_s"),
                        ("raw_sqlite3", "claim_ack_per_s"), mode),
                "x", ">= 0.5", lambda v: v >= 0.5, mode=mode,
                pair="shopfleet claim + ack vs raw_sqlite3 claim + ack (2 commits a task each)")
        _target("ratio_ack_and_claim_vs_raw",
                _ratios(out, ("shopfleet_ack_and_claim", "claim_ack_per_s"),
                        ("raw_sqlite3_ack_and_claim", "claim_ack_per_s"), mode),
                "x", ">= 0.5", lambda v: v >= 0.5, mode=mode,
                pair="shopfleet ack_and_claim vs raw_sqlite3 ack + claim in one transaction "
                     "(1 commit a task each)")
        for subject in ("shopfleet", "shopfleet_ack_and_claim"):
            # Against the best peer of each repetition, peers in the same mode.
            per_rep = [max(out[(p, "claim_ack_per_s", mode)][i] for p in peers)
                       for i in range(sizes.repeats)]
            best = max(peers, key=lambda p: summary(out[(p, "claim_ack_per_s", mode)])["median"])
            ratios = [x / y for x, y in zip(out[(subject, "claim_ack_per_s", mode)], per_rep,
                                            strict=True)]
            _target("ratio_claim_ack_vs_best_peer", ratios, "x", ">= 1", lambda v: v >= 1.0,
                    mode=mode, path=subject, best_peer_by_median=best,
                    peers=", ".join(peers), peers_mode=mode)
        _target("ratio_enqueue_vs_raw_same_schema",
                _ratios(out, ("shopfleet", "enqueue_per_s"), ("raw_sqlite3", "enqueue_per_s"),
                        mode),
                "x", ">= 0.8", lambda v: v >= 0.8, mode=mode, batch=BATCH,
                pair="submit_many vs raw executemany on the same schema, rows built in the "
                     "timing from the same task fields")
        emit_summary(BENCH, "shopfleet", "ratio_enqueue_vs_raw_sql_alone",
                     _ratios(out, ("shopfleet", "enqueue_per_s"),
                             ("raw_sqlite3_prebuilt", "enqueue_per_s"), mode),
                     "x", quick=QUICK[0], mode=mode, batch=BATCH,
                     note="informational: against the SQL alone (rows built beforehand)")
    for mode in MODES:
        _target("ratio_concurrent_vs_sequential",
                _ratios(out, ("shopfleet", "claim_ack_concurrent_per_s"),
                        ("shopfleet", "claim_ack_per_s"), mode),
                "x", ">= 2", lambda v: v >= 2.0, mode=mode, threads=THREADS)
    for mode in MODES:
        _target("claim_p99_vs_target_ms", out[("shopfleet", "claim_p99_ms", mode)], "ms", "< 2",
                lambda v: v < 2.0, mode=mode, queued=sizes.big)
    _target("rss_growth_vs_target_mb", out[("shopfleet", "rss_growth_mb", "FULL")], "MiB",
            "< 50", lambda v: v < 50.0, mode="FULL", queued=sizes.rss_n)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "queue benchmark")
    parser.add_argument("--rss-child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--rss-db", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        rss_child(Path(args.rss_db), args.rss_child)
        return
    QUICK[0] = bool(args.quick)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    out: Samples = {}
    with temp_dir("shopfleet-bench-queue-", args.dir) as root:
        emit_machine(BENCH, str(root))
        note(f"queue_ops: sqlite {sqlite3.sqlite_version}, sizes {sizes}; databases in {root}")
        redis_peer: RedisPeer | None = None
        redis_params: dict[str, dict[str, Any]] = {}
        try:
            redis_peer = RedisPeer()
            for mode in MODES:
                redis_params[mode] = redis_peer.reset(mode)
        except Exception as exc:  # said on stderr and in the report: no Redis line then
            note(f"redis peer not measured: {exc}")
            redis_peer = None
        try:
            with Stopwatch() as sw:
                measure_pages(root)
            note(f"pages per claim+ack: {sw.s:.0f}s")
            run_repetitions(root, sizes, out, redis_peer)
        finally:
            if redis_peer is not None:
                redis_peer.close()
        report(out, sizes, redis_params)
        with Stopwatch() as sw:
            run_latency(root, sizes, out)
        note(f"latency at {sizes.big} queued: {sw.s:.0f}s")
        with Stopwatch() as sw:
            measure_rss(root, sizes, out)
        note(f"rss with {sizes.rss_n} queued: {sw.s:.0f}s")
        report_targets(out, sizes)
        emit_machine(BENCH, str(root))


if __name__ == "__main__":
    main()
