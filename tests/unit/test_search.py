"""Search (core.search): trigram FTS5 on a real SQLite file finds Chinese words inside
sentences in results, tickets and knowledge-base answers, two-character words included."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlite_utils

from core.errors import SpecError
from core.search import SOURCES, disable_search, enable_search, search, search_all, split_query
from core.store.sqlite.schema import migrate


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite_utils.Database]:
    conn = sqlite3.connect(tmp_path / "shopfleet.db")
    migrate(conn)  # the real results, tickets and kb_answers tables, indexed by migration 7
    database = sqlite_utils.Database(conn)
    for name in SOURCES:
        assert enable_search(database, name) is False  # the migration made every index
    rec = {"seq": 0, "platform": "pdd", "type": "collect_data", "finished_at": 0.0,
           "record": "{}"}
    disable_search(database, "results")  # a row written before the index is found too
    database["results"].insert({**rec, "id": 1, "task_id": 1, "shop": "pdd-1",
                                "text": "订单 A1 客户申请退款，物流太慢"})
    assert enable_search(database, "results") is True
    database["results"].insert_all([
        {**rec, "id": 2, "task_id": 2, "shop": "temu-1", "text": "好评：包装很好 great packaging"},
        {**rec, "id": 3, "task_id": 3, "shop": "pdd-2", "text": "价格 100% 正确"},
    ])
    ticket = {"task_id": 1, "state": "open", "opened_at": 0.0, "shop": "pdd-1",
              "platform": "pdd", "domain": "pdd.test", "task_type": "reply_customer",
              "error_class": "PageChanged", "signature": "sig"}
    database["tickets"].insert_all([
        {**ticket, "id": 1, "error": "找不到按钮：确认退款", "note": ""},
        {**ticket, "id": 2, "error": "Timeout 30000ms exceeded", "note": "网络波动"},
    ])
    database["kb_answers"].insert({"id": 1, "signature": "sig", "ticket_id": 1, "at": 0.0,
                                   "platform": "pdd", "task_type": "reply_customer",
                                   "step_name": "点击确认", "error_class": "PageChanged",
                                   "error_norm": "找不到按钮", "action": "retry",
                                   "note": "页面改版后退款按钮换了位置，重试即可"})
    yield database
    conn.close()


def ids(rows: list[dict[str, object]]) -> list[object]:
    return sorted(r["id"] for r in rows)


def test_a_long_chinese_word_inside_a_sentence(db: sqlite_utils.Database) -> None:
    assert ids(search(db, "results", "物流太慢")) == [1]
    assert ids(search(db, "tickets", "确认退款")) == [1]
    assert ids(search(db, "kb", "换了位置")) == [1]


def test_a_two_character_word_is_found_everywhere(db: sqlite_utils.Database) -> None:
    assert ids(search(db, "results", "退款")) == [1]
    assert ids(search(db, "tickets", "退款")) == [1]
    assert ids(search(db, "kb", "退款")) == [1]
    assert ids(search(db, "tickets", "网络")) == [2]


def test_words_mix_index_and_like_and_all_must_match(db: sqlite_utils.Database) -> None:
    assert ids(search(db, "results", "物流太慢 退款")) == [1]
    assert ids(search(db, "results", "物流太慢 好评")) == []
    assert ids(search(db, "results", "packaging 好评")) == [2]
    assert ids(search(db, "results", "PACKAGING")) == [2]  # case-insensitive


def test_like_wildcards_in_the_query_are_literal(db: sqlite_utils.Database) -> None:
    assert ids(search(db, "results", "%")) == [3]
    assert ids(search(db, "results", "_")) == []


def test_triggers_follow_inserts_updates_and_deletes(db: sqlite_utils.Database) -> None:
    db["tickets"].update(2, {"note": "登录验证码出现"})
    assert ids(search(db, "tickets", "验证码")) == [2]
    assert ids(search(db, "tickets", "网络波动")) == []
    db["results"].delete(1)
    assert search(db, "results", "物流太慢") == []


def test_search_all_places(db: sqlite_utils.Database) -> None:
    found = search_all(db, "退款")
    assert {k: ids(v) for k, v in found.items()} == {"results": [1], "tickets": [1], "kb": [1]}


def test_why_trigram_and_why_the_like_fallback(db: sqlite_utils.Database) -> None:
    """Pins the SQLite behaviour the design rests on: unicode61 cannot find a word inside a
    Chinese sentence; trigram can, but not for fewer than three characters."""
    db["plain"].insert({"id": 1, "text": "客户申请退款物流太慢"}, pk="id")
    db["plain"].enable_fts(["text"], create_triggers=True)  # the default tokenizer
    assert list(db["plain"].search('"物流太慢"')) == []
    assert list(db["results"].search('"物流太慢"'))  # trigram
    assert list(db["results"].search('"退款"')) == []  # too short for trigram MATCH


def test_disable_and_bad_input(db: sqlite_utils.Database) -> None:
    with pytest.raises(SpecError) as err:
        search(db, "orders", "x")
    assert err.value.field == "--in"
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(SpecError) as err:
            split_query(bad)
        assert err.value.field == "TEXT"
    disable_search(db, "kb")
    assert search(db, "kb", "退款")  # short words still work without the index
    with pytest.raises(SpecError):
        search(db, "kb", "换了位置")


def test_quotes_in_the_query_are_not_fts_syntax(db: sqlite_utils.Database) -> None:
    assert search(db, "results", 'great" OR "x') == []
    assert search(db, "results", "NEAR(a b)") == []
