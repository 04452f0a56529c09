"""The SQLite queue's faster paths (#20): ack and the next claim in one transaction, a batch
submitted with one ``executemany`` and no read per task, a blocking call that runs on its
caller's thread when the writer is idle — each keeping what the slower path promised."""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from core.errors import LeaseLost, SpecError, StoreClosed
from core.store import AsyncStore, SqliteStore, TaskState
from core.store.sqlite.queue import SqliteQueue
from tests.conftest import StoreFactory
from tests.helpers import spec

MANY = {"max_tasks_per_shop": 100}


class Boom(Exception):
    """A failure injected into the claim half of ``ack_and_claim``."""


def test_a_failure_in_the_claim_half_keeps_the_ack_and_undoes_the_claim(
        make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The claim half runs in its own savepoint: its rows (lease, history, counts) go, the
    ack (done, results, history) stays and commits; the finished task never runs again
    because its slot's next claim broke (#20; a crash still undoes both: the kill test)."""
    store = make_store(queue={"lease_s": 30, **MANY})
    first, second = store.submit(spec(shop="pdd-1")), store.submit(spec(shop="pdd-2"))
    task = store.claim("w")
    assert task is not None and task.id == first
    before = (store.events(second), store.task(second).attempts)
    real = SqliteQueue._op_claim

    def claim_then_fail(self: SqliteQueue, conn: sqlite3.Connection, *a: Any,
                        **kw: Any) -> Any:
        real(self, conn, *a, **kw)  # the claim's rows are written, then it breaks
        raise Boom("between the claim and the commit")

    monkeypatch.setattr(SqliteQueue, "_op_claim", claim_then_fail)
    assert store.ack_and_claim(first, "w", results={"title": "kept"}) is None
    monkeypatch.undo()
    assert store.task(first).state is TaskState.DONE
    assert store.task(first).results == {"title": "kept"}
    assert [(e.from_state, e.to_state) for e in store.events(first)][-1] == ("running", "done")
    assert (store.events(second), store.task(second).attempts) == before
    assert store.task(second).state is TaskState.QUEUED
    counts = store.counts()
    assert (counts["done"], counts["running"], counts["queued"]) == (1, 0, 1)


@pytest.mark.slow
def test_a_killed_worker_loses_no_acknowledged_task(tmp_path: Path) -> None:
    """A real process acks and claims in one transaction on a real file (FULL) and is
    SIGKILLed mid-run: every ack it was told about is done with its whole history, at most
    the one task it held is running, nothing is done twice, and recovery requeues the held
    task."""
    db = tmp_path / "kill.db"
    store = SqliteStore(db)
    store.add_shop("pdd-1", platform="pdd", base_url="http://pdd.shopfleet.test/shop/pdd-1")
    ids = store.submit_many([spec(shop="pdd-1") for _ in range(2000)])
    store.close()
    child = textwrap.dedent(f"""
        import sys
        from core.store import SqliteStore, new_owner_id
        store = SqliteStore({str(db)!r})
        owner = new_owner_id()
        task = store.claim(owner)
        while task is not None:
            held = task.id
            task = store.ack_and_claim(held, owner, results={{"n": held}})
            print(held, flush=True)
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdout is not None
    acked: list[int] = []
    for line in proc.stdout:  # kill once it has acknowledged a few hundred (an event)
        acked.append(int(line))
        if len(acked) == 300:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    acked += [int(x) for x in proc.stdout.read().split()]  # printed before the kill landed
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, "the worker finished before it was killed"

    store = SqliteStore(db)
    try:
        done = [t for t in ids if store.task(t).state is TaskState.DONE]
        running = [t for t in ids if store.task(t).state is TaskState.RUNNING]
        assert set(acked) <= set(done)
        assert len(done) - len(acked) <= 1  # committed, killed before it printed
        assert len(running) <= 1
        for tid in done:
            assert [(e.from_state, e.to_state) for e in store.events(tid)] == [
                (None, "queued"), ("queued", "running"), ("running", "done")]
            assert store.task(tid).results == {"n": tid}
        counts = store.counts()
        assert (counts["done"], counts["running"]) == (len(done), len(running))
        assert counts["queued"] == len(ids) - len(done) - len(running)
        assert store.recover_expired() == running  # its owner process is gone
        assert store.counts()["running"] == 0
    finally:
        store.close()


def test_async_ack_and_claim_is_one_commit(make_store: StoreFactory) -> None:
    store = make_store(queue=MANY)
    ids = store.submit_many([spec(shop="pdd-1"), spec(shop="pdd-2")])
    writer = store._writer_or_refuse()

    async def go() -> tuple[Any, int]:
        astore = AsyncStore(store)
        task = await astore.claim("w")
        assert task is not None and task.id == ids[0]
        commits = writer.commits
        nxt = await astore.ack_and_claim(task.id, "w")
        return nxt, writer.commits - commits

    nxt, commits = asyncio.run(go())
    assert nxt is not None and nxt.id == ids[1]
    assert commits == 1
    assert store.task(ids[0]).state is TaskState.DONE
    assert store.task(ids[1]).state is TaskState.RUNNING


def test_async_ack_and_claim_of_a_lost_lease_raises(make_store: StoreFactory) -> None:
    store = make_store()
    tid = store.submit(spec())
    store.claim("w")
    store.cancel(tid)

    async def go() -> None:
        await AsyncStore(store).ack_and_claim(tid, "w")

    with pytest.raises(LeaseLost):
        asyncio.run(go())


# -- submitting a batch ---------------------------------------------------------------------------


def _reads_while(store: SqliteStore, action: Any) -> list[str]:
    """The SELECTs the writer's connection ran during ``action`` (trigger bodies aside)."""
    seen: list[str] = []

    def trace(statement: str) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append(statement)

    store._call(lambda c: c.set_trace_callback(trace))
    try:
        action()
    finally:
        store._call(lambda c: c.set_trace_callback(None))
    return seen


def test_a_batch_costs_the_same_reads_whatever_its_size(make_store: StoreFactory) -> None:
    store = make_store(queue={"max_backlog": 10_000})
    small = _reads_while(store, lambda: store.submit_many([spec() for _ in range(3)]))
    big = _reads_while(store, lambda: store.submit_many([spec() for _ in range(600)]))
    assert len(big) == len(small) <= 3
    keyed = _reads_while(store, lambda: store.submit_many(
        [spec(key=f"k-{i}") for i in range(600)]))
    assert len(keyed) == len(small) + 1  # one read for all the batch's keys
    assert store.counts()["queued"] == 1203


def test_a_batch_mixing_known_keys_and_new_tasks_keeps_its_order(
        make_store: StoreFactory) -> None:
    store = make_store(queue=MANY)
    known = store.submit(spec("reply_customer", key="order-7"))
    ids = store.submit_many([spec("collect_data", shop="pdd-2"),
                             spec("reply_customer", key="order-7"),
                             spec("upload_product", key="sku-1"),
                             spec("collect_data", shop="temu-1", key="order-8")])
    assert ids[1] == known
    fresh = [ids[0], ids[2], ids[3]]
    assert fresh == list(range(known + 1, known + 4))
    assert [store.task(t).type for t in ids] == [
        "collect_data", "reply_customer", "upload_product", "collect_data"]
    assert store.task(ids[3]).shop == "temu-1" and store.task(ids[3]).key == "order-8"
    again = store.submit_many([spec("upload_product", key="sku-1"), spec("collect_data")])
    assert again[0] == ids[2] and again[1] == known + 4
    with pytest.raises(SpecError, match="already used for a different task"):
        store.submit_many([spec("collect_data"), spec("collect_data", key="order-7")])
    assert store.counts()["queued"] == 5  # the refused batch wrote nothing


# -- a blocking call on an idle writer ------------------------------------------------------------


def test_a_blocking_call_on_an_idle_writer_runs_on_its_own_thread(
        make_store: StoreFactory) -> None:
    store = make_store()
    where = store._call(lambda c: threading.current_thread())
    assert where is threading.current_thread()


class _CountingQueue(queue.Queue[Any]):
    """The writer's queue, saying when ``n`` items were put."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.reached = threading.Event()

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        super().put(item, block, timeout)
        if self.qsize() >= self.n:
            self.reached.set()


def test_blocking_calls_behind_a_running_batch_share_the_next_commit(
        make_store: StoreFactory) -> None:
    """While a batch runs, blocking callers queue and commit together (group commit)."""
    store = make_store(queue=MANY)
    ids = store.submit_many([spec(shop="pdd-1") for _ in range(8)])
    writer = store._writer_or_refuse()
    inside, release = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        inside.set()
        release.wait(60)

    held = writer.submit(hold)  # the writer thread runs it and keeps the lock
    assert inside.wait(60)
    queued = _CountingQueue(8)
    writer._queue = queued  # type: ignore[assignment]  # read again after the held batch
    commits = writer.commits
    claimed: list[Any] = []
    threads = [threading.Thread(target=lambda i=i: claimed.append(store.claim(f"w{i}")))
               for i in range(8)]
    for t in threads:
        t.start()
    assert queued.reached.wait(60)  # all eight are queued behind the running batch
    release.set()
    held.result(60)
    for t in threads:
        t.join(60)
    assert sorted(t.id for t in claimed) == ids
    assert writer.commits - commits == 2  # the held batch, then the eight together


def test_a_closed_store_refuses_blocking_calls(make_store: StoreFactory) -> None:
    store = make_store()
    writer = store._writer_or_refuse()
    store.close()
    with pytest.raises(StoreClosed):
        writer.run(lambda c: None)
