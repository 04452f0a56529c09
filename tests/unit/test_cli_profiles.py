"""``shopfleet shop add/set`` with profile options (#17): one line naming the field and exit 2
with nothing written for bad input; the proxy password stored encrypted and shown nowhere."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest

from core.cli import main
from tests.security.helpers import SECRET, leaks

PROXY = f"http://shop-user:{quote(SECRET, safe='')}@127.0.0.1:8899"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    path = str(tmp_path / "cli.db")
    assert run(capsys, "shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
               "http://pdd.shopfleet.test/shop/pdd-1", "--db", path)[0] == 0
    return path


def rows(db: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as c:
        return list(c.execute("SELECT name, profile, proxy_password_enc FROM shops ORDER BY id"))


@pytest.mark.parametrize(("args", "line"), [
    (["--proxy", "ftp://h:1"], "--proxy: must start with http://, https:// or socks5://"),
    (["--timezone", "Mars/Base"], "--timezone: unknown time zone 'Mars/Base'"),
    (["--locale", "klingon!"], "--locale: 'klingon!' is not a locale"),
    (["--viewport", "wide"], "--viewport: 'wide' is not WIDTHxHEIGHT"),
    (["--header", "Host: evil"], "--header: Host is the browser's own"),
])
def test_bad_profile_input_names_the_field_and_writes_nothing(
        db: str, capsys: pytest.CaptureFixture[str], args: list[str], line: str) -> None:
    before = rows(db)
    code, _, err = run(capsys, "shop", "set", "pdd-1", "--locale", "en-US", *args, "--db", db)
    assert code == 2 and line in err and len(err.strip().splitlines()) == 1
    assert rows(db) == before
    # a new shop with a bad option is not added either
    code, _, err = run(capsys, "shop", "add", "pdd-2", "--platform", "pdd", "--base-url",
                       "http://pdd.shopfleet.test/shop/pdd-2", *args, "--db", db)
    assert code == 2 and line in err
    assert [r[0] for r in rows(db)] == ["pdd-1"]


def test_proxy_password_is_encrypted_and_never_shown(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "shop", "set", "pdd-1", "--proxy", PROXY, "--locale", "en-US",
                         "--timezone", "America/New_York", "--viewport", "1280x720",
                         "--geolocation", "40.7,-74.0", "--header", "X-Shop: one",
                         "--json", "--db", db)
    assert code == 0, err
    shown = json.loads(out)
    assert shown["profile"]["proxy"] == "http://shop-user@127.0.0.1:8899"
    assert shown["has_proxy_password"] is True
    code, out2, err2 = run(capsys, "shops", "--json", "--db", db)
    _, out3, err3 = run(capsys, "shops", "--db", db)
    for text in (out, err, out2, err2, out3, err3):
        assert not leaks(text), text
    assert "http://shop-user@127.0.0.1:8899" in out3
    raw = Path(db).read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("cli.db*") if p.is_file())
    assert not leaks(raw)
    (_, profile, token), = rows(db)
    assert json.loads(str(profile))["locale"] == "en-US" and token

    # the task's context gets the password back (decrypted with the vault)
    from core.config import Settings
    from core.profile_store import load_context_options
    from core.store import SqliteStore

    store = SqliteStore(db, settings=Settings())
    try:
        options = load_context_options(store, "pdd-1", Settings(), None)
    finally:
        store.close()
    assert options.proxy_password == SECRET and options.proxy_username == "shop-user"
    assert options.timezone_id == "America/New_York"

    # changing another field keeps the password; clearing the proxy drops it
    assert run(capsys, "shop", "set", "pdd-1", "--locale", "de-DE", "--db", db)[0] == 0
    assert rows(db)[0][2] == token
    assert run(capsys, "shop", "set", "pdd-1", "--proxy", "", "--db", db)[0] == 0
    assert rows(db)[0][2] is None


def test_shop_set_needs_something_to_set(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "shop", "set", "pdd-1", "--db", db)
    assert code == 2 and "--allow-origin or a profile option" in err


def test_shops_warns_about_shops_going_direct(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "shop", "add", "pdd-2", "--platform", "pdd", "--base-url",
               "http://pdd.shopfleet.test/shop/pdd-2", "--proxy", "http://127.0.0.1:1",
               "--db", db)[0] == 0
    _, _, err = run(capsys, "shops", "--db", db)
    assert "warning: pdd: no proxy while other shops of the platform use one: pdd-1" in err
