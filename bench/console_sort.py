"""Sorting the console's task tables by any column (#15): one keyset page at 100,000 rows.

A store with N queued tasks and N finished ones (history: done, failed, cancelled) over 12
shops is built once in SQLite (bulk insert, then finished in place with varied finish times,
durations and errors) and copied into Redis (``core.store.redis.from_sqlite.migrate``), so
both stores hold the same rows. For every sort the pending and history views offer, in its
default direction, the bench reads the first page (200 rows) and the page after it (the
cursor of the first), through :func:`core.queries.task_page` — what the console does when a
header is clicked and when the operator scrolls. Several interleaved repetitions; the
median and spread are printed.

Subjects: ``sqlite`` and ``redis`` (same rows, same calls, same page size). The peer for a
sort without an index is the same store's indexed sort (``score`` / ``id`` / ``finished``),
printed on its own line in the same run. On Redis every sort has an index (#15,
:mod:`core.store.redis.sorts`); its peer ``redis-scan`` is the read it replaced — the whole
state's rows read and the best page kept (``_sorted_rows``, still the path of a shop filter
on a small shop) — for history by finish time and pending by type, on the same store in the
same run. The Redis memory the sort indexes take (``MEMORY USAGE`` of every ``P:sort:*``
key) is printed beside the server's ``used_memory``. The machine line (load, CPUs) opens and
closes the run.

Run: ``python bench/console_sort.py [--quick]`` (``--quick``: 5,000 + 5,000 rows);
JSON Lines on stdout, progress on stderr. Needs ``redis-server`` on the PATH.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import arg_parser, emit, emit_machine, note, temp_dir
from core import Settings, open_store
from core.queries import DEFAULT_DESCENDING, SORTS, VIEWS, task_page
from core.store.pages import TaskFilter, TaskPage, merge_page, order_of
from core.store.sqlite.bulk import load_rows
from core.testing.redis_server import RedisServer

BENCH = "console_sort"
PAGE = 200
REPS = 3
BENCH_VIEWS = ("pending", "history")


def build(path: Path, n: int) -> Settings:
    settings = Settings().with_changes(queue={"max_backlog": n * 3})
    store = open_store(settings, path, validate=False)
    for i in range(12):
        pf = ("pdd", "temu", "tiktok")[i % 3]
        store.add_shop(f"{pf}-{i}", platform=pf,
                       base_url=f"http://{pf}.shopfleet.test/shop/{pf}-{i}")
    shops = [s.id for s in store.shops()]
    rng = random.Random(1)
    types = (("collect_data", 3.0), ("reply_customer", 10.0), ("upload_product", 5.0),
             ("campaign_signup", 9.0))
    now = time.time()

    def rows():  # type: ignore[no-untyped-def]
        for _ in range(2 * n):
            ty, base = rng.choice(types)
            yield {"type": ty, "shop_id": rng.choice(shops), "base": base,
                   "spec": '{"params":{"page":1},"flow":"collect_data"}',
                   "created_at": now - rng.random() * 86400, "urgency": rng.random()}

    load_rows(store, rows())
    store.close()
    # Half of them finished, in place: the history a day of work leaves.
    conn = sqlite3.connect(path)
    errors = [None, None, None, "500 Internal Server Error", "no #submit", "CAPTCHA"]
    ids = [r[0] for r in conn.execute("SELECT id FROM tasks ORDER BY random() LIMIT ?", (n,))]
    upd = []
    for tid in ids:
        started = now - rng.random() * 80000
        err = rng.choice(errors)
        state = "done" if err is None else rng.choice(("failed", "failed", "cancelled"))
        upd.append((state, started, started + rng.random() * 120, 1 + rng.randrange(3),
                    None if err is None else "site_failed", err, now, tid))
    conn.executemany("UPDATE tasks SET state = ?, started_at = ?, finished_at = ?, "
                     "attempts = ?, error_class = ?, last_error = ?, updated_at = ? "
                     "WHERE id = ?", upd)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return settings


def page_ms(store: object, view: str, sort: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    first = task_page(store, view, sort=sort, limit=PAGE)  # type: ignore[arg-type]
    t1 = time.perf_counter()
    task_page(store, view, sort=sort, after=first.cursor, limit=PAGE)  # type: ignore[arg-type]
    t2 = time.perf_counter()
    assert len(first.rows) == PAGE
    return (t1 - t0) * 1000, (t2 - t1) * 1000


SCAN_PEER = (("history", "finished"), ("pending", "type"))
"""Sorts measured on Redis the pre-index way too (each page reads the whole state)."""


def scan_page(store: object, view: str, sort: str, after: object, limit: int) -> TaskPage:
    """A page read as the Redis store read it before its sort indexes: every row of each
    state, the best ``limit`` after the cursor kept (no filter)."""
    from core.store.redis import pages as rp

    order = order_of(sort, DEFAULT_DESCENDING.get((view, sort), False))
    rd = rp._Reader(store)  # type: ignore[arg-type]
    ok = rp._matcher(rd, TaskFilter())
    per = [rp._sorted_rows(rd, state, order, ok, None, after, limit)  # type: ignore[arg-type]
           for state in VIEWS[view]]
    return merge_page(per, order, limit)


def scan_ms(store: object, view: str, sort: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    first = scan_page(store, view, sort, None, PAGE)
    t1 = time.perf_counter()
    second = scan_page(store, view, sort, first.cursor, PAGE)
    t2 = time.perf_counter()
    # the same rows as the indexed read: a like-for-like peer
    ids = [r.id for r in task_page(store, view, sort=sort, limit=PAGE).rows]  # type: ignore[arg-type]
    assert [r.id for r in first.rows] == ids
    ids = [r.id for r in task_page(store, view, sort=sort, after=first.cursor,  # type: ignore[arg-type]
                                   limit=PAGE).rows]
    assert [r.id for r in second.rows] == ids
    return (t1 - t0) * 1000, (t2 - t1) * 1000


def index_memory(client: object, prefix: str) -> tuple[int, int]:
    """Bytes of every sort index (``MEMORY USAGE``, all members sampled), and their count."""
    total = n = 0
    for key in client.scan_iter(match=f"{prefix}:sort:*", count=1000):  # type: ignore[attr-defined]
        total += int(client.memory_usage(key, samples=0) or 0)  # type: ignore[attr-defined]
        n += 1
    return total, n


def main() -> int:
    args = arg_parser(__doc__ or "").parse_args()
    n = 5_000 if args.quick else 100_000
    emit_machine(BENCH, args.dir)
    with temp_dir("shopfleet-sort-", args.dir) as work, RedisServer() as redis:
        path = work / "sort.db"
        t0 = time.perf_counter()
        settings = build(path, n)
        note(f"{n} queued + {n} finished tasks in {time.perf_counter() - t0:.1f}s")
        from core.store.redis.from_sqlite import migrate
        from core.store.redis.store import RedisStore

        t0 = time.perf_counter()
        report = migrate(path, redis.url, settings=settings, batch=500)
        assert report.ok, report.lines()
        note(f"copied to Redis in {time.perf_counter() - t0:.1f}s")
        stores = {"sqlite": open_store(settings, path, validate=False),
                  "redis": RedisStore(redis.url, settings=settings)}
        try:
            client = stores["redis"].client  # type: ignore[attr-defined]
            index_bytes, index_keys = index_memory(client, "shopfleet")
            emit(BENCH, "redis", "sort_index_memory_mib", index_bytes / 2 ** 20, "MiB",
                 keys=index_keys, tasks=2 * n)
            emit(BENCH, "redis", "used_memory_mib",
                 int(client.info("memory")["used_memory"]) / 2 ** 20, "MiB", tasks=2 * n)
            times: dict[tuple[str, str, str, str], list[float]] = {}
            for rep in range(REPS):
                for view in BENCH_VIEWS:
                    for sort in SORTS[view]:
                        for subject, store in stores.items():  # interleaved
                            a, b = page_ms(store, view, sort)
                            times.setdefault((subject, view, sort, "first"), []).append(a)
                            times.setdefault((subject, view, sort, "next"), []).append(b)
                        if (view, sort) in SCAN_PEER:
                            a, b = scan_ms(stores["redis"], view, sort)
                            times.setdefault(("redis-scan", view, sort, "first"), []).append(a)
                            times.setdefault(("redis-scan", view, sort, "next"), []).append(b)
                note(f"repetition {rep + 1}/{REPS} done")
            for (subject, view, sort, which), vals in times.items():
                emit(BENCH, subject, f"{which}_page_ms", statistics.median(vals), "ms",
                     view=view, sort=sort, rows_per_view=n, page=PAGE, reps=REPS,
                     spread_ms=round(max(vals) - min(vals), 2))
        finally:
            for s in stores.values():
                s.close()
    emit_machine(BENCH, args.dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
