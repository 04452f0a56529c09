"""Fakes for fast tests and demos, shipped with core so desktop tests use the same ones."""

from __future__ import annotations

import asyncio


class FakeClock:
    """A clock that moves only when told. ``sleep`` waits until the clock is advanced past it.

    Args:
        start: the initial time, seconds since the epoch (default: 2026-01-01T00:00:00Z).
    """

    def __init__(self, start: float = 1_767_225_600.0) -> None:
        self._now = float(start)
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose time has come."""
        if seconds < 0:
            raise ValueError("time does not go backwards")
        self._now += seconds
        due = [s for s in self._sleepers if s[0] <= self._now]
        self._sleepers = [s for s in self._sleepers if s[0] > self._now]
        for _, fut in due:
            if not fut.done():
                fut.get_loop().call_soon_threadsafe(fut.set_result, None)

    def set(self, when: float) -> None:
        self.advance(max(0.0, when - self._now))

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + seconds, fut))
        await fut

    @property
    def sleepers(self) -> int:
        """How many coroutines are sleeping on this clock (lets tests wait for quiescence)."""
        return sum(1 for _, f in self._sleepers if not f.done())
