"""Time, injected: everything that waits or ages asks a :class:`Clock`.

The real clock is wall time (``time.time``) because queue times are stored and compared across
processes and restarts. Tests use :class:`FakeClock` (in :mod:`core.testing`), which moves only
when told, so an hour of aging or breaker behaviour takes a millisecond.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What time is it, and wait a while."""

    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop."""
        ...


class SystemClock:
    """Wall-clock time and real sleeping."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        import asyncio  # here: a command that never sleeps does not import asyncio (#20)

        await asyncio.sleep(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()
