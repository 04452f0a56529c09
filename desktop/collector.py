"""Python's cycle collector runs on the window's thread, never on the engine's.

The console runs the engine on a thread of its own (``core.EngineHost``). Python collects
reference cycles in whichever thread happens to allocate when a threshold is passed; when that
is the engine thread and the cycle holds Qt widgets (a closed dialog and a lambda that refers
to it), the widgets are destroyed there: ``QObject::~QObject`` takes Qt's connection lock and
then waits for the GIL, while the window's thread holds the GIL and waits for that lock in
``QObject::connect``. The console froze that way (seen in a loaded test run: the engine thread
in ``gc_collect_main`` → ``~QObject`` → ``GilState::acquire``, the window's thread in
``QObject::connect``).

So the console turns automatic collection off and collects on a timer of the window's thread,
with the thresholds Python would have used. Cyclic garbage waits at most one tick.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

TICK_MS = 500
"""How often the window's thread looks at the collector's counts."""


class MainThreadCollector(QObject):
    """Collects reference cycles on the thread that made it (the window's), by the same
    generation thresholds as Python's automatic collection, which it turns off."""

    def __init__(self, parent: QObject | None = None, tick_ms: int = TICK_MS) -> None:
        super().__init__(parent)
        self.setObjectName("main-thread-collector")
        self._was_enabled = gc.isenabled()
        gc.disable()
        self.timer = QTimer(self)
        self.timer.setInterval(tick_ms)
        self.timer.timeout.connect(self.check)
        self.timer.start()

    def check(self) -> int:
        """Collect the generation whose threshold is passed (if any); returns what was found."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        generation = -1
        for gen in range(3):
            if thresholds[gen] and counts[gen] > thresholds[gen]:
                generation = gen
        return gc.collect(generation) if generation >= 0 else 0

    def stop(self) -> None:
        """Collect what is left here, and give collection back to Python."""
        self.timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()


def install_collector(app: QObject) -> MainThreadCollector:
    """The application's collector (one per application: a second call returns the first)."""
    found = app.findChild(MainThreadCollector, "main-thread-collector")
    if isinstance(found, MainThreadCollector):
        return found
    return MainThreadCollector(app)
