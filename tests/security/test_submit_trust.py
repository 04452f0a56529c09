"""Hostile tasks refused at submission (exit 2, the field named, nothing written): foreign or
non-http(s) URLs, inline credentials, result names that are paths, junk in upload paths; and
the operator's side: allowed origins per shop (both stores) and per platform."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core.cli import main
from core.config import Settings, settings_from_dict
from core.errors import ConfigError, InvalidInput, SpecError
from core.specs import parse_specs
from core.validation import FlowChecker
from tests.security.helpers import SECRET, leaks

BASE = "http://127.0.0.1:8000"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "sec.db")
    assert main(["shop", "add", "s1", "--platform", "pdd", "--base-url", BASE,
                 "--username", "alice", "--db", path]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    assert main(["shop", "set-password", "s1", "--stdin", "--db", path]) == 0
    return path


def submit(capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path, task: dict[str, Any],
           *extra: str) -> tuple[int, str]:
    f = tmp_path / "task.json"
    f.write_text(json.dumps(task))
    capsys.readouterr()
    code = main(["submit", str(f), "--db", db, *extra])
    _, err = capsys.readouterr()
    return code, err.strip()


def inline(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"type": "collect_data", "shop": "s1", "steps": list(steps)}


def queued(db: str) -> int:
    with sqlite3.connect(db) as c:
        return int(c.execute("SELECT count(*) FROM tasks").fetchone()[0])


NAV = {"action": "navigate", "url": BASE + "/login"}


@pytest.mark.parametrize("url,reason", [
    ("http://127.0.0.1:9999/steal", "origin http://127.0.0.1:9999 is not the shop's origin"),
    ("https://127.0.0.1:8000/x", "origin https://127.0.0.1:8000 is not the shop's origin"),
    ("http://127.0.0.1:8000@evil.test/", "origin http://evil.test:80 is not"),
    ("data:text/html,<div contenteditable>", "scheme 'data' is not allowed"),
    ("file:///etc/passwd", "scheme 'file' is not allowed"),
    ("javascript:alert(1)", "scheme 'javascript' is not allowed"),
    ("about:blank", "scheme 'about' is not allowed"),
])
def test_a_foreign_or_non_http_url_is_refused_naming_the_step(
        url: str, reason: str, db: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, err = submit(capsys, db, tmp_path, inline(NAV, {"action": "navigate", "url": url}))
    assert code == 2
    assert f"steps[1] (navigate).url: {reason}" in err
    assert queued(db) == 0


def test_the_first_navigate_is_named_as_the_step_not_as_start_url(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = submit(capsys, db, tmp_path,
                       inline({"action": "navigate", "url": "http://127.0.0.1:9999/"}))
    assert code == 2 and err.startswith("shopfleet: error: steps[0] (navigate).url: origin "
                                        "http://127.0.0.1:9999 is not the shop's")


def test_a_param_cannot_smuggle_another_origin_into_a_registered_flow(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # {shop.base_url}/stats?page={params.page}: the value is encoded, never a new origin.
    task = {"type": "collect_data", "shop": "s1", "flow": "collect_data",
            "params": {"page": "@evil.test/#"}}
    code, _ = submit(capsys, db, tmp_path, task)
    assert code == 0
    task = {"type": "reply_customer", "shop": "s1", "flow": "reply_customer",
            "params": {"message_id": "..", "reply": "x"}}
    code, err = submit(capsys, db, tmp_path, task)
    assert code == 2 and "steps[0] (navigate).url: {params.message_id} is '..'" in err


def test_inline_credentials_are_refused_unless_the_operator_allows_them(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("{shop.password}", "{shop.username}"):
        code, err = submit(capsys, db, tmp_path, inline(
            NAV, {"action": "type_text", "locator": "#pass", "text": text}))
        assert code == 2 and "steps[1] (type_text).text" in err and "inline steps" in err
    assert queued(db) == 0
    cfg = tmp_path / "c.toml"
    cfg.write_text("[security]\ninline_credentials = true\n")
    code, err = submit(capsys, db, tmp_path, inline(
        NAV, {"action": "type_text", "locator": "#pass", "text": "{shop.password}"}),
        "--config", str(cfg))
    assert code == 0, err
    # Registered flows may use them (they are reviewed files).
    code, err = submit(capsys, db, tmp_path, {"type": "collect_data", "shop": "s1",
                                              "flow": "collect_data", "params": {"page": 1}})
    assert code == 0, err


def test_the_password_stays_out_of_urls_and_locators(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[security]\ninline_credentials = true\n")
    for step in ({"action": "navigate", "url": BASE + "/?p={shop.password}"},
                 {"action": "click", "locator": "#{shop.password}"}):
        code, err = submit(capsys, db, tmp_path, inline(NAV, step), "--config", str(cfg))
        assert code == 2 and "may only be used as the text of a type_text step" in err


@pytest.mark.parametrize("step,field,reason", [
    ({"action": "screenshot", "into": "a/../../x"}, "steps[1].into", "must be a plain name"),
    ({"action": "screenshot", "into": "x" * 65}, "steps[1].into", "must be a plain name"),
    ({"action": "extract", "locator": "p", "into": "../x"}, "steps[1].into",
     "must be a plain name"),
    ({"action": "upload_file", "locator": "#f", "path": "a\x00b.png"}, "steps[1].path",
     "NUL"),
    ({"action": "upload_file", "locator": "#f", "path": "/etc/passwd"}, "steps[1] "
     "(upload_file).path", "outside the asset folders"),
])
def test_paths_and_names_in_steps_are_clean_errors(
        step: dict[str, Any], field: str, reason: str, db: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, err = submit(capsys, db, tmp_path, inline(NAV, step))
    assert code == 2, err
    assert f"{field}: " in err and reason in err
    assert "Traceback" not in err
    assert queued(db) == 0


def test_allowed_origins_per_shop_and_per_platform(
        db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cdn = {"action": "navigate", "url": "https://cdn.example.com/img"}
    code, _ = submit(capsys, db, tmp_path, inline(NAV, cdn))
    assert code == 2
    capsys.readouterr()
    assert main(["shop", "set", "s1", "--allow-origin", "https://cdn.example.com",
                 "--db", db]) == 0
    code, err = submit(capsys, db, tmp_path, inline(NAV, cdn))
    assert code == 0, err
    assert main(["shop", "set", "s1", "--allow-origin", "--db", db]) == 0  # clears the list
    code, _ = submit(capsys, db, tmp_path, inline(NAV, cdn))
    assert code == 2
    cfg = tmp_path / "c.toml"
    cfg.write_text('[platforms.pdd]\nallowed_origins = ["https://cdn.example.com:443/"]\n')
    code, err = submit(capsys, db, tmp_path, inline(NAV, cdn), "--config", str(cfg))
    assert code == 0, err
    cfg.write_text('[platforms.temu]\nallowed_origins = ["https://cdn.example.com"]\n')
    code, _ = submit(capsys, db, tmp_path, inline(NAV, cdn), "--config", str(cfg))
    assert code == 2  # another platform's list does not count


@pytest.mark.parametrize("bad", ["ftp://x.test", "file:///tmp", "javascript:x", "notaurl",
                                 "http://"])
def test_only_http_origins_can_be_allowed(bad: str, db: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["shop", "set", "s1", "--allow-origin", bad, "--db", db]) == 2
    assert "--allow-origin" in capsys.readouterr().err
    assert main(["shop", "add", "s2", "--platform", "pdd", "--base-url", BASE,
                 "--allow-origin", bad, "--db", db]) == 2
    with pytest.raises(ConfigError, match=r"platforms\.pdd: allowed_origins\[0\]"):
        settings_from_dict({"platforms": {"pdd": {"allowed_origins": [bad]}}})


def test_shop_add_takes_allowed_origins(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["shop", "add", "s2", "--platform", "pdd", "--base-url", BASE,
                 "--allow-origin", "https://A.example.com/x", "--allow-origin",
                 "http://b.example.com:8080", "--db", db, "--json"]) == 0
    shop = json.loads(capsys.readouterr().out)
    assert shop["allowed_origins"] == ["https://a.example.com:443", "http://b.example.com:8080"]


def test_the_database_never_holds_the_password(db: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    submit(capsys, db, tmp_path, {"type": "collect_data", "shop": "s1", "flow": "collect_data",
                                  "params": {"page": 1}})
    for suffix in ("", "-wal"):
        p = Path(db + suffix)
        if p.exists():
            assert not leaks(p.read_bytes())


def test_flow_checker_gives_the_store_the_same_rules(tmp_path: Path) -> None:
    from core.store.records import ShopRecord

    shop = ShopRecord(id=1, name="s1", platform="pdd", base_url=BASE, domain="127.0.0.1",
                      username="alice", has_password=True, paused=False)
    check = FlowChecker(Settings())
    spec = parse_specs(json.dumps(inline(NAV, {"action": "navigate",
                                                "url": "http://127.0.0.1:9999/"})))[0]
    with pytest.raises(SpecError, match=r"steps\[1\] \(navigate\)\.url: origin"):
        check(spec, shop)
    with pytest.raises(InvalidInput):
        FlowChecker(Settings())(spec, ShopRecord(**{**shop.__dict__,
                                                     "allowed_origins": ("ftp://x",)}))
