"""#18 with real processes and the real clock: a schedule every minute (``--every 1m``,
catch-up ``all``) fires exactly once per firing and shop:

* SQLite: a worker is SIGKILLed right after a firing time and restarted a few seconds later
  (the firing it may or may not have handled is made good once by the restarted worker);
* Redis: three workers on one Redis, each running the scheduler; only one fires each firing.

Checked from the tasks' keys (``sched:every:<firing>:<shop>``): from the first firing on,
every firing has exactly one task per shop, none missing, none doubled. Three minutes of
wall time (the firings are on the minute): slow.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core.build import open_store
from core.config import Settings
from core.schedules import define_schedule
from core.store.base import Store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

SHOPS = ("pdd-1", "pdd-2", "temu-1")
TEMPLATE = {"type": "collect_data", "flow": "collect_data", "params": {"page": 1}}


def _setup(store: Store, now: float) -> float:
    for name in SHOPS:
        store.add_shop(name, platform=name.split("-")[0],
                       base_url=f"http://{name.split('-')[0]}.fleet.test/shop/{name}",
                       username=name)
        store.update_shop(name, password_enc=b"not-a-real-secret")
    s = define_schedule("every", every="1m", tz="Asia/Shanghai", shops="*", task=TEMPLATE,
                        catch_up="all")
    store.add_schedule(s.name, s.to_dict(), mark=now)
    return now


def _worker(tmp_path: Path, tag: str, *target: str) -> subprocess.Popen[bytes]:
    with open(tmp_path / f"{tag}.log", "ab") as sink:  # the child keeps its own copy
        return subprocess.Popen(
            [sys.executable, "-m", "core.cli", "worker", *target, "--executor", "noop",
             "--hold-ms", "20", "--quiet"],
            env={**os.environ, "SHOPFLEET_HOME": str(tmp_path / f"home-{tag}")},
            stdout=sink, stderr=subprocess.STDOUT)


def _firings(store: Store) -> Counter[str]:
    """Tasks per firing, from the keys; also checks one key per shop and firing."""
    keys = [t.key for t in store.tasks(limit=10_000)]
    assert all(k and k.startswith("sched:every:") for k in keys), keys
    assert len(keys) == len(set(keys))
    return Counter(k.split(":", 2)[2].rsplit(":", 1)[0] for k in keys if k)


def _at(minute: float) -> str:
    return datetime.fromtimestamp(minute, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wait_until(cond: object, what: str, timeout_s: float, logs: list[Path]) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}; logs:\n" + \
            "\n".join(p.read_text(errors="replace")[-2000:] for p in logs if p.exists())
        time.sleep(0.2)


def _wall(t: float) -> None:
    """Wait for a moment of the wall clock (the firings are on it)."""
    while time.time() < t:
        time.sleep(min(0.2, max(0.0, t - time.time())))


def _check(store: Store, first: float) -> list[str]:
    got = _firings(store)
    minutes = sorted(got)
    assert minutes[0] == _at(first), (minutes, _at(first))
    expected = [_at(first + 60 * i) for i in range(len(minutes))]
    assert minutes == expected, "a firing is missing"
    assert all(got[m] == len(SHOPS) for m in minutes), got
    return minutes


def test_every_minute_exactly_once_through_a_kill_and_across_three_redis_workers(
        tmp_path: Path, redis_url: str) -> None:
    settings = Settings()
    db = tmp_path / "fleet.db"
    lite = open_store(settings, db, validate=False)
    shared = open_store(settings, url=redis_url, validate=False)
    procs: list[subprocess.Popen[bytes]] = []
    logs = [tmp_path / f"{t}.log" for t in ("sqlite-a", "sqlite-b", "redis-0", "redis-1",
                                             "redis-2")]
    try:
        # One mark for both stores: with a mark each, a minute turning between the two
        # setups made SQLite's first firing a minute before Redis'.
        now = time.time()
        start = max(_setup(lite, now), _setup(shared, now))
        first = math.ceil(start / 60) * 60  # the first firing after the schedules exist
        a = _worker(tmp_path, "sqlite-a", "--db", str(db))
        procs.append(a)
        procs += [_worker(tmp_path, f"redis-{i}", "--store", redis_url) for i in range(3)]
        _wait_until(lambda: _firings(lite).get(_at(first)) == len(SHOPS),
                    "the first firing (SQLite)", 150, logs)
        # SIGKILL the SQLite worker just after the second firing time: it may or may not
        # have fired it; the restarted worker must make it good exactly once.
        _wall(first + 60 + 0.5)
        a.send_signal(signal.SIGKILL)
        a.wait(30)
        _wall(first + 60 + 4)
        procs.append(_worker(tmp_path, "sqlite-b", "--db", str(db)))
        _wait_until(lambda: _firings(lite).get(_at(first + 120)) == len(SHOPS),
                    "the third firing (SQLite)", 150, logs)
        _wait_until(lambda: _firings(shared).get(_at(first + 120)) == len(SHOPS),
                    "the third firing (Redis)", 60, logs)
        _wall(time.time() + 6)  # a further scheduler round on every worker: no doubles
        lite_minutes = _check(lite, first)
        redis_minutes = _check(shared, first)
        assert len(lite_minutes) >= 3 and len(redis_minutes) >= 3
        assert lite.schedule_record("every").last_error == ""
        assert shared.schedule_record("every").last_error == ""
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        lite.close()
        shared.close()
