"""#15 item 8, in flight: "elsewhere" only for another host, one row per task, no "step 8 of 7".

Whose a running task is comes from the task's lease in the store, so a task this console has
just claimed (the engine's snapshot does not show it yet) or just finished (the store still
says running) is neither another worker's nor a second row for its shop — whatever the
workers' heartbeats (up to an interval late) list.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core import SqliteStore, task_page
from core.config import Settings
from core.testing import FakeClock
from desktop import columns as C
from desktop.inflight import InFlightRow, fleet_running, merge_in_flight
from tests.conftest import add_demo_shops
from tests.helpers import spec

pytestmark = pytest.mark.gui

HERE = f"{socket.gethostname()}/4242/aaaaaaaa"
SAME_PC = f"{socket.gethostname()}/4343/bbbbbbbb"
OTHER_PC = "other-pc/77/cccccccc"


@dataclass
class Worker:
    owner: str
    host: str
    state: str = "alive"
    detail: dict[str, Any] = field(default_factory=dict)


def _worker_text(row: InFlightRow) -> str:
    col = next(c for c in C.IN_FLIGHT if c.key == "worker")
    return col.show(row)


def _local(tid: int, shop: str) -> InFlightRow:
    return InFlightRow(id=tid, type="collect_data", shop=shop, platform="pdd", domain="d",
                       step=2, steps=7, step_name="", browser_id=1, started_at=0.0,
                       score=1.0, preemptible=True)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    st = SqliteStore(tmp_path / "inflight.db", settings=Settings(), clock=FakeClock())
    add_demo_shops(st)
    yield st
    st.close()


def test_a_single_pc_never_shows_elsewhere_nor_two_rows(store: SqliteStore) -> None:
    # This console's engine claimed three tasks. Its snapshot shows only the middle one: the
    # first has finished in the engine (its row is not written yet), the last has just been
    # claimed (not started yet). The heartbeat lists none of them yet.
    ids = [store.submit(spec("collect_data", shop)) for shop in ("pdd-1", "pdd-2", "temu-1")]
    for _ in ids:
        assert store.claim(HERE) is not None
    rows = task_page(store, "in_flight", limit=500).rows
    assert {r.id for r in rows} == set(ids)
    assert {r.lease_owner for r in rows} == {HERE}
    workers = [Worker(HERE, socket.gethostname(), detail={"running_ids": []})]
    remote = fleet_running(rows, workers, HERE)
    assert remote == []
    shown = merge_in_flight([_local(ids[1], "pdd-2")], remote)
    assert [r.id for r in shown] == [ids[1]]
    assert [_worker_text(r) for r in shown] == ["this console"]
    # Even a heartbeat that wrongly lists another owner for it changes nothing: the lease says.
    stale = [Worker(SAME_PC, socket.gethostname(), detail={"running_ids": ids})]
    assert fleet_running(rows, stale + workers, HERE) == []


def test_other_workers_are_named_by_their_host(store: SqliteStore) -> None:
    mine = store.submit(spec("collect_data", "pdd-1"))
    same_pc = store.submit(spec("collect_data", "pdd-2"))
    other = store.submit(spec("collect_data", "temu-1"))
    for owner in (HERE, SAME_PC, OTHER_PC):
        assert store.claim(owner) is not None
    rows = task_page(store, "in_flight", limit=500).rows
    owner_of = {r.id: r.lease_owner for r in rows}
    assert owner_of == {mine: HERE, same_pc: SAME_PC, other: OTHER_PC}
    workers = [Worker(HERE, socket.gethostname()), Worker(SAME_PC, socket.gethostname()),
               Worker(OTHER_PC, "other-pc")]
    remote = fleet_running(rows, workers, HERE)
    shown = merge_in_flight([_local(mine, "pdd-1")], remote)
    assert sorted(r.id for r in shown) == sorted([mine, same_pc, other])   # once each
    text = {r.id: _worker_text(r) for r in shown}
    assert text == {mine: "this console", same_pc: "another worker on this computer",
                    other: "other-pc"}
    # A worker that left the registry is still named by its lease's host, not "elsewhere".
    remote = fleet_running(rows, [Worker(HERE, socket.gethostname())], HERE)
    assert {r.id: _worker_text(r) for r in remote} == {
        same_pc: "another worker on this computer", other: "other-pc"}


def test_a_task_in_both_the_snapshot_and_the_fleet_read_is_one_row() -> None:
    local = [_local(5, "pdd-1")]
    remote = [InFlightRow(id=5, type="collect_data", shop="pdd-1", platform="pdd",
                          domain="d", step=0, steps=0, step_name="", browser_id=None,
                          started_at=0.0, score=1.0, preemptible=True, worker="other-pc",
                          owner=OTHER_PC, remote=True)]
    assert [(r.id, r.remote) for r in merge_in_flight(local, remote)] == [(5, False)]
