"""Every SQL statement of the SQLite store, by name (the schema is :mod:`.schema`).

Statements that take a list (``IN (?, ?, …)``) or a choice of index are built by small
functions here, so the text of every statement the store runs can be read in this one module.

Queries on the queue name their index (INDEXED BY): without ANALYZE statistics SQLite may
prefer the (state, id) index and sort a million rows per claim; a named index cannot be
second-guessed, and a query whose index went missing fails loudly instead of crawling.
"""

from __future__ import annotations

TASK_COLUMNS = """t.id, t.key, t.type, s.name AS shop, s.platform, s.domain, t.state,
    t.state_reason, t.prio_key, t.band, t.preemptible, t.created_at, t.updated_at,
    t.not_before, t.deadline, t.attempts, t.max_attempts, t.lease_owner, t.lease_until,
    t.started_at, t.finished_at, t.spec, t.checkpoint, t.results, t.error_class, t.last_error,
    t.evidence"""

INSERT_TASK_BULK = """
    INSERT INTO tasks (key, type, shop_id, state, state_reason, base, urgency, urgency_fixed,
                       prio_key, created_at, updated_at, not_before, max_attempts, spec)
    VALUES (?, ?, ?, 'queued', 'submitted', ?, ?, 1, ?, ?, ?, ?, ?, ?)"""
"""A queued task from a row the benchmarks built (:mod:`.bulk`)."""
