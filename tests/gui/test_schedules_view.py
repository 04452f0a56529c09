"""#18 the console's Schedules view: next runs in each schedule's own zone, paused greyed, a
failed one red with its error, and pause / resume / run now / delete acting on the store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from PySide6.QtCore import Qt

from core import ScheduleFailed, SqliteStore
from core.schedules import define_schedule
from desktop import palette
from desktop.models import Reader
from desktop.schedules_view import SchedulesView
from tests.gui.conftest import Run

pytestmark = pytest.mark.gui

TEMPLATE = {"type": "collect_data", "flow": "collect_data", "params": {"page": 1}}
NOW = datetime(2026, 3, 7, 12, 0, tzinfo=UTC).timestamp()


def _cell(view: SchedulesView, name: str, column: str, role: Any = None) -> Any:
    m = view.model
    c = [col.key for col in m.columns].index(column)
    idx = m.index(m.row_of(name), c)
    return idx.data(role if role is not None else Qt.ItemDataRole.DisplayRole)


def _select(view: SchedulesView, name: str) -> None:
    view.panel.select_ids([name])


def test_the_view_lists_acts_and_follows_events(store: SqliteStore, run: Run,
                                                qtbot: Any) -> None:
    for name, tz, cron in (("morning-sh", "Asia/Shanghai", "0 8 * * *"),
                           ("morning-ny", "America/New_York", "0 8 * * *")):
        s = define_schedule(name, cron=cron, tz=tz, shops="*", task=TEMPLATE)
        store.add_schedule(name, s.to_dict(), mark=NOW)
    reader = Reader()
    view = SchedulesView(store, reader, now=lambda: NOW)
    qtbot.addWidget(view)
    try:
        run(view.refresh())
        # next runs in each schedule's own zone (New York springs forward on 8 March)
        assert _cell(view, "morning-sh", "next").startswith("2026-03-08 08:00 CST")
        assert _cell(view, "morning-ny", "next").split("  ·  ")[:2] == [
            "2026-03-07 08:00 EST", "2026-03-08 08:00 EDT"]
        assert _cell(view, "morning-sh", "name", Qt.ItemDataRole.ForegroundRole) is None
        _select(view, "morning-sh")
        assert view.buttons["pause"].isEnabled() and not view.buttons["resume"].isEnabled()
        assert run(view.perform("pause", "morning-sh")) == "schedule morning-sh paused"
        assert store.schedule_record("morning-sh").paused
        assert _cell(view, "morning-sh", "next") == "paused"
        grey = _cell(view, "morning-sh", "name", Qt.ItemDataRole.ForegroundRole)
        assert grey is not None and grey.color() == palette.signal("muted")
        run(view.perform("resume", "morning-sh"))
        assert not store.schedule_record("morning-sh").paused
        done = run(view.perform("run_now", "morning-ny"))
        assert done.endswith(f"{len(store.shops())} task(s)")
        assert all((t.key or "").startswith("sched:morning-ny:") for t in store.tasks())
        # a failure reported by the engine: the view redraws with the error in red
        store.set_schedule_state("morning-ny", paused=True, last_error="no flow named 'x'")
        view.show()
        view.on_event(ScheduleFailed(NOW, "morning-ny", "no flow named 'x'"))
        run.until(lambda: _cell(view, "morning-ny", "error") == "no flow named 'x'")
        red = _cell(view, "morning-ny", "name", Qt.ItemDataRole.ForegroundRole)
        assert red is not None and red.color() == palette.signal("error")
        run(view.perform("delete", "morning-ny"))
        assert [r.name for r in store.schedules()] == ["morning-sh"]
        assert view.model.row_of("morning-ny") < 0
        # an action that fails says why and leaves the view usable
        assert "no schedule named" in run(view.perform("pause", "gone"))
    finally:
        reader.close()
