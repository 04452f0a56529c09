"""A task's life cycle in SQLite: submit, claim, ack, fail, release, checkpoint, recover.

Each change is an op (a function of the writer's connection). The blocking methods run it on
the writer thread and wait for its commit; the ``*_op`` twins hand the op itself to
:class:`core.store.AsyncStore` (the :class:`core.store.base.OpWriter` interface), which queues
it on the writer straight from the event loop so it joins the writer's group commit.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...errors import (
    LeaseLost,
)
from ...priority import (
    score_from_key,
)
from ...urgency import estimator_for
from ..base import FAST_PATH_ROWS, PROMOTE_BATCH
from ..owners import owner_is_dead_local
from ..records import (
    ClaimedTask,
    TaskState,
)
from . import sql
from .connection import SqliteConnections
from .holds import held_shop_ids
from .results import write_results

log = logging.getLogger(__name__)


class SqliteQueue(SqliteConnections):
    """The queue's writes on top of the connections (see the module docstring)."""
    # -- priority maintenance (threshold events) -----------------------------------------

    def _claim_checks(self, conn: sqlite3.Connection, now: float) -> tuple[int, ...]:
        """One read before a claim (round): which threshold events are due, whether any
        task is suspended and whether any shop or domain is paused (see
        :data:`sql.CLAIM_CHECKS`)."""
        cutoff = now - self._p.hard_aging_min * 60.0
        row: tuple[int, ...] = conn.execute(
            sql.CLAIM_CHECKS, (now, cutoff, cutoff, now)).fetchone()
        return row

    def _op_thresholds(self, conn: sqlite3.Connection, now: float,
                       checks: tuple[int, ...] | None = None) -> tuple[int, int]:
        """Apply the events that change keys: hard aging reached, urgency thresholds crossed.

        Both use partial indexes on the event time, so with nothing due this is two index
        probes, not a scan of the queue. First, scheduled tasks whose ``not_before`` came
        join the queue (at most :data:`PROMOTE_BATCH` a round, oldest first, through their
        own partial index: the claim index never holds a task that is not due by design).
        """
        cutoff = now - self._p.hard_aging_min * 60.0
        # One read says which events are due (usually none): index probes, where four
        # writing statements that change nothing would cost a claim several times as much.
        if checks is None:
            checks = self._claim_checks(conn, now)
        promote, hard_q, hard_s, urgent = checks[:4]
        if promote:
            conn.execute(sql.PROMOTE_DUE, (now, now, PROMOTE_BATCH))
        hard = 0
        if hard_q:
            hard += conn.execute(sql.HARD_AGE_QUEUED, (now, cutoff)).rowcount
        if hard_s:
            hard += conn.execute(sql.HARD_AGE_SUSPENDED, (now, cutoff)).rowcount
        if not urgent:
            return hard, 0
        due = conn.execute(
            sql.URGENCY_DUE, (now,)).fetchall()
        for tid, ttype, deadline, base, attempts, bump, created, platform in due:
            est = estimator_for(platform).estimate(task_type=ttype, deadline=deadline, now=now)
            conn.execute(
                sql.SET_URGENCY,
                (est.points, est.next_change_at,
                 self._key(base, est.points, attempts, bump, created), now, tid))
        return hard, len(due)

    def apply_thresholds(self) -> tuple[int, int]:
        """Run the threshold events now; returns (newly hard-aged, urgency re-estimated)."""
        now = self.clock.now()
        hard, due = self._call(lambda c: self._op_thresholds(c, now))
        return int(hard), int(due)

    # -- claim / ack / fail / release ----------------------------------------------------

    def claim(self, owner: str, *, exclude_domains: Iterable[str] = (),
              lease_s: float | None = None) -> ClaimedTask | None:
        """Claim the best eligible task under a lease, or ``None`` when nothing is eligible.

        Eligible: queued, its ``not_before`` has passed, its shop runs fewer than
        ``max_tasks_per_shop`` tasks, neither its shop nor its domain is paused, and its domain
        is not in ``exclude_domains`` (open circuit breakers).
        """
        ex = frozenset(exclude_domains)
        task: ClaimedTask | None = self._call(lambda c: self._op_claim(c, owner, ex, lease_s))
        return task

    def claim_op(self, owner: str, *, exclude_domains: Iterable[str] = (),
                 lease_s: float | None = None) -> Callable[[sqlite3.Connection], Any]:
        ex = frozenset(exclude_domains)
        return lambda c: self._op_claim(c, owner, ex, lease_s)

    def _op_claim(self, conn: sqlite3.Connection, owner: str, exclude: frozenset[str],
                  lease_s: float | None, *, blocked: set[int] | None = None,
                  now: float | None = None, checks: tuple[int, ...] | None = None
                  ) -> ClaimedTask | None:
        """Claim one task. A round of claims (``claim_many_op``) reads the checks, applies the
        threshold events and reads the blocked shops once and passes them in (``blocked`` is
        updated)."""
        if now is None or checks is None:
            now = self.clock.now()
            checks = self._claim_checks(conn, now)
            self._op_thresholds(conn, now, checks)
        if blocked is None:
            blocked = self._blocked_shops(conn, exclude, paused=bool(checks[5]))
        picked = self._pick(conn, now, blocked, suspended=bool(checks[4]))
        if picked is None:
            return None
        picked_id, was = picked
        until = now + (lease_s if lease_s is not None else self._q.lease_s)
        reason = f"resumed by {owner}" if was == "suspended" else f"claimed by {owner}"
        row = conn.execute(
            sql.CLAIM_TASK,
            (reason, owner, until, now, now, picked_id)).fetchone()
        shop = conn.execute(sql.CLAIMED_SHOP,
                            (row[2],)).fetchone()
        spec = json.loads(row[7])
        return ClaimedTask(
            id=row[0], type=row[1], shop=shop[0], shop_id=row[2], platform=shop[1],
            base_url=shop[2], domain=shop[3], lease_owner=owner, lease_until=until,
            attempts=row[3], max_attempts=row[4],
            score=score_from_key(row[5], now, self._aging_per_s), preemptible=bool(row[6]),
            flow=spec.get("flow"), params=spec.get("params", {}), steps=spec.get("steps"),
            checkpoint=json.loads(row[8]) if row[8] else None, resumed=was == "suspended",
            created_at=row[9])

    def claim_many_op(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                      probe_domains: Iterable[str] = (), lease_s: float | None = None,
                      exclude_shops: Iterable[str] = (), probe_shops: Iterable[str] = ()
                      ) -> Callable[[sqlite3.Connection], list[ClaimedTask]]:
        """Claim up to ``limit`` tasks in one transaction (one commit for a whole round).

        A domain in ``probe_domains`` (a half-open breaker) gives at most one task. Shops
        (by name) in ``exclude_shops`` give none, in ``probe_shops`` at most one (a shop's
        proxy breaker, #17).
        """
        return self._claim_round(owner, limit, exclude_domains=exclude_domains,
                                 probe_domains=probe_domains, lease_s=lease_s,
                                 exclude_shops=exclude_shops, probe_shops=probe_shops)

    def _claim_round(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                     probe_domains: Iterable[str] = (), lease_s: float | None = None,
                     exclude_shops: Iterable[str] = (), probe_shops: Iterable[str] = ()
                     ) -> Callable[[sqlite3.Connection], list[ClaimedTask]]:
        """The op of :meth:`claim_many_op` (also the claim half of :meth:`ack_and_claim_op`)."""
        ex = set(exclude_domains)
        probes = set(probe_domains)
        ex_shops = sorted(set(exclude_shops))
        probe_shop_names = set(probe_shops)

        def op(conn: sqlite3.Connection) -> list[ClaimedTask]:
            out: list[ClaimedTask] = []
            if limit <= 0:
                return out
            now = self.clock.now()
            checks = self._claim_checks(conn, now)
            self._op_thresholds(conn, now, checks)
            blocked = self._blocked_shops(conn, frozenset(ex), paused=bool(checks[5]))
            if ex_shops:
                marks = ",".join("?" * len(ex_shops))
                blocked.update(int(r[0]) for r in conn.execute(
                    f"SELECT id FROM shops WHERE name IN ({marks})", ex_shops))
            running: dict[int, int] = {}
            for _ in range(limit):
                t = self._op_claim(conn, owner, frozenset(ex), lease_s, blocked=blocked,
                                   now=now, checks=checks)
                if t is None:
                    break
                out.append(t)
                if len(out) >= limit:
                    break  # the round is full: no bookkeeping for a next claim
                running[t.shop_id] = running.get(t.shop_id, 0) + 1
                if running[t.shop_id] + self._running_of(conn, t.shop_id, out) >= \
                        self._q.max_tasks_per_shop:
                    blocked.add(t.shop_id)
                if t.shop in probe_shop_names:
                    blocked.add(t.shop_id)
                if t.domain in probes:
                    ex.add(t.domain)
                    blocked.update(int(r[0]) for r in conn.execute(
                        sql.SHOPS_OF_DOMAIN, (t.domain,)))
            return out
        return op

    def _running_of(self, conn: sqlite3.Connection, shop_id: int,
                    claimed: list[ClaimedTask]) -> int:
        """Tasks of ``shop_id`` running before this round (one task per shop: usually 0)."""
        if self._q.max_tasks_per_shop == 1:
            return 0  # it was eligible, so none were running; the one just claimed counts
        n = conn.execute(sql.RUNNING_OF_SHOP, (shop_id,)).fetchone()[0]
        return int(n) - sum(1 for t in claimed if t.shop_id == shop_id)

    def claim_many(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                   probe_domains: Iterable[str] = (), exclude_shops: Iterable[str] = (),
                   probe_shops: Iterable[str] = ()) -> list[ClaimedTask]:
        """Claim up to ``limit`` tasks in one transaction (see :meth:`claim_many_op`)."""
        out: list[ClaimedTask] = self._call(self.claim_many_op(
            owner, limit, exclude_domains=exclude_domains, probe_domains=probe_domains,
            exclude_shops=exclude_shops, probe_shops=probe_shops))
        return out

    def renew_leases(self, owner: str, task_ids: Sequence[int]) -> list[int]:
        """Extend the leases of ``task_ids``; returns the ids ``owner`` no longer holds."""
        return list(self._call(self.renew_leases_op(owner, task_ids)))

    def renew_leases_op(self, owner: str, task_ids: Sequence[int], *,
                        lease_s: float | None = None) -> Callable[[sqlite3.Connection], list[int]]:
        """Extend the leases of ``task_ids``; the op returns the ids this owner lost."""
        ids = list(task_ids)

        def op(conn: sqlite3.Connection) -> list[int]:
            until = self.clock.now() + (lease_s if lease_s is not None else self._q.lease_s)
            lost = []
            for tid in ids:
                cur = conn.execute(sql.RENEW_LEASE, (until, tid, owner))
                if cur.rowcount == 0:
                    lost.append(tid)
            return lost
        return op

    def _pick(self, conn: sqlite3.Connection, now: float, blocked: set[int], *,
              suspended: bool = True) -> tuple[int, str] | None:
        """The id (and state) of the best eligible waiting task.

        Suspended tasks (few: preempted ones) are looked at in full through their own index.
        Queued ones, fast path: walk the global index from the top and take the first
        eligible row; the ineligible ones are tasks of busy or paused shops, normally few. If
        the first ``FAST_PATH_ROWS`` are all ineligible (one busy shop holds the top of the
        queue), ask each eligible shop for its best task through the per-shop index and take
        the best of those: O(shops · log n), never a scan of the queue. ``suspended=False``:
        the caller's checks found no suspended task, their index is not read.
        """
        best: tuple[int, int, int] | None = None  # (band, key, -id)
        best_pick: tuple[int, str] | None = None
        for tid, shop_id, not_before, band, key in (conn.execute(
                sql.BEST_SUSPENDED) if suspended else ()):
            if shop_id not in blocked and not_before <= now:
                best, best_pick = (band, key, -tid), (int(tid), "suspended")
                break
        cur = conn.execute(
            sql.BEST_QUEUED, (FAST_PATH_ROWS,))
        seen = 0
        for tid, shop_id, not_before, band, key in cur:
            seen += 1
            if shop_id not in blocked and not_before <= now:
                cur.close()
                if best is None or (band, key, -tid) > best:
                    return int(tid), "queued"
                return best_pick
        if seen < FAST_PATH_ROWS:
            return best_pick
        for (shop_id,) in conn.execute(sql.SHOP_IDS).fetchall():
            if shop_id in blocked:
                continue
            r = conn.execute(
                sql.BEST_QUEUED_OF_SHOP,
                (shop_id, now)).fetchone()
            if r is not None and (best is None or (r[1], r[2], -r[0]) > best):
                best, best_pick = (r[1], r[2], -r[0]), (int(r[0]), "queued")
        return best_pick

    def _blocked_shops(self, conn: sqlite3.Connection, exclude: frozenset[str], *,
                       paused: bool = True) -> set[int]:
        """Shops a claim skips: at their running limit, paused (``paused=False``: the
        caller's checks found no pause, not read again), or of an excluded domain."""
        blocked = {int(r[0]) for r in conn.execute(
            sql.FULL_SHOPS, (self._q.max_tasks_per_shop,))}
        if paused:
            blocked.update(int(r[0]) for r in conn.execute(
                sql.PAUSED_SHOPS))
        blocked.update(held_shop_ids(conn, self.clock.now()))  # #15: taken over by a person
        if exclude:
            marks = ",".join("?" * len(exclude))
            blocked.update(int(r[0]) for r in conn.execute(
                f"SELECT id FROM shops WHERE domain IN ({marks})", tuple(exclude)))
        return blocked

    def _finish_running(self, conn: sqlite3.Connection, task_id: int, owner: str, sets: str,
                        params: Sequence[Any]) -> None:
        cur = conn.execute(
            f"UPDATE tasks SET {sets}, lease_owner = NULL, lease_until = NULL "
            "WHERE id = ? AND state = 'running' AND lease_owner = ?", (*params, task_id, owner))
        if cur.rowcount == 0:
            raise LeaseLost(f"task {task_id} is no longer held by {owner} "
                            "(its lease expired and it was recovered, or it was cancelled)")

    def ack(self, task_id: int, owner: str, *, results: dict[str, Any] | None = None) -> None:
        """Mark a claimed task done (with its extracted results)."""
        self._call(self.ack_op(task_id, owner, results=results))
        self._room_freed()

    def ack_op(self, task_id: int, owner: str, *,
               results: dict[str, Any] | None = None) -> Callable[[sqlite3.Connection], None]:
        res = json.dumps(results, ensure_ascii=False) if results is not None else None

        def op(conn: sqlite3.Connection) -> None:
            self._op_ack(conn, task_id, owner, res)
        return op

    def _op_ack(self, conn: sqlite3.Connection, task_id: int, owner: str,
                res: str | None) -> None:
        now = self.clock.now()
        row = conn.execute(sql.ACK_TASK, (now, now, res, task_id, owner)).fetchone()
        if row is None:
            raise LeaseLost(f"task {task_id} is no longer held by {owner} "
                            "(its lease expired and it was recovered, or it was cancelled)")
        # Finished after an answer: its answered ticket(s) close with it.
        conn.execute(sql.CLOSE_ANSWERED_TICKETS, (now, task_id))
        if row[0]:
            # #19: its records, in the same transaction. A task that never had results has
            # no records to replace (the column is only ever set, never cleared).
            write_results(conn, task_id)

    def ack_and_claim(self, task_id: int, owner: str, *,
                      results: dict[str, Any] | None = None,
                      exclude_domains: Iterable[str] = (),
                      exclude_shops: Iterable[str] = (),
                      lease_s: float | None = None) -> ClaimedTask | None:
        """Ack a task and claim the next one for the same owner in one transaction.

        Leaves exactly the rows of :meth:`ack` followed by :meth:`claim_many` of one task
        with the same exclusions (history, counts, results, tickets) with one commit instead
        of two: a worker whose slot just freed pays one disk sync for both. If the ack fails
        (:class:`LeaseLost`) nothing is claimed. If the claim half fails, the ack is kept (the
        claim half runs in its own savepoint, rolled back alone), the error is logged and
        nothing is claimed: a finished task is never run again because its next claim broke.
        A crash loses neither: before the commit both are undone, the finished task is still
        running under its lease and recovery requeues it. Returns the claimed task, or
        ``None`` when nothing is eligible (or the claim half failed).
        """
        task: ClaimedTask | None = self._call(self.ack_and_claim_op(
            task_id, owner, results=results, exclude_domains=exclude_domains,
            exclude_shops=exclude_shops, lease_s=lease_s))
        self._room_freed()
        return task

    def ack_and_claim_op(self, task_id: int, owner: str, *,
                         results: dict[str, Any] | None = None,
                         exclude_domains: Iterable[str] = (),
                         exclude_shops: Iterable[str] = (), lease_s: float | None = None
                         ) -> Callable[[sqlite3.Connection], ClaimedTask | None]:
        res = json.dumps(results, ensure_ascii=False) if results is not None else None
        claim = self._claim_round(owner, 1, exclude_domains=exclude_domains,
                                  exclude_shops=exclude_shops, lease_s=lease_s)

        def op(conn: sqlite3.Connection) -> ClaimedTask | None:
            self._op_ack(conn, task_id, owner, res)
            conn.execute("SAVEPOINT claim_half")
            try:
                got = claim(conn)
            except Exception:
                if not conn.in_transaction:
                    raise  # SQLite rolled back the whole transaction itself (I/O, disk full)
                conn.execute("ROLLBACK TO claim_half")
                conn.execute("RELEASE claim_half")
                log.exception("task %s acknowledged; claiming the next task for %s failed",
                              task_id, owner)
                return None
            conn.execute("RELEASE claim_half")
            return got[0] if got else None
        return op

    def ack_many(self, items: Sequence[tuple[int, str, dict[str, Any] | None]]
                 ) -> list[BaseException | None]:
        out: list[BaseException | None] = []
        for task_id, owner, results in items:
            try:
                self.ack(task_id, owner, results=results)
                out.append(None)
            except Exception as exc:  # handed back per item, as the Redis store does
                out.append(exc)
        return out

    def fail(self, task_id: int, owner: str, *, error_class: str, message: str,
             retry: bool = True, retry_after_s: float | None = None,
             evidence: dict[str, str] | None = None) -> TaskState:
        """Record a failed attempt: requeue with back-off and retry bonus, or fail for good.

        Returns the task's new state (``queued`` or ``failed``).
        """
        state: TaskState = self._call(self.fail_op(
            task_id, owner, error_class=error_class, message=message, retry=retry,
            retry_after_s=retry_after_s, evidence=evidence))
        return state

    def fail_op(self, task_id: int, owner: str, *, error_class: str, message: str,
                retry: bool = True, retry_after_s: float | None = None,
                evidence: dict[str, str] | None = None
                ) -> Callable[[sqlite3.Connection], TaskState]:
        ev = json.dumps(evidence, ensure_ascii=False) if evidence else None

        def op(conn: sqlite3.Connection) -> TaskState:
            now = self.clock.now()
            row = conn.execute(
                sql.HELD_TASK_ATTEMPTS,
                (task_id, owner)).fetchone()
            if row is None:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            attempts, max_attempts, base, urg, bump, created = row
            msg = message[:2000]
            if not retry or attempts >= max_attempts:
                why = "no retry for this error" if not retry else f"{attempts} attempts spent"
                self._finish_running(
                    conn, task_id, owner,
                    "state = 'failed', state_reason = ?, finished_at = ?, updated_at = ?, "
                    "error_class = ?, last_error = ?, evidence = coalesce(?, evidence)",
                    (f"{error_class}: {why}", now, now, error_class, msg, ev))
                return TaskState.FAILED
            delay = min(self._q.retry_backoff_s * 2 ** (attempts - 1), self._q.retry_backoff_max_s)
            if retry_after_s is not None:
                delay = max(delay, retry_after_s)
            self._finish_running(
                conn, task_id, owner,
                "state = 'queued', state_reason = ?, not_before = ?, prio_key = ?, "
                "updated_at = ?, error_class = ?, last_error = ?, "
                "evidence = coalesce(?, evidence)",
                (f"{error_class}: retry {attempts + 1}/{max_attempts} in {delay:.0f}s",
                 now + delay, self._key(base, urg, attempts, bump, created), now,
                 error_class, msg, ev))
            return TaskState.QUEUED
        return op

    def release(self, task_id: int, owner: str, *, reason: str = "released",
                checkpoint: dict[str, Any] | None = None, suspend: bool = False,
                delay_s: float = 0.0) -> None:
        """Give a claimed task back without counting the attempt (a safe stop); ``suspend``
        marks it preempted (it keeps its place by score and resumes from its checkpoint);
        ``delay_s`` > 0 keeps it from being claimed for that long (rescue: a held gate, an
        open breaker, a network outage — waiting, not failing)."""
        self._call(self.release_op(task_id, owner, reason=reason, checkpoint=checkpoint,
                                   suspend=suspend, delay_s=delay_s))

    def release_op(self, task_id: int, owner: str, *, reason: str = "released",
                   checkpoint: dict[str, Any] | None = None, suspend: bool = False,
                   delay_s: float = 0.0) -> Callable[[sqlite3.Connection], None]:
        cp = json.dumps(checkpoint, ensure_ascii=False) if checkpoint is not None else None
        state = "suspended" if suspend else "queued"
        delay = max(0.0, float(delay_s))

        def op(conn: sqlite3.Connection) -> None:
            now = self.clock.now()
            sets = (f"state = '{state}', state_reason = ?, attempts = max(0, attempts - 1), "
                    "updated_at = ?, checkpoint = coalesce(?, checkpoint), "
                    "preempt_requested = NULL")
            params: tuple[Any, ...] = (reason, now, cp)
            if delay > 0:  # otherwise its not_before stays as it was
                sets += ", not_before = max(coalesce(not_before, 0), ?)"
                params += (now + delay,)
            self._finish_running(conn, task_id, owner, sets, params)
        return op

    def save_checkpoint(self, task_id: int, owner: str, checkpoint: dict[str, Any]) -> None:
        """Durably record a running task's progress (acknowledged = on disk)."""
        self._call(self.checkpoint_op(task_id, owner, checkpoint))

    def checkpoint_op(self, task_id: int, owner: str,
                      checkpoint: dict[str, Any]) -> Callable[[sqlite3.Connection], None]:
        cp = json.dumps(checkpoint, ensure_ascii=False)

        def op(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                sql.SAVE_CHECKPOINT,
                (cp, self.clock.now(), task_id, owner))
            if cur.rowcount == 0:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
        return op

    def renew_lease(self, task_id: int, owner: str, *, lease_s: float | None = None) -> float:
        """Extend a running task's lease; returns the new expiry."""
        def op(conn: sqlite3.Connection) -> float:
            until = self.clock.now() + (lease_s if lease_s is not None else self._q.lease_s)
            cur = conn.execute(sql.RENEW_LEASE, (until, task_id, owner))
            if cur.rowcount == 0:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            return until
        return float(self._call(op))

    # -- recovery: expired leases and dead owners ----------------------------------------

    def recover_expired(self, *, dead_local_owners: bool = True) -> list[int]:
        """Requeue running tasks whose lease expired (or whose owner process on this host died).

        A recovered attempt counts as spent. Its checkpoint stays, so it resumes where it was
        (a write that was in flight is verified or handed to a person, never replayed blindly).
        A task with no attempts left is not failed silently: it gets an exception ticket.
        """
        def which(owner: str | None, until: float | None) -> str | None:
            if until is not None and until < self.clock.now():
                return "lease expired"
            if dead_local_owners and owner and owner_is_dead_local(owner):
                return f"owner {owner} died"
            return None
        return self._recover_where(which)

    def _recover(self, match: Callable[[str | None, float | None], bool], why: str
                 ) -> list[int]:
        return self._recover_where(lambda o, u: why if match(o, u) else None)

    def _recover_where(self, why_of: Callable[[str | None, float | None], str | None]
                       ) -> list[int]:
        def op(conn: sqlite3.Connection) -> list[int]:
            now = self.clock.now()
            rows = conn.execute(
                sql.RUNNING_LEASES).fetchall()
            out = []
            for tid, owner, until, attempts, max_attempts, base, urg, bump, created in rows:
                why = why_of(owner, until)
                if why is None:
                    continue
                if attempts >= max_attempts:
                    self._ticket_lost_worker(conn, tid, why, attempts, now)
                else:
                    conn.execute(
                        sql.REQUEUE_RECOVERED,
                        (f"recovered: {why}", now, now,
                         self._key(base, urg, attempts, bump, created), tid))
                out.append(int(tid))
            return out
        return list(self._call(op))

    @staticmethod
    def _ticket_lost_worker(conn: sqlite3.Connection, task_id: int, why: str, attempts: int,
                            now: float) -> None:
        from ...tickets import Signature, normalise_error

        row = conn.execute(
            sql.TASK_SHOP, (task_id,)).fetchone()
        error = f"its worker was lost {attempts} times ({why})"
        sig = Signature(row[2], row[0], "", "lease_lost", normalise_error("worker lost"))
        cur = conn.execute(
            sql.OPEN_LOST_WORKER_TICKET,
            (task_id, now, row[1], row[2], row[3], row[0], error, sig.key))
        conn.execute(
            sql.TASK_TO_PERSON_LOST_WORKER,
            (f"ticket #{cur.lastrowid}: {error}", now, error, task_id))

    # -- crashes (poison pills) ----------------------------------------------------------

    def record_crash(self, task_id: int, owner: str, *, error_class: str, message: str,
                     quarantine: bool, evidence: dict[str, str] | None) -> str:
        """Count a browser crash; quarantine the task (a poison pill) or requeue it with its
        checkpoint on a fresh browser. Returns the new state."""
        return str(self._call(self.record_crash_op(
            task_id, owner, error_class=error_class, message=message, quarantine=quarantine,
            evidence=evidence)))

    def record_crash_op(self, task_id: int, owner: str, *, error_class: str, message: str,
                        quarantine: bool, evidence: dict[str, str] | None
                        ) -> Callable[[sqlite3.Connection], str]:
        ev = json.dumps(evidence, ensure_ascii=False) if evidence else None

        def op(conn: sqlite3.Connection) -> str:
            now = self.clock.now()
            sets = ("crashes = crashes + 1, lease_owner = NULL, lease_until = NULL, "
                    "updated_at = ?, error_class = ?, last_error = ?, "
                    "evidence = coalesce(?, evidence)")
            if quarantine:
                cur = conn.execute(
                    f"UPDATE tasks SET state = 'quarantined', state_reason = ?, {sets} "
                    "WHERE id = ? AND state = 'running' AND lease_owner = ?",
                    (f"quarantined: {error_class} again (poison pill)", now, error_class,
                     message[:2000], ev, task_id, owner))
                state = "quarantined"
            else:
                row = conn.execute(sql.TASK_PRIORITY_PARTS, (task_id,)).fetchone()
                key = self._key(row[0], row[1], row[2], row[3], row[4]) if row else 0
                cur = conn.execute(
                    f"UPDATE tasks SET state = 'queued', state_reason = ?, not_before = ?, "
                    f"prio_key = ?, {sets} WHERE id = ? AND state = 'running' "
                    "AND lease_owner = ?",
                    (f"{error_class}: retry on a fresh browser", now, key, now, error_class,
                     message[:2000], ev, task_id, owner))
                state = "queued"
            if cur.rowcount == 0:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            return state
        return op
