"""#19's export round trip on real Chromium: records written by real ``collect_data`` runs on
the demo site come out of ``shopfleet results`` as CSV, XLSX and JSON Lines; read back (csv,
openpyxl) they equal what the site showed, Chinese intact, and ``shopfleet search`` finds a
Chinese word inside the collected sentence."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from core import DemoSite, Settings, TaskSpec, build_engine, demo_settings, open_store
from core.cli import main
from core.demo import register_demo_shops
from core.demosite import stats_rows
from core.export import FIXED_COLUMNS, escape_cell
from core.store import SqliteStore, TaskState
from core.vault import Vault
from tests.helpers import run_with, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# Chinese, with a formula-looking part (the cell starts with 您: written as is)
REPLY = "您好！包裹今天发货，物流太慢请见谅 =SUM(A1)"
LOGIN: list[dict[str, Any]] = [
    {"action": "type_text", "locator": "#username", "text": "{shop.username}",
     "if_visible": "#login-btn"},
    {"action": "type_text", "locator": "#password", "text": "{shop.password}",
     "if_visible": "#login-btn"},
    {"action": "click", "locator": "#login-btn", "if_visible": "#login-btn"},
]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[DemoSite, SqliteStore, Settings, Path]]:
    with DemoSite() as site:
        settings = demo_settings(Settings()).with_changes(
            pool={"max_browsers": 2, "warm": 1, "step_timeout_s": 15},
            security={"inline_credentials": True})  # the replies collector logs in inline
        store = open_store(settings, tmp_path / "r.db")
        assert isinstance(store, SqliteStore)
        register_demo_shops(store, site, Vault.open(tmp_path))
        yield site, store, settings, tmp_path
        store.close()


def collect_stats(shop: str, page: int) -> TaskSpec:
    return TaskSpec.model_validate({"type": "collect_data", "shop": shop,
                                    "flow": "collect_data", "params": {"page": page}})


def collect_replies(shop: str, message_id: int) -> TaskSpec:
    """A collect_data task with inline steps: the message's customer and the sent replies."""
    url = f"{{shop.base_url}}/messages/{message_id}"
    steps = [{"action": "navigate", "url": url}, *LOGIN, {"action": "navigate", "url": url},
             {"action": "extract", "locator": "#sent-replies li.sent-reply", "all": True,
              "into": "replies"}]
    return TaskSpec.model_validate({"type": "collect_data", "shop": shop, "steps": steps})


def reply(shop: str, text: str) -> TaskSpec:
    return TaskSpec.model_validate({"type": "reply_customer", "shop": shop,
                                    "flow": "reply_customer",
                                    "params": {"message_id": 3, "reply": text}})


def test_collected_records_round_trip_through_csv_xlsx_and_jsonl(
        env: tuple[DemoSite, SqliteStore, Settings, Path],
        capsys: pytest.CaptureFixture[str]) -> None:
    _site, store, settings, home = env
    engine = build_engine(settings, store, home=home)
    ids: dict[str, int] = {}

    async def scenario() -> None:
        [r1, r2] = await engine.submit([reply("pdd-1", REPLY), reply("pdd-1", "第二条：已退款")])
        await wait_until(lambda: all(store.task(t).state is TaskState.DONE for t in (r1, r2)))
        done = await engine.submit([collect_stats("pdd-1", 1), collect_stats("temu-1", 2),
                                    collect_replies("pdd-1", 3)])
        ids.update(zip(("pdd", "temu", "replies"), done, strict=True))
        await wait_until(lambda: all(store.task(t).state.is_final for t in done))

    run_with(engine, scenario)
    for t in ids.values():
        assert store.task(t).state is TaskState.DONE, store.task(t).last_error
    db = str(home / "r.db")

    # what the site showed, record by record (the truth the export must equal)
    def stats(shop: str, page: int, task_id: int) -> list[dict[str, Any]]:
        return [{"task_id": task_id, "shop": shop, "skus": sku, "views": str(v),
                 "orders": str(o)} for sku, v, o in stats_rows(shop, page)]
    expected = (stats("pdd-1", 1, ids["pdd"]) + stats("temu-1", 2, ids["temu"])
                + [{"task_id": ids["replies"], "shop": "pdd-1", "replies": REPLY},
                   {"task_id": ids["replies"], "shop": "pdd-1", "replies": "第二条：已退款"}])
    assert len(expected) == 42

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (int(r["task_id"]), r.get("skus") or "", r.get("replies") or "")

    def picked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(({k: v for k, v in r.items() if k in expected[0] or k == "replies"
                        if v not in (None, "")} for r in rows), key=key)

    want = sorted(({k: v for k, v in e.items()} for e in expected), key=key)

    # JSON Lines: values as they are
    assert main(["results", "--db", db, "--format", "jsonl", "-o", str(home / "r.jsonl")]) == 0
    jl = [json.loads(line) for line in (home / "r.jsonl").read_text("utf-8").splitlines()]
    assert picked(jl) == want
    assert {r["platform"] for r in jl} == {"pdd", "temu"}
    assert {r["flow"] for r in jl} == {"collect_data", ""}

    # CSV: UTF-8 with a BOM, the formula-looking reply defused, Chinese intact
    assert main(["results", "--db", db, "--format", "csv", "-o", str(home / "r.csv")]) == 0
    raw = (home / "r.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    with open(home / "r.csv", encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:len(FIXED_COLUMNS)] == list(FIXED_COLUMNS)
    want_cells = [{k: escape_cell(v) if isinstance(v, str) else v for k, v in e.items()}
                  for e in want]
    assert picked(rows) == [{k: str(v) for k, v in e.items()} for e in want_cells]
    assert any(r["replies"] == REPLY for r in rows)  # starts with 您, not with =: as is

    # XLSX through openpyxl: the same cells, one sheet per shop on request
    out = home / "r.xlsx"
    assert main(["results", "--db", db, "--format", "xlsx", "-o", str(out),
                 "--sheet-per", "shop"]) == 0
    book = openpyxl.load_workbook(out, read_only=True)
    assert sorted(book.sheetnames) == ["pdd-1", "temu-1"]
    xrows: list[dict[str, Any]] = []
    for ws in book.worksheets:
        it = ws.iter_rows(values_only=True)
        head = [str(h) for h in next(it)]
        xrows += [dict(zip(head, r, strict=True)) for r in it]
    book.close()
    assert picked(xrows) == [{k: (str(v) if k != "task_id" else v) for k, v in e.items()}
                             for e in want_cells]

    # filters: a shop selector and a field list
    capsys.readouterr()
    assert main(["results", "--db", db, "--format", "jsonl", "--shops", "platform:temu",
                 "--field", "skus"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.lstrip("\ufeff").splitlines()]
    assert [r["skus"] for r in lines] == [s for s, _, _ in stats_rows("temu-1", 2)]
    assert all(set(r) == {*FIXED_COLUMNS, "skus"} for r in lines)

    # search: a Chinese word inside the collected sentence, long (index) and short (LIKE)
    assert main(["search", "--db", db, "物流太慢", "--in", "results", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["results"]
    assert [(r["task_id"], r["shop"]) for r in found] == [(ids["replies"], "pdd-1")]
    assert main(["search", "--db", db, "退款", "--in", "results", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["results"]
    assert [r["text"] for r in found] == ["第二条：已退款"]
