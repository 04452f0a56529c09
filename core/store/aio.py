"""The store for async code: every call runs on the writer or a worker thread, never the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import BacklogFull
from ..specs import TaskSpec
from .records import ClaimedTask, QueueStatus, TaskRecord, TaskState
from .sqlite import SqliteStore


class AsyncStore:
    """Awaitable twins of :class:`SqliteStore`'s methods.

    Writes are queued to the writer thread and awaited through ``asyncio.wrap_future``; reads
    run in the default thread pool (each thread has its own reader connection).
    """

    def __init__(self, store: SqliteStore) -> None:
        self.sync = store

    async def submit_many(self, specs: Sequence[TaskSpec], *, wait: bool = True,
                          timeout_s: float | None = None) -> list[int]:
        """Submit a batch; when the backlog is full, wait for room (backpressure) unless
        ``wait`` is false. Nothing already queued is dropped to make room."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while True:
            try:
                return await asyncio.to_thread(self.sync.submit_many, specs)
            except BacklogFull:
                if not wait or (deadline is not None and loop.time() >= deadline):
                    raise
                left = 0.5 if deadline is None else max(0.0, min(0.5, deadline - loop.time()))
                # Claims in this process wake us at once; other processes' claims within 0.5 s.
                await asyncio.to_thread(self.sync.wait_for_room, left)

    async def submit(self, spec: TaskSpec, *, wait: bool = True) -> int:
        return (await self.submit_many([spec], wait=wait))[0]

    async def claim(self, owner: str, *, exclude_domains: Iterable[str] = (),
                    lease_s: float | None = None) -> ClaimedTask | None:
        op = self.sync.claim_op(owner, exclude_domains=exclude_domains, lease_s=lease_s)
        result: ClaimedTask | None = await asyncio.wrap_future(self.sync.submit_op(op))
        return result

    async def ack(self, task_id: int, owner: str, *,
                  results: dict[str, Any] | None = None) -> None:
        await asyncio.wrap_future(self.sync.submit_op(
            self.sync.ack_op(task_id, owner, results=results)))
        self.sync._room_freed()

    async def fail(self, task_id: int, owner: str, *, error_class: str, message: str,
                   retry: bool = True, retry_after_s: float | None = None,
                   evidence: dict[str, str] | None = None) -> TaskState:
        state: TaskState = await asyncio.wrap_future(self.sync.submit_op(self.sync.fail_op(
            task_id, owner, error_class=error_class, message=message, retry=retry,
            retry_after_s=retry_after_s, evidence=evidence)))
        return state

    async def save_checkpoint(self, task_id: int, owner: str, checkpoint: dict[str, Any]) -> None:
        await asyncio.wrap_future(self.sync.submit_op(
            self.sync.checkpoint_op(task_id, owner, checkpoint)))

    async def release(self, task_id: int, owner: str, *, reason: str = "released",
                      checkpoint: dict[str, Any] | None = None, suspend: bool = False) -> None:
        await asyncio.wrap_future(self.sync.submit_op(self.sync.release_op(
            task_id, owner, reason=reason, checkpoint=checkpoint, suspend=suspend)))

    async def renew_lease(self, task_id: int, owner: str) -> float:
        return await asyncio.to_thread(self.sync.renew_lease, task_id, owner)

    async def recover_expired(self) -> list[int]:
        return await asyncio.to_thread(self.sync.recover_expired)

    async def bump(self, task_id: int, *, to: float | None = None,
                   by: float | None = None) -> float:
        return await asyncio.to_thread(self.sync.bump, task_id, to=to, by=by)

    async def cancel(self, task_id: int) -> TaskState:
        return await asyncio.to_thread(self.sync.cancel, task_id)

    async def status(self) -> QueueStatus:
        return await asyncio.to_thread(self.sync.status)

    async def tasks(self, **kw: Any) -> list[TaskRecord]:
        return await asyncio.to_thread(lambda: self.sync.tasks(**kw))

    async def task(self, task_id: int) -> TaskRecord:
        return await asyncio.to_thread(self.sync.task, task_id)
