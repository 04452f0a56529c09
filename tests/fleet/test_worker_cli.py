"""``shopfleet worker --store redis://… --metrics-port P`` as an operator runs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from core.build import open_store
from core.config import Settings
from core.testing.fleet_client import specs_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_worker_serves_prometheus_metrics_and_stops_cleanly(redis_url: str,
                                                           tmp_path: Path) -> None:
    store = open_store(Settings(), url=redis_url, validate=False)
    store.add_shop("pdd-1", platform="pdd", base_url="http://pdd.fleet.test/shop/1")
    store.add_shop("pdd-2", platform="pdd", base_url="http://pdd.fleet.test/shop/2")
    store.submit_many(specs_for(40, ["pdd-1", "pdd-2"]))
    port = _free_port()
    out = tmp_path / "out.txt"
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "worker", "--store", redis_url, "--executor",
             "noop", "--hold-ms", "200", "--metrics-port", str(port), "--quiet"],
            env={**os.environ, "SHOPFLEET_HOME": str(tmp_path / "home")}, stdout=sink,
            stderr=subprocess.STDOUT)
    try:
        body = ""
        deadline = time.monotonic() + 60
        while "shopfleet_" not in body or not store.workers():  # served, and heartbeating
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    assert r.status == 200
                    assert r.headers["Content-Type"].startswith("text/plain")
                    body = r.read().decode()
            except OSError:
                time.sleep(0.2)
        worker = store.workers()[0]
        assert f'worker="{worker.owner}"' in body
        assert "# TYPE shopfleet_" in body
        # Loopback only by default: the worker's listening socket on the metrics port is
        # bound to 127.0.0.1 and nothing else (read from the OS, whatever interfaces exist).
        worker_proc = psutil.Process(proc.pid)
        conns = getattr(worker_proc, "net_connections", worker_proc.connections)(kind="inet")
        bound = {c.laddr.ip for c in conns
                 if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
        assert bound == {"127.0.0.1"}, bound
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, out.read_text()
    counts = store.counts()
    assert counts["running"] == 0 and counts["done"] + counts["queued"] == 40
    assert store.workers()[0].state == "stopped"
    store.close()


def test_the_command_line_works_on_a_shared_store(redis_url: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator's commands against the fleet's Redis: shops, submit, status, workers,
    tasks, preempt refusal, tickets — the same commands as on the desktop's file."""
    import io
    import json

    from core.cli import main

    def run(*argv: str) -> tuple[int, str]:
        code = main([*argv, "--store", redis_url])
        out, err = capsys.readouterr()
        return code, out + err

    assert run("shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
               "http://pdd.fleet.test/shop/1", "--username", "me")[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret-pw\n"))
    assert run("shop", "set-password", "pdd-1", "--stdin")[0] == 0
    code, out = run("shops", "--json")
    assert code == 0 and json.loads(out)[0]["has_password"] is True
    f = tmp_path / "t.jsonl"
    f.write_text('{"type": "collect_data", "shop": "pdd-1", "flow": "collect_data", '
                 '"params": {"page": 1}}\n')
    code, out = run("submit", str(f))
    assert code == 0 and out.split() == ["1"], out
    code, out = run("status")
    assert code == 0 and "store:    redis://127.0.0.1" in out and "queued 1" in out
    code, out = run("workers")
    assert code == 0 and "no worker has run on redis://" in out
    code, out = run("tasks", "--json")
    assert code == 0 and [t["id"] for t in json.loads(out)] == [1]
    code, out = run("preempt", "1")             # not running: refused, says why
    assert code == 1 and "only a running task can be preempted" in out, out
    code, out = run("tickets", "--json")
    assert code == 0 and json.loads(out) == []
    code, out = run("status", "--json")
    assert code == 0 and json.loads(out)["workers"] == {}
