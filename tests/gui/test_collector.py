"""Reference cycles holding Qt objects are collected on the window's thread, never on the
engine's (``desktop.collector``; a loaded test run deadlocked in ``QObject::~QObject`` called
from the engine thread's garbage collection)."""

from __future__ import annotations

import gc
import threading
from typing import Any, ClassVar

import pytest
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication

from desktop.collector import MainThreadCollector, install_collector

pytestmark = pytest.mark.gui


N = 2000
"""Cycles made at once: more than the youngest generation's threshold (700)."""


class Cyclic(QObject):
    """A QObject in a reference cycle that notes the thread its Python side dies on."""

    died_on: ClassVar[list[str]] = []

    def __init__(self) -> None:
        super().__init__()
        self.me = self                     # the cycle: only the collector can free it

    def __del__(self) -> None:
        Cyclic.died_on.append(threading.current_thread().name)


def churn_in_a_thread(enable_gc: bool = False) -> None:
    """Allocate container objects in another thread, well past every gc threshold: with
    automatic collection on, the cycles would be collected (and the QObject destroyed) here."""
    def churn() -> None:
        if enable_gc:
            gc.enable()                    # Python's automatic collection, as without us
        keep = []
        for i in range(200_000):
            keep.append([i])
            if len(keep) > 1000:
                keep.clear()
    t = threading.Thread(target=churn, name="engine-like")
    t.start()
    t.join()


def test_cycles_with_qobjects_die_on_the_windows_thread(qtbot: Any,
                                                        main_thread_collector: Any) -> None:
    Cyclic.died_on.clear()
    assert not gc.isenabled()             # the console's state: no collection in other threads
    for _ in range(N):
        Cyclic()                           # garbage at once, in a cycle
    churn_in_a_thread()
    assert Cyclic.died_on == []            # nothing was collected in the other thread
    qtbot.waitUntil(lambda: len(Cyclic.died_on) == N)    # the window's timer collected them
    assert set(Cyclic.died_on) == {threading.main_thread().name}


def test_without_it_the_other_thread_collects(qtbot: Any,
                                             main_thread_collector: MainThreadCollector) -> None:
    """The control: with Python's automatic collection on, the churning thread is where the
    cycles die — the hazard the collector removes."""
    Cyclic.died_on.clear()
    for _ in range(N):
        Cyclic()                           # made while collection is off (the collector's)
    main_thread_collector.timer.stop()
    churn_in_a_thread(enable_gc=True)
    assert "engine-like" in Cyclic.died_on


def test_the_application_has_one_collector() -> None:
    app = QApplication.instance()
    assert app is not None
    first = install_collector(app)
    try:
        assert install_collector(app) is first
    finally:
        first.stop()
        first.setParent(None)
        first.deleteLater()
