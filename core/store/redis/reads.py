"""What the Redis store reads: shops, tasks, counts, metrics, workers (no scripts here)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import (
    InvalidInput,
    Refused,
    UnknownTask,
)
from ...export import ResultFilter, TaskResults, flow_of, rows_of
from ...notify.messages import CountsSnapshot, ShopCounts
from ...priority import KEY_SCALE, score_from_key
from ...profiles import ShopProfile
from ...search import NOT_ON_REDIS
from ..base import WorkerInfo, worker_info
from ..prepare import check_listing
from ..records import (
    QueueStatus,
    ShopRecord,
    TaskEvent,
    TaskRecord,
    TaskState,
    backlog_of,
)
from .connection import HALF_SPAN, RedisConnection, _f, _j
from .keys import BAND_SPAN


class RedisReads(RedisConnection):
    """The store's reads on top of the connection."""

    # -- shops ---------------------------------------------------------------------------

    def _shop_id(self, name: str) -> int:
        sid = self._r.hget(self.keys.shops, name)
        if sid is None:
            raise InvalidInput("shop", f"no shop named {name!r} (add it with 'shopfleet shop add')")
        return int(sid)

    def shop_password_enc(self, name: str) -> bytes | None:
        sid = self._r.hget(self.keys.shops, name)
        if sid is None:
            raise InvalidInput("shop", f"no shop named {name!r}")
        pw = self._r.hget(self.keys.shop(sid), "password_enc")
        return base64.b64decode(pw) if pw is not None else None

    def shop_proxy_password_enc(self, name: str) -> bytes | None:
        pw = self._r.hget(self.keys.shop(self._shop_id(name)), "proxy_password_enc")
        return base64.b64decode(pw) if pw is not None else None

    def shops(self) -> list[ShopRecord]:
        ids = self._r.hgetall(self.keys.shops)
        pipe = self._r.pipeline(transaction=False)
        for sid in ids.values():
            pipe.hgetall(self.keys.shop(sid))
        return sorted((self._shop_record(h) for h in pipe.execute() if h),
                      key=lambda s: s.name)

    def shop(self, name: str) -> ShopRecord:
        h = self._r.hgetall(self.keys.shop(self._shop_id(name)))
        if not h:
            raise InvalidInput("shop", f"no shop named {name!r} (add it with 'shopfleet shop add')")
        return self._shop_record(h)

    @staticmethod
    def _shop_record(h: dict[str, str]) -> ShopRecord:
        return ShopRecord(id=int(h["id"]), name=h["name"], platform=h["platform"],
                          base_url=h["base_url"], domain=h["domain"],
                          username=h.get("username", ""), has_password="password_enc" in h,
                          paused=h.get("paused") == "1",
                          allowed_origins=tuple(json.loads(h.get("allowed_origins") or "[]")),
                          tags=tuple(json.loads(h.get("tags") or "[]")),
                          profile=ShopProfile.from_json(h.get("profile")),
                          has_proxy_password="proxy_password_enc" in h)

    def _shop_info(self, shop_id: int) -> tuple[str, str, str]:
        """(name, platform, domain) of a shop id, cached (names never change)."""
        info = self._shop_names.get(shop_id)
        if info is None:
            h = self._r.hmget(self.keys.shop(shop_id), ["name", "platform", "domain"])
            info = (str(h[0] or ""), str(h[1] or ""), str(h[2] or ""))
            self._shop_names[shop_id] = info
        return info

    def paused_domains(self) -> list[str]:
        return sorted(self._r.hkeys(self.keys.paused_domains))

    # -- tasks ---------------------------------------------------------------------------

    def task(self, task_id: int) -> TaskRecord:
        h = self._r.hgetall(self.keys.task(task_id))
        if not h:
            raise UnknownTask(task_id)
        return self._task_record(h, self.clock.now())

    def _records(self, ids: Sequence[int | str]) -> list[TaskRecord]:
        if not ids:
            return []
        pipe = self._r.pipeline(transaction=False)
        for tid in ids:
            pipe.hgetall(self.keys.task(int(tid)))
        now = self.clock.now()
        return [self._task_record(h, now) for h in pipe.execute() if h]

    def tasks(self, *, state: str | None = None, shop: str | None = None, limit: int = 50,
              offset: int = 0) -> list[TaskRecord]:
        """Tasks, best first for queued ones, newest first otherwise."""
        check_listing(state, limit)
        sid = self.shop(shop).id if shop is not None else None
        end = offset + limit - 1
        k = self.keys
        if state == "queued":
            zk = k.ready if sid is None else k.shop_queue(sid)
            return self._records(self._r.zrange(zk, offset, end))
        if state is None:
            zk = k.tasks if sid is None else k.shop_tasks(sid)
            return self._records(self._r.zrevrange(zk, offset, end))
        if sid is None:
            return self._records(self._r.zrevrange(k.state(state), offset, end))
        # a state and a shop: walk the smaller index, newest first, filtering by the other
        by_state = int(self._r.zcard(k.state(state))) <= int(self._r.zcard(k.shop_tasks(sid)))
        walk = k.state(state) if by_state else k.shop_tasks(sid)
        field, want = ("shop_id", str(sid)) if by_state else ("state", state)
        found: list[str] = []
        pos, chunk = 0, max(256, limit + offset)
        while len(found) < offset + limit:
            ids = self._r.zrevrange(walk, pos, pos + chunk - 1)
            if not ids:
                break
            pipe = self._r.pipeline(transaction=False)
            for tid in ids:
                pipe.hget(k.task(tid), field)
            found += [tid for tid, v in zip(ids, pipe.execute(), strict=True) if v == want]
            pos += chunk
        return self._records(found[offset:offset + limit])

    def events(self, task_id: int) -> list[TaskEvent]:
        rows = self._r.lrange(self.keys.task_events(task_id), 0, -1)
        out = []
        for line in rows:
            eid, at, frm, to, reason = json.loads(line)
            out.append(TaskEvent(int(eid), task_id, float(at), frm, to, reason))
        return out

    def _task_record(self, h: dict[str, str], now: float) -> TaskRecord:
        spec = json.loads(h["spec"])
        name, platform, domain = self._shop_info(int(h["shop_id"]))
        return TaskRecord(
            id=int(h["id"]), key=h.get("key"), type=h["type"], shop=name, platform=platform,
            domain=domain, state=TaskState(h["state"]), state_reason=h.get("state_reason", ""),
            score=score_from_key(int(h["prio_key"]), now, self._aging_per_s),
            hard_aged=h.get("band") == "1", preemptible=h.get("preemptible") == "1",
            created_at=float(h["created_at"]), updated_at=float(h["updated_at"]),
            not_before=float(h["not_before"]), deadline=_f(h.get("deadline")),
            attempts=int(h["attempts"]), max_attempts=int(h["max_attempts"]),
            lease_owner=h.get("lease_owner"), lease_until=_f(h.get("lease_until")),
            started_at=_f(h.get("started_at")), finished_at=_f(h.get("finished_at")),
            flow=spec.get("flow"), params=spec.get("params", {}), steps=spec.get("steps"),
            checkpoint=_j(h.get("checkpoint")), results=_j(h.get("results")),
            error_class=h.get("error_class"), last_error=h.get("last_error"),
            evidence=_j(h.get("evidence")))

    def crashes(self, task_id: int) -> int:
        v = self._r.hget(self.keys.task(task_id), "crashes")
        return int(v) if v is not None else 0

    def preempt_requests(self, task_ids: Sequence[int]) -> dict[int, str]:
        if not task_ids:
            return {}
        pipe = self._r.pipeline(transaction=False)
        for tid in task_ids:
            pipe.hget(self.keys.task(tid), "preempt_requested")
        return {int(tid): str(v) for tid, v in zip(task_ids, pipe.execute(), strict=True)
                if v is not None}

    def urgent_waiting(self, threshold: float, *, limit: int = 8) -> list[tuple[int, int, float]]:
        """Waiting tasks (queued or suspended) scoring at least ``threshold`` now, best first:
        (id, shop_id, score)."""
        now = self.clock.now()
        lo = round(threshold * KEY_SCALE) - self._shift(now)
        out: list[tuple[int, int, float]] = []
        for zk in (self.keys.ready, self.keys.suspended):
            members = self._r.zrangebyscore(zk, f"({-HALF_SPAN}", -lo, start=0, num=limit,
                                            withscores=True)
            if not members:
                continue
            pipe = self._r.pipeline(transaction=False)
            for m, _ in members:
                pipe.hmget(self.keys.task(int(m)), ["shop_id", "not_before"])
            for (m, sc), (sid, nb) in zip(members, pipe.execute(), strict=True):
                if sid is not None and float(nb) <= now:
                    out.append((int(m), int(sid),
                                score_from_key(-int(sc), now, self._aging_per_s)))
        return sorted(out, key=lambda t: -t[2])[:limit]

    # -- counts --------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in TaskState}
        counts.update({s: int(n) for s, n in self._r.hgetall(self.keys.counts).items()})
        return counts

    def next_due(self) -> float | None:
        """The earliest ``not_before`` among queued or suspended tasks (None: none waits);
        reads every waiting task's hash, in pages (only asked when a worker is idle)."""
        best: float | None = None
        for zk in (self.keys.ready, self.keys.suspended):
            for start in range(0, 1 << 62, 1000):
                members = self._r.zrange(zk, start, start + 999)
                if not members:
                    break
                pipe = self._r.pipeline(transaction=False)
                for m in members:
                    pipe.hget(self.keys.task(int(m)), "not_before")
                for nb in pipe.execute():
                    if nb is not None and (best is None or float(nb) < best):
                        best = float(nb)
                if len(members) < 1000:
                    break
        return best

    def status(self) -> QueueStatus:
        """Counts per state, backlog, oldest wait and busy shops, from indexes only."""
        now = self.clock.now()
        k = self.keys
        pipe = self._r.pipeline(transaction=True)
        pipe.hgetall(k.counts)
        pipe.zrange(k.age, 0, 0, withscores=True)
        pipe.zrangebyscore(k.ready, "-inf", -HALF_SPAN)
        pipe.hgetall(k.shop_running)
        pipe.zrange(k.ready, 0, 0, withscores=True)
        pipe.zrange(k.ready, -1, -1, withscores=True)
        pipe.zrange(k.scheduled, 0, 0, withscores=True)
        raw_counts, age0, hard_ids, running, top, bottom, sched0 = pipe.execute()
        counts = {s.value: 0 for s in TaskState}
        counts.update({s: int(n) for s, n in raw_counts.items()})
        oldest = [float(age0[0][1])] if age0 else []
        if hard_ids:
            pipe = self._r.pipeline(transaction=False)
            for m in hard_ids:
                pipe.hget(k.task(int(m)), "created_at")
            oldest += [float(c) for c in pipe.execute() if c is not None]
        busy = {self._shop_info(int(sid))[0]: int(n) for sid, n in running.items()
                if int(n) > 0}

        def score(rows: list[tuple[str, float]]) -> float | None:
            if not rows:
                return None
            v = -int(rows[0][1])
            key = v - BAND_SPAN if v >= HALF_SPAN else v
            return score_from_key(key, now, self._aging_per_s)

        return QueueStatus(
            at=now, counts=counts, queued=counts.get("queued", 0),
            max_backlog=self._q.max_backlog, backlog=backlog_of(counts),
            scheduled=counts.get("scheduled", 0),
            next_scheduled_at=float(sched0[0][1]) if sched0 else None,
            oldest_wait_s=max(0.0, now - min(oldest)) if oldest else 0.0,
            hard_aged=len(hard_ids), busy_shops=busy, top_score=score(top),
            bottom_score=score(bottom))

    def queue_bands(self, *, urgent_at: float, low_below: float) -> dict[str, int]:
        """Queued tasks by priority band now: hard-aged, urgent (score ≥ ``urgent_at``),
        normal, low (score < ``low_below``). Counts score ranges."""
        shift = self._shift(self.clock.now())
        hi = round(urgent_at * KEY_SCALE) - shift
        lo = round(low_below * KEY_SCALE) - shift
        pipe = self._r.pipeline(transaction=True)
        pipe.zcount(self.keys.ready, "-inf", -HALF_SPAN)
        pipe.zcount(self.keys.ready, f"({-HALF_SPAN}", -hi)
        pipe.zcount(self.keys.ready, f"({-lo}", "+inf")
        pipe.zcount(self.keys.ready, f"({-HALF_SPAN}", "+inf")
        hard, urgent, low, total0 = (int(x) for x in pipe.execute())
        return {"hard_aged": hard, "urgent": urgent, "low": low,
                "normal": total0 - urgent - low}

    # -- metrics, settings kept in the store, workers ------------------------------------

    def metrics_history(self, *, since_minute: int = 0, limit: int = 1440
                        ) -> list[tuple[int, dict[str, Any]]]:
        minutes = self._r.zrevrangebyscore(self.keys.metrics, "+inf", since_minute, start=0,
                                           num=limit)
        if not minutes:
            return []
        data = self._r.hmget(self.keys.metrics_data, minutes)
        return [(int(m), json.loads(d)) for m, d in reversed(list(zip(minutes, data,
                                                                        strict=True)))
                if d is not None]

    def meta(self, name: str) -> str | None:
        v = self._r.hget(self.keys.meta, name)
        return str(v) if v is not None else None

    def workers(self) -> list[WorkerInfo]:
        owners = sorted(self._r.zrange(self.keys.workers, 0, -1))
        if not owners:
            return []
        pipe = self._r.pipeline(transaction=False)
        for o in owners:
            pipe.hgetall(self.keys.worker(o))
        out = []
        for h in pipe.execute():
            if not h:
                continue
            rec: dict[str, Any] = {k: v for k, v in h.items() if k != "detail"}
            rec.update(json.loads(h.get("detail") or "{}"))
            out.append(worker_info(rec))
        return out

    # --- #19 results and search -----------------------------------------------------------

    def iter_results(self, flt: ResultFilter, *, limit: int | None = None
                     ) -> Iterator[dict[str, Any]]:
        """Export rows from the done tasks' hashes, in task id order, 500 tasks a round trip
        (constant memory; blocking). Redis keeps no results table: each task's results are
        split into records here by the same rule (:func:`core.export.records_of`)."""
        chunk, pos, left = 500, 0, limit
        done = self.keys.state("done")
        while left is None or left > 0:
            ids = self._r.zrange(done, pos, pos + chunk - 1)
            if not ids:
                return
            pos += chunk
            pipe = self._r.pipeline(transaction=False)
            for tid in ids:
                pipe.hmget(self.keys.task(int(tid)),
                           ["id", "type", "shop_id", "spec", "finished_at", "results"])
            tasks = []
            for tid, typ, sid, spec, fin, res in pipe.execute():
                if tid is None or not res:
                    continue
                name, platform, _domain = self._shop_info(int(sid))
                t = TaskResults(int(tid), name, platform, typ, flow_of(_j(spec)), _f(fin),
                                _j(res))
                if flt.keeps(t):
                    tasks.append(t)
            for row in rows_of(tasks):
                yield row
                if left is not None:
                    left -= 1
                    if left <= 0:
                        return

    def search(self, place: str, text: str, *, limit: int = 100,
               shops: Sequence[str] | None = None) -> list[dict[str, Any]]:
        raise Refused(NOT_ON_REDIS)

    def counts_snapshot(self, day_start: float, day_end: float) -> CountsSnapshot:
        """The daily digest's counts (as the SQLite store's). Done and failed tasks are walked
        newest id first, 500 a round trip, and the walk stops at a chunk where every task
        finished before ``day_start`` (ids grow with submission, so older ids finished
        earlier, give or take a long-running task). The finish-time indexes of
        :mod:`core.store.redis.sorts` (#15) could make this range exact; not used here yet."""
        per: dict[str, dict[str, int]] = {}
        for state in ("done", "failed"):
            pos = 0
            while True:
                ids = self._r.zrevrange(self.keys.state(state), pos, pos + 499)
                if not ids:
                    break
                pos += 500
                pipe = self._r.pipeline(transaction=False)
                for tid in ids:
                    pipe.hmget(self.keys.task(int(tid)), ["shop_id", "finished_at"])
                older = 0
                for sid, fin in pipe.execute():
                    f = _f(fin)
                    if f is None or sid is None or f < day_start:
                        older += 1
                        continue
                    if f < day_end:
                        name = self._shop_info(int(sid))[0]
                        c = per.setdefault(name, {})
                        c[state] = c.get(state, 0) + 1
                if older == len(ids):
                    break
        pipe = self._r.pipeline(transaction=False)
        open_ids = self._r.zrange(self.keys.tickets_in("open"), 0, -1)
        for k in open_ids:
            pipe.hget(self.keys.ticket(int(k)), "shop")
        for shop in pipe.execute() if open_ids else []:
            if shop is not None:
                c = per.setdefault(shop, {})
                c["tickets"] = c.get("tickets", 0) + 1
        sigs: dict[str, int] = {}
        pos = 0
        while True:  # tickets newest first until one opened before the day
            ids = self._r.zrevrange(self.keys.tickets, pos, pos + 499)
            if not ids:
                break
            pos += 500
            pipe = self._r.pipeline(transaction=False)
            for k in ids:
                pipe.hmget(self.keys.ticket(int(k)), ["opened_at", "platform", "task_type",
                                                      "step_name", "error_class"])
            stop = False
            for at, platform, task_type, step_name, error_class in pipe.execute():
                t = _f(at)
                if t is None or t < day_start:
                    stop = True
                    continue
                if t < day_end:
                    key = f"{platform} {task_type} · {step_name} · {error_class}"
                    sigs[key] = sigs.get(key, 0) + 1
            if stop:
                break
        top = sorted(sigs.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
        return CountsSnapshot(day_start, tuple(ShopCounts(s, **c) for s, c in sorted(
            per.items())), self.counts().get("queued", 0),
            sum(c.get("tickets", 0) for c in per.values()), top)
