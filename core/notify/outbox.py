"""The outbox: alerts are written down first and sent later, by someone else.

The engine only calls :func:`route` (→ :meth:`Outbox.enqueue`): a row per (target, event),
written with the task's own bookkeeping, so an alert survives a crash and the engine never
waits for a chat server. A :class:`Dispatcher` on its own thread drains the outbox:

1. a target is *due* when its oldest unsent event is ``batch_window_s`` old (so a storm
   collects into one batch), it is not in quiet hours, and it sent fewer than
   ``rate_per_min`` messages in the last minute;
2. :meth:`Outbox.due_batch` *claims* up to ``limit`` events into a batch with a stable id
   (:func:`~core.notify.messages.message_id`) before anything is sent — after a crash between
   send and :meth:`~Outbox.mark_sent` the same batch goes again with the same id: at-least-once,
   and a receiver can drop the duplicate;
3. the batch becomes one message, is sent, and is marked sent, or failed with the time of the
   next attempt (exponential back-off with jitter), or given up (permanent failure, or
   :data:`~core.notify.delivery.MAX_ATTEMPTS` reached). A failed batch is retried before any
   newer event of that target goes out.

A target with ``screenshots = true`` also gets the masked screenshots of the batch's tickets
(at most :data:`MAX_SCREENSHOTS` a message; each read here, on the dispatcher's thread, and
capped at the platform's size): inside the webhook's envelope, or as WeCom image messages
right after the markdown. The batch is delivered when all its requests are: a failed image
retries the batch (the text may then arrive twice, with the same message id — at-least-once).

:meth:`Outbox.health` tells the console which targets fail (since when, why, how many events
were given up): a failing target is reported once there, not in every task.

Stage 2 implements :class:`Outbox` in the SQLite store (an ``outbox`` table written by the
writer thread) and the Redis store; :class:`MemoryOutbox` is the reference implementation.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from core.notify import delivery
from core.notify.messages import Message, NotifyEvent, coalesce, message_id
from core.notify.platforms import Request, Screenshot, Verdict, build_request, image_requests
from core.notify.targets import SCREENSHOT_MAX_BYTES, Target
from core.selectors import ShopLike

log = logging.getLogger(__name__)

MAX_SCREENSHOTS = 3
"""Screenshots sent with one message at most (a storm of tickets is one message, not 50
pictures; the console has the rest)."""


@dataclass(frozen=True, slots=True)
class Batch:
    """Events of one target claimed together; ``id`` is the message id."""

    id: str
    target: str
    events: tuple[NotifyEvent, ...]
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class Pending:
    """What waits for a target: the oldest unclaimed event, and a claimed batch's next try."""

    oldest_at: float | None
    batch_next_at: float | None


@dataclass(frozen=True, slots=True)
class TargetHealth:
    """How a target fares, for the console."""

    target: str
    pending: int
    failing_since: float | None = None
    last_error: str = ""
    given_up: int = 0
    last_sent_at: float | None = None


class Outbox(Protocol):
    """Durable alerts waiting to be sent (one implementation per store)."""

    def enqueue(self, target: str, event: NotifyEvent, *, now: float) -> bool:
        """Add an event for a target; ``False`` if that (target, event id) is already there."""
        ...

    def pending(self, *, now: float) -> dict[str, Pending]:
        """Targets with unsent events."""
        ...

    def due_batch(self, target: str, *, now: float, limit: int) -> Batch | None:
        """The target's claimed batch if its next try is due, else a new batch claimed from
        its oldest ``limit`` unclaimed events; ``None`` when nothing is due."""
        ...

    def mark_sent(self, batch_id: str, *, now: float) -> None:
        """The batch was delivered: its events leave the outbox."""
        ...

    def mark_failed(self, batch_id: str, *, now: float, error: str,
                    next_at: float | None) -> None:
        """The batch failed: try again at ``next_at``, or give up (``None``)."""
        ...

    def health(self) -> list[TargetHealth]:
        """Every target that has events, failures or sends on record."""
        ...


@dataclass
class _Claimed:
    batch: Batch
    next_at: float


@dataclass
class _TargetBox:
    events: dict[str, NotifyEvent] = field(default_factory=dict)  # unclaimed, by event id
    enqueued_at: dict[str, float] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    claimed: _Claimed | None = None
    failing_since: float | None = None
    last_error: str = ""
    given_up: int = 0
    last_sent_at: float | None = None


class MemoryOutbox:
    """An in-memory :class:`Outbox` (tests, demos; the stores' reference behaviour)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._boxes: dict[str, _TargetBox] = {}
        self.sent: list[str] = []  # batch ids in the order they were marked sent

    def enqueue(self, target: str, event: NotifyEvent, *, now: float) -> bool:
        with self._lock:
            box = self._boxes.setdefault(target, _TargetBox())
            if event.id in box.seen:
                return False
            box.seen.add(event.id)
            box.events[event.id] = event
            box.enqueued_at[event.id] = now
            return True

    def pending(self, *, now: float) -> dict[str, Pending]:
        with self._lock:
            out = {}
            for name, box in self._boxes.items():
                oldest = min(box.enqueued_at.values(), default=None)
                nxt = box.claimed.next_at if box.claimed else None
                if oldest is not None or nxt is not None:
                    out[name] = Pending(oldest, nxt)
            return out

    def due_batch(self, target: str, *, now: float, limit: int) -> Batch | None:
        with self._lock:
            box = self._boxes.get(target)
            if box is None:
                return None
            if box.claimed is not None:
                return box.claimed.batch if box.claimed.next_at <= now else None
            if not box.events:
                return None
            ids = sorted(box.events, key=lambda i: (box.enqueued_at[i], i))[:limit]
            events = tuple(box.events.pop(i) for i in ids)
            for i in ids:
                del box.enqueued_at[i]
            batch = Batch(message_id(events), target, events, 0)
            box.claimed = _Claimed(batch, now)
            return batch

    def _claimed(self, batch_id: str) -> _TargetBox | None:
        for box in self._boxes.values():
            if box.claimed is not None and box.claimed.batch.id == batch_id:
                return box
        return None

    def mark_sent(self, batch_id: str, *, now: float) -> None:
        with self._lock:
            box = self._claimed(batch_id)
            if box is None:
                return
            box.claimed = None
            box.failing_since = None
            box.last_error = ""
            box.last_sent_at = now
            self.sent.append(batch_id)

    def mark_failed(self, batch_id: str, *, now: float, error: str,
                    next_at: float | None) -> None:
        with self._lock:
            box = self._claimed(batch_id)
            if box is None or box.claimed is None:
                return
            box.failing_since = box.failing_since or now
            box.last_error = error
            if next_at is None:
                box.given_up += len(box.claimed.batch.events)
                box.claimed = None
                return
            b = box.claimed.batch
            box.claimed = _Claimed(Batch(b.id, b.target, b.events, b.attempts + 1), next_at)

    def health(self) -> list[TargetHealth]:
        with self._lock:
            return [TargetHealth(name, len(box.events) + (
                len(box.claimed.batch.events) if box.claimed else 0), box.failing_since,
                box.last_error, box.given_up, box.last_sent_at)
                for name, box in sorted(self._boxes.items())]


def route(outbox: Outbox, targets: Sequence[Target], event: NotifyEvent, *,
          shop: ShopLike | None, now: float) -> list[str]:
    """Enqueue ``event`` for every target that wants it; the engine's only call. Returns the
    names of the targets it was queued for."""
    names = []
    for t in targets:
        if t.wants(event.kind, shop) and outbox.enqueue(t.name, event, now=now):
            names.append(t.name)
    return names


Sender = Callable[[str, Request], Verdict]


def _default_send(kind: str, req: Request) -> Verdict:
    return delivery.send(kind, req)


class Dispatcher:
    """Drains an outbox on its own thread; :meth:`run_once` does one pass (tests call it).

    Args:
        outbox: where the alerts wait.
        targets: the configured targets (events for an unknown target stay until it returns).
        now: the clock (seconds since the epoch); a fake one in tests.
        send: ``(kind, request) -> Verdict``; the real HTTP by default.
        rand: the jitter's random source.
        batch_limit: the most events in one message.
        poll_s: how long the thread sleeps between passes when not woken.
    """

    def __init__(self, outbox: Outbox, targets: Sequence[Target], *,
                 now: Callable[[], float] = time.time, send: Sender = _default_send,
                 rand: Callable[[], float] = random.random, batch_limit: int = 200,
                 poll_s: float = 1.0) -> None:
        self.outbox = outbox
        self.targets: Mapping[str, Target] = {t.name: t for t in targets}
        self._now, self._send, self._rand = now, send, rand
        self.batch_limit, self.poll_s = batch_limit, poll_s
        self._sends: dict[str, deque[float]] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes = 0
        self.last_error = ""
        self.on_message: Callable[[Target, Message, Verdict], None] | None = None

    def _rate_ok(self, t: Target, now: float) -> bool:
        sent = self._sends.setdefault(t.name, deque())
        while sent and sent[0] <= now - 60.0:
            sent.popleft()
        return len(sent) < t.rate_per_min

    def _due(self, t: Target, p: Pending, now: float) -> bool:
        if t.quiet is not None and t.quiet.active(now):
            return False
        if not self._rate_ok(t, now):
            return False
        if p.batch_next_at is not None:
            return p.batch_next_at <= now
        return p.oldest_at is not None and p.oldest_at + t.batch_window_s <= now

    def run_once(self) -> int:
        """Send every due batch once; returns how many messages were attempted."""
        now = self._now()
        attempted = 0
        for name, p in sorted(self.outbox.pending(now=now).items()):
            t = self.targets.get(name)
            if t is None or not self._due(t, p, now):
                continue
            batch = self.outbox.due_batch(name, now=now, limit=self.batch_limit)
            if batch is None:
                continue
            attempted += 1
            self._deliver(t, batch, now)
        self.passes += 1
        return attempted

    def screenshots(self, t: Target, events: Sequence[NotifyEvent]) -> list[Screenshot]:
        """The screenshots ``t`` gets with these events (none unless it opted in). Blocking
        file reads: called on the dispatcher's thread only."""
        if not t.screenshots or t.kind not in SCREENSHOT_MAX_BYTES:
            return []
        shots: list[Screenshot] = []
        for e in events:
            if not e.screenshot or len(shots) >= MAX_SCREENSHOTS:
                continue
            png, why = delivery.read_screenshot(e.screenshot,
                                                max_bytes=SCREENSHOT_MAX_BYTES[t.kind])
            if png is None:
                log.warning("notify: %s: the screenshot of %s is left out: %s", t.name, e.id,
                            why)
                continue
            shots.append(Screenshot(e.id, png))
        return shots

    def _deliver(self, t: Target, batch: Batch, now: float) -> None:
        msg = coalesce(batch.events, t.lang)
        if msg.id != batch.id:  # never: both come from message_id(events)
            raise AssertionError("batch and message ids differ")
        sends = self._sends.setdefault(t.name, deque())
        try:
            shots = self.screenshots(t, batch.events)
            verdict = self._send(t.kind, build_request(t, msg, now=now, shots=shots))
            sends.append(now)
            for req in image_requests(t, msg, shots) if verdict.ok else []:
                verdict = self._send(t.kind, req)
                sends.append(now)
                if not verdict.ok:
                    break
        except Exception as exc:  # a bug or an odd platform answer: retry, and say so
            log.exception("notify: sending to %s failed", t.name)
            verdict = Verdict(False, True, f"{type(exc).__name__}: {exc}")
            sends.append(now)
        if self.on_message is not None:
            self.on_message(t, msg, verdict)
        if verdict.ok:
            self.outbox.mark_sent(batch.id, now=now)
            return
        attempt = batch.attempts + 1
        if verdict.retryable and attempt < delivery.MAX_ATTEMPTS:
            delay = delivery.backoff_s(attempt, rand=self._rand,
                                       retry_after_s=verdict.retry_after_s)
            self.outbox.mark_failed(batch.id, now=now, error=verdict.reason, next_at=now + delay)
        else:
            self.outbox.mark_failed(batch.id, now=now, error=verdict.reason, next_at=None)

    # -- the background thread -------------------------------------------------------------

    def wake(self) -> None:
        """Ask the thread for a pass now (cheap; safe from any thread or loop)."""
        self._wake.set()

    def start(self) -> None:
        """Start the background thread (a daemon: it never keeps the program alive)."""
        if self._thread is not None:
            raise RuntimeError("dispatcher already started")
        self._thread = threading.Thread(target=self._loop, name="shopfleet-notify",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 15.0) -> None:
        """Stop the thread after its current pass (a send times out within its timeout)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
                self.last_error = ""
            except Exception as exc:  # the store is down: say so, keep trying
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("notify: dispatcher pass failed")
            self._wake.wait(self.poll_s)
            self._wake.clear()
