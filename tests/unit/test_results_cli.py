"""#19 on the command line, real SQLite files: ``shopfleet results`` refuses bad input with one
line naming the field and writes nothing; ``shopfleet search`` finds Chinese words inside
sentences in results, tickets and answers; migration 7 backfills results from old tasks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from core.cli import main
from core.store import SqliteStore
from core.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, _script, migrate
from core.testing import FakeClock
from core.tickets import Signature, normalise_error
from tests.conftest import add_demo_shops
from tests.helpers import spec


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _done(store: SqliteStore, shop: str, results: dict[str, object]) -> int:
    t = store.submit(spec("collect_data", shop))
    assert store.claim("w") is not None
    store.ack(t, "w", results=results)
    return t


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "r.db"
    with SqliteStore(path, clock=FakeClock()) as store:
        add_demo_shops(store)
        _done(store, "pdd-1", {"title": "买家留言：物流太慢了，申请退款", "n": [1, 2]})
        _done(store, "temu-1", {"title": "great packaging 好评"})
        # a ticket with a Chinese error, answered with a Chinese note (a knowledge-base answer)
        t = store.submit(spec("upload_product", "pdd-2"))
        assert store.claim("w") is not None
        error = "找不到按钮：确认上架商品"
        sig = Signature("pdd", "upload_product", "提交商品", "page_changed",
                        normalise_error(error))
        k = store.open_ticket(t, "w", signature=sig, step=2, error=error, evidence=None)
        store.ticket_book().answer(k, "retry", note="页面改版后上架按钮换了位置，重试即可")
    return str(path)


@pytest.mark.parametrize(("argv", "field"), [
    (["--format", "pdf"], "--format"),
    (["--format", "xlsx"], "-o"),                                   # xlsx needs a file
    (["--format", "csv", "--sheet-per", "shop"], "--sheet-per"),
    (["--format", "xlsx", "--sheet-per", "day"], "--sheet-per"),
    (["--format", "csv", "--since", "yesterday"], "--since"),
    (["--format", "csv", "--until", "2026-13-01"], "--until"),
    (["--format", "csv", "--since", "2026-12-02", "--until", "2026-12-01"], "--until"),
    (["--format", "csv", "--shops", "platform:"], "--shops"),
    (["--format", "csv", "--shops", "nosuch-*"], "--shops"),        # picks no shop
    (["--format", "csv", "--field", " "], "--field"),
    (["--format", "csv", "--flow", ""], "--flow"),
    (["--format", "csv", "-o", "/nonexistent-dir/x.csv"], "-o"),
])
def test_bad_input_is_one_line_naming_the_field_and_nothing_is_written(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        field: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if "-o" not in argv and "--format" in argv and argv[1] != "xlsx":
        argv = [*argv, "-o", str(out / "x.file")]
    code, stdout, err = run(capsys, "results", "--db", db, *argv)
    assert code == 2
    assert stdout == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], err
    assert list(out.iterdir()) == []


def test_search_finds_chinese_words_in_results_tickets_and_answers(
        db: str, capsys: pytest.CaptureFixture[str]) -> None:
    def found(text: str, place: str) -> list[dict[str, object]]:
        code, out, err = run(capsys, "search", "--db", db, text, "--in", place, "--json")
        assert code == 0, err
        rows: list[dict[str, object]] = json.loads(out)[place]
        return rows

    # three characters and more go to the trigram index; two are a LIKE: both inside sentences
    assert [r["shop"] for r in found("物流太慢", "results")] == ["pdd-1"] * 2
    assert [r["shop"] for r in found("好评", "results")] == ["temu-1"]
    assert [r["shop"] for r in found("确认上架", "tickets")] == ["pdd-2"]
    assert [r["shop"] for r in found("按钮", "tickets")] == ["pdd-2"]
    assert [r["note"] for r in found("换了位置", "kb")] == ["页面改版后上架按钮换了位置，重试即可"]
    assert found("发货", "results") == []
    # without --in: every place, as plain lines
    code, out, _ = run(capsys, "search", "--db", db, "按钮")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["tickets", "kb"]
    code, _, err = run(capsys, "search", "--db", db, "   ")
    assert code == 2 and "TEXT" in err


def test_migration_7_backfills_results_from_done_tasks(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for sql in MIGRATIONS[:6]:
        _script(conn, sql)
    conn.execute("PRAGMA user_version = 6")
    conn.execute("INSERT INTO shops (name, platform, base_url, domain, created_at) "
                 "VALUES ('拼多多-旗舰店', 'pdd', 'http://s.test', 's.test', 0)")
    task = ("INSERT INTO tasks (type, shop_id, state, base, prio_key, created_at, updated_at, "
            "not_before, max_attempts, spec, results, finished_at) "
            "VALUES ('collect_data', 1, ?, 3, 0, 0, 0, 0, 3, ?, ?, 100)")
    conn.execute(task, ("done", '{"flow": "orders"}',
                        json.dumps({"sku": ["A", "B"], "note": "物流太慢"})))
    conn.execute(task, ("failed", '{"flow": "orders"}', json.dumps({"sku": ["C"]})))
    conn.execute("COMMIT")
    assert migrate(conn) == 6
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    rows = conn.execute("SELECT task_id, seq, shop, flow, record FROM results ORDER BY id")
    assert [(t, s, shop, f, json.loads(r)) for t, s, shop, f, r in rows] == [
        (1, 0, "拼多多-旗舰店", "orders", {"note": "物流太慢", "sku": "A"}),
        (1, 1, "拼多多-旗舰店", "orders", {"note": "物流太慢", "sku": "B"}),
    ]
    # and the index holds the backfilled rows
    hits = conn.execute("SELECT rowid FROM results_fts WHERE results_fts MATCH '\"物流太慢\"'")
    assert len(hits.fetchall()) == 2
    conn.close()
