"""The console under load: event-loop lag and time to the first page of the pending table
with 1,000,000 pending tasks while 20 tasks/s complete; process memory growth.

One run, one process: a store with N queued tasks (``--quick``: 100,000) is built with the
store's bulk insert; the engine runs on its own thread with the no-op executor behind a global
gate of 20 requests/s (so 20 tasks/s complete); the console window (offscreen Qt, qasync loop)
shows the pending table. Measured:

* ``first_page_ms`` — from asking the pending model for a fresh read to its rows being in the
  model (the keyset page read on a worker thread plus applying it), default sort, then sorted by
  id, then filtered by a shop, then the next page after scrolling;
* ``loop_lag_ms`` p50/p99 — how late a 10 ms timer on the window's loop fires, over the run,
  while the tables refresh live;
* ``rss_growth_mb`` — resident memory after the run minus before the window opened (the
  model holds a page, not the table).

Peers: none in-process; ``naive_offset_page_ms`` measures a plain ``ORDER BY … LIMIT/OFFSET``
page deep in the table (offset 500,000), which is what a model paging by offset would pay.

Run: ``python bench/console.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import sys
import time
from pathlib import Path

from _common import arg_parser, emit, note, percentiles, rss_mb, temp_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from core import Settings, open_store
from core.store.sqlite.bulk import load_rows

BENCH = "console"


def build(path: Path, n: int) -> Settings:
    settings = Settings().with_changes(
        queue={"max_backlog": n * 2},
        gates={"global": {"rate_per_s": 20, "burst": 1},
               "default_domain": {"rate_per_s": 1000, "burst": 1000}},
        pool={"max_browsers": 4, "warm": 0})
    store = open_store(settings, path, validate=False)
    for i in range(12):
        pf = ("pdd", "temu", "tiktok")[i % 3]
        store.add_shop(f"{pf}-{i}", platform=pf,
                       base_url=f"http://{pf}.shopfleet.test/shop/{pf}-{i}")
    shops = [s.id for s in store.shops()]
    rng = random.Random(1)
    types = (("collect_data", 3.0), ("reply_customer", 10.0), ("upload_product", 5.0))
    now = time.time()

    def rows():  # type: ignore[no-untyped-def]
        for _ in range(n):
            ty, base = rng.choice(types)
            yield {"type": ty, "shop_id": rng.choice(shops), "base": base,
                   "spec": '{"params":{"page":1},"flow":"collect_data"}',
                   "created_at": now - rng.random() * 1200, "urgency": rng.random()}

    t0 = time.perf_counter()
    load_rows(store, rows())
    note(f"{n} tasks queued in {time.perf_counter() - t0:.1f}s")
    store.close()
    return settings


async def measure(settings: Settings, path: Path, n: int, seconds: float) -> None:
    from core import TaskFilter
    from desktop.launch import engine_host
    from desktop.window import ConsoleContext, MainWindow

    store = open_store(settings, path, validate=False)
    rss0 = rss_mb()
    host = engine_host(settings, store, executor="noop", slots=4)
    await asyncio.to_thread(host.start)
    window = MainWindow(ConsoleContext(settings=settings, store=store, host=host))
    window.show()
    pending = window.models["pending"]

    async def first_page(label: str) -> None:
        while pending._busy:
            await asyncio.sleep(0.005)
        t0 = time.perf_counter()
        await pending.refresh()
        ms = (time.perf_counter() - t0) * 1000
        emit(BENCH, "shopfleet", "first_page_ms", ms, "ms", n=n, variant=label,
             rows=pending.rowCount())

    lags: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            t0 = time.perf_counter()
            await asyncio.sleep(0.010)
            lags.append((time.perf_counter() - t0 - 0.010) * 1000)

    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(1.0)
    await first_page("score")
    pending.sort(0, pending.sort_column() and 0)  # by id (oldest first)
    await pending.wait_idle()
    await first_page("id")
    pending.set_filter(TaskFilter(shop="temu-1"))
    await pending.wait_idle()
    await first_page("shop_filter")
    pending.set_filter(TaskFilter())
    pending.sort(1)
    await pending.wait_idle()
    t0 = time.perf_counter()
    pending.fetchMore()
    await pending.wait_idle()
    emit(BENCH, "shopfleet", "next_page_ms", (time.perf_counter() - t0) * 1000, "ms", n=n)
    done0 = store.counts()["done"]
    t_run = time.perf_counter()
    await asyncio.sleep(seconds)  # the window refreshes live while tasks complete
    done = store.counts()["done"] - done0
    stop = True
    await tick
    emit(BENCH, "shopfleet", "completed_per_s", done / (time.perf_counter() - t_run), "1/s",
         n=n)
    p50, p99 = percentiles(lags, [50, 99])
    emit(BENCH, "shopfleet", "loop_lag_p50_ms", p50, "ms", n=n, samples=len(lags))
    emit(BENCH, "shopfleet", "loop_lag_p99_ms", p99, "ms", n=n, samples=len(lags),
         target=50, met=p99 < 50)
    growth = rss_mb() - rss0
    emit(BENCH, "shopfleet", "rss_growth_mb", growth, "MiB", n=n, target=100,
         met=growth < 100)
    naive = sqlite3.connect(path)  # the peer: an OFFSET page on a connection of its own
    t0 = time.perf_counter()
    naive.execute("SELECT t.id FROM tasks t WHERE t.state = 'queued' ORDER BY t.band DESC, "
                  "t.prio_key DESC, t.id LIMIT 200 OFFSET ?", (n // 2,)).fetchall()
    emit(BENCH, "naive_offset", "naive_offset_page_ms", (time.perf_counter() - t0) * 1000,
         "ms", n=n, offset=n // 2)
    naive.close()
    await window.shutdown()


def main() -> int:
    args = arg_parser(__doc__.splitlines()[0]).parse_args()
    n = 100_000 if args.quick else 1_000_000
    seconds = 10.0 if args.quick else 30.0
    import qasync
    from PySide6.QtWidgets import QApplication

    with temp_dir("shopfleet-bench-console-", args.dir) as folder:
        path = folder / "console.db"
        settings = build(path, n)
        app = QApplication.instance() or QApplication([])
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(measure(settings, path, n, seconds))
        finally:
            loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
