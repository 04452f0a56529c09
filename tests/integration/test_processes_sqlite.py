"""Several processes on one SQLite file, as a desktop with a command-line worker beside it.

* One task per shop, anywhere: three worker processes share one file and a few shops; from
  each execution's shop, start and end (``--exec-log``) no two of one shop ever overlap, and
  every task ran exactly once.
* A batch is all-or-nothing across a crash: a ``shopfleet submit`` of a large batch killed
  with SIGKILL while it writes leaves all of the batch or none of it after a restart.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.store import SqliteStore
from tests.helpers import assert_one_task_per_shop

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[2]

CONFIG = """
[queue]
max_backlog = 100000
[gates.global]
rate_per_s = 100000
burst = 100000
[gates.default_domain]
rate_per_s = 100000
burst = 100000
"""
SHOPS = 4
TASKS = 240


def _env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "SHOPFLEET_HOME": str(home), "PYTHONPATH": str(ROOT)}


def test_worker_processes_on_one_file_never_run_two_tasks_of_a_shop_at_once(
        tmp_path: Path) -> None:
    db, cfg = tmp_path / "shared.db", tmp_path / "c.toml"
    cfg.write_text(CONFIG)
    store = SqliteStore(db, settings=Settings())
    try:
        for i in range(SHOPS):
            store.add_shop(f"s{i}", platform="pdd", base_url=f"http://s{i}.procs.test/",
                           username="u")
            store.set_shop_paused(f"s{i}", True)   # until every worker is up
        store.submit_many([_spec(f"s{n % SHOPS}", n) for n in range(TASKS)])
    finally:
        store.close()
    logs = [tmp_path / f"exec-{n}.log" for n in range(3)]
    procs = [subprocess.Popen(
        [sys.executable, "-m", "core.cli", "worker", "--db", str(db), "--config", str(cfg),
         "--executor", "noop", "--hold-ms", "5", "--slots", "2", "--exec-log", str(log),
         "--quiet"],
        cwd=ROOT, env=_env(tmp_path / f"home-{n}"), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE) for n, log in enumerate(logs)]
    try:
        store = SqliteStore(db, settings=Settings())
        try:
            end = time.monotonic() + 300
            while len([w for w in store.workers() if w.state == "alive"]) < len(procs):
                assert time.monotonic() < end, "the workers did not start"
                assert all(p.poll() is None for p in procs)
                time.sleep(0.05)
            # All three are claiming; two slots each, four shops: none can take every shop.
            for i in range(SHOPS):
                store.set_shop_paused(f"s{i}", False)
            while store.counts()["done"] < TASKS:
                assert time.monotonic() < end, store.counts()
                assert all(p.poll() in (None, 0) for p in procs), [
                    p.stderr.read() for p in procs if p.poll() and p.stderr]
                time.sleep(0.1)
        finally:
            store.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(60)
            if p.stderr:
                p.stderr.close()

    runs = []
    for n, log in enumerate(logs):
        for line in log.read_text().splitlines():
            tid, _domain, _granted, _owner, shop, started, ended, _issued = line.split()
            runs.append((int(tid), shop, float(started), float(ended), n))
    # Each task ran exactly once, and the work was shared between the processes.
    assert sorted(r[0] for r in runs) == list(range(1, TASKS + 1))
    per_process = collections.Counter(r[4] for r in runs)
    assert len(per_process) >= 2, per_process
    # One task per shop across the processes (they share this machine's clock).
    assert_one_task_per_shop([(t, shop, a, b) for t, shop, a, b, _ in runs])


def _spec(shop: str, n: int) -> Any:
    from core.specs import TaskSpec

    return TaskSpec.model_validate({"type": "collect_data", "shop": shop, "flow": "collect_data",
                                    "params": {"page": n}})


BATCH = 20_000
MB = 1 << 20


def _count(db: Path) -> int:
    conn = sqlite3.connect(db, timeout=30)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return int(conn.execute("SELECT count(*) FROM tasks").fetchone()[0])
    finally:
        conn.close()


def test_a_batch_killed_mid_submit_is_all_there_or_not_at_all(tmp_path: Path) -> None:
    db = tmp_path / "batch.db"
    store = SqliteStore(db, settings=Settings())
    try:
        store.add_shop("pdd-1", platform="pdd", base_url="http://pdd.batch.test/",
                       username="u")
        store.update_shop("pdd-1", password_enc=b"x")   # the flow logs in
    finally:
        store.close()
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps({"type": "collect_data", "shop": "pdd-1",
                                         "flow": "collect_data", "params": {"page": i}}) + "\n"
                             for i in range(BATCH)))
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG)
    wal = Path(f"{db}-wal")
    outcomes: list[tuple[int, bool]] = []
    expected = 0
    for _ in range(4):
        base = wal.stat().st_size if wal.exists() else 0
        proc = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "submit", str(batch), "--db", str(db),
             "--config", str(cfg)],
            cwd=ROOT, env=_env(tmp_path / "home"), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        # Kill it once it is writing the batch: its transaction has spilled a megabyte of
        # pages into the WAL (more than any other write of the command).
        while proc.poll() is None and not (wal.exists() and wal.stat().st_size > base + MB):
            time.sleep(0.001)
        mid_write = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        n = _count(db)      # a fresh connection: what a restarted program finds
        assert n - expected in (0, BATCH), f"{n - expected} of a {BATCH}-task batch survived"
        outcomes.append((n - expected, mid_write))
        expected = n
    assert any(mid for _, mid in outcomes), f"no kill landed mid-batch: {outcomes}"
    # And a batch that is not killed is all there.
    done = subprocess.run(
        [sys.executable, "-m", "core.cli", "submit", str(batch), "--db", str(db), "--config",
         str(cfg)], cwd=ROOT, env=_env(tmp_path / "home"), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert _count(db) == expected + BATCH
