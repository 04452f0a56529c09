"""The SQLite schema: numbered migrations tracked in ``PRAGMA user_version``.

``MIGRATIONS[i]`` takes a database from version ``i`` to ``i + 1``. A new database gets
``FRESH_SCHEMA`` in one go; a test checks that it equals all migrations applied in order, so
the two can never drift. Add a migration by appending to ``MIGRATIONS`` *and* updating
``FRESH_SCHEMA``; never edit a released migration.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import Any

from .results import RESULTS_TABLE, backfill

# Every state change of a task is logged by a trigger, with the time and the reason the code
# put in ``state_reason``: no code path can change a state without leaving a trace.
_V1 = """
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE shops (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    platform     TEXT NOT NULL,
    base_url     TEXT NOT NULL,
    domain       TEXT NOT NULL,
    username     TEXT NOT NULL DEFAULT '',
    password_enc BLOB,
    paused       INTEGER NOT NULL DEFAULT 0,
    created_at   REAL NOT NULL
);
CREATE TABLE paused_domains (
    domain TEXT PRIMARY KEY,
    since  REAL NOT NULL,
    reason TEXT NOT NULL DEFAULT ''
);
CREATE TABLE tasks (
    id              INTEGER PRIMARY KEY,
    key             TEXT UNIQUE,
    type            TEXT NOT NULL,
    shop_id         INTEGER NOT NULL REFERENCES shops(id),
    state           TEXT NOT NULL,
    state_reason    TEXT NOT NULL DEFAULT '',
    base            REAL NOT NULL,
    urgency         REAL NOT NULL DEFAULT 0,
    urgency_fixed   INTEGER NOT NULL DEFAULT 0,
    urgency_next_at REAL,
    bump            REAL NOT NULL DEFAULT 0,
    prio_key        INTEGER NOT NULL,
    band            INTEGER NOT NULL DEFAULT 0,
    preemptible     INTEGER NOT NULL DEFAULT 1,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    not_before      REAL NOT NULL,
    deadline        REAL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     REAL,
    started_at      REAL,
    finished_at     REAL,
    spec            TEXT NOT NULL,
    checkpoint      TEXT,
    results         TEXT,
    error_class     TEXT,
    last_error      TEXT
);
CREATE INDEX tasks_ready ON tasks (band DESC, prio_key DESC, id) WHERE state = 'queued';
CREATE INDEX tasks_shop_ready ON tasks (shop_id, band DESC, prio_key DESC, id)
    WHERE state = 'queued';
CREATE INDEX tasks_hard_aging ON tasks (created_at) WHERE state = 'queued' AND band = 0;
CREATE INDEX tasks_urgency_due ON tasks (urgency_next_at)
    WHERE state = 'queued' AND urgency_next_at IS NOT NULL;
CREATE INDEX tasks_leases ON tasks (lease_until) WHERE state = 'running';
CREATE INDEX tasks_state ON tasks (state, id);
CREATE TABLE task_events (
    id         INTEGER PRIMARY KEY,
    task_id    INTEGER NOT NULL,
    at         REAL NOT NULL,
    from_state TEXT,
    to_state   TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX task_events_task ON task_events (task_id, id);
CREATE TABLE state_counts (
    state TEXT PRIMARY KEY,
    n     INTEGER NOT NULL
);
CREATE TRIGGER tasks_log_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_events (task_id, at, from_state, to_state, reason)
        VALUES (NEW.id, NEW.updated_at, NULL, NEW.state, NEW.state_reason);
    INSERT INTO state_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_log_state AFTER UPDATE OF state ON tasks
    WHEN OLD.state IS NOT NEW.state BEGIN
    INSERT INTO task_events (task_id, at, from_state, to_state, reason)
        VALUES (NEW.id, NEW.updated_at, OLD.state, NEW.state, NEW.state_reason);
    UPDATE state_counts SET n = n - 1 WHERE state = OLD.state;
    INSERT INTO state_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
    UPDATE state_counts SET n = n - 1 WHERE state = OLD.state;
END;
"""

# v2: per-minute metrics for the console's charts, kept with a retention.
_V2 = """
CREATE TABLE metrics_minutes (
    minute  INTEGER PRIMARY KEY,
    data    TEXT NOT NULL
);
"""

# v3: where the evidence of a task's last failed attempt is (screenshot, DOM, logs).
_V3 = """
ALTER TABLE tasks ADD COLUMN evidence TEXT;
"""

# v4: humans in the loop — exception tickets, the knowledge base of answers, rules made
# from answers; and a task's crash count (poison pills go to quarantine).
_V4_TABLES = """
CREATE TABLE tickets (
    id          INTEGER PRIMARY KEY,
    task_id     INTEGER NOT NULL REFERENCES tasks(id),
    state       TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'failure',
    opened_at   REAL NOT NULL,
    answered_at REAL,
    closed_at   REAL,
    shop        TEXT NOT NULL,
    platform    TEXT NOT NULL,
    domain      TEXT NOT NULL,
    task_type   TEXT NOT NULL,
    step        INTEGER,
    step_name   TEXT NOT NULL DEFAULT '',
    error_class TEXT NOT NULL,
    error       TEXT NOT NULL,
    signature   TEXT NOT NULL,
    evidence    TEXT,
    action      TEXT,
    note        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX tickets_state ON tickets (state, id);
CREATE INDEX tickets_task ON tickets (task_id, id);
CREATE TABLE kb_answers (
    id          INTEGER PRIMARY KEY,
    signature   TEXT NOT NULL,
    ticket_id   INTEGER NOT NULL REFERENCES tickets(id),
    at          REAL NOT NULL,
    platform    TEXT NOT NULL,
    task_type   TEXT NOT NULL,
    step_name   TEXT NOT NULL,
    error_class TEXT NOT NULL,
    error_norm  TEXT NOT NULL,
    action      TEXT NOT NULL,
    note        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX kb_answers_signature ON kb_answers (signature, id);
CREATE TABLE rules (
    id          INTEGER PRIMARY KEY,
    signature   TEXT NOT NULL,
    action      TEXT NOT NULL,
    delay_s     REAL NOT NULL DEFAULT 0,
    note        TEXT NOT NULL DEFAULT '',
    enabled     INTEGER NOT NULL DEFAULT 1,
    created_at  REAL NOT NULL,
    from_answer INTEGER REFERENCES kb_answers(id),
    hits        INTEGER NOT NULL DEFAULT 0,
    description TEXT NOT NULL DEFAULT ''
);
CREATE INDEX rules_signature ON rules (signature) WHERE enabled = 1;
"""
_V4 = """
ALTER TABLE tasks ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
""" + _V4_TABLES

# v5: preemption — suspended tasks wait in their own small index and are claimed with the
# queued ones, keeping their place by score.
# An operator's preemption from another process (the CLI) is a request on the task's row
# that the engine holding the task picks up.
_V5_INDEX = """
CREATE INDEX tasks_suspended ON tasks (band DESC, prio_key DESC, id) WHERE state = 'suspended';
"""
_V5 = """
ALTER TABLE tasks ADD COLUMN preempt_requested TEXT;
""" + _V5_INDEX

# v6: the trust boundary — origins (``scheme://host:port``, a JSON list) a shop's tasks may
# load besides the shop's own.
_V6 = """
ALTER TABLE shops ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '[]';
"""

# --- #18 delayed tasks, shop tags, schedules: a task with ``not_before`` ahead waits as
# 'scheduled' outside the claim index (its own partial index by time, promoted in batches by
# the claim); aging and hard aging count from ``queued_at``, when it joined (or will join) the
# queue. Shops carry tags (a sorted JSON list). A schedule keeps its definition (JSON), its
# mark (the last firing handled, moved in the transaction that submits the firing's tasks),
# whether it is paused and why it failed last.
_V7 = """
ALTER TABLE shops ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
CREATE TABLE schedules (
    name        TEXT PRIMARY KEY,
    definition  TEXT NOT NULL,
    mark        REAL NOT NULL,
    paused      INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT NOT NULL DEFAULT '',
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL
);
ALTER TABLE tasks ADD COLUMN queued_at REAL;
UPDATE tasks SET queued_at = created_at;
DROP INDEX tasks_hard_aging;
CREATE INDEX tasks_hard_aging ON tasks (queued_at) WHERE state = 'queued' AND band = 0;
CREATE INDEX tasks_scheduled ON tasks (not_before, id) WHERE state = 'scheduled';
"""


# --- #19 results and search
# v8: one row per collected record (filled from done tasks' results), trigram FTS5 indexes on
# results, tickets and knowledge-base answers (sqlite-utils' SQL, see search.py), and the
# notification outbox (outbox.py).
# Written by sqlite-utils on first use, not at import (#20: opening a store that needs no
# migration does not import sqlite-utils, nor the notification outbox).
@functools.cache
def _v7_search() -> str:
    from ...search import index_sql

    return index_sql(_V4_TABLES + RESULTS_TABLE, ("results", "tickets", "kb"))


def _outbox_tables() -> str:
    from .outbox import OUTBOX_TABLES

    return OUTBOX_TABLES


def _v8(conn: sqlite3.Connection) -> None:
    _script(conn, RESULTS_TABLE)
    backfill(conn)
    _script(conn, _v7_search())
    _script(conn, _outbox_tables())


# --- #20 fewer pages written per claim and ack
# v10: the lease index goes. Nothing ever read running tasks in lease order (recovery looks at
# every running task, the claim counts running tasks per shop), and ``tasks_state`` already
# finds the running ones; the index cost two page writes per claim+ack (an entry added at the
# claim, removed at the ack).
_V10 = """
DROP INDEX tasks_leases;
"""

Migration = str | Callable[[sqlite3.Connection], None]
"""SQL text, or a function run on the migration's connection (inside its transaction)."""

# --- #17 shop profiles
# v9: a shop's network identity (JSON, see core.profiles.ShopProfile) and its proxy's
# password, encrypted with the vault like the shop's own.
_V9 = """
ALTER TABLE shops ADD COLUMN profile TEXT NOT NULL DEFAULT '{}';
ALTER TABLE shops ADD COLUMN proxy_password_enc BLOB;
"""

# --- #15 history by finish time
# v11: the history view's default order (finish time, newest first) as an index range: a
# partial index over finished tasks only (the OR form, which SQLite matches against a query's
# ``state = 'done'``; an IN list it would not), so claims and acks of live work never touch it.
_V11 = """
CREATE INDEX tasks_finished ON tasks (state, finished_at, id)
    WHERE state = 'done' OR state = 'failed' OR state = 'cancelled';
"""

MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _v8, _V9, _V10, _V11)
_FRESH_HEAD: str = _V1.replace(
    "CREATE INDEX tasks_leases ON tasks (lease_until) WHERE state = 'running';\n", ""
).replace(
    "    created_at   REAL NOT NULL\n);\nCREATE TABLE paused_domains",
    "    created_at   REAL NOT NULL,\n    allowed_origins TEXT NOT NULL DEFAULT '[]'\n);\n"
    "CREATE TABLE paused_domains",
).replace(
    "    last_error      TEXT\n);",
    "    last_error      TEXT,\n    evidence        TEXT,\n"
    "    crashes         INTEGER NOT NULL DEFAULT 0,\n    preempt_requested TEXT\n);"
) + _V2 + _V4_TABLES + _V5_INDEX + _V7 + RESULTS_TABLE
SCHEMA_VERSION = len(MIGRATIONS)


@functools.cache
def fresh_schema() -> str:
    """What a new database gets in one go (``FRESH_SCHEMA``): every migration's end state."""
    return _FRESH_HEAD + _v7_search() + _outbox_tables() + _V9 + _V11


def __getattr__(name: str) -> Any:
    if name == "FRESH_SCHEMA":  # made on first use: see _v7_search
        return fresh_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database to ``SCHEMA_VERSION``; returns the version it was at.

    Runs inside one ``BEGIN IMMEDIATE`` transaction, so a crash or an error mid-migration
    leaves the file as it was; ``user_version`` is written only when it changes. A database
    newer than this program is refused.
    """
    from ...errors import EnvironmentProblem

    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise EnvironmentProblem(
                f"the database is at schema version {version}, newer than this ShopFleet "
                f"understands ({SCHEMA_VERSION}); update ShopFleet")
        if version == SCHEMA_VERSION:
            conn.execute("COMMIT")  # nothing to do: not even the header is rewritten
            return version
        if version == 0 and not conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'tasks'").fetchone():
            _script(conn, fresh_schema())
        else:
            for sql in MIGRATIONS[version:]:
                _script(conn, sql)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back itself (disk full)
            conn.execute("ROLLBACK")
        raise
    return version


def _script(conn: sqlite3.Connection, sql: Migration) -> None:
    if callable(sql):
        sql(conn)
        return
    # executescript() would COMMIT first; run statement by statement inside our transaction.
    for stmt in _statements(sql):
        conn.execute(stmt)


def _statements(sql: str) -> list[str]:
    out: list[str] = []
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
