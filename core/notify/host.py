"""Notifications wired to a running engine (#19): targets, the bus hook, the dispatcher, the
daily digest and lost workers — everything a worker or the console starts with one object.

**Targets** come from two places: ``[[notify]]`` in the configuration, and those
``shopfleet notify add`` keeps in the store (meta ``notify.targets``, JSON; the secret
encrypted with the vault, so a fleet's workers share them). Names are unique across both.

**Events.** :class:`Notifier` subscribes to the engine's event bus. The subscriber runs on the
engine's loop, so it only turns a bus event into a :class:`NotifyEvent` (no I/O) and hands it
to the notifier's own thread, which looks the shop up, calls :func:`route` (a write to the
store's outbox) and wakes the :class:`Dispatcher`. What becomes an alert:

* :class:`~core.events.TicketOpened` → ``ticket`` (id ``ticket:<id>``);
* a task entering ``quarantined`` → ``quarantine`` (``quarantine:<task>:<at>``);
* a breaker entering ``open`` → ``breaker_open`` (``breaker:<name>:<at>``);
* a worker whose heartbeat stopped (the store's worker list says ``lost``; checked every
  ``watch_s``) → ``worker_lost`` (``worker_lost:<owner>:<heartbeat_at>``: every process of a
  fleet sees the same loss, the outbox keeps one);
* ``schedule_failed``: :meth:`Notifier.schedule_failed` is the hook #18's scheduler calls;
* ``digest`` once a day at ``[digest] at`` (its id is the day: one per day across a fleet).

Event ids are what makes the outbox refuse a duplicate, so the same loss seen by several
workers, or a restart, never alerts twice. Each store's outbox claims batches atomically, so
every worker of a fleet may run a dispatcher.
"""

from __future__ import annotations

import base64
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from core.errors import InvalidInput, SpecError
from core.events import BreakerChanged, Event, TaskStateChanged, TicketOpened
from core.notify.messages import CountsSnapshot, NotifyEvent, digest_event
from core.notify.outbox import Dispatcher, Outbox, Sender, route
from core.notify.targets import Target, parse_target, parse_targets
from core.selectors import ShopRef

log = logging.getLogger(__name__)

TARGETS_META = "notify.targets"
"""Meta key of the targets ``shopfleet notify add`` keeps in the store (a JSON list)."""


class _Vault(Protocol):
    def encrypt(self, data: bytes) -> bytes: ...
    def decrypt(self, token: bytes) -> bytes: ...


class _Meta(Protocol):
    def meta(self, name: str) -> str | None: ...
    def set_meta(self, name: str, value: str) -> None: ...


# -- targets ---------------------------------------------------------------------------------

def stored_raw(store: _Meta) -> list[dict[str, Any]]:
    """The stored entries as kept (``secret_enc`` base64, never the secret)."""
    text = store.meta(TARGETS_META)
    if not text:
        return []
    data = json.loads(text)
    return [dict(d) for d in data] if isinstance(data, list) else []


def stored_targets(store: _Meta, vault: _Vault | None) -> list[Target]:
    """The store's targets, secrets decrypted (``vault`` ``None``: only those without one)."""
    out = []
    for raw in stored_raw(store):
        entry = {k: v for k, v in raw.items() if k != "secret_enc"}
        if raw.get("secret_enc"):
            if vault is None:
                continue
            entry["secret"] = vault.decrypt(base64.b64decode(raw["secret_enc"])).decode()
        out.append(parse_target(entry, prefix="notify"))
    return out


def all_targets(config: Sequence[Mapping[str, Any]], store: _Meta,
                vault: _Vault | None) -> list[Target]:
    """Configuration targets, then the store's; a name defined twice is an error."""
    targets = parse_targets(config)
    names = {t.name for t in targets}
    for t in stored_targets(store, vault):
        if t.name in names:
            raise SpecError("notify.name", f"{t.name!r} is defined both in the configuration "
                                           "and by 'shopfleet notify add'")
        targets.append(t)
    return targets


def add_target(store: _Meta, raw: Mapping[str, Any], *, config: Sequence[Mapping[str, Any]],
               vault: _Vault | None) -> Target:
    """Validate and keep a target in the store, its secret encrypted.

    Raises:
        SpecError: a bad field, or the name already used (nothing written).
    """
    target = parse_target(raw, prefix="notify")
    taken = {str(c.get("name")) for c in config} | {str(r.get("name"))
                                                    for r in stored_raw(store)}
    if target.name in taken:
        raise SpecError("notify.name", f"a target named {target.name!r} exists already")
    entry = {k: v for k, v in raw.items() if k != "secret" and v is not None}
    if target.secret:
        if vault is None:
            raise InvalidInput("notify.secret", "no vault key to encrypt it with")
        entry["secret_enc"] = base64.b64encode(vault.encrypt(target.secret.encode())).decode()
    store.set_meta(TARGETS_META, json.dumps([*stored_raw(store), entry], ensure_ascii=False))
    return target


def remove_target(store: _Meta, name: str) -> bool:
    """Forget a stored target; ``False`` if the store keeps none of that name."""
    kept = stored_raw(store)
    rest = [r for r in kept if r.get("name") != name]
    if len(rest) == len(kept):
        return False
    store.set_meta(TARGETS_META, json.dumps(rest, ensure_ascii=False))
    return True


# -- bus events → alerts ---------------------------------------------------------------------

def notify_event_of(ev: Event) -> NotifyEvent | None:
    """The alert a bus event makes, or ``None`` (pure: runs on the engine's loop)."""
    if isinstance(ev, TicketOpened):
        return NotifyEvent(id=f"ticket:{ev.ticket_id}", kind="ticket", at=ev.at,
                           headline=f"{ev.error_class}: {ev.error}", shop=ev.shop,
                           detail={"ticket": ev.ticket_id, "task": ev.task_id})
    if isinstance(ev, TaskStateChanged) and ev.state == "quarantined":
        return NotifyEvent(id=f"quarantine:{ev.task_id}:{ev.at:.3f}", kind="quarantine",
                           at=ev.at, headline=ev.reason, shop=ev.shop,
                           detail={"task": ev.task_id})
    if isinstance(ev, BreakerChanged) and ev.state == "open":
        return NotifyEvent(id=f"breaker:{ev.name}:{ev.at:.3f}", kind="breaker_open", at=ev.at,
                           headline=ev.reason, detail={"domain": ev.name})
    return None


class NotifyStore(_Meta, Protocol):
    """What the notifier needs of a store."""

    def outbox(self) -> Outbox: ...
    def shop(self, name: str) -> Any: ...
    def workers(self) -> list[Any]: ...
    def counts_snapshot(self, day_start: float, day_end: float) -> CountsSnapshot: ...


class Notifier:
    """The bus hook, a :class:`Dispatcher`, lost-worker watching and the daily digest.

    Args:
        store: the store (its outbox, shops, workers, counts).
        targets: the targets (:func:`all_targets`); none: :meth:`start` does nothing.
        digest_at, digest_tz: ``HH:MM`` and zone of the daily digest (empty: none).
        now: the clock; send: the HTTP sender (tests inject both).
        watch_s: how often lost workers and the digest time are checked.
    """

    def __init__(self, store: NotifyStore, targets: Sequence[Target], *,
                 digest_at: str = "", digest_tz: str = "UTC",
                 now: Callable[[], float] = time.time, send: Sender | None = None,
                 watch_s: float = 30.0, poll_s: float = 1.0) -> None:
        self.store = store
        self.targets = list(targets)
        self.outbox = store.outbox()
        self.dispatcher = (Dispatcher(self.outbox, self.targets, now=now, send=send,
                                      poll_s=poll_s) if send is not None else
                           Dispatcher(self.outbox, self.targets, now=now, poll_s=poll_s))
        self._now = now
        self.digest_at, self.digest_tz = digest_at, digest_tz
        self.watch_s = watch_s
        self._inbox: queue.SimpleQueue[NotifyEvent | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._stop = threading.Event()
        self.last_error = ""

    # the bus side: on the engine's loop, no I/O
    def on_event(self, ev: Event) -> None:
        alert = notify_event_of(ev)
        if alert is not None:
            self._inbox.put(alert)

    def schedule_failed(self, schedule: str, reason: str, *, at: float) -> None:
        """#18's hook: a schedule's firing failed (safe from any thread or loop)."""
        self._inbox.put(NotifyEvent(id=f"schedule:{schedule}:{at:.3f}", kind="schedule_failed",
                                    at=at, headline=reason, detail={"schedule": schedule}))

    def attach(self, bus: Any) -> None:
        """Subscribe to an engine's event bus (``bus.subscribe``)."""
        self._unsubscribe = bus.subscribe(self.on_event)

    # the notifier's thread: every store call happens here or on the dispatcher's thread
    def route_now(self, alert: NotifyEvent) -> list[str]:
        shop = None
        if alert.shop:
            try:
                rec = self.store.shop(alert.shop)
                shop = ShopRef(rec.name, rec.platform)
            except InvalidInput:
                shop = ShopRef(alert.shop, alert.platform)
        names = route(self.outbox, self.targets, alert, shop=shop, now=self._now())
        if names:
            self.dispatcher.wake()
        return names

    def watch_once(self) -> None:
        """Lost workers and the digest: one check (the thread calls it every ``watch_s``)."""
        for w in self.store.workers():
            if w.state == "lost":
                self.route_now(NotifyEvent(
                    id=f"worker_lost:{w.owner}:{w.heartbeat_at:.3f}", kind="worker_lost",
                    at=w.heartbeat_at, headline=f"({w.host} pid {w.pid}, {w.running} running)",
                    detail={"worker": w.owner}))
        due = self.digest_due(self._now())
        if due is not None:
            start, end = due
            snap = self.store.counts_snapshot(start, end)
            for lang in sorted({t.lang for t in self.targets if "digest" in t.events}):
                ev = digest_event(snap, lang)
                ev = NotifyEvent(id=f"{ev.id}:{lang}", kind="digest", at=ev.at,
                                 headline=ev.headline)
                route(self.outbox, [t for t in self.targets if t.lang == lang], ev,
                      shop=None, now=self._now())
            self.dispatcher.wake()

    def digest_due(self, now: float) -> tuple[float, float] | None:
        """The day to report (start, end) if today's digest time has passed, else ``None``.

        The digest counts the 24 hours before today's digest time; the outbox refuses the
        same day twice, so calling this on every check is harmless.
        """
        if not self.digest_at:
            return None
        zone = ZoneInfo(self.digest_tz)
        local = datetime.fromtimestamp(now, zone)
        hh, mm = (int(x) for x in self.digest_at.split(":"))
        at = local.replace(hour=hh, minute=mm, second=0, microsecond=0)
        if local < at:
            return None
        return (at - timedelta(days=1)).timestamp(), at.timestamp()

    def _loop(self) -> None:
        next_watch = 0.0
        while not self._stop.is_set():
            wait = max(0.0, next_watch - time.monotonic())
            try:
                alert = self._inbox.get(timeout=wait) if wait > 0 else None
            except queue.Empty:
                alert = None
            try:
                if alert is not None:
                    self.route_now(alert)
                elif time.monotonic() >= next_watch:
                    next_watch = time.monotonic() + self.watch_s
                    self.watch_once()
                self.last_error = ""
            except Exception as exc:  # the store is away: say so, keep going
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("notify: routing failed")
                if alert is not None:
                    self._inbox.put(alert)  # not lost: tried again after a pause
                    self._stop.wait(1.0)

    def start(self) -> None:
        """Start the notifier thread and the dispatcher (nothing when there are no targets)."""
        if not self.targets or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="shopfleet-notifier",
                                        daemon=True)
        self._thread.start()
        self.dispatcher.start()

    def stop(self, timeout_s: float = 15.0) -> None:
        """Unsubscribe, route what is queued, stop both threads."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._thread is None:
            return
        self._stop.set()
        self._inbox.put(None)
        self._thread.join(timeout_s)
        self._thread = None
        try:  # what came in just before the stop still goes to the outbox
            self.drain()
        except Exception:
            log.exception("notify: routing at stop failed")
        self.dispatcher.stop(timeout_s)

    def drain(self) -> int:
        """Route every alert waiting in the inbox now, on the calling thread (the notifier's
        thread does this; tests and :meth:`stop` call it directly). Returns how many."""
        n = 0
        while True:
            try:
                alert = self._inbox.get_nowait()
            except queue.Empty:
                return n
            if alert is not None:
                self.route_now(alert)
                n += 1
