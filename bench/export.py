"""Export: records a second and memory growth writing 1,000,000 result records.

Subjects, each in a fresh subprocess (so one run's heap never inflates the next one's RSS):

* ``shopfleet`` — :func:`core.export.export` to CSV (UTF-8 BOM), JSON Lines and XLSX
  (XlsxWriter ``constant_memory``), with the default two passes (field names, then rows);
* ``openpyxl_write_only`` — the same rows through openpyxl's ``write_only`` workbook, the other
  constant-memory XLSX writer the design allows (why XlsxWriter was picked);
* ``shopfleet_sqlite`` — what ``shopfleet results`` does (#19 stage 2): the same records loaded
  first (not timed) into a store's ``results`` table, then streamed out by
  ``SqliteStore.iter_results`` (one cursor, two passes) into CSV and XLSX. The load skips the
  search index's trigger (it does not change what the export reads).

The rows come from :func:`core.export.rows_of` over synthetic tasks of 10 records each (Chinese
text, a price, a JSON cell, one formula-looking cell), generated on the fly like a store cursor.
Memory: RSS sampled every 10,000 rows (``rss_growth_mb`` = max − before) and ``ru_maxrss``;
with ``--trace``, tracemalloc's peak of Python allocations too (slow: 3-4x).
The issue's target: growth under 100 MB for 1M records (``rss_growth_vs_target_mb`` lines).

Run: ``python bench/export.py [--quick]`` (quick: 50,000 records).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import arg_parser, emit, note, rss_mb, temp_dir

from core.export import FIXED_COLUMNS, TaskResults, escape_cell, export, rows_of

BENCH = "export"
PER_TASK = 10
SUBJECTS = [("shopfleet", "csv"), ("shopfleet", "jsonl"), ("shopfleet", "xlsx"),
            ("openpyxl_write_only", "xlsx"), ("shopfleet_sqlite", "csv"),
            ("shopfleet_sqlite", "xlsx")]


def tasks(n_records: int) -> Iterator[TaskResults]:
    for t in range(n_records // PER_TASK):
        yield TaskResults(
            task_id=t, shop=f"拼多多-店铺{t % 300:03d}", platform="pdd", type="collect_data",
            flow="orders", finished_at=1_767_225_600.0 + t,
            results={"title": f"店铺订单汇总 {t}",
                     "order_id": [f"PDD{t:07d}{i}" for i in range(PER_TASK)],
                     "buyer": [f"买家{(t * 7 + i) % 997}号：物流很快，好评"
                               for i in range(PER_TASK)],
                     "price": [f"{(t + i) % 500}.{i}0" for i in range(PER_TASK)],
                     "sku": [{"colour": "红", "size": "L"}] * PER_TASK,
                     "remark": ["=HYPERLINK(\"http://x\")" if i == 0 else "" for i in
                                range(PER_TASK)]})


class Sampled:
    """A row factory that samples RSS every 10,000 rows (what a store cursor would feed)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.max_rss = rss_mb()

    def __call__(self) -> Iterator[Mapping[str, Any]]:
        for i, row in enumerate(rows_of(tasks(self.n))):
            if i % 10_000 == 0:
                self.max_rss = max(self.max_rss, rss_mb())
            yield row


def _openpyxl(rows: Sampled, path: Path) -> int:
    import openpyxl

    names: dict[str, None] = {}
    for row in rows():
        names.update((k, None) for k in row if k not in FIXED_COLUMNS)
    cols = [*FIXED_COLUMNS, *names]
    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("results")
    ws.append(cols)
    n = 0
    for row in rows():
        ws.append([escape_cell(row.get(c)) for c in cols])
        n += 1
    wb.save(path)
    return n


def _load_results(db: Path, n: int) -> None:
    """A store file whose results table holds the ``n`` records (the untimed setup)."""
    import sqlite3

    from core.export import flow_of, record_text, records_of
    from core.store import SqliteStore

    SqliteStore(db).close()  # the schema, by the store itself
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute('DROP TRIGGER "results_ai"')  # bench only: no search index for the load
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO results (task_id, seq, shop, platform, type, flow, finished_at, record, "
        "text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ((t.task_id, seq, t.shop, t.platform, t.type, flow_of({"flow": t.flow}),
          t.finished_at, json.dumps(rec, ensure_ascii=False), record_text(rec))
         for t in tasks(n) for seq, rec in enumerate(records_of(t.results))))
    conn.execute("COMMIT")
    conn.close()


class FromStore:
    """The row factory ``shopfleet results`` uses: the store's cursor, RSS sampled."""

    def __init__(self, db: Path) -> None:
        from core.export import ResultFilter
        from core.store import SqliteStore

        self.store = SqliteStore(db, readonly=True)
        self.flt = ResultFilter()
        self.max_rss = rss_mb()

    def __call__(self) -> Iterator[Mapping[str, Any]]:
        for i, row in enumerate(self.store.iter_results(self.flt)):
            if i % 10_000 == 0:
                self.max_rss = max(self.max_rss, rss_mb())
            yield row


def child(subject: str, fmt: str, n: int, out: Path, trace: bool) -> None:
    rows: Sampled | FromStore
    if subject == "shopfleet_sqlite":
        db = out.with_suffix(".db")
        _load_results(db, n)
        before = rss_mb()
        rows = FromStore(db)
    else:
        before = rss_mb()
        rows = Sampled(n)
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    written = (_openpyxl(rows, out) if subject == "openpyxl_write_only"  # type: ignore[arg-type]
               else export(rows, fmt, out))
    seconds = time.perf_counter() - t0
    peak_py = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
    after = rss_mb()
    print(json.dumps({"before": before, "max": max(rows.max_rss, after), "seconds": seconds,
                      "written": written, "bytes": out.stat().st_size, "trace_peak": peak_py,
                      "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_child(subject: str, fmt: str, n: int, root: Path, trace: bool) -> dict[str, Any]:
    out = root / f"{subject}.{fmt}"
    cmd = [sys.executable, __file__, "--child", subject, "--fmt", fmt, "--n", str(n),
           "--out", str(out)] + (["--trace"] if trace else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    if proc.returncode != 0:
        raise RuntimeError(f"{subject}/{fmt} failed:\n{proc.stderr}")
    out.unlink(missing_ok=True)
    for extra in (".db", ".db-wal", ".db-shm"):
        out.with_suffix(extra).unlink(missing_ok=True)
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "export benchmark")
    parser.add_argument("--n", type=int, default=0, help="records (default 1,000,000; "
                                                         "--quick 50,000)")
    parser.add_argument("--reps", type=int, default=0, help="repetitions (default 1; quick 3)")
    parser.add_argument("--trace", action="store_true", help="also tracemalloc's peak")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--fmt", default="", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    parser.add_argument("--subject", default="",
                        help="only these subjects (comma-separated, e.g. shopfleet_sqlite)")
    args = parser.parse_args()
    n = args.n or (50_000 if args.quick else 1_000_000)
    if args.child:
        child(args.child, args.fmt, n, Path(args.out), args.trace)
        return
    reps = args.reps or (3 if args.quick else 1)
    only = {x for x in args.subject.split(",") if x}
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {
        s: [] for s in SUBJECTS if not only or s[0] in only}
    with temp_dir("shopfleet-bench-export-", args.dir) as root:
        for rep in range(reps):  # interleaved: every subject once per repetition
            for subject, fmt in runs:
                note(f"rep {rep + 1}/{reps}: {subject} {fmt} with {n} records")
                runs[(subject, fmt)].append(run_child(subject, fmt, n, root, args.trace))
    for (subject, fmt), got in runs.items():
        params = {"format": fmt, "n": n, "reps": reps, "per_task": PER_TASK,
                  "columns": 6 + 6, "process": "fresh subprocess per run"}
        rates = [g["written"] / g["seconds"] for g in got]
        growth = [g["max"] - g["before"] for g in got]
        emit(BENCH, subject, "records_per_s", statistics.median(rates), "1/s",
             spread=round(max(rates) - min(rates), 1), **params)
        emit(BENCH, subject, "rss_growth_mb", max(growth), "MiB", **params)
        emit(BENCH, subject, "rss_peak_mb", max(g["maxrss"] for g in got), "MiB", **params)
        emit(BENCH, subject, "file_mb", got[0]["bytes"] / 2**20, "MiB", **params)
        if got[0]["trace_peak"] is not None:
            emit(BENCH, subject, "tracemalloc_peak_mb", max(g["trace_peak"] for g in got),
                 "MiB", **params)
        if subject.startswith("shopfleet"):
            emit(BENCH, subject, "rss_growth_vs_target_mb", max(growth), "MiB",
                 target="< 100", met=max(growth) < 100, **params)


if __name__ == "__main__":
    main()
