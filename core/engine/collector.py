"""Short garbage-collector pauses while an engine runs (#20: the loop's lag).

A full (oldest-generation) collection walks every container object the process holds; at
start-up that is tens of thousands (modules, settings models, SQL, the pool) and walking them
stalls whatever loop is running: measured, the no-op engine's worst loop lags (p99 25-36 ms
at 64-256 slots) were full collections, not engine code. Objects alive when the first engine
starts are, almost all, alive until the process ends, so they are frozen out of the collector
(:func:`gc.freeze`) while any engine runs; a full collection then walks only what was made
since. When the last engine stops they are handed back (:func:`gc.unfreeze`), so garbage
among them is collected as before — nothing is kept for longer than the engines run.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_running = 0


def engine_started() -> None:
    """The first running engine freezes what is alive (garbage among it waits for the
    unfreeze: a full collection here would be the very pause this avoids)."""
    global _running
    with _lock:
        _running += 1
        if _running == 1:
            gc.freeze()


def engine_stopped() -> None:
    """The last engine to stop unfreezes: the collector sees everything again."""
    global _running
    with _lock:
        if _running == 0:
            return
        _running -= 1
        if _running == 0:
            gc.unfreeze()


def engines_running() -> int:
    """How many engines hold the freeze (for tests)."""
    return _running
