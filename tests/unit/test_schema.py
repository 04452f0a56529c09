"""Schema migrations: numbered, tracked in user_version, and equal to the fresh schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core.errors import EnvironmentProblem
from core.store import SqliteStore, check_sqlite_version
from core.store.sqlite.schema import FRESH_SCHEMA, MIGRATIONS, SCHEMA_VERSION, _script, migrate


def _shape(conn: sqlite3.Connection) -> list[tuple[str, str, object]]:
    """Tables by their columns (ALTER TABLE rewrites the stored SQL text), the rest by SQL."""
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    out: list[tuple[str, str, object]] = []
    for kind, name, sql in rows:
        if kind == "table":
            cols = conn.execute(f"PRAGMA table_xinfo({name})").fetchall()
            fks = conn.execute(f"PRAGMA foreign_key_list({name})").fetchall()
            out.append((kind, name, (cols, fks)))
        else:
            out.append((kind, name, " ".join((sql or "").split())))
    return out


def test_migrations_in_order_equal_the_fresh_schema(tmp_path: Path) -> None:
    fresh = sqlite3.connect(tmp_path / "fresh.db", isolation_level=None)
    migrate(fresh)
    stepped = sqlite3.connect(tmp_path / "stepped.db", isolation_level=None)
    for i, sql in enumerate(MIGRATIONS):
        stepped.execute("BEGIN")
        _script(stepped, sql)
        stepped.execute(f"PRAGMA user_version = {i + 1}")
        stepped.execute("COMMIT")
    assert _shape(fresh) == _shape(stepped)
    assert fresh.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    # FRESH_SCHEMA itself (what migrate() runs on a new file) is that same schema, and holds
    # the tables the README names.
    direct = sqlite3.connect(tmp_path / "direct.db", isolation_level=None)
    _script(direct, FRESH_SCHEMA)
    assert _shape(direct) == _shape(stepped)
    tables = {name for kind, name, _ in _shape(direct) if kind == "table"}
    assert {"tasks", "task_events", "tickets", "kb_answers", "rules",
            "metrics_minutes"} <= tables


def test_an_old_database_is_migrated_and_keeps_its_data(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    _script(conn, MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO shops (name, platform, base_url, domain, created_at) "
                 "VALUES ('s', 'pdd', 'http://s.test', 's.test', 0)")
    conn.execute("COMMIT")
    conn.close()
    store = SqliteStore(db)
    try:
        assert [s.name for s in store.shops()] == ["s"]
    finally:
        store.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM metrics_minutes").fetchone()[0] == 0


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(EnvironmentProblem, match="newer"):
        SqliteStore(db)


def test_old_sqlite_is_refused_with_a_clear_message() -> None:
    with pytest.raises(EnvironmentProblem, match=r"3\.31\.1 is too old.*3\.35"):
        check_sqlite_version("3.31.1")
    check_sqlite_version("3.35.0")


def test_store_uses_wal_and_full_sync_by_default(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "w.db")
    try:
        fut = store.submit_op(lambda c: (c.execute("PRAGMA journal_mode").fetchone()[0],
                                         c.execute("PRAGMA synchronous").fetchone()[0]))
        assert fut.result() == ("wal", 2)  # 2 = FULL
    finally:
        store.close()
