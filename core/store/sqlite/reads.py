"""What the SQLite store reads: shops, tasks, counts, metrics, workers (no writes here).

Every read runs on the calling thread's own read-only connection (blocking: call it off any
event loop); :class:`core.store.AsyncStore` does that for async code.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import (
    EnvironmentProblem,
    InvalidInput,
    UnknownTask,
)
from ...export import ResultFilter
from ...notify.messages import CountsSnapshot, ShopCounts
from ...priority import (
    KEY_EPOCH,
    KEY_SCALE,
    score_from_key,
)
from ...profiles import ShopProfile
from ...search import search, shop_condition
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
from . import sql
from .connection import SqliteConnections
from .results import count_results, iter_results
from .schema import SCHEMA_VERSION
from .sql import TASK_COLUMNS


class SqliteReads(SqliteConnections):
    """The store's reads on top of the connections."""

    # -- shops ---------------------------------------------------------------------------

    def shop_password_enc(self, name: str) -> bytes | None:
        row = self._reader().execute(
            sql.SHOP_PASSWORD, (name,)).fetchone()
        if row is None:
            raise InvalidInput("shop", f"no shop named {name!r}")
        return bytes(row[0]) if row[0] is not None else None

    def shop_proxy_password_enc(self, name: str) -> bytes | None:
        row = self._reader().execute(sql.SHOP_PROXY_PASSWORD, (name,)).fetchone()
        if row is None:
            raise InvalidInput("shop", f"no shop named {name!r}")
        return bytes(row[0]) if row[0] is not None else None

    def shops(self) -> list[ShopRecord]:
        rows = self._reader().execute(sql.ALL_SHOPS).fetchall()
        return [self._shop_record(r) for r in rows]

    def shop(self, name: str) -> ShopRecord:
        row = self._reader().execute(sql.SHOP_BY_NAME, (name,)).fetchone()
        if row is None:
            raise InvalidInput("shop", f"no shop named {name!r} (add it with 'shopfleet shop add')")
        return self._shop_record(row)

    @staticmethod
    def _shop_record(r: sqlite3.Row) -> ShopRecord:
        return ShopRecord(id=r["id"], name=r["name"], platform=r["platform"],
                          base_url=r["base_url"], domain=r["domain"], username=r["username"],
                          has_password=r["password_enc"] is not None, paused=bool(r["paused"]),
                          allowed_origins=tuple(json.loads(r["allowed_origins"] or "[]")),
                          tags=tuple(json.loads(r["tags"] or "[]")),
                          profile=ShopProfile.from_json(r["profile"]),
                          has_proxy_password=r["proxy_password_enc"] is not None)

    def paused_domains(self) -> list[str]:
        return [r[0] for r in self._reader().execute(
            sql.PAUSED_DOMAINS)]

    # -- tasks ---------------------------------------------------------------------------

    def task(self, task_id: int) -> TaskRecord:
        row = self._reader().execute(
            f"SELECT {TASK_COLUMNS} FROM tasks t JOIN shops s ON s.id = t.shop_id "
            "WHERE t.id = ?", (task_id,)).fetchone()
        if row is None:
            raise UnknownTask(task_id)
        return self._task_record(row, self.clock.now())

    def tasks(self, *, state: str | None = None, shop: str | None = None, limit: int = 50,
              offset: int = 0) -> list[TaskRecord]:
        """Tasks, best first for queued ones, newest first otherwise."""
        check_listing(state, limit)
        where, params = [], []
        if state == "queued":
            where.append("t.state = 'queued'")  # a literal: the partial index serves it
        elif state is not None:
            where.append("t.state = ?")
            params.append(state)
        if shop is not None:
            self.shop(shop)
            where.append("s.name = ?")
            params.append(shop)
        order = ("t.band DESC, t.prio_key DESC, t.id" if state == "queued" else "t.id DESC")
        hint = " INDEXED BY tasks_ready" if state == "queued" and shop is None else ""
        query = (f"SELECT {TASK_COLUMNS} FROM tasks t{hint} JOIN shops s ON s.id = t.shop_id "
                 f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY {order} "
                 "LIMIT ? OFFSET ?")
        now = self.clock.now()
        rows = self._reader().execute(query, (*params, limit, offset)).fetchall()
        return [self._task_record(r, now) for r in rows]

    def events(self, task_id: int) -> list[TaskEvent]:
        rows = self._reader().execute(
            sql.TASK_EVENTS, (task_id,)).fetchall()
        return [TaskEvent(*tuple(r)) for r in rows]

    def _task_record(self, r: sqlite3.Row, now: float) -> TaskRecord:
        spec = json.loads(r["spec"])
        return TaskRecord(
            id=r["id"], key=r["key"], type=r["type"], shop=r["shop"], platform=r["platform"],
            domain=r["domain"], state=TaskState(r["state"]), state_reason=r["state_reason"],
            score=score_from_key(r["prio_key"], now, self._aging_per_s),
            hard_aged=bool(r["band"]), preemptible=bool(r["preemptible"]),
            created_at=r["created_at"], updated_at=r["updated_at"], not_before=r["not_before"],
            deadline=r["deadline"], attempts=r["attempts"], max_attempts=r["max_attempts"],
            lease_owner=r["lease_owner"], lease_until=r["lease_until"],
            started_at=r["started_at"], finished_at=r["finished_at"], flow=spec.get("flow"),
            params=spec.get("params", {}), steps=spec.get("steps"),
            checkpoint=json.loads(r["checkpoint"]) if r["checkpoint"] else None,
            results=json.loads(r["results"]) if r["results"] else None,
            error_class=r["error_class"], last_error=r["last_error"],
            evidence=json.loads(r["evidence"]) if r["evidence"] else None)

    def crashes(self, task_id: int) -> int:
        row = self._reader().execute(sql.TASK_CRASHES,
                                     (task_id,)).fetchone()
        return int(row[0]) if row else 0

    def preempt_requests(self, task_ids: Sequence[int]) -> dict[int, str]:
        """Operator preemption requests (from any process) for these running tasks."""
        if not task_ids:
            return {}
        marks = ",".join("?" * len(task_ids))
        rows = self._reader().execute(
            f"SELECT id, preempt_requested FROM tasks WHERE id IN ({marks}) AND "
            "preempt_requested IS NOT NULL", tuple(task_ids)).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    def urgent_waiting(self, threshold: float, *, limit: int = 8) -> list[tuple[int, int, float]]:
        """Waiting tasks (queued or suspended) scoring at least ``threshold`` now, best first:
        (id, shop_id, score). An index range, not a scan."""
        now = self.clock.now()
        shift = round((now - KEY_EPOCH) * self._aging_per_s * KEY_SCALE)
        lo = round(threshold * KEY_SCALE) - shift
        out: list[tuple[int, int, float]] = []
        for index, state in (("tasks_ready", "queued"), ("tasks_suspended", "suspended")):
            rows = self._reader().execute(
                f"SELECT id, shop_id, prio_key, not_before FROM tasks INDEXED BY {index} "
                f"WHERE state = '{state}' AND band = 0 AND prio_key >= ? "
                "ORDER BY band DESC, prio_key DESC, id LIMIT ?", (lo, limit)).fetchall()
            out += [(int(r[0]), int(r[1]), score_from_key(r[2], now, self._aging_per_s))
                    for r in rows if r[3] <= now]
        return sorted(out, key=lambda t: -t[2])[:limit]

    # -- counts --------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        rows = self._reader().execute(sql.STATE_COUNTS).fetchall()
        counts = {s.value: 0 for s in TaskState}
        counts.update({r[0]: int(r[1]) for r in rows})
        return counts

    def next_due(self) -> float | None:
        """The earliest ``not_before`` among queued or suspended tasks (None: none waits)."""
        row = self._reader().execute(sql.NEXT_DUE).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def status(self) -> QueueStatus:
        """Counts per state, backlog, oldest wait and busy shops, from indexes only."""
        conn = self._reader()
        now = self.clock.now()
        counts = self.counts()
        conn.execute("BEGIN")
        try:
            oldest = conn.execute(
                sql.OLDEST_QUEUED).fetchone()[0]
            hard = conn.execute(sql.HARD_AGED_COUNT).fetchone()[0]
            busy = {r[0]: int(r[1]) for r in conn.execute(
                sql.RUNNING_PER_SHOP)}
            top = conn.execute(sql.TOP_KEY).fetchone()
            bottom = conn.execute(sql.BOTTOM_KEY).fetchone()
            first = conn.execute(sql.NEXT_SCHEDULED).fetchone()
            next_sched = first[0] if first else None
        finally:
            conn.execute("COMMIT")
        return QueueStatus(
            at=now, counts=counts, queued=counts.get("queued", 0),
            max_backlog=self._q.max_backlog, backlog=backlog_of(counts),
            scheduled=counts.get("scheduled", 0),
            next_scheduled_at=float(next_sched) if next_sched is not None else None,
            oldest_wait_s=max(0.0, now - oldest) if oldest is not None else 0.0,
            hard_aged=int(hard), busy_shops=busy,
            top_score=score_from_key(top[0], now, self._aging_per_s) if top else None,
            bottom_score=score_from_key(bottom[0], now, self._aging_per_s) if bottom else None)

    def queue_bands(self, *, urgent_at: float, low_below: float) -> dict[str, int]:
        """Queued tasks by priority band now: hard-aged, urgent (score ≥ ``urgent_at``),
        normal, low (score < ``low_below``). Counts index ranges; run it off the loop.

        #20: the queued total comes from ``state_counts`` (kept by triggers), and of the two
        large bands only the one that was smaller last time is counted (the other is the
        rest), so a refresh walks the hard-aged, urgent and smaller band's index entries,
        never every queued row. Exact either way, in one read transaction."""
        now = self.clock.now()
        shift = round((now - KEY_EPOCH) * self._aging_per_s * KEY_SCALE)
        hi = round(urgent_at * KEY_SCALE) - shift
        lo = round(low_below * KEY_SCALE) - shift
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            q = ("SELECT count(*) FROM tasks INDEXED BY tasks_ready "
                 "WHERE state = 'queued' AND band = ?")
            queued = conn.execute(sql.STATE_COUNT, ("queued",)).fetchone()
            hard = conn.execute(q, (1,)).fetchone()[0]
            urgent = conn.execute(q + " AND prio_key >= ?", (0, hi)).fetchone()[0]
            total0 = (int(queued[0]) if queued else 0) - int(hard)
            if getattr(self, "_count_normal", False) and lo <= hi:  # normal was smaller
                normal = conn.execute(q + " AND prio_key >= ? AND prio_key < ?",
                                      (0, lo, hi)).fetchone()[0]
                low = total0 - urgent - normal
            else:
                low = conn.execute(q + " AND prio_key < ?", (0, lo)).fetchone()[0]
                normal = total0 - urgent - low
        finally:
            conn.execute("COMMIT")
        self._count_normal = normal < low
        return {"hard_aged": int(hard), "urgent": int(urgent), "low": int(low),
                "normal": int(normal)}

    # -- metrics, settings kept in the store, workers ------------------------------------

    def metrics_history(self, *, since_minute: int = 0, limit: int = 1440
                        ) -> list[tuple[int, dict[str, Any]]]:
        rows = self._reader().execute(
            sql.METRICS_SINCE, (since_minute, limit)).fetchall()
        return [(int(m), json.loads(d)) for m, d in reversed(rows)]

    def meta(self, name: str) -> str | None:
        row = self._reader().execute(sql.META_VALUE,
                                     (name,)).fetchone()
        return str(row[0]) if row else None

    def workers(self) -> list[WorkerInfo]:
        rows = self._reader().execute(sql.WORKERS).fetchall()
        return [worker_info(json.loads(r[0])) for r in rows]

    # --- #19 results and search -----------------------------------------------------------

    def iter_results(self, flt: ResultFilter, *, limit: int | None = None
                     ) -> Iterator[dict[str, Any]]:
        """Export rows from the results table, oldest first (blocking, one cursor).

        The cursor runs on a connection of its own, so the calling thread's reader stays free
        for other reads while an export streams.
        """
        conn = self._connect()
        try:
            if not conn.execute(sql.RESULTS_TABLE_EXISTS).fetchone():
                raise EnvironmentProblem(
                    f"{self.path} predates the results table (schema {SCHEMA_VERSION - 1} or "
                    "older); open it once with a command that writes (e.g. 'shopfleet "
                    "worker') to bring it up to date")
            yield from iter_results(conn, flt, limit=limit)
        finally:
            conn.close()

    def count_results(self, flt: ResultFilter) -> int:
        return count_results(self._reader(), flt)

    def search(self, place: str, text: str, *, limit: int = 100,
               shops: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Text search (:func:`core.search.search`) on this thread's reader."""
        import sqlite_utils  # only here (#20: start-up of every other command)

        where, where_args = shop_condition(place, shops)
        return search(sqlite_utils.Database(self._reader()), place, text, limit=limit,
                      where=where, where_args=where_args)

    def counts_snapshot(self, day_start: float, day_end: float) -> CountsSnapshot:
        """The daily digest's counts: tasks finished per shop in [start, end), open tickets
        per shop, queued tasks, and the failure signatures of tickets opened then."""
        conn = self._reader()
        per: dict[str, dict[str, int]] = {}
        for shop, done, failed in conn.execute(sql.DIGEST_FINISHED, (day_start, day_end)):
            per.setdefault(shop, {}).update(done=int(done), failed=int(failed))
        for shop, n in conn.execute(sql.DIGEST_OPEN_TICKETS):
            per.setdefault(shop, {})["tickets"] = int(n)
        sigs = [(str(s), int(n)) for s, n in conn.execute(sql.DIGEST_SIGNATURES,
                                                         (day_start, day_end))]
        queued = self.counts().get("queued", 0)
        return CountsSnapshot(day_start, tuple(ShopCounts(s, **c) for s, c in sorted(
            per.items())), queued, sum(c.get("tickets", 0) for c in per.values()), sigs)
