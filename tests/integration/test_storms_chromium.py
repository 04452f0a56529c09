"""Rescue semantics (#15) on real Chromium against the demo site, through ``shopfleet worker
--until-idle``: a 429 storm, a 5xx storm and a network outage produce ZERO tickets, spend no
attempts, and every task finishes once the fault clears."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core import DemoSite, open_store
from core.config import Settings
from core.demo import register_demo_shops
from core.store import TaskState
from core.vault import Vault
from tests.helpers import collect

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]

CONFIG = """
[browser]
host_resolver_rules = "MAP *.shopfleet.test 127.0.0.1"
[pool]
max_browsers = 2
warm = 1
step_timeout_s = 8
[queue]
retry_backoff_s = 0.5
max_attempts = 2
[breakers]
failures = 3
window_s = 60
backoff_s = 1
backoff_max_s = 4
[rescue]
step_retry_wait_s = 0.1
[gates.global]
rate_per_s = 100
burst = 100
[gates.default_domain]
rate_per_s = 100
burst = 100
"""


def worker(tmp: Path, home: Path, db: Path) -> subprocess.Popen[str]:
    cfg = tmp / "c.toml"
    cfg.write_text(CONFIG)
    env = {**os.environ, "SHOPFLEET_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "core.cli", "worker", "--db", str(db), "--config", str(cfg),
         "--until-idle", "--max-wait", "60", "--slots", "2"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def setup(site: DemoSite, tmp: Path, tasks: list[tuple[str, int]]) -> tuple[Path, Path, list[int]]:
    home = tmp / "home"
    home.mkdir()
    db = tmp / "s.db"
    store = open_store(Settings(), db)
    try:
        register_demo_shops(store, site, Vault.open(home))
        ids = [store.submit(collect(shop, page)) for shop, page in tasks]
    finally:
        store.close()
    return home, db, ids


def outcome(db: Path, ids: list[int]) -> tuple[list[tuple[TaskState, int]], int]:
    store = open_store(Settings(), db)
    try:
        recs = [(store.task(t).state, store.task(t).attempts) for t in ids]
    finally:
        store.close()
    conn = sqlite3.connect(db)
    try:
        tickets = conn.execute("SELECT count(*) FROM tickets").fetchone()[0]
    finally:
        conn.close()
    return recs, int(tickets)


def test_429_and_5xx_storms_make_no_tickets_and_every_task_finishes(tmp_path: Path) -> None:
    with DemoSite() as site:
        home, db, ids = setup(site, tmp_path, [(f"pdd-{1 + i % 3}", 1 + i) for i in range(4)]
                              + [(f"temu-{1 + i % 3}", 1 + i) for i in range(4)])
        site.set_fault("rate_limit", platform="pdd", status=429, retry_after=1, times=6)
        site.set_fault("error_5xx", platform="temu", status=500, times=24)
        proc = worker(tmp_path, home, db)
        out, _ = proc.communicate(timeout=600)
        statuses = [r["status"] for r in site.requests()]
    recs, tickets = outcome(db, ids)
    assert proc.returncode == 0, out
    assert tickets == 0, out
    assert all(state is TaskState.DONE for state, _ in recs), (recs, out)
    # 429s spend no attempt (a 5xx may, before anything says it is the site's; never
    # all of them: no ticket above).
    assert all(attempts == 1 for _, attempts in recs[:4]), (recs, out)
    assert all(state is TaskState.DONE for state, _ in recs[4:]), recs
    assert statuses.count(429) == 6 and statuses.count(500) == 24   # the storms happened
    assert "gate pdd.shopfleet.test: held" in out
    assert "breaker temu.shopfleet.test: open" in out, out


def test_a_network_outage_pauses_the_domain_and_resumes_when_it_clears(
        tmp_path: Path) -> None:
    with DemoSite() as site:
        home, db, ids = setup(site, tmp_path, [(f"tiktok-{1 + i % 3}", 1 + i)
                                               for i in range(4)])
        site.set_fault("network_down", platform="tiktok")
        proc = worker(tmp_path, home, db)
        try:
            # The outage lasts until the worker has met it and paused the domain (its breaker
            # open, said on the worker's output); then the network "comes back".
            seen: list[str] = []
            assert proc.stdout is not None
            for line in proc.stdout:
                seen.append(line)
                if "breaker tiktok.shopfleet.test: open" in line:
                    break
            else:
                pytest.fail("the worker never paused the domain:\n" + "".join(seen))
            dropped = sum(1 for r in site.requests() if r["fault"] == "network_down")
            site.clear_faults()
            rest, _ = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
    out = "".join(seen) + rest
    recs, tickets = outcome(db, ids)
    assert proc.returncode == 0, out
    assert dropped >= 1
    assert tickets == 0, out
    assert all(state is TaskState.DONE for state, _ in recs), (recs, out)
    assert all(attempts == 1 for _, attempts in recs), (recs, out)
    assert "network down" in out


def test_until_idle_exits_non_zero_and_says_why_when_work_is_left(tmp_path: Path) -> None:
    with DemoSite() as site:
        home, db, ids = setup(site, tmp_path, [("pdd-1", 1)])
        site.set_fault("rate_limit", platform="pdd", status=429, retry_after=600, times=1)
        proc = worker(tmp_path, home, db)
        out, _ = proc.communicate(timeout=300)
    recs, tickets = outcome(db, ids)
    assert proc.returncode == 3, out
    assert "stopped with work left" in out and "beyond the 60s" in out, out
    assert tickets == 0 and recs == [(TaskState.QUEUED, 0)]
