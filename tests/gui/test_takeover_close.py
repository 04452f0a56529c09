"""Closing a takeover from the window (:class:`desktop.takeover.OpenTakeover`), the two paths
the real-browser tests do not reach: a close that comes before the takeover's own loop has
started, and a browser that does not close within the console's wait when it quits."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from desktop import takeover as mod

pytestmark = pytest.mark.gui


_REAL_THREAD = threading.Thread


class _HeldThread(_REAL_THREAD):
    """A thread whose start waits until the test lets it (``started_by_test``)."""

    started_by_test = threading.Event()

    def start(self) -> None:
        def later() -> None:
            _HeldThread.started_by_test.wait(60)
            _REAL_THREAD.start(self)
        _REAL_THREAD(target=later, daemon=True).start()


def test_a_close_before_the_takeover_loop_starts_never_opens_the_browser(
        monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    async def make() -> Any:
        opened.append("browser")   # what core's takeover would do first
        return None

    monkeypatch.setattr(mod, "threading", SimpleNamespace(Thread=_HeldThread,
                                                         Lock=threading.Lock))
    _HeldThread.started_by_test.clear()
    t = mod.OpenTakeover("shop pdd-1", make)
    t.close()                      # its loop does not exist yet: nothing to cancel on it
    _HeldThread.started_by_test.set()
    with pytest.raises(asyncio.CancelledError):
        t.future.result(60)
    assert opened == []            # the close was remembered: the browser never opened
    assert t.done


def _running(t: mod.OpenTakeover) -> None:
    """Wait until the takeover's coroutine runs on its own loop (an event, polled)."""
    for _ in range(6000):
        if t._task is not None:
            return
        threading.Event().wait(0.01)
    raise AssertionError("the takeover never started")


def test_quitting_closes_an_open_takeover_and_waits_for_it() -> None:
    """The browser closes when asked (core's ``finally`` saves the session and gives the shop
    back): the console's wait ends as soon as it has."""
    closed: list[str] = []

    async def polite() -> Any:
        try:
            await asyncio.sleep(3600)
        finally:
            closed.append("session saved, shop given back")
        return None

    a = mod.OpenTakeover("shop pdd-1", polite)
    said: list[str] = []
    w = SimpleNamespace(takeovers=[a], status_message=said.append)
    _running(a)
    assert mod.open_takeovers(w) == [a]
    assert asyncio.run(mod.close_takeovers(w, wait_s=120)) == []
    assert closed == ["session saved, shop given back"] and a.done
    assert said and "pdd-1" in said[0]
    assert mod.open_takeovers(w) == []
    assert asyncio.run(mod.close_takeovers(w, wait_s=120)) == []   # nothing open: no wait


def test_a_takeover_that_does_not_close_in_time_is_named() -> None:
    """A browser that hangs: the console's wait ends at ``wait_s`` and names the takeover,
    so the window can say that its hold runs out on its own."""
    let_go = threading.Event()

    async def stuck() -> Any:
        while True:   # cancellation is swallowed until the test lets it end
            try:
                await asyncio.to_thread(let_go.wait, 60)
                return None
            except asyncio.CancelledError:
                continue

    b = mod.OpenTakeover("ticket #7", stuck)
    w = SimpleNamespace(takeovers=[b], status_message=lambda _text: None)
    _running(b)
    try:
        assert asyncio.run(mod.close_takeovers(w, wait_s=0.5)) == ["ticket #7"]
        assert not b.done and mod.open_takeovers(w) == [b]
    finally:
        let_go.set()
        b.future.result(60)
    assert mod.open_takeovers(w) == []
