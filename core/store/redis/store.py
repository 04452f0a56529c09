"""The Redis store: one queue, one ticket inbox and one event log for a fleet of workers.

Same behaviour contract as :class:`core.store.SqliteStore` (``tests/contract``), on one shared
Redis. Key layout: :mod:`core.store.redis.keys` (a stable interface: console queries and
``shopfleet migrate`` read it). Every state change is one Lua script (:mod:`core.store.redis.lua`),
so it is atomic across all machines: the claim checks eligibility, shop exclusivity
(``max_tasks_per_shop`` over *all* workers), pauses and breakers and takes the lease in one
``EVALSHA`` per claim round; ack/fail/release/checkpoint/renew check ``state = running`` and the
lease owner inside the script. Each script also keeps the queue indexes, the per-state counts,
the task's history and the fleet's event stream (``P:events``) in step with the task's hash —
nothing outside a script changes a task.

Priority: the same time-invariant integer key as SQLite (:func:`core.priority.index_key`,
milli-points), computed by the scripts with Python's rounding so both stores give the same key.
The queue sorted sets are scored ``-(band·2^40 + prio_key)`` with zero-padded ids as members, so
ascending order is ``band DESC, prio_key DESC, id`` exactly as SQLite serves it.

Times come from the injected clock (passed to every script as ``now``), never from Redis
``TIME``, so fake-clock tests drive both stores alike; the machines' clocks must agree (NTP).

Evidence: a task's evidence (screenshot, DOM, step log) stays on disk, in the data folder,
which for a fleet should be a shared folder (SMB/NFS) that every console can read; Redis holds
only the file paths (a ``{name: path}`` dict, as SQLite does). Screenshots are hundreds of KB
each and Redis memory is the fleet's scarcest resource.

The class is built in layers, one module each: the client and scripts
(:mod:`core.store.redis.connection`), the reads (:mod:`core.store.redis.reads`), the claims
(:mod:`core.store.redis.claims`), and here every other change, each one script.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import redis

from ...errors import (
    InvalidInput,
    LeaseLost,
    SpecError,
)
from ...origins import normalise_origins
from ...priority import check_bump, static_points
from ...profiles import ShopProfile
from ...specs import TaskSpec
from ...urgency import estimator_for
from ...urls import public_url
from ..owners import owner_is_dead_local
from ..pages import Cursor, Order, ShopRow, TaskFilter, TaskPage, TaskRow
from ..prepare import prepare_specs
from ..records import (
    ShopRecord,
    TaskState,
    domain_of,
)
from . import pages as redis_queries
from .groups import RedisGroups
from .holds import RedisHolds

if TYPE_CHECKING:
    from ...tickets import Rule, Signature
    from .outbox import RedisOutbox
    from .tickets import RedisTicketBook
from .claims import RedisClaims
from .connection import ROOM_POLL_S, _f, connect_error
from .reads import RedisReads

log = logging.getLogger(__name__)


class RedisStore(RedisGroups, RedisHolds, RedisClaims, RedisReads):
    """The queue, shops, tickets, metrics and worker registry in one shared Redis.

    Args:
        url: ``redis://[user:password@]host:port/db`` (or ``rediss://`` for TLS).
        settings: the validated configuration.
        clock: time source for every timestamp (a fake one in tests).
        validator: extra per-task checks at submission, raising :class:`SpecError`.
        prefix: the key prefix (several fleets can share one Redis).
    """
    # -- shops ---------------------------------------------------------------------------

    def add_shop(self, name: str, *, platform: str, base_url: str, username: str = "",
                 password_enc: bytes | None = None) -> ShopRecord:
        """Register a shop. Its domain (for gates and breakers) comes from ``base_url``."""
        if not name.strip():
            raise InvalidInput("name", "must not be empty")
        if not platform.strip():
            raise InvalidInput("platform", "must not be empty")
        scheme = urlsplit(base_url).scheme
        if scheme not in ("http", "https"):
            raise InvalidInput("base_url", f"{base_url!r} must start with http:// or https://")
        domain = domain_of(base_url)
        pw = base64.b64encode(password_enc).decode("ascii") if password_enc is not None else ""
        got = self._run("add_shop", name, platform, base_url.rstrip("/"), domain, username, pw)
        if int(got) == 0:
            raise InvalidInput("name", f"a shop named {name!r} exists already")
        return self.shop(name)

    def update_shop(self, name: str, *, username: str | None = None,
                    password_enc: bytes | None = None, base_url: str | None = None
                    ) -> ShopRecord:
        """Change a shop's login name, its (already encrypted) password or its address."""
        rec = self.shop(name)
        fields: dict[str, str] = {}
        if username is not None:
            fields["username"] = username
        if password_enc is not None:
            fields["password_enc"] = base64.b64encode(password_enc).decode("ascii")
        if base_url is not None:
            if urlsplit(base_url).scheme not in ("http", "https"):
                raise InvalidInput("base_url",
                                   f"{base_url!r} must start with http:// or https://")
            fields["base_url"] = base_url.rstrip("/")
            fields["domain"] = domain_of(base_url)
        if fields:
            self._r.hset(self.keys.shop(rec.id), mapping=fields)
            self._shop_names.pop(rec.id, None)
        return self.shop(name)

    def set_shop_origins(self, name: str, origins: Sequence[str]) -> ShopRecord:
        """Set the origins a shop's tasks may load besides its own (replaces the list)."""
        text = json.dumps(normalise_origins(origins))
        self._r.hset(self.keys.shop(self._shop_id(name)), "allowed_origins", text)
        return self.shop(name)

    def set_shop_profile(self, name: str, profile: ShopProfile, *,
                         proxy_password_enc: bytes | None) -> ShopRecord:
        """Replace a shop's profile and its proxy's (already encrypted) password (None: none;
        a profile without a proxy never keeps one)."""
        key = self.keys.shop(self._shop_id(name))
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(key, "profile", profile.to_json())
        if proxy_password_enc is not None and profile.proxy:
            pipe.hset(key, "proxy_password_enc",
                      base64.b64encode(proxy_password_enc).decode("ascii"))
        else:
            pipe.hdel(key, "proxy_password_enc")
        pipe.execute()
        return self.shop(name)

    def set_shop_paused(self, name: str, paused: bool) -> ShopRecord:
        self._r.hset(self.keys.shop(self._shop_id(name)), "paused", "1" if paused else "0")
        return self.shop(name)

    def set_domain_paused(self, domain: str, paused: bool, *, reason: str = "") -> None:
        domain = domain.lower()
        if paused:
            old = self._r.hget(self.keys.paused_domains, domain)
            since = json.loads(old)["since"] if old else self.clock.now()
            self._r.hset(self.keys.paused_domains, domain,
                         json.dumps({"since": since, "reason": reason}))
        else:
            self._r.hdel(self.keys.paused_domains, domain)

    # -- submission ----------------------------------------------------------------------

    def submit(self, spec: TaskSpec) -> int:
        """Submit one task; returns its id (the existing one for a known idempotency key)."""
        return self.submit_many([spec])[0]

    def submit_many(self, specs: Sequence[TaskSpec]) -> list[int]:
        """Submit a batch, all or nothing; returns the task ids in order.

        Raises:
            SpecError: a task is invalid (unknown shop or type, bad flow); nothing written.
            BacklogFull: the queue is full for this batch; nothing written.
        """
        now = self.clock.now()
        prepared = self._prepare(specs, now)
        limit = self._q.max_backlog
        reserve = limit + int(limit * self._q.urgent_reserve)
        try:
            ids = self._run("submit", json.dumps(prepared, ensure_ascii=False), limit, reserve,
                            now=now)
        except redis.ResponseError as exc:
            msg = str(exc)
            at = msg.find("SF:idem:")
            if at < 0:
                raise
            i, _, tid = msg[at + 8:].split(" ")[0].partition("|")
            key = prepared[int(i) - 1]["key"]
            raise SpecError("key", f"{key!r} was already used for a different task (#{tid}); "
                            "use a new key") from None
        return [int(x) for x in ids]

    def _prepare(self, specs: Sequence[TaskSpec], now: float) -> list[dict[str, Any]]:
        prepared: list[dict[str, Any]] = []
        for p in prepare_specs(specs, {s.name: s for s in self.shops()}, self._p,
                               self.validator, now):
            spec, shop, base, urgency = p.spec, p.shop, p.base, p.urgency
            fixed, next_at = p.urgency_fixed, p.urgency_next_at
            base_f, urg_f = float(base), float(urgency)
            start = max(now, p.start_at)  # a delayed task ages from when it joins the queue
            static = static_points(base=base_f, urgency=urg_f, attempts=0, bump=0.0,
                                   retry_bonus=self._p.retry_bonus)
            t: dict[str, Any] = {
                "type": spec.type, "shop_id": str(shop.id), "base": repr(base_f),
                "urgency": repr(urg_f), "urgency_fixed": str(fixed),
                "spec": json.dumps(spec.payload(), ensure_ascii=False, separators=(",", ":")),
                "max_attempts": str(spec.max_attempts or self._q.max_attempts),
                "urgent": static >= self._p.preempt_threshold,
                "prio_key": str(self._key(base_f, urg_f, 0, 0.0, start)),
                "key": spec.key,
            }
            if spec.key is None:
                del t["key"]
            if start > now:
                t["start"] = repr(start)
                t["start_iso"] = datetime.fromtimestamp(start, UTC).isoformat(
                    timespec="seconds")
            if next_at is not None:
                t["urgency_next_at"] = repr(float(next_at))
            if spec.deadline_ts is not None:
                t["deadline"] = repr(float(spec.deadline_ts))
            prepared.append(t)
        return prepared

    def wait_for_room(self, timeout: float) -> bool:
        """Block until a task leaves the queue (on any machine), or ``timeout`` passes."""
        start = self._r.hget(self.keys.seq, "room")
        deadline = time.monotonic() + timeout
        while not self._closed:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(ROOM_POLL_S, left))
            if self._r.hget(self.keys.seq, "room") != start:
                return True
        return False

    # -- priority maintenance (threshold events) -----------------------------------------

    def apply_thresholds(self) -> tuple[int, int]:
        """Run the threshold events now; returns (newly hard-aged, urgency re-estimated)."""
        now = self.clock.now()
        due = self._r.zrangebyscore(self.keys.urgency, "-inf", repr(now))
        args: list[str] = []
        if due:
            pipe = self._r.pipeline(transaction=False)
            for m in due:
                pipe.hmget(self.keys.task(int(m)), ["type", "deadline", "shop_id"])
            for m, (ttype, deadline, sid) in zip(due, pipe.execute(), strict=True):
                if ttype is None:
                    continue
                platform = self._shop_info(int(sid))[1]
                est = estimator_for(platform).estimate(task_type=ttype,
                                                       deadline=_f(deadline), now=now)
                nxt = est.next_change_at
                args += [str(int(m)), repr(float(est.points)),
                         repr(float(nxt)) if nxt is not None else ""]
        hard, n = self._run("thresholds", self._hard_cutoff(now), *args, now=now)
        return int(hard), int(n)

    # -- claim / ack / fail / release ----------------------------------------------------

    def ack(self, task_id: int, owner: str, *, results: dict[str, Any] | None = None) -> None:
        """Mark a claimed task done (with its results); closes its answered tickets."""
        res = json.dumps(results, ensure_ascii=False) if results is not None else ""
        self._run("ack", task_id, owner, res)

    def ack_many(self, items: Sequence[tuple[int, str, dict[str, Any] | None]]
                 ) -> list[BaseException | None]:
        """Several :meth:`ack` in one round trip (each still its own atomic script); returns
        per item None or the error that item raised (LeaseLost…)."""
        t = repr(float(self.clock.now()))
        head = [self.prefix, t, repr(self._aging_per_s), repr(float(self._p.retry_bonus))]
        pipe = self._r.pipeline(transaction=False)
        script = self._scripts["ack"]
        for task_id, owner, results in items:
            res = json.dumps(results, ensure_ascii=False) if results is not None else ""
            script(keys=[], args=[*head, task_id, owner, res], client=pipe)
        out: list[BaseException | None] = []
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, redis.ResponseError):
                try:
                    self._raise(str(reply))
                except Exception as exc:
                    out.append(exc)
            elif isinstance(reply, Exception):
                out.append(reply)
            else:
                out.append(None)
        return out

    def fail(self, task_id: int, owner: str, *, error_class: str, message: str,
             retry: bool = True, retry_after_s: float | None = None,
             evidence: dict[str, str] | None = None) -> TaskState:
        """Record a failed attempt: requeue with back-off and retry bonus, or fail for good."""
        ev = json.dumps(evidence, ensure_ascii=False) if evidence else ""
        state = self._run("fail", task_id, owner, error_class, message[:2000],
                          "1" if retry else "0",
                          repr(float(retry_after_s)) if retry_after_s is not None else "", ev,
                          repr(float(self._q.retry_backoff_s)),
                          repr(float(self._q.retry_backoff_max_s)))
        return TaskState(state)

    def release(self, task_id: int, owner: str, *, reason: str = "released",
                checkpoint: dict[str, Any] | None = None, suspend: bool = False,
                delay_s: float = 0.0) -> None:
        """Give a claimed task back without counting the attempt; ``suspend`` marks it
        preempted (it keeps its place by score and resumes from its checkpoint); ``delay_s``
        > 0 keeps it from being claimed for that long."""
        cp = json.dumps(checkpoint, ensure_ascii=False) if checkpoint is not None else ""
        self._run("release", task_id, owner, reason, cp, "suspended" if suspend else "queued",
                  repr(max(0.0, float(delay_s))))

    def save_checkpoint(self, task_id: int, owner: str, checkpoint: dict[str, Any]) -> None:
        self._run("checkpoint", task_id, owner, json.dumps(checkpoint, ensure_ascii=False))

    def renew_lease(self, task_id: int, owner: str, *, lease_s: float | None = None) -> float:
        """Extend a running task's lease; returns the new expiry."""
        until = self.clock.now() + (lease_s if lease_s is not None else self._q.lease_s)
        if self._run("renew", owner, repr(until), task_id):
            raise LeaseLost(f"task {task_id} is no longer held by {owner}")
        return until

    def renew_leases(self, owner: str, task_ids: Sequence[int]) -> list[int]:
        """Renew these leases; returns the ids no longer held by ``owner``."""
        if not task_ids:
            return []
        until = self.clock.now() + self._q.lease_s
        return [int(x) for x in self._run("renew", owner, repr(until), *task_ids)]

    def recover_expired(self, *, dead_local_owners: bool = True) -> list[int]:
        """Requeue running tasks whose lease expired (or whose owner process on this host
        died). A recovered attempt counts as spent; a task with no attempts left gets an
        exception ticket instead."""
        now = self.clock.now()
        args: list[str] = []
        seen: set[str] = set()
        expired = self._r.zrangebyscore(self.keys.running, "-inf", f"({now!r}")
        if expired:
            pipe = self._r.pipeline(transaction=False)
            for tid in expired:
                pipe.hget(self.keys.task(tid), "lease_owner")
            for tid, owner in zip(expired, pipe.execute(), strict=True):
                if owner is not None:
                    args += [tid, owner, "lease expired"]
                    seen.add(tid)
        if dead_local_owners:
            for owner in self._r.smembers(self.keys.owners):
                if owner_is_dead_local(owner):
                    for tid in self._r.smembers(self.keys.owner(owner)):
                        if tid not in seen:
                            args += [tid, owner, f"owner {owner} died"]
        if not args:
            return []
        # keep SQLite's order (by id) so tickets and requeues happen alike
        triples = sorted((args[i:i + 3] for i in range(0, len(args), 3)),
                         key=lambda t: int(t[0]))
        flat = [x for t in triples for x in t]
        return [int(x) for x in self._run("recover", *flat, now=now)]

    # -- crashes, tickets and rules ------------------------------------------------------

    def record_crash(self, task_id: int, owner: str, *, error_class: str, message: str,
                     quarantine: bool, evidence: dict[str, str] | None) -> str:
        """Count a browser crash; quarantine (poison pill) or requeue. Returns the state."""
        ev = json.dumps(evidence, ensure_ascii=False) if evidence else ""
        return str(self._run("crash", task_id, owner, error_class, message[:2000],
                             "1" if quarantine else "0", ev))

    def open_ticket(self, task_id: int, owner: str, *, signature: Signature,
                    step: int | None, error: str, evidence: dict[str, str] | None,
                    kind: str = "failure", reason: str = "") -> int:
        """Move a running task to ``waiting_human`` and open its ticket (one script)."""
        return self._open_ticket(task_id, owner, signature=signature, step=step, error=error,
                                 evidence=evidence, kind=kind, reason=reason)

    def _open_ticket(self, task_id: int, owner: str, *, signature: Signature,
                     step: int | None, error: str, evidence: dict[str, str] | None,
                     kind: str = "failure", reason: str = "", rule_id: int | None = None
                     ) -> int:
        ev = json.dumps(evidence or {}, ensure_ascii=False)
        return int(self._run("open_ticket", task_id, owner, kind,
                             str(step) if step is not None else "", signature.step_name,
                             signature.error_class, error[:2000], signature.key, ev, reason,
                             str(rule_id) if rule_id is not None else ""))

    def apply_rule(self, task_id: int, owner: str, rule: Rule, *, signature: Signature,
                   error_class: str, error: str, step: int | None, step_name: str,
                   evidence: dict[str, str] | None) -> str:
        """Resolve a failure by a rule (counts a hit, logs which rule). Returns the state."""
        from ...tickets import RuleAction, rule_checkpoint

        why = (f"rule #{rule.id} ({rule.action.value}) resolved {error_class} at "
               f"{step_name or 'start'}")
        if rule.action is RuleAction.HUMAN:
            self._open_ticket(task_id, owner, signature=signature, step=step, error=error,
                              evidence=evidence, reason=why, rule_id=rule.id)
            return "waiting_human"
        for _ in range(100):
            old = self._r.hget(self.keys.task(task_id), "checkpoint")
            cp, delay = rule_checkpoint(rule, step, json.loads(old) if old else {})
            got = self._run("rule", task_id, owner, rule.id, why, old or "", json.dumps(cp),
                            repr(float(delay)), error_class, error[:2000])
            if got != "retry":
                return str(got)
        raise LeaseLost(f"task {task_id}: its checkpoint keeps changing under {owner}")

    def ticket_book(self) -> RedisTicketBook:
        from .tickets import RedisTicketBook

        return RedisTicketBook(self)

    # -- operator commands ---------------------------------------------------------------

    def bump(self, task_id: int, *, to: float | None = None, by: float | None = None) -> float:
        """Change a task's priority now: to a score, or by a delta. Returns the new score."""
        if (to is None) == (by is None):
            raise InvalidInput("bump", "give exactly one of --to or --by")
        check_bump(to, by)
        if to is not None:
            return float(self._run("bump", task_id, "to", repr(float(to))))
        return float(self._run("bump", task_id, "by", repr(float(by or 0.0))))

    def cancel(self, task_id: int, *, reason: str = "cancelled by operator") -> TaskState:
        """Cancel a task that has not finished. A running one loses its lease at once."""
        return TaskState(self._run("cancel", task_id, reason))

    def request_preempt(self, task_id: int, reason: str) -> None:
        """Ask whichever engine (on any machine) holds ``task_id`` to suspend it."""
        self._run("preempt", task_id, reason)

    def log_event(self, task_id: int, reason: str) -> None:
        """Add a line to a task's history without changing its state (a decision about it)."""
        self._run("log_event", task_id, reason)

    # -- metrics, settings kept in the store, workers ------------------------------------

    def record_minute(self, minute: int, data: dict[str, Any], *, keep_days: float = 14.0,
                      snapshot: dict[str, Any] | None = None) -> None:
        """Keep one row of metrics per minute (older than ``keep_days`` are dropped)."""
        k = self.keys
        cutoff = minute - int(keep_days * 1440)
        old = self._r.zrangebyscore(k.metrics, "-inf", f"({cutoff}")
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(k.metrics_data, str(minute),
                  json.dumps(data, ensure_ascii=False, default=str))
        pipe.zadd(k.metrics, {str(minute): minute})
        if old:
            pipe.hdel(k.metrics_data, *old)
            pipe.zrem(k.metrics, *old)
        if snapshot:
            pipe.hset(k.meta, "engine_snapshot",
                      json.dumps(snapshot, ensure_ascii=False, default=str))
        pipe.execute()

    def set_meta(self, name: str, value: str) -> None:
        self._r.hset(self.keys.meta, name, value)

    def heartbeat(self, owner: str, info: dict[str, Any]) -> None:
        """A worker says it is alive (``info``: host, pid, slots, running, started_at)."""
        now = self.clock.now()
        wk = self.keys.worker(owner)
        known = {"host", "pid", "slots", "running", "started_at"}
        started = info.get("started_at")
        if started is None:
            started = self._r.hget(wk, "started_at") or now
        fields = {"owner": owner, "host": str(info.get("host", "")),
                  "pid": str(int(info.get("pid", 0) or 0)),
                  "slots": str(int(info.get("slots", 0) or 0)),
                  "running": str(int(info.get("running", 0) or 0)),
                  "started_at": repr(float(started)), "heartbeat_at": repr(now),
                  "state": "alive",
                  "detail": json.dumps({k: v for k, v in info.items()
                                        if k not in known | {"owner", "heartbeat_at", "state"}},
                                       default=str)}
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(wk, mapping=fields)
        pipe.zadd(self.keys.workers, {owner: now})
        pipe.execute()

    def worker_gone(self, owner: str) -> None:
        """A worker stopped cleanly."""
        if self._r.exists(self.keys.worker(owner)):
            self._r.hset(self.keys.worker(owner), mapping={"state": "stopped", "running": "0"})

    def recover_lost_workers(self, lost_after_s: float, *, alive: str | None = None
                             ) -> list[int]:
        """Mark workers silent for ``lost_after_s`` lost and requeue their tasks now.
        ``alive``: the worker asking, never lost (it is running this check)."""
        now = self.clock.now()
        cutoff = now - lost_after_s
        silent = [w for w in self._r.zrangebyscore(self.keys.workers, "-inf", f"({cutoff!r}")
                  if (w.decode() if isinstance(w, bytes) else w) != alive]
        if not silent:
            return []
        return [int(x) for x in self._run("lost_workers", repr(cutoff), *sorted(silent),
                                          now=now)]

    # -- capabilities and page reads of the Store protocol (core.store.base) -------------

    @property
    def shared_url(self) -> str | None:
        """:attr:`connect_url`: engines on this store share their gates and breakers here."""
        return self.connect_url

    def op_writer(self) -> None:
        """``None``: each call is a round trip from a thread; acks go by :meth:`ack_many`."""
        return None

    def task_page(self, states: tuple[str, ...], *, sort: str, descending: bool, order: Order,
                  flt: TaskFilter, after: Cursor | None, limit: int) -> TaskPage:
        return redis_queries.task_page(self, states, sort=sort, descending=descending,
                                       order=order, flt=flt, after=after, limit=limit)

    def count_filtered(self, states: tuple[str, ...], flt: TaskFilter, cap: int
                       ) -> tuple[int, bool]:
        return redis_queries.count_filtered(self, states, flt, cap)

    def task_rows(self, ids: Sequence[int]) -> dict[int, TaskRow]:
        return redis_queries.task_rows(self, ids)

    def shop_rows(self) -> list[ShopRow]:
        return redis_queries.shop_rows(self)

    # --- #19 notifications ----------------------------------------------------------------

    def outbox(self) -> RedisOutbox:
        """The notification outbox in this Redis (:class:`core.notify.Outbox`)."""
        from .outbox import RedisOutbox

        return RedisOutbox(self)


__all__ = ["RedisStore", "connect_error", "public_url"]
