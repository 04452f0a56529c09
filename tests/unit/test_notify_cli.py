"""#19 on the command line: ``shopfleet notify add|list|test|remove`` on a real SQLite file and
a real HTTP receiver; bad input names its field and writes nothing; the secret is stored
encrypted and never printed; ``[[notify]]`` in the configuration is read and checked."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response

from core.cli import main
from core.store import SqliteStore

SECRET = "SECdingtalk0123456789签名"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "n.db")
    assert main(["shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                 "http://pdd.shopfleet.test/shop/pdd-1", "--db", path]) == 0
    return path


def stored(db: str) -> str | None:
    with SqliteStore(db, readonly=True) as store:
        return store.meta("notify.targets")


@pytest.mark.parametrize(("extra", "field"), [
    (["--kind", "telegram", "--url", "https://x.test/h"], "notify.kind"),
    (["--kind", "dingtalk", "--url", "ftp://x.test/h"], "notify.url"),
    (["--kind", "dingtalk", "--url", "not a url"], "notify.url"),
    (["--kind", "slack", "--url", "https://x.test/h", "--events", "ticket,explosion"],
     "notify.events"),
    (["--kind", "slack", "--url", "https://x.test/h", "--quiet-hours", "22:00-25:00"],
     "notify.quiet_hours"),
    (["--kind", "slack", "--url", "https://x.test/h", "--shops", "colour:red"],
     "notify.shops"),
])
def test_bad_input_names_the_field_and_writes_nothing(
        db: str, capsys: pytest.CaptureFixture[str], extra: list[str], field: str) -> None:
    capsys.readouterr()
    code, out, err = run(capsys, "notify", "add", "ops", "--db", db, *extra)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], err
    assert stored(db) is None


def test_add_list_test_remove_with_a_signed_dingtalk_target(
        db: str, tmp_path: Path, httpserver: HTTPServer, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[WRequest] = []

    def handle(request: WRequest) -> Response:
        got.append(request)
        return Response(json.dumps({"errcode": 0, "errmsg": "ok"}),
                        content_type="application/json")

    httpserver.expect_request("/robot/send", method="POST").respond_with_handler(handle)
    url = httpserver.url_for("/robot/send") + "?access_token=tok123"
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    code, out, err = run(capsys, "notify", "add", "ops", "--db", db, "--kind", "dingtalk",
                         "--url", url, "--secret-stdin", "--events", "ticket,digest",
                         "--lang", "zh_CN")
    assert code == 0, err
    assert "ops added" in out and SECRET not in out + err and "tok123" not in out
    # the secret is in the store only encrypted
    raw = json.loads(stored(db) or "[]")
    assert [r["name"] for r in raw] == ["ops"] and "secret" not in raw[0]
    assert SECRET.encode() not in Path(db).read_bytes()
    assert SECRET not in json.dumps(raw, ensure_ascii=False)
    # a second target of the same name is refused, nothing changes
    before = stored(db)
    code, _, err = run(capsys, "notify", "add", "ops", "--db", db, "--kind", "slack",
                       "--url", "https://hooks.slack.test/x")
    assert code == 2 and "notify.name" in err and stored(db) == before

    code, out, _ = run(capsys, "notify", "list", "--db", db, "--json")
    [row] = json.loads(out)
    assert (row["name"], row["kind"], row["source"], row["signed"]) == (
        "ops", "dingtalk", "store", True)
    assert row["events"] == ["digest", "ticket"] and "tok123" not in out and SECRET not in out

    # test: delivered, signed the way DingTalk verifies it, in Chinese
    code, out, err = run(capsys, "notify", "test", "ops", "--db", db)
    assert code == 0, err
    [req] = got
    q = parse_qs(urlsplit(req.url).query)
    ts = q["timestamp"][0]
    want = base64.b64encode(hmac.new(SECRET.encode(), f"{ts}\n{SECRET}".encode(),
                                     hashlib.sha256).digest()).decode()
    assert q["sign"][0] == want
    body = json.loads(req.get_data())
    assert "测试消息" in json.dumps(body, ensure_ascii=False)
    assert SECRET not in out + err

    # remove; then it is gone
    code, out, _ = run(capsys, "notify", "remove", "ops", "--db", db)
    assert code == 0 and json.loads(stored(db) or "[]") == []
    code, _, err = run(capsys, "notify", "test", "ops", "--db", db)
    assert code == 2 and "NAME" in err


def test_config_targets_are_read_and_checked(db: str, tmp_path: Path,
                                             httpserver: HTTPServer,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[[notify]]\nname = "slack-ops"\nkind = "slack"\n'
                   f'url = "{httpserver.url_for("/hook")}"\nlang = "en"\n', encoding="utf-8")
    code, out, _ = run(capsys, "notify", "list", "--db", db, "--config", str(cfg), "--json")
    assert code == 0 and [r["source"] for r in json.loads(out)] == ["config"]
    code, out, err = run(capsys, "notify", "test", "slack-ops", "--db", db, "--config",
                         str(cfg))
    assert code == 0, err
    code, _, err = run(capsys, "notify", "remove", "slack-ops", "--db", db, "--config",
                       str(cfg))
    assert code == 2 and "configuration" in err
    # a config target that does not check out stops the command with its field named
    bad = tmp_path / "bad.toml"
    bad.write_text('[[notify]]\nname = "x"\nkind = "slack"\nurl = "https://s.test"\n'
                   'events = ["ticket", "explosion"]\n', encoding="utf-8")
    code, _, err = run(capsys, "notify", "list", "--db", db, "--config", str(bad))
    assert code == 2 and "notify[0].events" in err


def test_a_failing_receiver_is_reported_and_exit_1(
        db: str, httpserver: HTTPServer, capsys: pytest.CaptureFixture[str]) -> None:
    httpserver.expect_request("/hook", method="POST").respond_with_data("nope", status=500)
    assert main(["notify", "add", "wh", "--db", db, "--kind", "webhook", "--url",
                 httpserver.url_for("/hook")]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, "notify", "test", "wh", "--db", db)
    assert code == 1 and "not delivered" in err and "500" in err
