"""#15 item 8: the detail pane as plain text with true waited times, one step numbering,
the window kept on a visible screen, closing that asks, and dialogs that keep their input
when core refuses it."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox

from core import Changes, Engine, InvalidInput, Refused, SqliteStore, TaskSpec, task_detail
from desktop import columns as C
from desktop import operations
from desktop.detail import waited_s
from desktop.inflight import InFlightRow
from tests.gui.conftest import Run
from tests.gui.test_console import pause_all_but, quick, trigger

pytestmark = pytest.mark.gui


def test_detail_is_plain_text_with_no_stale_error_and_a_true_wait(
        console: Any, run: Run, store: SqliteStore) -> None:
    store.add_shop("x<i>y", platform="pdd", base_url="https://pdd.example/x", username="u")
    store.update_shop("x<i>y", password_enc=b"x")  # (a placeholder: nothing decrypts it here)
    tid = store.submit(quick("x<i>y"))
    c = store.claim("w")
    assert c is not None and c.id == tid
    store.fail(tid, "w", error_class="<b>odd</b>", message="price < 0 <script>", retry=False)
    d = task_detail(store, tid)
    console.detail.show_detail(d)
    text = console.detail.header.text()
    assert "x&lt;i&gt;y" in text and "<i>" not in text        # the shop's name, as text
    assert "&lt;b&gt;odd" in text or "odd" not in text           # the headline escaped too
    # A done task shows no old error.
    t2 = store.submit(quick("x<i>y"))
    c = store.claim("w")
    assert c is not None and c.id == t2
    store.ack(t2, "w")
    console.detail.show_detail(task_detail(store, t2))
    assert "color:" not in console.detail.header.text()
    # Waited: from queued to claimed; still queued: to now.
    pause_all_but(store)
    t3 = store.submit(quick("pdd-1"))
    rec = store.task(t3)
    assert waited_s(rec, now=rec.created_at + 519) == 519       # 8m 39s, not 0 s
    done = store.task(t2)
    assert waited_s(done, now=done.created_at + 10_000) == pytest.approx(
        done.started_at - done.created_at)


def test_in_flight_step_is_one_based_and_never_past_the_last() -> None:
    col = next(c for c in C.IN_FLIGHT if c.key == "step")
    row = InFlightRow(id=1, type="t", shop="s", platform="p", domain="d", step=0, steps=7,
                      step_name="", browser_id=None, started_at=0.0, score=0.0,
                      preemptible=True)
    assert col.show(row) == "1 of 7"
    from dataclasses import replace
    assert col.show(replace(row, step=7)) == "7 of 7"        # not "8 of 7"


def test_window_restored_off_screen_comes_back_on_the_primary_screen(
        console: Any, run: Run) -> None:
    area = QGuiApplication.primaryScreen().availableGeometry()
    console.resize(area.width() + 900, area.height() + 700)   # saved on a bigger monitor
    console.move(area.right() + 3000, area.bottom() + 2000)   # that is gone now
    console.save_layout()
    console._restore_layout()
    frame = console.frameGeometry()
    least = console.minimumSizeHint()
    # Fitted to the screen (down to the window's least size, which fits 1024×600)…
    assert least.width() <= 1024 and least.height() <= 600, least
    assert console.width() <= max(area.width(), least.width())
    assert console.height() <= max(area.height(), least.height())
    # …and on it: its top-left corner (title bar, menus) is on the screen.
    assert area.contains(frame.topLeft()), (area, frame)


def test_closing_asks_stop_keep_or_cancel(window: Any, run: Run) -> None:
    box = window.ask_close()
    texts = [b.text() for b in box.buttons()]
    assert any("Stop automation and quit" in t for t in texts)
    assert any("Keep running" in t for t in texts)
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert window.isVisible() and not window._closing
    box = window.ask_close()
    keep = next(b for b in box.buttons() if "Keep running" in b.text())
    keep.click()
    run.until(lambda: window.isMinimized() or not window.isVisible())
    assert not window._closing and window.ctx.host._thread.is_alive()   # automation goes on
    window.showNormal()
    box = window.ask_close()
    next(b for b in box.buttons() if "Stop automation" in b.text()).click()
    run.until(lambda: window._closed, timeout_ms=30_000)


async def refusing_submit(engine: Engine, specs: list[TaskSpec]) -> list[int]:
    raise Refused("the backlog is full (1,000,000 queued)")


async def refusing_gate(engine: Engine, name: str, rate: float, burst: float) -> Changes:
    raise InvalidInput("rate_per_s", "must be at most 50 for this site")


def test_submit_and_gate_dialogs_keep_their_input_on_refusal(
        window: Any, run: Run, store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operations, "submit", refusing_submit)
    monkeypatch.setattr(operations, "set_gate_rate", refusing_gate)
    run.until(lambda: hasattr(window, "choices"))
    trigger(window, "submit")
    dlg = window.dialog
    dlg.type.setCurrentText("collect_data")
    dlg.count.setValue(3)
    dlg.accept()
    run.until(lambda: "backlog is full" in dlg.error.text())
    assert dlg.isVisible() and dlg.count.value() == 3
    dlg.reject()
    trigger(window, "gate_rate")
    gate = window.dialog
    assert gate.rate.minimum() > 0 and gate.burst.minimum() >= 1   # no 0 where 0 is invalid
    gate.rate.setValue(80)
    gate.accept()
    run.until(lambda: "rate_per_s" in gate.error.text())
    assert gate.isVisible() and gate.rate.value() == 80
    gate.reject()
