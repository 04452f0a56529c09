"""The step runner's state and plumbing (the bottom layer of :func:`~core.flows.run_flow`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import TaskError
from .evidence import redact_text
from .models import Flow, Step
from .placeholders import resolve
from .records import Checkpoint, ShopInfo, StepEvent, StepStatus

MAX_CONSOLE_LINES = 2000


class Fail(Exception):
    """A failure the runner classified itself (wraps the TaskError to raise)."""

    def __init__(self, error: TaskError) -> None:
        super().__init__(str(error))
        self.error = error


class RunState:
    """One run's state and the plumbing every layer uses: the page's listeners, placeholders,
    the step's time budget, the rate gate, checkpoint saves and the step log.

    The runner is built in layers, each a subclass of the one before: this state,
    :class:`~core.flows.guards.OriginGuards`, :class:`~core.flows.failures.FailureClassifier`,
    :class:`~core.flows.actions.PageActions`, and the loop in :mod:`core.flows.runner`. A
    layer calls only what it or the layers below define.
    """

    def __init__(self, page: Any, flow: Flow, *, params: Mapping[str, Any], shop: ShopInfo,
                 save_checkpoint: Callable[[Checkpoint], Awaitable[None]], evidence_dir: Path,
                 step_timeout_s: float, before_network: Callable[[str], Awaitable[None]] | None,
                 on_step: Callable[[StepEvent], None] | None,
                 should_yield: Callable[[], bool] | None, human_markers: tuple[str, ...],
                 asset_dirs: list[Path]) -> None:
        self.page = page
        self.flow = flow
        self.params = params
        self.shop_values = shop.placeholder_values()
        self.secrets = [shop.password] if shop.password else []
        self.policy = shop.policy()
        self.violation: str | None = None
        self.typed_into: list[str] = []
        self._closing: set[asyncio.Future[Any]] = set()
        self._route: tuple[Any, Any, Any] | None = None
        self._watching = False
        self.marker_snapshot: dict[str, bool] | None = None
        """The human markers the page showed, read with the window record after the step
        (:meth:`~core.flows.guards.OriginGuards.check_windows`); used once."""
        self.popups_seen = 0
        self.popups_expected = 0
        self._popup_seen: asyncio.Event | None = None
        self.save_checkpoint = save_checkpoint
        self.evidence_dir = evidence_dir
        self.step_timeout_s = step_timeout_s
        self.before_network = before_network
        self.on_step = on_step
        self.should_yield = should_yield
        self.human_markers = human_markers
        self.asset_dirs = asset_dirs
        self.console: list[str] = []
        self.crashed = False
        self.bad_document: tuple[int, dict[str, str], str] | None = None
        self.log: list[StepEvent] = []
        self.results: dict[str, Any] = {}
        self.writes_done: list[int] = []
        self.in_flight: int | None = None
        self.saved: Checkpoint | None = None
        self.deadline = 0.0
        self.timer: asyncio.Timeout | None = None
        self.grace_s = 0.0
        self.step_retries = 0
        self.step_retry_wait_s = 1.0
        self.retried = 0
        self._pending: asyncio.Future[None] | None = None
        self._listeners: list[tuple[str, Callable[..., None]]] = []

    def listeners(self) -> list[tuple[str, Callable[..., None]]]:
        """The page events this layer listens to (each layer adds its own)."""
        return [("console", self._on_console), ("pageerror", self._on_pageerror),
                ("crash", self._on_crash)]

    def attach(self) -> None:
        self._listeners = self.listeners()
        for event, fn in self._listeners:
            self.page.on(event, fn)

    def detach(self) -> None:
        for event, fn in self._listeners:
            # A closed page may refuse; nothing is left to listen to anyway.
            with contextlib.suppress(Exception):
                self.page.remove_listener(event, fn)

    def _on_console(self, msg: Any) -> None:
        if len(self.console) < MAX_CONSOLE_LINES:
            self.console.append(f"{msg.type}: {msg.text}")

    def _on_pageerror(self, err: Any) -> None:
        if len(self.console) < MAX_CONSOLE_LINES:
            self.console.append(f"pageerror: {err}")

    def _on_crash(self, _page: Any) -> None:
        self.crashed = True

    def r(self, value: str) -> str:
        return resolve(value, self.params, self.shop_values)

    def redact(self, text: str) -> str:
        return redact_text(text, self.secrets)

    def ms(self) -> float:
        """Milliseconds left of the current step's time."""
        return max(1.0, (self.deadline - asyncio.get_running_loop().time()) * 1000)

    async def untimed(self, aw: Awaitable[None]) -> None:
        """Await something that must not count against the step's timeout (gate, checkpoint)."""
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        if self.timer is not None:
            self.timer.reschedule(None)
        try:
            await aw
        finally:
            self.deadline += loop.time() - t0
            if self.timer is not None:
                self.timer.reschedule(self.deadline + self.grace_s)

    async def gate(self, url: str) -> None:
        if self.before_network is not None:
            await self.untimed(self.before_network(url))

    def checkpoint(self, next_step: int) -> Checkpoint:
        return Checkpoint(next_step=next_step, results=dict(self.results),
                          writes_done=list(self.writes_done), write_in_flight=self.in_flight)

    async def save(self, cp: Checkpoint, *, durable: bool = True) -> None:
        """Record a checkpoint. ``durable``: await the store (before a write step acts, when
        yielding). Otherwise the save runs in the background, in order after the ones before
        it: a checkpoint after a read step only spares replay work, and a crash that loses it
        costs a replayed step, never a repeated write (the write's own in-flight checkpoint
        is always durable first)."""
        self.saved = cp
        prev = self._pending
        if durable:
            self._pending = None
            if prev is not None:
                await self.untimed(prev)
            await self.untimed(self.save_checkpoint(cp))
            return

        async def later() -> None:
            if prev is not None:
                await prev
            await self.save_checkpoint(cp)

        self._pending = asyncio.ensure_future(later())

    async def flush(self) -> None:
        """Wait for background checkpoint saves (their errors, e.g. a lost lease, surface)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await self.untimed(pending)

    async def flush_quietly(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(pending), 10)

    def emit(self, index: int | None, step: Step | None, status: StepStatus,
             duration_ms: int = 0, error: str | None = None) -> None:
        action = getattr(step, "action", "navigate") if step is not None else "navigate"
        name = step.name if step is not None else "start_url"
        event = StepEvent(index, action, name, status, duration_ms, error)
        if status != "started":
            self.log.append(event)
        if self.on_step is not None:
            self.on_step(event)

    def wants_yield(self, step: Step) -> bool:
        return bool(step.interruptible and self.should_yield is not None and self.should_yield())
