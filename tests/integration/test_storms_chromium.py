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

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[2]

CONFIG = """
[browser]
host_resolver_rules = "MAP *.shopfleet.test 127.0.0.1"
[pool]
max_browsers = 2
warm = 1
step_timeout_s = 30
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


def worker(tmp: Path, home: Path, db: Path, *, config: str = CONFIG, max_wait: float = 60
           ) -> subprocess.Popen[str]:
    cfg = tmp / "c.toml"
    cfg.write_text(config)
    env = {**os.environ, "SHOPFLEET_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "core.cli", "worker", "--db", str(db), "--config", str(cfg),
         "--until-idle", "--max-wait", f"{max_wait:g}", "--slots", "2"],
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
            # The rest through the same reader: communicate(timeout=...) reads the pipe's
            # descriptor directly and would drop lines the loop above had already buffered
            # (on a busy machine the task's "network down" arrives with the breaker's line).
            rest = proc.stdout.read()
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    out = "".join(seen) + rest
    recs, tickets = outcome(db, ids)
    assert proc.returncode == 0, out
    assert dropped >= 1
    assert tickets == 0, out
    assert all(state is TaskState.DONE for state, _ in recs), (recs, out)
    assert all(attempts == 1 for _, attempts in recs), (recs, out)
    assert "network down" in out, out


# The outage's breaker backs off BACKOFF_S, and never longer (backoff_max_s = backoff_s).
BACKOFF_S = 20
WITH_DNS = CONFIG.replace("backoff_s = 1\nbackoff_max_s = 4",
                          f"backoff_s = {BACKOFF_S}\nbackoff_max_s = {BACKOFF_S}")
# While the DNS is out, tiktok's host is not mapped: Chromium asks the system's resolver for
# tiktok.shopfleet.test, a name reserved never to resolve (RFC 6761 ".test"; offline, nothing
# resolves): a real net::ERR_NAME_NOT_RESOLVED, no demo switch.
DNS_OUT = WITH_DNS.replace(
    'host_resolver_rules = "MAP *.shopfleet.test 127.0.0.1"',
    'host_resolver_rules = "MAP pdd.shopfleet.test 127.0.0.1, MAP temu.shopfleet.test '
    '127.0.0.1"')


def test_a_host_that_does_not_resolve_waits_without_tickets_until_dns_is_back(
        tmp_path: Path) -> None:
    """A real DNS failure: tiktok's tasks wait (its breaker open, no attempt spent, no
    ticket) while pdd's run; once the name resolves again they all finish.

    Chromium takes its resolver rules only at launch, and a test cannot make the machine's
    DNS answer for a name, so "the fault clears" is the next worker's browser resolving it:
    the first ``worker --until-idle`` (its reach shorter than the probe) stops with the work
    left and why (exit 3); the next one, the network back, finishes it (exit 0).

    Why the second run cannot lose a race: a task stopped by the outage is due at the
    breaker's next probe, and a probe is never more than ``backoff_max_s`` (= BACKOFF_S)
    after an outage the first worker met — before it exited, so before the second started.
    A reach of one back-off (plus the 5 s margin the CLI's own default adds) therefore covers
    every held task, however slow the machine. (That the due time is the probe time, not a
    growing back-off of its own, is pinned on a fake clock: tests/unit/test_rescue_outage.py.)
    """
    assert DNS_OUT != WITH_DNS and "tiktok" not in DNS_OUT
    with DemoSite() as site:
        home, db, ids = setup(site, tmp_path, [(f"tiktok-{1 + i % 3}", 1 + i)
                                               for i in range(4)] + [("pdd-1", 1), ("pdd-2", 2)])
        tiktok, pdd = ids[:4], ids[4:]
        proc = worker(tmp_path, home, db, config=DNS_OUT, max_wait=BACKOFF_S / 4)
        out, _ = proc.communicate(timeout=600)
        served = site.requests(platform="tiktok")
        recs, tickets = outcome(db, ids)
        store = open_store(Settings(), db)
        try:
            reasons = " ".join(e.reason for t in tiktok for e in store.events(t))
        finally:
            store.close()
        assert proc.returncode == 3, out
        assert tickets == 0, out
        assert all(r == (TaskState.QUEUED, 0) for r in recs[:4]), (recs, out)   # waited
        assert all(state is TaskState.DONE for state, _ in recs[4:]), (recs, out)  # others ran
        assert served == []                                  # no tiktok request reached it
        assert "ERR_NAME_NOT_RESOLVED" in out + reasons, (out, reasons)
        assert "breaker tiktok.shopfleet.test: open" in out, out
        # It says what is left and why: the tasks, the breaker, its probe beyond the reach,
        # the outage behind it.
        left = out[out.index("stopped with work left:"):]
        assert "4 tasks wait" in left, out
        assert "breaker tiktok.shopfleet.test is open; its next probe in" in left, out
        assert f"beyond the {BACKOFF_S / 4:g}s this worker waits (opened by network_down:" \
            in left and "ERR_NAME_NOT_RESOLVED" in left, out
        # The network is back: the name resolves (to the demo site) in the next browser.
        proc = worker(tmp_path, home, db, config=WITH_DNS, max_wait=BACKOFF_S + 5)
        out2, _ = proc.communicate(timeout=600)
        served = site.requests(platform="tiktok")
    recs, tickets = outcome(db, ids)
    assert proc.returncode == 0, out2
    assert tickets == 0, out2
    assert all(state is TaskState.DONE for state, _ in recs), (recs, out2)
    assert all(attempts == 1 for _, attempts in recs), (recs, out2)    # DNS cost none
    assert served, out2                                   # the tiktok pages were reached
    assert set(pdd) | set(tiktok) == set(ids)


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
