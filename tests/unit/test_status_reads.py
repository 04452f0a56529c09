"""``status()`` reads indexes only (#20): the console's metrics call it every second, and
``shopfleet status`` on a deep queue must not walk every scheduled or queued row."""

from __future__ import annotations

from core.store.sqlite import sql
from core.testing import FakeClock
from tests.conftest import StoreFactory
from tests.helpers import iso, spec


def test_the_first_scheduled_time_is_one_probe_of_the_scheduled_index(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    later = [clock.now() + s for s in (7200, 60, 3600, 61)]
    for at in later:  # not in time order: the first to come is the 2nd submitted
        store.submit(spec("collect_data", "pdd-1", not_before=iso(at)))
    store.submit(spec("collect_data", "pdd-1"))
    st = store.status()
    assert (st.scheduled, st.queued, st.next_scheduled_at) == (4, 1, min(later))
    conn = store._reader()
    plan = " ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql.NEXT_SCHEDULED))
    assert "tasks_scheduled" in plan and "tasks_state" not in plan, plan
