"""The SQLite store's statements, by name (the tables themselves are in :mod:`.schema`).

Every fixed statement the store, its ticket book and ``shopfleet migrate`` run is here, grouped
by the module that runs it. Statements whose text depends on the call stay next to the code
that builds them, because their shape is the logic: a list of ids or domains (``IN (?, ?, …)``
in ``queue._blocked_shops``, ``reads.preempt_requests``, ``pages.task_rows``), the columns a
life-cycle change sets (``queue._finish_running`` and ``record_crash_op``,
``store.update_shop``), an index chosen per state (``reads.urgent_waiting``), a filter and
keyset cursor (``reads.tasks``, ``tickets.tickets``, the console's ``pages``) and the
table-by-table copy of ``core.store.redis.from_sqlite``. #19's results and outbox keep their
statements in :mod:`.results` and :mod:`.outbox`, next to their tables (a feature's module
with its own table, its filters built per call). No value a caller gives goes into the
text (states and index names come from the code): values are bound parameters.

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
                       prio_key, created_at, updated_at, not_before, queued_at, max_attempts,
                       spec)
    VALUES (?, ?, ?, ?, 'submitted', ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)"""
"""A queued (or scheduled) task from a row the benchmarks built (:mod:`.bulk`)."""

# -- settings that keys depend on (connection.py) ----------------------------------------------

AGING_RATE = "SELECT value FROM meta WHERE name = 'aging_per_min'"

SET_AGING_RATE = (
    "INSERT INTO meta (name, value) VALUES ('aging_per_min', ?) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value")

SET_TASK_KEY = "UPDATE tasks SET prio_key = ? WHERE id = ?"

# -- shops, submission, operator commands, metrics (store.py) ----------------------------------

CANCEL_TASK = (
    "UPDATE tasks SET state = 'cancelled', state_reason = ?, finished_at = ?, "
    "updated_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ?")

CANCEL_TASK_TICKETS = (
    "UPDATE tickets SET state = 'cancelled', closed_at = ? WHERE "
    "task_id = ? AND state IN ('open', 'answered')")

DROP_METRICS_BEFORE = "DELETE FROM metrics_minutes WHERE minute < ?"

INSERT_SHOP = (
    "INSERT INTO shops (name, platform, base_url, domain, username, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?)")

INSERT_TASK = (
    "INSERT INTO tasks (key, type, shop_id, state, state_reason, base, urgency, "
    "urgency_fixed, urgency_next_at, prio_key, created_at, updated_at, not_before, "
    "deadline, max_attempts, spec, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
    "?, ?, ?, ?, ?, ?, ?, ?, ?)")

LOG_EVENT = (
    "INSERT INTO task_events (task_id, at, from_state, to_state, "
    "reason) VALUES (?, ?, ?, ?, ?)")

PAUSE_DOMAIN = (
    "INSERT INTO paused_domains (domain, since, reason) VALUES (?, ?, ?) "
    "ON CONFLICT (domain) DO UPDATE SET reason = excluded.reason")

REQUEST_PREEMPT = "UPDATE tasks SET preempt_requested = ? WHERE id = ?"

SET_BUMP = "UPDATE tasks SET bump = ?, prio_key = ?, updated_at = ? WHERE id = ?"

SET_META = (
    "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) "
    "DO UPDATE SET value = excluded.value")

SET_METRICS_MINUTE = (
    "INSERT INTO metrics_minutes (minute, data) VALUES (?, ?) "
    "ON CONFLICT (minute) DO UPDATE SET data = excluded.data")

SET_SHOP_ORIGINS = "UPDATE shops SET allowed_origins = ? WHERE name = ?"
SET_SHOP_PROFILE = "UPDATE shops SET profile = ?, proxy_password_enc = ? WHERE name = ?"

SET_SHOP_PAUSED = "UPDATE shops SET paused = ? WHERE name = ?"

TASKS_BY_KEYS = (
    "SELECT key, id, type, shop_id, spec FROM tasks WHERE key IN "
    "(SELECT value FROM json_each(?))")
"""The tasks already holding any of a batch's idempotency keys (a JSON list): one read."""

MAX_TASK_ID = "SELECT max(id) FROM tasks"

LAST_ROWID = "SELECT last_insert_rowid()"

TASK_STATE = "SELECT state FROM tasks WHERE id = ?"

TASK_STATE_AND_PRIORITY = (
    "SELECT state, base, urgency, attempts, bump, queued_at FROM tasks WHERE id = ?")

UNPAUSE_DOMAIN = "DELETE FROM paused_domains WHERE domain = ?"

WAITING_COUNT = (  # records.BACKLOG_STATES: what [queue] max_backlog bounds
    "SELECT sum(n) FROM state_counts WHERE state IN "
    "('queued', 'suspended', 'scheduled')")

# -- a task's life cycle: thresholds, claim, ack, fail, release, recovery (queue.py) -----------

BEST_QUEUED = (
    "SELECT id, shop_id, not_before, band, prio_key FROM tasks INDEXED BY tasks_ready "
    "WHERE state = 'queued' "
    "ORDER BY band DESC, prio_key DESC, id LIMIT ?")

BEST_QUEUED_OF_SHOP = (
    "SELECT id, band, prio_key FROM tasks INDEXED BY tasks_shop_ready "
    "WHERE state = 'queued' AND shop_id = ? "
    "AND not_before <= ? ORDER BY band DESC, prio_key DESC, id LIMIT 1")

BEST_SUSPENDED = (
    "SELECT id, shop_id, not_before, band, prio_key FROM tasks INDEXED BY "
    "tasks_suspended WHERE state = 'suspended' ORDER BY band DESC, prio_key DESC, id")

CLAIMED_SHOP = "SELECT name, platform, base_url, domain FROM shops WHERE id = ?"

CLAIM_TASK = (
    "UPDATE tasks SET state = 'running', state_reason = ?, lease_owner = ?, "
    "lease_until = ?, attempts = attempts + 1, started_at = ?, updated_at = ? "
    "WHERE id = ? AND state IN ('queued', 'suspended') RETURNING id, type, shop_id, "
    "attempts, max_attempts, prio_key, preemptible, spec, checkpoint, created_at")

ACK_TASK = (
    "UPDATE tasks SET state = 'done', state_reason = 'finished', finished_at = ?, "
    "updated_at = ?, results = coalesce(?, results), lease_owner = NULL, lease_until = NULL "
    "WHERE id = ? AND state = 'running' AND lease_owner = ? RETURNING results IS NOT NULL")

CLOSE_ANSWERED_TICKETS = (
    "UPDATE tickets SET state = 'closed', closed_at = ? WHERE task_id = ? "
    "AND state = 'answered'")

FULL_SHOPS = (
    "SELECT shop_id FROM tasks INDEXED BY tasks_state WHERE state = 'running' "
    "GROUP BY shop_id "
    "HAVING count(*) >= ?")

HARD_AGE_QUEUED = (
    "UPDATE tasks INDEXED BY tasks_hard_aging SET band = 1, preemptible = 0, "
    "updated_at = ? WHERE state = 'queued' AND band = 0 AND queued_at <= ?")

HARD_AGE_SUSPENDED = (
    "UPDATE tasks INDEXED BY tasks_suspended SET band = 1, preemptible = 0, "
    "updated_at = ? WHERE state = 'suspended' AND band = 0 AND queued_at <= ?")

PROMOTE_DUE = (
    "UPDATE tasks SET state = 'queued', state_reason = 'due (not before reached)', "
    "updated_at = ? WHERE id IN (SELECT id FROM tasks INDEXED BY tasks_scheduled "
    "WHERE state = 'scheduled' AND not_before <= ? ORDER BY not_before, id LIMIT ?)")
"""Scheduled tasks whose time came join the queue, at most a batch per claim round (their key
already counts aging from ``not_before``: nothing else changes)."""

CLAIM_CHECKS = (
    "SELECT EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_scheduled "
    "WHERE state = 'scheduled' AND not_before <= ?), "
    "EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_hard_aging "
    "WHERE state = 'queued' AND band = 0 AND queued_at <= ?), "
    "EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_suspended "
    "WHERE state = 'suspended' AND band = 0 AND queued_at <= ?), "
    "EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_urgency_due WHERE state = 'queued' "
    "AND urgency_next_at IS NOT NULL AND urgency_next_at <= ?), "
    "EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_suspended WHERE state = 'suspended'), "
    "EXISTS (SELECT 1 FROM shops WHERE paused = 1) "
    "OR EXISTS (SELECT 1 FROM paused_domains)")
"""One read before a claim: which threshold events are due (promotion, hard aging of queued
and suspended tasks, urgency re-estimates), whether any task is suspended, whether any shop
or domain is paused. With nothing due (the usual case) a claim then writes nothing for the
events and skips the reads of suspended tasks and paused shops."""

HELD_TASK_ATTEMPTS = (
    "SELECT attempts, max_attempts, base, urgency, bump, queued_at FROM tasks "
    "WHERE id = ? AND state = 'running' AND lease_owner = ?")

OPEN_LOST_WORKER_TICKET = (
    "INSERT INTO tickets (task_id, state, kind, opened_at, shop, platform, domain, "
    "task_type, step, step_name, error_class, error, signature, evidence) VALUES "
    "(?, 'open', 'failure', ?, ?, ?, ?, ?, NULL, '', 'lease_lost', ?, ?, '{}')")

HELD_SHOPS = (
    "SELECT s.id, m.value FROM meta m JOIN shops s ON m.name = 'hold:' || s.name "
    "WHERE m.name >= 'hold:' AND m.name < 'hold;'")
"""Shops with a hold (#15 takeover), live or run out: the claim compares the expiry."""

PAUSED_SHOPS = (
    "SELECT id FROM shops WHERE paused = 1 OR domain IN "
    "(SELECT domain FROM paused_domains)")

RENEW_LEASE = (
    "UPDATE tasks SET lease_until = ? WHERE id = ? AND "
    "state = 'running' AND lease_owner = ?")

REQUEUE_RECOVERED = (
    "UPDATE tasks SET state = 'queued', state_reason = ?, updated_at = ?, "
    "lease_owner = NULL, lease_until = NULL, not_before = ?, prio_key = ? "
    "WHERE id = ?")

RUNNING_LEASES = (
    "SELECT id, lease_owner, lease_until, attempts, max_attempts, base, urgency, "
    "bump, queued_at FROM tasks WHERE state = 'running'")

RUNNING_OF_SHOP = (
    "SELECT count(*) FROM tasks INDEXED BY tasks_state "
    "WHERE state = 'running' AND shop_id = ?")

SAVE_CHECKPOINT = (
    "UPDATE tasks SET checkpoint = ?, updated_at = ? WHERE id = ? "
    "AND state = 'running' AND lease_owner = ?")

SET_URGENCY = (
    "UPDATE tasks SET urgency = ?, urgency_next_at = ?, prio_key = ?, updated_at = ? "
    "WHERE id = ?")

SHOPS_OF_DOMAIN = "SELECT id FROM shops WHERE domain = ?"

SHOP_IDS = "SELECT id FROM shops"

TASK_PRIORITY_PARTS = (
    "SELECT base, urgency, attempts, bump, queued_at FROM "
    "tasks WHERE id = ?")

TASK_SHOP = (
    "SELECT t.type, s.name, s.platform, s.domain FROM tasks t JOIN shops s "
    "ON s.id = t.shop_id WHERE t.id = ?")

TASK_TO_PERSON_LOST_WORKER = (
    "UPDATE tasks SET state = 'waiting_human', state_reason = ?, updated_at = ?, "
    "lease_owner = NULL, lease_until = NULL, error_class = 'lease_lost', "
    "last_error = ? WHERE id = ?")

URGENCY_DUE = (
    "SELECT t.id, t.type, t.deadline, t.base, t.attempts, t.bump, t.queued_at, "
    "s.platform FROM tasks t INDEXED BY tasks_urgency_due JOIN shops s "
    "ON s.id = t.shop_id WHERE t.state = 'queued' AND t.urgency_next_at IS NOT NULL "
    "AND t.urgency_next_at <= ?")

# -- reads: shops, tasks, counts, metrics, workers (reads.py) ----------------------------------

ALL_SHOPS = "SELECT * FROM shops ORDER BY name"

BOTTOM_KEY = (
    "SELECT prio_key FROM tasks INDEXED BY tasks_ready "
    "WHERE state = 'queued' "
    "ORDER BY band, prio_key, id DESC LIMIT 1")

HARD_AGED_COUNT = (
    "SELECT count(*) FROM tasks INDEXED BY tasks_ready "
    "WHERE state = 'queued' AND band = 1")

META_VALUE = "SELECT value FROM meta WHERE name = ?"

DELETE_META = "DELETE FROM meta WHERE name = ?"

METRICS_SINCE = (
    "SELECT minute, data FROM metrics_minutes WHERE minute >= ? ORDER BY minute DESC "
    "LIMIT ?")

OLDEST_QUEUED = (
    "SELECT min(m) FROM (SELECT min(queued_at) AS m FROM tasks "
    "INDEXED BY tasks_hard_aging WHERE state = 'queued' AND band = 0 UNION ALL "
    "SELECT min(queued_at) FROM tasks INDEXED BY tasks_ready "
    "WHERE state = 'queued' AND band = 1)")

PAUSED_DOMAINS = "SELECT domain FROM paused_domains ORDER BY domain"

RUNNING_PER_SHOP = (
    "SELECT s.name, count(*) FROM tasks t JOIN shops s ON s.id = t.shop_id "
    "WHERE t.state = 'running' GROUP BY s.name")

SHOP_BY_NAME = "SELECT * FROM shops WHERE name = ?"

SHOP_PASSWORD = "SELECT password_enc FROM shops WHERE name = ?"
SHOP_PROXY_PASSWORD = "SELECT proxy_password_enc FROM shops WHERE name = ?"

STATE_COUNTS = "SELECT state, n FROM state_counts"

NEXT_SCHEDULED = (
    "SELECT not_before FROM tasks INDEXED BY tasks_scheduled "
    "WHERE state = 'scheduled' ORDER BY not_before, id LIMIT 1")
"""The first scheduled task's time: one probe of ``tasks_scheduled``. (#20: left to the
planner, ``min(not_before)`` walked ``tasks_state`` over every scheduled row — 200 ms at
20,000 scheduled, in ``status()``, which the console's metrics call every second.)"""

STATE_COUNT = "SELECT n FROM state_counts WHERE state = ?"

NEXT_DUE = ("SELECT min(coalesce(not_before, 0)) FROM tasks "
            "WHERE state IN ('queued', 'suspended')")

TASK_CRASHES = "SELECT crashes FROM tasks WHERE id = ?"

TASK_EVENTS = (
    "SELECT id, task_id, at, from_state, to_state, reason FROM task_events "
    "WHERE task_id = ? ORDER BY id")

TOP_KEY = (
    "SELECT prio_key FROM tasks INDEXED BY tasks_ready "
    "WHERE state = 'queued' "
    "ORDER BY band DESC, prio_key DESC, id LIMIT 1")

WORKERS = (
    "SELECT value FROM meta WHERE name LIKE 'worker:%' "
    "ORDER BY name")

# -- tickets, the knowledge base and rules (tickets.py) ----------------------------------------

ALL_RULES = "SELECT * FROM rules ORDER BY id"

ANSWERED_TASK = (
    "SELECT state, checkpoint, base, urgency, attempts, bump, "
    "queued_at FROM tasks WHERE id = ?")

ANSWER_TICKET = (
    "UPDATE tickets SET state = ?, action = ?, note = ?, answered_at = ?, "
    "closed_at = ? WHERE id = ?")

COUNT_RULE_HIT = "UPDATE rules SET hits = hits + 1 WHERE id = ?"

DELETE_RULE = "DELETE FROM rules WHERE id = ?"

EDIT_RULE = (
    "UPDATE rules SET action = ?, delay_s = ?, note = ?, description = ? WHERE id = ?")

EARLIER_ANSWERS = (
    "SELECT * FROM kb_answers WHERE signature = ? ORDER BY id DESC "
    "LIMIT ?")

FINISH_AS_CANCELLED = (
    "UPDATE tasks SET state = 'cancelled', state_reason = ?, "
    "finished_at = ?, updated_at = ? WHERE id = ?")

FINISH_AS_DONE = (
    "UPDATE tasks SET state = 'done', state_reason = ?, finished_at = ?, "
    "updated_at = ? WHERE id = ?")

HELD_TASK_CHECKPOINT = (
    "SELECT checkpoint FROM tasks WHERE id = ? AND "
    "state = 'running' AND lease_owner = ?")

INSERT_KB_ANSWER = (
    "INSERT INTO kb_answers (signature, ticket_id, at, platform, task_type, "
    "step_name, error_class, error_norm, action, note) VALUES "
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")

INSERT_RULE = (
    "INSERT INTO rules (signature, action, delay_s, note, created_at, description) "
    "VALUES (?, ?, ?, ?, ?, ?)")

INSERT_RULE_FROM_ANSWER = (
    "INSERT INTO rules (signature, action, delay_s, note, created_at, "
    "from_answer, description) VALUES (?, ?, ?, ?, ?, ?, ?)")

INSERT_TICKET = (
    "INSERT INTO tickets (task_id, state, kind, opened_at, shop, platform, domain, "
    "task_type, step, step_name, error_class, error, signature, evidence) "
    "VALUES (?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")

KNOWLEDGE_BASE = "SELECT * FROM kb_answers ORDER BY id DESC LIMIT ?"

MATCHING_RULE = (
    "SELECT * FROM rules WHERE signature = ? AND enabled = 1 "
    "ORDER BY id DESC LIMIT 1")

OPEN_TICKET_COUNT = "SELECT count(*) FROM tickets WHERE state = 'open'"

REQUEUE_ANSWERED = (
    "UPDATE tasks SET state = 'queued', state_reason = ?, attempts = 0, crashes = 0, "
    "not_before = ?, bump = ?, prio_key = ?, checkpoint = ?, updated_at = ? "
    "WHERE id = ?")

REQUEUE_BY_RULE = (
    "UPDATE tasks SET state = 'queued', state_reason = ?, not_before = ?, "
    "checkpoint = ?, lease_owner = NULL, lease_until = NULL, updated_at = ?, "
    "error_class = ?, last_error = ? WHERE id = ?")

RULE = "SELECT * FROM rules WHERE id = ?"

SET_RULE_ENABLED = "UPDATE rules SET enabled = ? WHERE id = ?"

TASK_BASE_PRIORITY = "SELECT base, urgency, bump, queued_at FROM tasks WHERE id = ?"

TASK_CHECKPOINT = "SELECT checkpoint FROM tasks WHERE id = ?"

TASK_SHOP_FOR_TICKET = (
    "SELECT t.type, s.name, s.platform, s.domain FROM tasks t JOIN shops s "
    "ON s.id = t.shop_id WHERE t.id = ? AND t.state = 'running' AND "
    "t.lease_owner = ?")

TASK_STATE_AND_CHECKPOINT = "SELECT state, checkpoint FROM tasks WHERE id = ?"

TASK_TO_PERSON = (
    "UPDATE tasks SET state = 'waiting_human', state_reason = ?, updated_at = ?, "
    "lease_owner = NULL, lease_until = NULL, error_class = ?, last_error = ?, "
    "evidence = ? WHERE id = ?")

TICKET = "SELECT * FROM tickets WHERE id = ?"

TICKET_COLUMNS = "SELECT * FROM tickets LIMIT 0"

# -- the console's pages (pages.py) ------------------------------------------------------------

SHOP_ROWS = (
    "SELECT s.name, s.platform, s.domain, s.base_url, s.paused, "
    "EXISTS (SELECT 1 FROM paused_domains d WHERE d.domain = s.domain) AS dpaused, "
    "(SELECT count(*) FROM tasks t INDEXED BY tasks_shop_ready WHERE t.state = 'queued' "
    "AND t.shop_id = s.id) AS q, "
    "(SELECT count(*) FROM tasks t INDEXED BY tasks_state WHERE t.state = 'running' "
    "AND t.shop_id = s.id) AS r, s.tags, "
    "(SELECT m.value FROM meta m WHERE m.name = 'hold:' || s.name) AS hold "
    "FROM shops s ORDER BY s.name")

WAITING_HUMAN_PER_SHOP = (
    "SELECT s.name, count(*) FROM tasks t INDEXED BY tasks_state JOIN shops s "
    "ON s.id = t.shop_id WHERE t.state = 'waiting_human' GROUP BY s.name")

# -- reading a store to copy it elsewhere (core.store.redis.from_sqlite) -----------------------

COUNT_IDEMPOTENCY_KEYS = "SELECT count(*) FROM tasks WHERE key IS NOT NULL"

COUNT_KB_ANSWERS = "SELECT count(*) FROM kb_answers"

COUNT_METRICS_MINUTES = "SELECT count(*) FROM metrics_minutes"

COUNT_PAUSED_DOMAINS = "SELECT count(*) FROM paused_domains"

COUNT_RULES = "SELECT count(*) FROM rules"

COUNT_SHOPS = "SELECT count(*) FROM shops"

COUNT_TASKS = "SELECT count(*) FROM tasks"

COUNT_TASKS_WITH_EVIDENCE = (
    "SELECT count(*) FROM tasks WHERE evidence IS NOT NULL "
    "AND evidence NOT IN ('', '{}')")

COUNT_TASK_EVENTS = "SELECT count(*) FROM task_events"

COUNT_TICKETS = "SELECT count(*) FROM tickets"

COUNT_TICKETS_IN_STATE = "SELECT count(*) FROM tickets WHERE state = ?"

FIRST_RUNNING_IDS = (
    "SELECT id FROM tasks WHERE state = 'running' ORDER BY id "
    "LIMIT 20")

TASKS_PER_STATE = "SELECT state, count(*) FROM tasks GROUP BY state"

WORKER_ENTRIES = "SELECT value FROM meta WHERE name LIKE 'worker:%'"

# -- #19 results (results.py shapes the filtered queries) ------------------------------------

RESULTS_TABLE_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'results'"

# -- #19 the daily digest (reads.py counts_snapshot) -------------------------------------------

DIGEST_FINISHED = """
SELECT s.name, sum(t.state = 'done'), sum(t.state = 'failed')
FROM tasks t JOIN shops s ON s.id = t.shop_id
WHERE t.state IN ('done', 'failed') AND t.finished_at >= ? AND t.finished_at < ?
GROUP BY s.name"""

DIGEST_OPEN_TICKETS = "SELECT shop, count(*) FROM tickets WHERE state = 'open' GROUP BY shop"

DIGEST_SIGNATURES = """
SELECT platform || ' ' || task_type || ' · ' || step_name || ' · ' || error_class, count(*)
FROM tickets WHERE opened_at >= ? AND opened_at < ?
GROUP BY 1 ORDER BY 2 DESC LIMIT 20"""
