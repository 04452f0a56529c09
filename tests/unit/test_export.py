"""Results out (core.export): the record model, CSV/JSONL/XLSX round trips, hostile cells."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest

import core.export as export_mod
from core.errors import SpecError
from core.export import (
    FIXED_COLUMNS,
    TaskResults,
    escape_cell,
    export,
    field_names,
    records_of,
    rows_of,
    sheet_name,
)

HOSTILE = ["=HYPERLINK(\"http://evil\",\"点我\")", "+cmd|' /C calc'!A0", "@SUM(1+1)",
           "-2+3", "\t=1", "\r=1"]


def tasks() -> list[TaskResults]:
    return [
        TaskResults(1, "拼多多-旗舰店", "pdd", "collect_data", "orders", 1_767_225_600.0,
                    {"title": "店铺订单", "order_id": ["A1", "A2", "A3"],
                     "price": ["¥12.50", "-3", "=1+2"], "note": {"k": "值"}}),
        TaskResults(2, "temu-1", "temu", "collect_data", "reviews", 1_767_225_660.0,
                    {"review": ["很好，物流快", "差评：退款慢"], "shop": "injected"}),
        TaskResults(3, "temu-1", "temu", "upload_product", "upload", None, {}),
        TaskResults(4, "tiktok-1", "tiktok", "collect_data", "orders", 1_767_225_700.0,
                    {"orders": [{"id": 7, "sku": "红色 L"}, {"id": 8, "extra": [1, 2]}]}),
    ]


def test_parallel_lists_are_records_and_scalars_repeat() -> None:
    recs = list(records_of({"title": "t", "a": ["1", "2", "3"], "b": ["x"]}))
    assert recs == [{"title": "t", "a": "1", "b": "x"}, {"title": "t", "a": "2"},
                    {"title": "t", "a": "3"}]


def test_dict_items_spread_and_nested_values_are_json() -> None:
    recs = list(records_of({"orders": [{"id": 7, "sku": {"c": "红"}}], "meta": {"p": [1]}}))
    assert recs == [{"orders.id": 7, "orders.sku": '{"c": "红"}', "meta": '{"p": [1]}'}]


@pytest.mark.parametrize(("results", "n"), [(None, 0), ({}, 0), ({"a": "x"}, 1),
                                             ({"a": [], "t": "x"}, 1), ({"a": []}, 1)])
def test_record_counts(results: dict[str, Any] | None, n: int) -> None:
    assert len(list(records_of(results))) == n


def test_rows_have_fixed_columns_first_and_never_overwrite_them() -> None:
    rows = list(rows_of(tasks()))
    assert len(rows) == 3 + 2 + 0 + 2
    assert list(rows[0])[:6] == list(FIXED_COLUMNS)
    review = rows[3]
    assert review["shop"] == "temu-1" and review["result.shop"] == "injected"
    assert rows[0]["finished_at"] == "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize("text", HOSTILE)
def test_formula_cells_are_escaped(text: str) -> None:
    assert escape_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["-12.50", "+3", "-1e5", "12", "普通文本", "a=b"])
def test_plain_numbers_and_text_pass(text: str) -> None:
    assert escape_cell(text) == text


def test_sheet_names_are_sanitised_and_unique() -> None:
    assert sheet_name("a[b]:c*d?e/f\\g") == "a_b__c_d_e_f_g"
    long = sheet_name("店" * 40)
    assert len(long) == 31
    assert sheet_name("店" * 40, taken=[long]) == "店" * 27 + " (2)"
    assert sheet_name("'quoted'") == "quoted"
    assert sheet_name("History") == "history_"
    assert sheet_name("") == "results"


def expected_rows(fields: list[str]) -> list[list[Any]]:
    cols = [*FIXED_COLUMNS, *fields]
    return [[escape_cell(r.get(c)) for c in cols] for r in rows_of(tasks())]


def test_csv_round_trip_bom_chinese_and_escaping(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    calls = []

    def factory() -> Any:
        calls.append(1)
        return rows_of(tasks())

    assert export(factory, "csv", out) == 7
    assert len(calls) == 2  # a names pass, then the rows pass
    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    with out.open(encoding="utf-8-sig", newline="") as fh:
        got = list(csv.reader(fh))
    fields = field_names(rows_of(tasks()))
    assert got[0] == [*FIXED_COLUMNS, *fields]
    want = [["" if v is None else str(v) for v in row] for row in expected_rows(fields)]
    assert got[1:] == want
    assert "差评：退款慢" in raw.decode("utf-8-sig")
    assert not any(cell.startswith("=") for row in got for cell in row)


def test_field_list_is_one_pass_and_picks_columns(tmp_path: Path) -> None:
    calls = []

    def factory() -> Any:
        calls.append(1)
        return rows_of(tasks())

    buf = io.StringIO()
    assert export(factory, "csv", buf, fields=["review", "shop"]) == 7
    assert len(calls) == 1
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    assert rows[0] == [*FIXED_COLUMNS, "review", "result.shop"]
    assert rows[4][6:] == ["很好，物流快", "injected"]


def test_jsonl_keeps_values_as_they_are(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    export(lambda: rows_of(tasks()), "jsonl", out)
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert lines == list(rows_of(tasks()))
    assert lines[2]["price"] == "=1+2"  # JSON is data, not a spreadsheet: no escaping


def test_xlsx_round_trip_with_openpyxl(tmp_path: Path) -> None:
    out = tmp_path / "r.xlsx"
    assert export(lambda: rows_of(tasks()), "xlsx", out) == 7
    wb = openpyxl.load_workbook(out, read_only=True)
    assert wb.sheetnames == ["results"]
    got = [list(r) for r in wb["results"].iter_rows(values_only=True)]
    fields = field_names(rows_of(tasks()))
    assert got[0] == [*FIXED_COLUMNS, *fields]
    assert got[1:] == expected_rows(fields)
    wb.close()
    cells = openpyxl.load_workbook(out)["results"]
    assert all(c.data_type != "f" for row in cells.iter_rows() for c in row)


def test_xlsx_sheet_per_shop_with_hostile_names(tmp_path: Path) -> None:
    rows = [{**r, "shop": "bad/shop:[1]" if r["shop"] == "temu-1" else r["shop"]}
            for r in rows_of(tasks())]
    out = tmp_path / "s.xlsx"
    export(lambda: iter(rows), "xlsx", out, split_by="shop", fields=["review"])
    wb = openpyxl.load_workbook(out, read_only=True)
    assert wb.sheetnames == ["拼多多-旗舰店", "bad_shop__1_", "tiktok-1"]
    assert [r[6] for r in wb["bad_shop__1_"].iter_rows(min_row=2, values_only=True)] == [
        "很好，物流快", "差评：退款慢"]


def test_xlsx_rolls_over_to_a_new_sheet_at_the_row_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_mod, "XLSX_MAX_ROWS", 3)  # header + 2 records a sheet
    out = tmp_path / "big.xlsx"
    export(lambda: rows_of(tasks()), "xlsx", out, fields=[])
    wb = openpyxl.load_workbook(out, read_only=True)
    assert wb.sheetnames == ["results", "results (2)", "results (3)", "results (4)"]
    ids = [r[0] for ws in wb for r in ws.iter_rows(min_row=2, values_only=True)]
    assert ids == [1, 1, 1, 2, 2, 4, 4]


def test_xlsx_survives_control_characters_and_huge_cells(tmp_path: Path) -> None:
    rows = [{"task_id": 1, "v": "a\x00b\x1fc", "big": "长" * 40_000}]
    out = tmp_path / "c.xlsx"
    export(lambda: iter(rows), "xlsx", out)
    ws = openpyxl.load_workbook(out)["results"]
    assert ws.cell(2, 7).value == "a\ufffdb\ufffdc"
    assert len(ws.cell(2, 8).value) == 32_767


def test_empty_export_still_has_a_header(tmp_path: Path) -> None:
    export(lambda: iter(()), "xlsx", tmp_path / "e.xlsx")
    ws = openpyxl.load_workbook(tmp_path / "e.xlsx")["results"]
    assert [c.value for c in ws[1]] == list(FIXED_COLUMNS)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"fmt": "pdf"}, "--format"),
    ({"fmt": "csv", "split_by": "shop"}, "--sheet-per"),
    ({"fmt": "xlsx", "split_by": "day"}, "--sheet-per"),
])
def test_bad_options_name_the_field(tmp_path: Path, kwargs: dict[str, Any], field: str) -> None:
    fmt = kwargs.pop("fmt")
    with pytest.raises(SpecError) as err:
        export(lambda: rows_of(tasks()), fmt, tmp_path / "x", **kwargs)
    assert err.value.field == field
    assert not (tmp_path / "x").exists()


def test_too_many_fields_asks_for_a_field_list(tmp_path: Path) -> None:
    rows = [{f"f{i}": i for i in range(export_mod.MAX_FIELDS + 1)}]
    with pytest.raises(SpecError) as err:
        export(lambda: iter(rows), "csv", tmp_path / "wide.csv")
    assert err.value.field == "--field"
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_failing_source_leaves_no_half_file(tmp_path: Path) -> None:
    def broken() -> Any:
        yield from rows_of(tasks()[:1])
        raise OSError("store went away")

    for fmt in ("csv", "xlsx", "jsonl"):
        with pytest.raises(OSError):
            export(broken, fmt, tmp_path / f"x.{fmt}", fields=["title"])
    assert list(tmp_path.iterdir()) == []
