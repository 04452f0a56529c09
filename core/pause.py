"""Pause all: this engine starts no more tasks until resumed; running tasks finish.

The operator's "pause all / resume all" switch. It is the browser pool's breaker tripped by
hand — the engine already claims nothing while that breaker is open, and a breaker tripped by
hand never probes or closes by itself — so pausing needs no second mechanism, is visible in
the breakers table ("Browser pool: tripped, by hand") and in :meth:`Engine.statistics`, and
is undone only by the operator (resume all, or resetting that breaker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import Changes

if TYPE_CHECKING:
    from .engine import Engine, EngineStatistics

POOL_BREAKER = "*pool*"


async def pause_all(engine: Engine, paused: bool = True) -> Changes:
    """Stop (``paused``) or restart claiming on ``engine``; running tasks are not touched."""
    return await engine.set_breaker(POOL_BREAKER, "open" if paused else "closed")


def all_paused(stats: EngineStatistics) -> bool:
    """Whether the engine of this statistics snapshot is paused by :func:`pause_all`."""
    return any(b.name == POOL_BREAKER and b.manual and b.state.value == "open"
               for b in stats.breakers)
