"""Ack and the next claim in one call (#20): the same rows as an ack followed by a claim (with
the engine's exclusions: domains, shops), on every store; a lost lease claims nothing; a claim
half that fails keeps the ack."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from core.errors import LeaseLost
from core.export import ResultFilter
from core.store import SqliteStore, TaskState
from core.store.base import Store
from core.store.sqlite.queue import SqliteQueue
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec

MANY = {"max_tasks_per_shop": 100}


def _fill(store: Store) -> list[int]:
    return store.submit_many([spec("collect_data", "pdd-1"), spec("reply_customer", "temu-1"),
                              spec("upload_product", "pdd-2"), spec("collect_data", "tiktok-1"),
                              spec("campaign_signup", "pdd-1")])


def _snapshot(store: Store, ids: list[int]) -> dict[str, Any]:
    """What a user could see of these tasks: records, history, counts, results."""
    tasks = {}
    for tid in ids:
        t = store.task(tid)
        tasks[tid] = (t.state, t.state_reason, t.attempts, t.lease_owner, t.lease_until,
                      t.started_at, t.finished_at, t.results, t.updated_at)
    events = {tid: [(e.at, e.from_state, e.to_state, e.reason) for e in store.events(tid)]
              for tid in ids}
    results = list(store.iter_results(ResultFilter()))
    return {"tasks": tasks, "events": events, "counts": store.counts(), "results": results}


def test_ack_and_claim_leaves_the_rows_of_ack_then_claim(store_factory: StoreFactory,
                                                          clock: FakeClock) -> None:
    one = store_factory(queue=MANY)
    two = store_factory(queue=MANY)
    ids_one, ids_two = _fill(one), _fill(two)
    assert ids_one == ids_two
    got_one = [one.claim("w")]
    got_two = [two.claim("w")]
    results = [{"title": "a", "price": 3}, None, {"rows": [{"sku": "x"}, {"sku": "y"}]}, None]
    for res in results:
        clock.advance(7.5)
        held_one, held_two = got_one[-1], got_two[-1]
        assert held_one is not None and held_two is not None
        one.ack(held_one.id, "w", results=res)
        got_one.append(one.claim("w"))
        got_two.append(two.ack_and_claim(held_two.id, "w", results=res))
    assert [t.id if t else None for t in got_one] == [t.id if t else None for t in got_two]
    for a, b in zip(got_one, got_two, strict=True):
        assert a is not None and b is not None
        assert (a.type, a.shop, a.lease_until, a.attempts, a.score, a.params) == (
            b.type, b.shop, b.lease_until, b.attempts, b.score, b.params)
    assert _snapshot(one, ids_one) == _snapshot(two, ids_two)
    assert two.counts()["done"] == 4 and two.counts()["running"] == 1


def test_ack_and_claim_returns_none_when_nothing_is_left(store_factory: StoreFactory) -> None:
    store = store_factory()
    tid = store.submit(spec())
    task = store.claim("w")
    assert task is not None and task.id == tid
    assert store.ack_and_claim(tid, "w") is None
    assert store.task(tid).state is TaskState.DONE


def test_ack_and_claim_keeps_out_excluded_domains(store_factory: StoreFactory) -> None:
    store = store_factory(queue=MANY)
    first = store.submit(spec(shop="pdd-1"))
    on_temu = store.submit(spec(shop="temu-1"))
    on_pdd = store.submit(spec(shop="pdd-2"))
    task = store.claim("w")
    assert task is not None and task.id == first
    nxt = store.ack_and_claim(first, "w", exclude_domains=["temu.shopfleet.test"])
    assert nxt is not None and nxt.id == on_pdd
    assert store.task(on_temu).state is TaskState.QUEUED


def test_a_lost_lease_claims_nothing(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory(queue={"lease_s": 30, **MANY})
    first, second = store.submit(spec(shop="pdd-1")), store.submit(spec(shop="pdd-2"))
    task = store.claim("w")
    assert task is not None and task.id == first
    clock.advance(31)
    assert store.recover_expired() == [first]
    with pytest.raises(LeaseLost):
        store.ack_and_claim(first, "w")
    # The recovered task is queued again (not done), and nothing was claimed for "w".
    assert store.task(first).state is TaskState.QUEUED
    assert store.task(second).state is TaskState.QUEUED
    assert store.counts()["running"] == 0


# -- what the engine passes (#20): the same exclusions as its claim round -------------------------


def test_ack_and_claim_leaves_the_rows_of_ack_then_a_claim_round_of_one(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    """With the engine's exclusions (an open breaker's domain, a proxy breaker's shop), the
    combined call claims what ``ack`` + ``claim_many(1, ...)`` claims and leaves its rows."""
    one = store_factory(queue=MANY)
    two = store_factory(queue=MANY)
    ids_one, ids_two = _fill(one), _fill(two)
    ids_one += one.submit_many([spec("collect_data", "pdd-2"), spec("collect_data", "pdd-1")])
    ids_two += two.submit_many([spec("collect_data", "pdd-2"), spec("collect_data", "pdd-1")])
    held_one, held_two = one.claim("w"), two.claim("w")
    assert held_one is not None and held_two is not None
    exclusions: dict[str, Any] = {"exclude_domains": ["temu.shopfleet.test"],
                                  "exclude_shops": ["pdd-2"]}
    claimed = []
    for _ in range(4):
        clock.advance(3.0)
        one.ack(held_one.id, "w")
        got_one = one.claim_many("w", 1, **exclusions)
        got_two = two.ack_and_claim(held_two.id, "w", **exclusions)
        assert [t.id for t in got_one] == ([got_two.id] if got_two else [])
        if got_two is None:
            break
        claimed.append(got_two.shop)
        held_one, held_two = got_one[0], got_two
    assert "temu-1" not in claimed and "pdd-2" not in claimed
    assert _snapshot(one, ids_one) == _snapshot(two, ids_two)


def test_ack_and_claim_keeps_out_excluded_shops(store_factory: StoreFactory) -> None:
    store = store_factory(queue=MANY)
    first = store.submit(spec(shop="pdd-1"))
    on_pdd2 = store.submit(spec(shop="pdd-2"))
    on_temu = store.submit(spec(shop="temu-1"))
    task = store.claim("w")
    assert task is not None and task.id == first
    nxt = store.ack_and_claim(first, "w", exclude_shops=["pdd-2"])
    assert nxt is not None and nxt.id == on_temu
    assert store.task(on_pdd2).state is TaskState.QUEUED


def test_ack_and_claim_never_takes_a_shop_another_worker_runs(
        store_factory: StoreFactory) -> None:
    """One task per shop anywhere: the freed slot does not get a task of a shop that runs
    elsewhere; the acked task's own shop is free again for its next task."""
    store = store_factory()
    first = store.submit(spec(shop="pdd-1"))
    elsewhere = store.submit(spec(shop="pdd-2"))
    same_shop_busy = store.submit(spec(shop="pdd-2"))
    own_shop_next = store.submit(spec(shop="pdd-1"))
    a, b = store.claim("w"), store.claim("w2")
    assert a is not None and b is not None and (a.id, b.id) == (first, elsewhere)
    nxt = store.ack_and_claim(first, "w")
    assert nxt is not None and nxt.id == own_shop_next
    assert store.task(same_shop_busy).state is TaskState.QUEUED
    assert store.ack_and_claim(own_shop_next, "w") is None  # pdd-2 still runs on w2
    assert store.task(own_shop_next).state is TaskState.DONE
    assert store.task(same_shop_busy).state is TaskState.QUEUED


def test_an_ack_with_nothing_claimable_still_acks(store_factory: StoreFactory) -> None:
    store = store_factory(queue=MANY)
    first = store.submit(spec(shop="pdd-1"))
    kept_out = store.submit(spec(shop="pdd-2"))
    store.set_shop_paused("temu-1", True)
    paused = store.submit(spec(shop="temu-1"))
    task = store.claim("w")
    assert task is not None and task.id == first
    assert store.ack_and_claim(first, "w", results={"n": 1},
                               exclude_shops=["pdd-2"]) is None
    assert store.task(first).state is TaskState.DONE
    assert store.task(first).results == {"n": 1}
    assert store.task(kept_out).state is TaskState.QUEUED
    assert store.task(paused).state is TaskState.QUEUED
    assert store.counts()["running"] == 0


def _break_the_claim_half(store: Store, task_id: int, monkeypatch: pytest.MonkeyPatch
                          ) -> Callable[[], None]:
    """Make the claim half of ``ack_and_claim`` fail after it began; returns the repair.
    SQLite: the claim raises after writing its rows. Redis: a queued task's hash holds a
    ``not_before`` that is not a number, so the script's pick raises."""
    if isinstance(store, SqliteStore):
        real = SqliteQueue._op_claim

        def claim_then_fail(self: SqliteQueue, conn: sqlite3.Connection, *a: Any,
                            **kw: Any) -> Any:
            real(self, conn, *a, **kw)
            raise RuntimeError("the claim half broke")

        monkeypatch.setattr(SqliteQueue, "_op_claim", claim_then_fail)
        return monkeypatch.undo
    r: Any = store.client  # type: ignore[attr-defined]
    key = store.keys.task(task_id)  # type: ignore[attr-defined]
    was = r.hget(key, "not_before")
    r.hset(key, "not_before", "not a number")
    return lambda: r.hset(key, "not_before", was)


def test_a_failed_claim_half_never_loses_the_ack(store_factory: StoreFactory,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """The finished task is done with its results (it never runs again because the next
    claim broke); nothing is claimed; the failure is logged; the queue works on."""
    store = store_factory(queue=MANY)
    first, second = store.submit(spec(shop="pdd-1")), store.submit(spec(shop="pdd-2"))
    task = store.claim("w")
    assert task is not None and task.id == first
    repair = _break_the_claim_half(store, second, monkeypatch)
    with caplog.at_level(logging.ERROR):
        assert store.ack_and_claim(first, "w", results={"title": "kept"}) is None
    repair()
    assert "claiming the next task for w failed" in caplog.text
    assert store.task(first).state is TaskState.DONE
    assert store.task(first).results == {"title": "kept"}
    assert [(e.from_state, e.to_state) for e in store.events(second)] == [(None, "queued")]
    assert store.counts()["running"] == 0 and store.counts()["done"] == 1
    nxt = store.claim("w")
    assert nxt is not None and nxt.id == second
