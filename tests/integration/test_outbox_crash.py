"""#19: a dispatcher killed (SIGKILL) between sending a message and marking it sent costs at most
one duplicate, with the same message id: real processes, a real SQLite file, a real receiver."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response

from core.notify import NotifyEvent
from core.store import SqliteStore
from core.store.sqlite.outbox import CLAIM_S

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_767_225_600.0


def child(db: Path, url: str, now: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.integration._notify_child", str(db),
                             url, repr(now)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_sigkill_between_send_and_mark_resends_once_with_the_same_id(
        tmp_path: Path, httpserver: HTTPServer) -> None:
    db = tmp_path / "o.db"
    with SqliteStore(db) as store:
        box = store.outbox()
        for i in range(3):
            assert box.enqueue("ops", NotifyEvent(id=f"ticket:{i}", kind="ticket", at=T0,
                                                  headline="找不到按钮", shop="pdd-1"), now=T0)
    got: list[tuple[str, list[str]]] = []
    started = threading.Event()
    victim: list[subprocess.Popen[str]] = []

    def handle(request: WRequest) -> Response:
        body = json.loads(request.get_data())
        got.append((request.headers["X-ShopFleet-Message-Id"],
                    sorted(e["id"] for e in body["events"])))
        if len(got) == 1:             # the message arrived: kill the sender before it marks
            assert started.wait(60)
            victim[0].send_signal(signal.SIGKILL)
            victim[0].wait(60)
        return Response("", status=204)

    httpserver.expect_request("/hook", method="POST").respond_with_handler(handle)
    url = httpserver.url_for("/hook")

    first = child(db, url, T0 + 1)
    victim.append(first)
    started.set()
    first.communicate(timeout=120)  # reads and closes its pipes
    assert first.returncode == -signal.SIGKILL
    assert len(got) == 1

    # within the claim's lease nobody sends it again
    quick = child(db, url, T0 + 2)
    out, err = quick.communicate(timeout=120)
    assert quick.returncode == 0, err
    assert out.strip() == "attempted 0" and len(got) == 1

    # after the lease: the same batch, the same id, once
    later = child(db, url, T0 + 1 + CLAIM_S)
    out, err = later.communicate(timeout=120)
    assert later.returncode == 0, err
    assert out.strip() == "attempted 1"
    assert len(got) == 2
    assert got[0] == got[1]
    assert got[0][1] == ["ticket:0", "ticket:1", "ticket:2"]

    # marked sent: nothing more, ever
    last = child(db, url, T0 + 10 * CLAIM_S)
    out, err = last.communicate(timeout=120)
    assert last.returncode == 0 and out.strip() == "attempted 0", err
    assert len(got) == 2
    with SqliteStore(db, readonly=True) as store:
        [h] = store.outbox().health()
        assert h.pending == 0 and h.last_sent_at == T0 + 1 + CLAIM_S
