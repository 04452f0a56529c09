"""``status()`` reads indexes only (#20): the console's metrics call it every second, and
``shopfleet status`` on a deep queue must not walk every scheduled or queued row."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from core.config import Settings
from core.store import SqliteStore
from core.store.sqlite import sql
from core.testing import FakeClock
from tests.helpers import spec


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def test_the_first_scheduled_time_is_one_probe_of_the_scheduled_index(tmp_path: Path) -> None:
    clock = FakeClock(1_800_000_000.0)
    store = SqliteStore(tmp_path / "q.db", settings=Settings(), clock=clock)
    try:
        store.add_shop("pdd-1", platform="pdd", base_url="https://pdd-1.shopfleet.test/")
        later = [clock.now() + s for s in (7200, 60, 3600, 61)]
        for at in later:  # not in time order: the first to come is the 2nd submitted
            store.submit(spec("collect_data", "pdd-1", not_before=_iso(at)))
        store.submit(spec("collect_data", "pdd-1"))
        st = store.status()
        assert (st.scheduled, st.queued, st.next_scheduled_at) == (4, 1, min(later))
        conn = store._reader()
        plan = " ".join(str(r[3]) for r in conn.execute(
            "EXPLAIN QUERY PLAN " + sql.NEXT_SCHEDULED))
        assert "tasks_scheduled" in plan and "tasks_state" not in plan, plan
    finally:
        store.close()
