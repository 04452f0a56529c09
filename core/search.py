"""Text search over results, tickets and knowledge-base answers: SQLite FTS5, Chinese included.

**How FTS5 tokenises Chinese.** The default ``unicode61`` tokenizer splits on spaces and
punctuation only, so a Chinese sentence (no spaces) is one token and a word inside it is never
found. The ``trigram`` tokenizer (SQLite ≥ 3.34) indexes every run of three characters, so
``MATCH '物流太慢'`` finds it anywhere in a sentence, in any script. Its limit: a query
shorter than three characters matches nothing — and many Chinese words have two (退款, 物流,
差评). The SQLite docs promise that a ``LIKE`` on the FTS table falls back to a full scan for
such patterns, but SQLite 3.40 (Debian 12's) returns *no rows* for ``LIKE '%退款%'`` on a
trigram table (checked; the test pins the behaviour we rely on instead). So:

* every query word of 3+ characters goes to the trigram index (``MATCH``, through
  sqlite-utils' :meth:`~sqlite_utils.db.Table.search`, one quoted phrase per word, all must
  match);
* every word of 1-2 characters becomes ``LIKE '%word%'`` on the source table's columns (a scan
  of the rows the index left, or of the whole table when no word is long enough — fine for the
  tens of thousands of rows an operator searches; it is how the console's filter box behaves
  anyway).

The index is set up by :func:`enable_search` with sqlite-utils' FTS helpers
(``enable_fts(..., tokenize="trigram", create_triggers=True)``): an external-content FTS5 table
``<table>_fts`` kept in step by triggers, so the store's inserts need no change. The store's
migration 7 runs the same SQL (:func:`index_sql` captures it from sqlite-utils) for results,
tickets and knowledge-base answers; a Redis store has no FTS and says so
(:data:`NOT_ON_REDIS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from core.errors import SpecError

MIN_TRIGRAM = 3
NOT_ON_REDIS = ("search is available only on the SQLite store (SQLite FTS5); this queue is "
                "on Redis")
MAX_QUERY = 200


@dataclass(frozen=True, slots=True)
class Source:
    """A searchable table and the text columns searched."""

    table: str
    columns: tuple[str, ...]


# Stage 2 creates the results table (one row per record, its text flattened into ``text``).
SOURCES: dict[str, Source] = {
    "results": Source("results", ("shop", "text")),
    "tickets": Source("tickets", ("shop", "step_name", "error", "note")),
    "kb": Source("kb_answers", ("step_name", "error_norm", "note")),
}


def _source(name: str) -> Source:
    src = SOURCES.get(name)
    if src is None:
        raise SpecError("--in", f"unknown place {name!r}; one of {', '.join(SOURCES)}")
    return src


def enable_search(db: sqlite_utils.Database, name: str) -> bool:
    """Create the trigram FTS5 index and its triggers for source ``name`` (idempotent).

    Returns ``True`` if it was created now, ``False`` if it was there already.
    """
    src = _source(name)
    table = db.table(src.table)
    if table.detect_fts() is not None:
        return False
    table.enable_fts(list(src.columns), tokenize="trigram", create_triggers=True)
    return True


def index_sql(ddl: str, names: Sequence[str]) -> str:
    """The SQL that :func:`enable_search` runs for ``names``, as text for a migration.

    sqlite-utils writes it (on an in-memory copy of the tables ``ddl`` creates, its SQL
    captured by a tracer), so a migration runs exactly what its FTS helpers configure, inside
    the migration's own transaction; a ``rebuild`` fills each index from the rows there.
    """
    captured: list[str] = []

    def tracer(sql: str, params: Any) -> None:
        if sql.lstrip().upper().startswith("CREATE"):
            captured.append(sql.strip().rstrip(";") + ";")

    scratch = sqlite_utils.Database(memory=True)
    scratch.conn.executescript(ddl)
    with scratch.tracer(tracer):
        for name in names:
            enable_search(scratch, name)
    scratch.close()
    for name in names:
        fts = _source(name).table + "_fts"
        captured.append(f'INSERT INTO "{fts}" ("{fts}") VALUES (\'rebuild\');')
    return "\n".join(captured) + "\n"


def disable_search(db: sqlite_utils.Database, name: str) -> None:
    """Drop the index and its triggers (a migration going back, or a rebuild)."""
    db.table(_source(name).table).disable_fts()


def split_query(text: str) -> tuple[list[str], list[str]]:
    """The query's words: (long words for the index, short words for LIKE).

    Raises:
        SpecError: empty, or longer than :data:`MAX_QUERY` characters.
    """
    if not isinstance(text, str) or not text.strip():
        raise SpecError("TEXT", "search for at least one character")
    if len(text) > MAX_QUERY:
        raise SpecError("TEXT", f"at most {MAX_QUERY} characters")
    words = list(dict.fromkeys(w for w in text.split() if w))
    long = [w for w in words if len(w) >= MIN_TRIGRAM]
    short = [w for w in words if len(w) < MIN_TRIGRAM]
    return long, short


def _like(word: str) -> str:
    return "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def search(db: sqlite_utils.Database, name: str, text: str, *, limit: int = 100,
           where: str | None = None, where_args: dict[str, Any] | None = None
           ) -> list[dict[str, Any]]:
    """Rows of source ``name`` holding every word of ``text`` (best match first when the
    index is used, newest first otherwise).

    Args:
        where, where_args: an extra SQL condition on the source table's columns with named
            parameters (e.g. a shop filter); written by code, never by the operator.
    """
    src = _source(name)
    long, short = split_query(text)
    args: dict[str, Any] = dict(where_args or {})
    conds = [f"({where})"] if where else []
    for i, word in enumerate(short):
        key = f"_sf_like{i}"
        args[key] = _like(word)
        conds.append("(" + " OR ".join(f'"{c}" LIKE :{key} ESCAPE \'\\\'' for c in src.columns)
                     + ")")
    table = db.table(src.table)
    cond = " AND ".join(conds) or None
    if long:
        if table.detect_fts() is None:
            raise SpecError("--in", f"{name} is not indexed for search (enable_search first)")
        query = " ".join('"' + w.replace('"', '""') + '"' for w in long)
        return list(table.search(query, where=cond, where_args=args, limit=limit))
    return list(table.rows_where(cond, args, order_by="rowid desc", limit=limit))


def search_all(db: sqlite_utils.Database, text: str, *,
               places: Sequence[str] = tuple(SOURCES), limit: int = 100
               ) -> dict[str, list[dict[str, Any]]]:
    """:func:`search` in each place (``shopfleet search TEXT`` without ``--in``)."""
    return {p: search(db, p, text, limit=limit) for p in places}
