"""Crash safety: a process killed with SIGKILL at random points loses nothing."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.store import SqliteStore
from tests.store_checks import sqlite_integrity

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _run_and_kill(db: Path, seed: int, after_s: float) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration._crash_child", str(db), str(seed)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    # The kill clock starts when the child has done its first acknowledged change, so a slow
    # interpreter start (a busy machine) does not turn the test into a test of imports.
    end = time.monotonic() + 60
    while not lines and time.monotonic() < end and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(after_s)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    reader.join(10)
    err = proc.stderr.read() if proc.stderr else ""
    for pipe in (proc.stdout, proc.stderr):
        if pipe:
            pipe.close()
    assert "Traceback" not in err, err
    return [ln.strip() for ln in lines if ln.endswith("\n")]  # a torn last line is not a promise


def test_sigkill_at_random_points_loses_no_task(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    rng = random.Random(1234)
    submitted: set[int] = set()
    acked: set[int] = set()
    kills = 30
    for i in range(kills):
        lines = _run_and_kill(db, seed=i, after_s=rng.uniform(0.05, 0.8))
        for line in lines:
            kind, *ids = line.split()
            if kind == "S":
                new = {int(x) for x in ids}
                assert not new & submitted, "an id was handed out twice"
                submitted |= new
            elif kind == "A":
                acked.add(int(ids[0]))

        # Reopen as the next process would: recovery turns the dead owner's leases around.
        store = SqliteStore(db)
        try:
            recovered = store.recover_expired()
            counts = store.counts()
            assert counts["running"] == 0, f"leases not recovered after kill {i}"
            assert sqlite_integrity(store.path) == "ok"
            for tid in recovered:
                assert store.task(tid).state.value in ("queued", "failed", "waiting_human")
        finally:
            store.close()
        conn = sqlite3.connect(db)
        rows = dict(conn.execute("SELECT id, state FROM tasks").fetchall())
        by_state = dict(conn.execute("SELECT state, count(*) FROM tasks GROUP BY state"))
        counted = {k: v for k, v in conn.execute("SELECT state, n FROM state_counts") if v}
        conn.close()
        assert submitted <= rows.keys(), "an acknowledged submission was lost"
        assert all(rows[t] == "done" for t in acked), "an acknowledged ack was lost"
        assert counted == by_state, "per-state counts drifted from the rows"
    assert len(submitted) > 100 and len(acked) > 20, "the child did too little to prove much"
