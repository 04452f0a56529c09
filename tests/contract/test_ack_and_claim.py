"""Ack and the next claim in one call (#20): the same rows as an ack followed by a claim, on
every store; a lost lease claims nothing."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import LeaseLost
from core.export import ResultFilter
from core.store import TaskState
from core.store.base import Store
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
