"""The backlog bound (#18 item 3): ``[queue] max_backlog`` counts every task that waits for a
slot — queued, scheduled for later, suspended — and :meth:`status` shows exactly the count a
submission is refused at, with the scheduled ones and the time the first joins the queue. Both
stores agree (this folder runs once per store)."""

from __future__ import annotations

import pytest

from core.errors import BacklogFull
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import iso, spec


def test_status_shows_the_backlog_the_bound_refuses_at(store_factory: StoreFactory,
                                                      clock: FakeClock) -> None:
    store = store_factory(queue={"max_backlog": 5, "urgent_reserve": 0.0,
                                 "max_tasks_per_shop": 10})
    st = store.status()
    assert (st.backlog, st.scheduled, st.next_scheduled_at) == (0, 0, None)
    a = store.submit(spec("collect_data", "pdd-1"))
    store.submit(spec("collect_data", "pdd-2"))
    at = clock.now() + 3600
    store.submit(spec("collect_data", "temu-1", not_before=iso(at)))
    store.submit(spec("collect_data", "temu-1", not_before=iso(at + 60)))
    claimed = store.claim("w")
    assert claimed is not None and claimed.id == a
    store.release(a, "w", reason="preempted", checkpoint={"next_step": 1}, suspend=True)
    st = store.status()
    assert (st.queued, st.scheduled, st.counts["suspended"]) == (1, 2, 1)
    assert st.backlog == 4 and st.max_backlog == 5
    assert st.next_scheduled_at == at
    assert st.to_json()["backlog"] == 4

    store.submit(spec("collect_data", "tiktok-1", not_before=iso(at)))   # the 5th: fits
    assert store.status().backlog == 5
    with pytest.raises(BacklogFull) as full:                    # the 6th is refused ...
        store.submit(spec("collect_data", "pdd-2"))
    assert full.value.queued == store.status().backlog == 5     # ... at the count shown
    assert "scheduled" in str(full.value)

    clock.advance(3600)                                         # two are due now
    assert store.claim("w") is not None                         # promotes what is due
    st = store.status()
    assert st.scheduled == 1 and st.next_scheduled_at == at + 60
    assert (st.queued, st.backlog) == (3, 4)                    # one left for a slot
