"""#17: a shop list's profile columns (proxy, locale, timezone, user_agent, viewport,
geolocation, headers) checked as ``shop add`` checks them, an error per bad cell naming its
line and column; imported with the proxy password encrypted and shown nowhere."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from core import import_shops, open_store, read_shop_list
from core.cli import main
from core.profile_store import load_context_options
from tests.gui.conftest import make_settings
from tests.security.helpers import SECRET, leaks

PROXY = f"http://shop-user:{quote(SECRET, safe='')}@127.0.0.1:8899"
HEADER = ["name", "platform", "base_url", "proxy", "locale", "timezone", "user_agent",
          "viewport", "geolocation", "headers"]


def write(tmp_path: Path, rows: list[list[str]], name: str = "shops.csv") -> Path:
    buf = io.StringIO()
    csv.writer(buf).writerows([HEADER, *rows])
    p = tmp_path / name
    p.write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode("utf-8"))
    return p


GOOD = ["pdd-1", "pdd", "https://pdd.example/1", PROXY, "en-US", "America/New_York",
        "Mozilla/5.0 shop", "1280x720", "40.7,-74.0", "X-Shop: one; X-Team: north"]


def test_profile_columns_are_read_and_checked(tmp_path: Path) -> None:
    found = read_shop_list(write(tmp_path, [GOOD, ["pdd-2", "pdd", "https://pdd.example/2",
                                                   "", "", "", "", "", "", ""]]))
    assert found.errors == []
    first, second = found.rows
    assert first.profile is not None and second.profile is None
    p = first.profile.profile
    assert (p.proxy, p.locale, p.timezone, p.user_agent, p.viewport, p.geolocation) == (
        "http://shop-user@127.0.0.1:8899", "en-US", "America/New_York", "Mozilla/5.0 shop",
        (1280, 720), (40.7, -74.0))
    assert p.headers == (("X-Shop", "one"), ("X-Team", "north"))
    assert first.profile.proxy_password == SECRET
    assert not leaks(repr(first)) and not leaks(repr(found))


def test_every_bad_profile_cell_is_named_by_line_and_column(tmp_path: Path) -> None:
    bad_proxy = f"ftp://shop-user:{quote(SECRET, safe='')}@h:1"
    rows = [
        ["a", "pdd", "https://pdd.example/a", bad_proxy, "klingon!", "Mars/Base", "", "wide",
         "91,0", "Host: evil"],                                       # line 2: six bad cells
        ["b", "pdd", "https://pdd.example/b", "", "", "", "", "", "", "X-Ok: 1"],  # fine
        ["c", "pdd", "https://pdd.example/c", "socks5://u:p@h:1", "", "", "", "", "", ""],
    ]
    found = read_shop_list(write(tmp_path, rows))
    assert [r.name for r in found.rows] == ["b"]
    assert [(e.line, e.field) for e in found.errors] == [
        (2, "proxy"), (2, "locale"), (2, "timezone"), (2, "viewport"), (2, "geolocation"),
        (2, "headers"), (4, "proxy")]
    reasons = {e.field: e.reason for e in found.errors if e.line == 2}
    # the same words as `shop add` says them (tests/unit/test_cli_profiles.py)
    assert reasons["proxy"] == "must start with http://, https:// or socks5://"
    assert reasons["timezone"].startswith("unknown time zone 'Mars/Base'")
    assert reasons["headers"] == "Host is the browser's own; it cannot be set as an extra header"
    assert "not supported by Chromium" in found.errors[-1].reason
    assert not any(leaks(str(e)) for e in found.errors)


def test_import_stores_the_profile_and_the_proxy_password_encrypted(tmp_path: Path) -> None:
    store = open_store(make_settings(), tmp_path / "s.db")
    try:
        found = read_shop_list(write(tmp_path, [GOOD]))
        assert import_shops(store, found.rows) == ["pdd-1"]
        rec = store.shop("pdd-1")
        assert rec.profile == found.rows[0].profile.profile and rec.has_proxy_password
        options = load_context_options(store, "pdd-1", store.settings, None)
        assert options.proxy_password == SECRET and options.proxy_username == "shop-user"
    finally:
        store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("s.db*") if p.is_file())
    assert not leaks(raw)


def test_cli_import_with_profiles_prints_errors_and_warnings_without_the_password(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "cli.db")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    bad = ["pdd-9", "pdd", "https://pdd.example/9", PROXY, "", "Mars/Base", "", "", "", ""]
    direct = ["pdd-2", "pdd", "https://pdd.example/2", "", "", "", "", "", "", ""]
    f = write(tmp_path, [GOOD, direct, bad])
    assert main(["shop", "import", str(f), "--db", db]) == 2
    out, err = capsys.readouterr()
    assert "line 4: timezone: unknown time zone 'Mars/Base'" in out
    assert "nothing imported" in out and not leaks(out + err)
    assert main(["shop", "import", str(f), "--skip-invalid", "--json", "--db", db]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["added"] == ["pdd-1", "pdd-2"] and not leaks(out + err)
    assert main(["shops", "--json", "--db", db]) == 0
    out, err = capsys.readouterr()
    shown = {s["name"]: s for s in json.loads(out)}
    assert shown["pdd-1"]["profile"]["proxy"] == "http://shop-user@127.0.0.1:8899"
    assert shown["pdd-1"]["has_proxy_password"] is True and not leaks(out + err)
    assert main(["shops", "--db", db]) == 0
    out, err = capsys.readouterr()
    assert "warning: pdd: no proxy while other shops of the platform use one: pdd-2" in err
    assert not leaks(out + err)
