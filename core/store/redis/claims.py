"""Claims in the Redis store: a claim round, and an ack with the next claim (#20), each one
script (:data:`core.store.redis.lua.CLAIM`, :data:`core.store.redis.lua.ACK_AND_CLAIM`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...priority import score_from_key
from ..base import FAST_PATH_ROWS, PROMOTE_BATCH
from ..records import ClaimedTask
from .connection import RedisConnection

log = logging.getLogger(__name__)


class RedisClaims(RedisConnection):
    """Mixed into :class:`core.store.redis.store.RedisStore`."""

    if TYPE_CHECKING:  # the store's own
        def apply_thresholds(self) -> tuple[int, int]: ...

    def claim(self, owner: str, *, exclude_domains: Iterable[str] = (),
              lease_s: float | None = None) -> ClaimedTask | None:
        """Claim the best eligible task under a lease, or ``None`` when nothing is eligible.

        Eligible: queued (or suspended), its ``not_before`` has passed, its shop runs fewer
        than ``max_tasks_per_shop`` tasks on all workers together, neither its shop nor its
        domain is paused, and its domain is not in ``exclude_domains`` (open breakers).
        """
        got = self._claim(owner, 1, exclude_domains, (), lease_s, (), ())
        return got[0] if got else None

    def claim_many(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                   probe_domains: Iterable[str] = (), exclude_shops: Iterable[str] = (),
                   probe_shops: Iterable[str] = ()) -> list[ClaimedTask]:
        """Claim up to ``limit`` tasks in one script (one round trip for a whole round).

        A domain in ``probe_domains`` (a half-open breaker) gives at most one task.
        """
        return self._claim(owner, limit, exclude_domains, probe_domains, None, exclude_shops,
                           probe_shops)

    def _claim(self, owner: str, limit: int, exclude: Iterable[str], probes: Iterable[str],
               lease_s: float | None, exclude_shops: Iterable[str],
               probe_shops: Iterable[str]) -> list[ClaimedTask]:
        if limit <= 0:
            return []
        ex = json.dumps(sorted(set(exclude)))
        pr = json.dumps(sorted(set(probes)))
        ex_shops = json.dumps(sorted(set(exclude_shops)), ensure_ascii=False)
        pr_shops = json.dumps(sorted(set(probe_shops)), ensure_ascii=False)
        check_urgency = "1"
        while True:
            now = self.clock.now()
            until = now + (lease_s if lease_s is not None else self._q.lease_s)
            raw = self._run("claim", owner, limit, repr(until), self._hard_cutoff(now),
                            self._q.max_tasks_per_shop, ex, pr, FAST_PATH_ROWS, check_urgency,
                            PROMOTE_BATCH, ex_shops, pr_shops, now=now)
            rows = json.loads(raw)
            if rows == "urgency":  # re-estimate due urgencies first, as SQLite's claim does
                self.apply_thresholds()
                check_urgency = "0"
                continue
            break
        return self._claimed(rows, owner, until, now)

    def _claimed(self, rows: list[Any], owner: str, until: float, now: float
                 ) -> list[ClaimedTask]:
        """The claim script's rows as :class:`ClaimedTask` records."""
        out = []
        for (tid, ttype, sid, attempts, max_attempts, key, preemptible, spec_s, cp, created,
             was, name, platform, base_url, domain) in rows:
            spec = json.loads(spec_s)
            out.append(ClaimedTask(
                id=int(tid), type=ttype, shop=name, shop_id=int(sid), platform=platform,
                base_url=base_url, domain=domain, lease_owner=owner, lease_until=until,
                attempts=int(attempts), max_attempts=int(max_attempts),
                score=score_from_key(int(key), now, self._aging_per_s),
                preemptible=preemptible == "1", flow=spec.get("flow"),
                params=spec.get("params", {}), steps=spec.get("steps"),
                checkpoint=json.loads(cp) if cp else None, resumed=was == "suspended",
                created_at=float(created)))
        return out

    def ack_and_claim(self, task_id: int, owner: str, *,
                      results: dict[str, Any] | None = None,
                      exclude_domains: Iterable[str] = (),
                      exclude_shops: Iterable[str] = (), lease_s: float | None = None
                      ) -> ClaimedTask | None:
        """:meth:`ack`, then :meth:`claim_many` of one task with the same exclusions, in one
        script (atomic: no other client's command runs between them; one round trip, one
        append-only-file write). A lost lease raises before anything is written; a claim
        half that fails keeps the ack, is logged, and claims nothing. The same call again
        from the same owner (its reply was lost) answers what the first claimed, if the owner
        still holds it, and writes nothing (see ``ACK_AND_CLAIM`` in :mod:`.lua`)."""
        res = json.dumps(results, ensure_ascii=False) if results is not None else ""
        ex = json.dumps(sorted(set(exclude_domains)))
        ex_shops = json.dumps(sorted(set(exclude_shops)), ensure_ascii=False)
        check_urgency = "1"
        while True:
            now = self.clock.now()
            until = now + (lease_s if lease_s is not None else self._q.lease_s)
            raw = self._run("ack_and_claim", owner, 1, repr(until), self._hard_cutoff(now),
                            self._q.max_tasks_per_shop, ex, "[]", FAST_PATH_ROWS,
                            check_urgency, PROMOTE_BATCH, ex_shops, "[]", task_id, owner, res,
                            now=now)
            rows = json.loads(raw)
            if rows == "urgency":  # nothing written yet: re-estimate, then the same again
                self.apply_thresholds()
                check_urgency = "0"
                continue
            break
        if isinstance(rows, dict):
            log.error("task %s acknowledged; claiming the next task for %s failed: %s",
                      task_id, owner, rows.get("claim_failed"))
            return None
        got = self._claimed(rows, owner, until, now)
        return got[0] if got else None
