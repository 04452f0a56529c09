"""Fakes for fast tests and demos, shipped with core so desktop tests use the same ones."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():  # it may have been cancelled since
        fut.set_result(None)


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
        self._move_to(self._now + seconds)

    def set(self, when: float) -> None:
        """Move time forward to exactly ``when`` (no float drift from adding differences)."""
        self._move_to(max(self._now, when))

    def _move_to(self, when: float) -> None:
        self._now = when
        due = [s for s in self._sleepers if s[0] <= self._now]
        self._sleepers = [s for s in self._sleepers if s[0] > self._now]
        for _, fut in due:
            if not fut.done():
                fut.get_loop().call_soon_threadsafe(_wake, fut)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + seconds, fut))
        await fut

    def next_wakeup(self) -> float | None:
        """When the earliest sleeper wakes, or ``None`` if nobody sleeps on this clock."""
        live = [when for when, f in self._sleepers if not f.done()]
        return min(live) if live else None

    @property
    def sleepers(self) -> int:
        """How many coroutines are sleeping on this clock (lets tests wait for quiescence)."""
        return sum(1 for _, f in self._sleepers if not f.done())


async def drive[T](clock: FakeClock, aw: Awaitable[T], *, max_steps: int = 1_000_000) -> T:
    """Run ``aw`` to completion, advancing the fake clock whenever every coroutine sleeps on it.

    Lets a test run an hour of gate or breaker behaviour instantly. Only for code that waits on
    the clock alone (no threads): the clock jumps as soon as the loop has nothing else to do.
    """
    task = asyncio.ensure_future(aw)
    steps = 0
    while not task.done():
        for _ in range(5):
            await asyncio.sleep(0)
            if task.done():
                break
        if task.done():
            break
        due = clock.next_wakeup()
        if due is None:
            await asyncio.sleep(0.001)
        else:
            clock.set(due)
        steps += 1
        if steps > max_steps:
            task.cancel()
            raise RuntimeError("drive: too many steps")
    return task.result()


_TICKS = itertools.count()
"""Orders every FakeExecutor's execution spans in one sequence (see ``FakeExecutor.spans``)."""


class FakeExecutor:
    """A scripted executor for engine tests: a task's ``params`` say what happens.

    ``params["fake"]``: ``ok`` (default), ``site_failed``, ``page_changed``, ``needs_human``,
    ``crash``, ``rate_limited:SECONDS``; ``params["requests"]``: gate tokens taken (default 1);
    ``params["steps"]``: steps of ``params["step_s"]`` real seconds each, yielding between them
    when asked (default 1 step, 0 s; ``params["ignore_yield"]`` never yields, like a wedged
    page; ``params["until_preempted"]``: N (or true: 1) — attempts keep stepping, whatever
    ``steps`` says, until the task has yielded N times; ``params["until_released"]``: keeps
    stepping until a test calls :meth:`release`). Records the start order, per-shop
    concurrency, which attempts resumed, which were asked to yield (``asked_to_yield``, even
    when they ignore it) and each execution's span.
    """

    def __init__(self) -> None:
        self.asked_to_yield: list[int] = []
        self.released: set[int] = set()
        self.spans: list[tuple[int, str, int, int]] = []
        """``(task id, shop, start, end)`` per execution; start and end are ticks of one
        counter shared by every FakeExecutor in the process, so spans from several engines
        are ordered against each other without a clock (one shop's must never overlap)."""
        self.started: list[int] = []
        self.running_by_shop: dict[str, int] = {}
        self.max_by_shop: dict[str, int] = {}
        self.live = 0
        self.max_live = 0
        self.yielded: list[int] = []
        self.resumed_from: list[tuple[int, int]] = []
        self.finished: list[int] = []

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def resources(self) -> dict[str, int]:
        return {"browsers": 0, "contexts": self.live}

    def release(self, task_id: int) -> None:
        """Let an ``until_released`` task finish its steps."""
        self.released.add(task_id)

    def _held(self, task_id: int, p: dict[str, Any]) -> bool:
        if p.get("until_released") and task_id not in self.released:
            return True
        wanted = int(p.get("until_preempted") or 0)
        return self.yielded.count(task_id) < wanted

    async def execute(self, task: Any, ctl: Any) -> Any:
        from ..engine import Outcome
        from ..errors import (
            BrowserCrashed,
            NeedsHuman,
            NetworkDown,
            PageChanged,
            RateLimited,
            SiteFailed,
            TaskError,
        )

        begun = next(_TICKS)
        self.started.append(task.id)
        if task.checkpoint:
            self.resumed_from.append((task.id, int(task.checkpoint.get("next_step", 0))))
        shop = task.shop
        self.running_by_shop[shop] = self.running_by_shop.get(shop, 0) + 1
        self.max_by_shop[shop] = max(self.max_by_shop.get(shop, 0), self.running_by_shop[shop])
        self.live += 1
        self.max_live = max(self.max_live, self.live)
        try:
            p = task.params
            for _ in range(int(p.get("requests", 1))):
                await ctl.gate()
            steps = int(p.get("steps", 1))
            start = int((ctl.last_checkpoint or {}).get("next_step", 0))
            for i in itertools.count(start):
                if i >= steps and not self._held(task.id, p):
                    break
                if ctl.should_yield() and task.id not in self.asked_to_yield:
                    self.asked_to_yield.append(task.id)
                if ctl.should_yield() and not p.get("ignore_yield"):
                    self.yielded.append(task.id)
                    return Outcome("yielded", checkpoint={"next_step": i})
                await asyncio.sleep(float(p.get("step_s", 0)))
                await ctl.checkpoint({"next_step": i + 1})
            kind, _, arg = str(p.get("fake", "ok")).partition(":")
            errors: dict[str, Callable[[], Exception]] = {
                "site_failed": lambda: SiteFailed("HTTP 503 from the site"),
                "page_changed": lambda: PageChanged("locator #submit-btn matched nothing"),
                "needs_human": lambda: NeedsHuman("CAPTCHA on the page"),
                "crash": lambda: BrowserCrashed("the renderer crashed"),
                "rate_limited": lambda: RateLimited("HTTP 429", retry_after_s=float(arg or 30),
                                                    domain=task.domain),
                "network_down": lambda: NetworkDown(
                    f"Page.goto: net::ERR_NAME_NOT_RESOLVED at https://{task.domain}/"),
                "task_error": lambda: TaskError("the flow's own mistake"),
            }
            if kind in errors:
                raise errors[kind]()
            self.finished.append(task.id)
            return Outcome("done", {"shop": shop})
        finally:
            self.running_by_shop[shop] -= 1
            self.live -= 1
            self.spans.append((task.id, shop, begun, next(_TICKS)))
