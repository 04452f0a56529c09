"""Shop lists (CSV with a BOM, XLSX) checked row by row, errors naming line and field; the
valid rows imported with their origins and encrypted passwords; ``shopfleet shop import``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from openpyxl import Workbook

from core import InvalidInput, SqliteStore, import_shops, open_store, read_shop_list
from core.cli import main
from core.secrets import decrypt_password
from tests.gui.conftest import make_settings

GOOD = ("name,platform,base_url,username,password,allowed_origins\n"
        "pdd-1,pdd,https://pdd.example/shop/1,alice,pw-1,https://img.pdd.example\n"
        "temu-1,temu,https://temu.example/s/1,bob,,\n")


def write(tmp_path: Path, text: str, name: str = "shops.csv", bom: bool = True) -> Path:
    p = tmp_path / name
    p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return p


def test_csv_with_a_bom_reads_every_column(tmp_path: Path) -> None:
    found = read_shop_list(write(tmp_path, GOOD))
    assert found.errors == []
    assert [r.name for r in found.rows] == ["pdd-1", "temu-1"]
    first = found.rows[0]
    assert (first.platform, first.base_url, first.username) == (
        "pdd", "https://pdd.example/shop/1", "alice")
    assert first.allowed_origins == ("https://img.pdd.example:443",)  # core's normal form
    assert first.password == "pw-1" and "pw-1" not in repr(first)
    assert found.without_password == ["temu-1"]


def test_each_bad_row_is_named_by_line_and_field(tmp_path: Path) -> None:
    text = ("Name, Platform ,BASE_URL,password\n"
            "ok-1,pdd,https://pdd.example/1,x\n"
            ",pdd,https://pdd.example/2,x\n"                 # line 3: no name
            "bad-url,pdd,ftp://pdd.example/3,x\n"            # line 4: scheme
            "ok-1,pdd,https://pdd.example/5,x\n"             # line 5: twice in the file
            "taken,pdd,https://pdd.example/6,x\n"            # line 6: exists already
            "\n"                                             # blank: skipped
            "ctl,pd\u0007d,https://pdd.example/8,x\n"        # line 8: control character
            "extra,pdd,https://pdd.example/9,x,surplus\n")   # line 9: beyond the columns
    found = read_shop_list(write(tmp_path, text), existing=["taken"])
    assert [r.name for r in found.rows] == ["ok-1"]
    assert [(e.line, e.field) for e in found.errors] == [
        (3, "name"), (4, "base_url"), (5, "name"), (6, "name"), (8, "platform"), (9, "row")]
    assert "also on line 2" in found.errors[2].reason
    assert str(found.errors[0]) == "line 3: name: is empty"


def test_header_problems_are_refused_before_any_row(tmp_path: Path) -> None:
    found = read_shop_list(write(tmp_path, "name,platfrom,pasword\npdd-1,pdd,x\n"))
    assert found.rows == []
    assert {(e.line, e.field) for e in found.errors} == {
        (1, "platfrom"), (1, "pasword"), (1, "platform"), (1, "base_url")}


def test_bad_allowed_origins_name_the_field(tmp_path: Path) -> None:
    text = "name,platform,base_url,allowed_origins\na,pdd,https://a.example,javascript:x\n"
    found = read_shop_list(write(tmp_path, text))
    assert [(e.line, e.field) for e in found.errors] == [(2, "allowed_origins")]


def test_xlsx_read_only(tmp_path: Path) -> None:
    wb = Workbook()
    ws = wb.active
    ws.append(["name", "platform", "base_url", "password", None])
    ws.append(["x-1", "tiktok", "https://tt.example/1", 12345, None])
    ws.append([None, None, None, None, None])
    ws.append(["x-2", "tiktok", "not a url", None, None])
    p = tmp_path / "shops.xlsx"
    wb.save(p)
    found = read_shop_list(p)
    assert [(r.name, r.password) for r in found.rows] == [("x-1", "12345")]
    assert [(e.line, e.field) for e in found.errors] == [(4, "base_url")]


def test_unreadable_files_are_one_error_naming_the_file(tmp_path: Path) -> None:
    for name, data in (("a.txt", b"x"), ("b.xlsx", b"not a zip"), ("c.csv", b"\xff\xfe\x00")):
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(InvalidInput) as e:
            read_shop_list(p)
        assert e.value.field == "file"
    with pytest.raises(InvalidInput):
        read_shop_list(tmp_path / "missing.csv")


def test_import_adds_the_valid_rows_with_origins_and_passwords(tmp_path: Path) -> None:
    store: SqliteStore = open_store(make_settings(), tmp_path / "s.db")
    try:
        found = read_shop_list(write(tmp_path, GOOD))
        assert import_shops(store, found.rows) == ["pdd-1", "temu-1"]
        pdd = store.shop("pdd-1")
        assert list(pdd.allowed_origins) == ["https://img.pdd.example:443"]
        assert pdd.has_password and not store.shop("temu-1").has_password
        assert decrypt_password(store.shop_password_enc("pdd-1")) == "pw-1"
    finally:
        store.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_cli_import_all_or_nothing_unless_told(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "cli.db")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    bad = write(tmp_path, GOOD + "broken,pdd,nope,,\n")
    code, out = run(capsys, "shop", "import", str(bad), "--db", db)
    assert code == 2 and "line 4: base_url:" in out and "nothing imported" in out
    code, out = run(capsys, "shops", "--db", db)
    assert "pdd-1" not in out                                   # nothing written
    code, out = run(capsys, "shop", "import", str(bad), "--dry-run", "--skip-invalid",
                    "--db", db)
    assert code == 0 and "2 shop(s) can be imported" in out
    code, out = run(capsys, "shop", "import", str(bad), "--skip-invalid", "--db", db)
    assert code == 0 and "2 shop(s) imported; 1 without a password" in out
    code, out = run(capsys, "shops", "--db", db)
    assert "pdd-1" in out and "password set" in out
    code, out = run(capsys, "shop", "import", str(bad), "--db", db)   # now they exist
    assert code == 2 and "exists already" in out
