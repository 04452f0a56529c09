"""The store for async code: every call runs off the loop (a writer or worker thread).

:class:`AsyncStore` wraps any :class:`core.store.base.Store`. For SQLite, writes go straight
to the store's writer thread (``asyncio.wrap_future``: no extra thread hop, and they join the
writer's group commit); every other call — and every call on other stores, such as Redis's
blocking client — runs in the default thread pool. Which of the two a store wants is its
:meth:`~core.store.base.Store.op_writer`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..errors import BacklogFull, StoreUnavailable
from ..specs import TaskSpec
from .base import OpWriter, Store, TicketStore, WorkerInfo
from .records import ClaimedTask, QueueStatus, TaskRecord, TaskState

T = TypeVar("T")
log = logging.getLogger(__name__)


class AsyncStore:
    """Awaitable twins of the store's methods."""

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._ops: OpWriter | None = store.op_writer()
        self._transient: tuple[type[BaseException], ...] = tuple(store.transient_errors)
        self._acks: list[tuple[tuple[int, str, dict[str, Any] | None],
                               asyncio.Future[None]]] = []
        self._ack_flusher: asyncio.Future[None] | None = None
        self.retry_s = store.settings.queue.lease_s / 3
        """How long a task's life-cycle write keeps trying through a store outage (after
        that the lease runs out anyway and recovery takes the task)."""

    async def _thread(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """``fn`` in a worker thread; a shared store's connection trouble becomes
        :class:`StoreUnavailable` (the engine waits it out instead of dying)."""
        try:
            return await asyncio.to_thread(fn, *args, **kw)
        except self._transient as exc:
            raise StoreUnavailable(f"{self.sync.url}: {exc}") from exc

    async def _retrying(self, call: Callable[[], T]) -> T:
        """``call`` in a thread, tried again while the store is unreachable, for up to
        :attr:`retry_s` — only for a task's life-cycle writes, which check the lease owner:
        when a lost reply hid a success, the repeat raises :class:`LeaseLost` (or, for a
        checkpoint, writes the same again); nothing happens twice."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.retry_s
        delay = 0.25
        while True:
            try:
                return await self._thread(call)
            except StoreUnavailable as exc:
                if loop.time() + delay > deadline:
                    raise
                log.warning("store unreachable (%s); trying again in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _write(self, make_op: Callable[[OpWriter], Any],
                     call: Callable[[], T], *, retry: bool = True) -> T:
        """Run a write: as an op on the store's writer thread (SQLite), else ``call`` in a
        thread (retried through an outage when ``retry``)."""
        if self._ops is not None:
            result: T = await asyncio.wrap_future(self._ops.submit_op(make_op(self._ops)))
            return result
        return await (self._retrying(call) if retry else self._thread(call))

    async def run(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """Any other blocking store call, off the loop."""
        return await self._thread(fn, *args, **kw)

    # -- submitting ---------------------------------------------------------------------------

    async def submit_many(self, specs: Sequence[TaskSpec], *, wait: bool = True,
                          timeout_s: float | None = None) -> list[int]:
        """Submit a batch; when the backlog is full, wait for room (backpressure) unless
        ``wait`` is false. Nothing already queued is dropped to make room."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while True:
            try:
                return await self._thread(self.sync.submit_many, specs)
            except BacklogFull:
                if not wait or (deadline is not None and loop.time() >= deadline):
                    raise
                left = 0.5 if deadline is None else max(0.0, min(0.5, deadline - loop.time()))
                # Claims in this process wake us at once; other processes' claims within 0.5 s.
                await self._thread(self.sync.wait_for_room, left)

    async def submit(self, spec: TaskSpec, *, wait: bool = True) -> int:
        return (await self.submit_many([spec], wait=wait))[0]

    # -- a task's life cycle ------------------------------------------------------------------

    async def claim(self, owner: str, *, exclude_domains: Iterable[str] = (),
                    lease_s: float | None = None) -> ClaimedTask | None:
        return await self._write(
            lambda s: s.claim_op(owner, exclude_domains=exclude_domains, lease_s=lease_s),
            lambda: self.sync.claim(owner, exclude_domains=exclude_domains, lease_s=lease_s),
            retry=False)

    async def claim_many(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                         probe_domains: Iterable[str] = (), exclude_shops: Iterable[str] = (),
                         probe_shops: Iterable[str] = ()) -> list[ClaimedTask]:
        ex, probes = list(exclude_domains), list(probe_domains)
        ex_shops, probe_shop_names = list(exclude_shops), list(probe_shops)
        return await self._write(
            lambda s: s.claim_many_op(owner, limit, exclude_domains=ex, probe_domains=probes,
                                      exclude_shops=ex_shops, probe_shops=probe_shop_names),
            lambda: self.sync.claim_many(owner, limit, exclude_domains=ex,
                                         probe_domains=probes, exclude_shops=ex_shops,
                                         probe_shops=probe_shop_names), retry=False)

    async def ack(self, task_id: int, owner: str, *,
                  results: dict[str, Any] | None = None) -> None:
        if self._ops is None:
            await self._ack_batched(task_id, owner, results)
            return
        await self._write(lambda s: s.ack_op(task_id, owner, results=results),
                          lambda: self.sync.ack(task_id, owner, results=results))
        self._ops.room_freed()

    async def ack_and_claim(self, task_id: int, owner: str, *,
                            results: dict[str, Any] | None = None,
                            exclude_domains: Iterable[str] = (),
                            exclude_shops: Iterable[str] = (),
                            lease_s: float | None = None) -> ClaimedTask | None:
        """Ack a task and claim the next one for its freed slot in one atomic step (see
        :meth:`core.store.base.Store.ack_and_claim`). SQLite: one op on the writer thread,
        one transaction and one commit for both. Other stores: one call in a thread,
        retried through an outage like every ack: a repeat after a lost reply that hid that
        it ran answers what that run claimed (the store keeps that for a lease's time), so
        nothing is acked twice and no claimed task is left held by nobody's slot.
        """
        ex, ex_shops = list(exclude_domains), list(exclude_shops)
        if self._ops is None:
            return await self._retrying(functools.partial(
                self.sync.ack_and_claim, task_id, owner, results=results,
                exclude_domains=ex, exclude_shops=ex_shops, lease_s=lease_s))
        task: ClaimedTask | None = await asyncio.wrap_future(self._ops.submit_op(
            self._ops.ack_and_claim_op(task_id, owner, results=results, exclude_domains=ex,
                                       exclude_shops=ex_shops, lease_s=lease_s)))
        self._ops.room_freed()
        return task

    async def _ack_batched(self, task_id: int, owner: str,
                           results: dict[str, Any] | None) -> None:
        """Acks that arrive together go in one round trip (a network store's answer to
        SQLite's group commit); each is still its own atomic script."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._acks.append(((task_id, owner, results), fut))
        if self._ack_flusher is None or self._ack_flusher.done():
            self._ack_flusher = asyncio.ensure_future(self._flush_acks())
        await fut

    async def _flush_acks(self) -> None:
        ack_many = self.sync.ack_many
        while self._acks:
            batch, self._acks = self._acks, []
            items = [item for item, _ in batch]
            try:
                errors: list[BaseException | None] = await self._retrying(
                    functools.partial(ack_many, items))
            except BaseException as exc:  # the whole batch: every waiter hears it
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for (_, fut), err in zip(batch, errors, strict=True):
                if fut.done():
                    continue
                if err is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(err)

    async def fail(self, task_id: int, owner: str, *, error_class: str, message: str,
                   retry: bool = True, retry_after_s: float | None = None,
                   evidence: dict[str, str] | None = None) -> TaskState:
        kw: dict[str, Any] = {"error_class": error_class, "message": message, "retry": retry,
                              "retry_after_s": retry_after_s, "evidence": evidence}
        return await self._write(lambda s: s.fail_op(task_id, owner, **kw),
                                 lambda: self.sync.fail(task_id, owner, **kw))

    async def save_checkpoint(self, task_id: int, owner: str, checkpoint: dict[str, Any]) -> None:
        await self._write(lambda s: s.checkpoint_op(task_id, owner, checkpoint),
                          lambda: self.sync.save_checkpoint(task_id, owner, checkpoint))

    async def release(self, task_id: int, owner: str, *, reason: str = "released",
                      checkpoint: dict[str, Any] | None = None, suspend: bool = False,
                      delay_s: float = 0.0) -> None:
        kw: dict[str, Any] = {"reason": reason, "checkpoint": checkpoint, "suspend": suspend,
                              "delay_s": delay_s}
        await self._write(lambda s: s.release_op(task_id, owner, **kw),
                          lambda: self.sync.release(task_id, owner, **kw))

    async def renew_lease(self, task_id: int, owner: str) -> float:
        return await self._thread(self.sync.renew_lease, task_id, owner)

    async def renew_leases(self, owner: str, task_ids: Sequence[int]) -> list[int]:
        ids = list(task_ids)
        return await self._write(lambda s: s.renew_leases_op(owner, ids),
                                 lambda: self.sync.renew_leases(owner, ids))

    async def recover_expired(self) -> list[int]:
        return await self._thread(self.sync.recover_expired)

    async def record_crash(self, task_id: int, owner: str, *, error_class: str, message: str,
                           quarantine: bool, evidence: dict[str, str] | None) -> str:
        kw: dict[str, Any] = {"error_class": error_class, "message": message,
                              "quarantine": quarantine, "evidence": evidence}
        return await self._write(lambda s: s.record_crash_op(task_id, owner, **kw),
                                 lambda: self.sync.record_crash(task_id, owner, **kw))

    async def open_ticket(self, task_id: int, owner: str, **kw: Any) -> int:
        return await self._retrying(lambda: self.sync.open_ticket(task_id, owner, **kw))

    async def apply_rule(self, task_id: int, owner: str, rule: Any, **kw: Any) -> str:
        return await self._retrying(lambda: self.sync.apply_rule(task_id, owner, rule, **kw))

    # -- operator commands and reads ------------------------------------------------------------

    async def bump(self, task_id: int, *, to: float | None = None,
                   by: float | None = None) -> float:
        return await self._thread(self.sync.bump, task_id, to=to, by=by)

    async def cancel(self, task_id: int) -> TaskState:
        return await self._thread(self.sync.cancel, task_id)

    async def status(self) -> QueueStatus:
        return await self._thread(self.sync.status)

    async def tasks(self, **kw: Any) -> list[TaskRecord]:
        return await self._thread(lambda: self.sync.tasks(**kw))

    async def task(self, task_id: int) -> TaskRecord:
        return await self._thread(self.sync.task, task_id)

    async def workers(self) -> list[WorkerInfo]:
        return await self._thread(self.sync.workers)

    def ticket_book(self) -> TicketStore:
        return self.sync.ticket_book()
