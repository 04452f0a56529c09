"""Secrets in store URLs are never printed; metrics off loopback need a bearer token."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.build import open_store
from core.config import ConfigError, Settings, settings_from_dict
from core.metrics_http import serve_metrics
from core.store import SqliteStore
from core.urls import public_url, with_env_password

from .clirun import json_error, one_error_line, run

PW = "s3cret-Pw~42"
QPW = "s3cret-Pw%7E42"


@pytest.mark.parametrize("url,shown", [
    (f"redis://:{PW}@10.0.0.5:6379/2", "redis://10.0.0.5:6379/2"),
    (f"redis://fleet:{PW}@host/0", "redis://fleet@host/0"),
    (f"rediss://fleet:{QPW}@[::1]:6380/1", "rediss://fleet@[::1]:6380/1"),
    (f"redis://host:6379/0?password={QPW}&db=3", "redis://host:6379/0?password=***&db=3"),
    (f"redis://host/0?PassWord={PW}", "redis://host/0?PassWord=***"),
    (f"redis://host/0?token={PW}", "redis://host/0?token=***"),
    (f"unix://:{PW}@/run/redis.sock?db=0", "unix:///run/redis.sock?db=0"),
    (f"unix:///run/redis.sock?password={PW}", "unix:///run/redis.sock?password=***"),
    (f"redis://host/0#{PW}", "redis://host/0"),
    (f"ftp://user:{PW}@host/x", "ftp://…"),
    (f"postgres://u:{PW}@db/x?sslpassword={PW}", "postgres://…"),
    (f"{PW}://x", "(hidden URL)"),
    (f"redis://:{PW}@host:99999/0", "(hidden URL)"),
    ("sqlite:/data/shopfleet.db", "sqlite:/data/shopfleet.db"),
    ("/data/shopfleet.db", "/data/shopfleet.db"),
    ("C:\\Users\\op\\shopfleet.db", "C:\\Users\\op\\shopfleet.db"),
    (f"redis:{PW}@host", "(hidden URL)"),
])
def test_public_url_hides_every_form(url: str, shown: str) -> None:
    assert public_url(url) == shown
    assert PW not in public_url(url) and QPW not in public_url(url)


def test_env_password_in_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOPFLEET_REDIS_PASSWORD", "p@ss/word")
    assert with_env_password("redis://host:6379/0") == "redis://:p%40ss%2Fword@host:6379/0"
    assert with_env_password("redis://fleet@host/0") == "redis://fleet:p%40ss%2Fword@host/0"
    assert with_env_password("redis://:own@host/0") == "redis://:own@host/0"
    assert with_env_password("redis://host/0?password=own") == "redis://host/0?password=own"
    assert "password=p%40ss%2Fword" in with_env_password("unix:///run/r.sock")
    assert "p@ss" not in public_url(with_env_password("redis://host:6379/0"))


@pytest.fixture
def fleet_user(redis_url: str) -> Iterator[str]:
    """A Redis ACL user ``fleet`` with password :data:`PW`; yields ``host:port``."""
    import redis

    r = redis.Redis.from_url(redis_url)
    r.execute_command("ACL", "SETUSER", "fleet", "on", f">{PW}", "~*", "&*", "+@all")
    hostport = redis_url.split("//", 1)[1].split("/", 1)[0]
    try:
        yield hostport
    finally:
        r.execute_command("ACL", "DELUSER", "fleet")
        r.close()


def _forms(hostport: str) -> list[str]:
    return [f"redis://fleet:{QPW}@{hostport}/0",
            f"redis://{hostport}/0?username=fleet&password={QPW}"]


def _no_secret(*texts: str) -> None:
    for t in texts:
        assert PW not in t and QPW not in t, t


@pytest.mark.parametrize("form", [0, 1])
def test_commands_never_print_the_redis_password(form: int, fleet_user: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = _forms(fleet_user)[form]
    code, out, err = run(capsys, "--store", url, "shop", "add", "pdd-1", "--platform", "pdd",
                         "--base-url", "http://pdd.shopfleet.test/s")
    assert code == 0, err
    for argv in (["status"], ["status", "--json"], ["workers"], ["shops"]):
        code, out, err = run(capsys, *argv, "--store", url)
        assert code == 0, err
        _no_secret(out, err)
    code, out, err = run(capsys, "status", "--store", url)
    assert "store:    redis://" in out and fleet_user in out
    code, out, err = run(capsys, "worker", "--until-idle", "--executor", "noop", "--quiet",
                         "--store", url)
    assert code == 0, err
    assert f"{fleet_user}/0" in out  # the banner names the store …
    _no_secret(out, err)             # … without its password


def test_settings_url_and_store_url_attribute(fleet_user: str) -> None:
    """What the console's status bar shows is ``store.url``: redacted at the facade."""
    for url in _forms(fleet_user):
        store = open_store(Settings(), url=url)
        try:
            _no_secret(store.url)
            assert fleet_user in store.url
        finally:
            store.close()


def test_migrate_report_never_prints_the_password(fleet_user: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "desk.db"
    with SqliteStore(src) as s:
        s.add_shop("pdd-1", platform="pdd", base_url="http://pdd.shopfleet.test/s")
    for i, url in enumerate(_forms(fleet_user)):
        code, out, err = run(capsys, "migrate", "--from", f"sqlite:{src}", "--to", url,
                             "--prefix", f"m{i}")
        assert code == 0, err
        _no_secret(out, err)
        code, out, err = run(capsys, "migrate", "--from", f"sqlite:{src}", "--to", url,
                             "--prefix", f"m{i}", "--json")
        assert code != 0  # the prefix is not empty any more: refused, and said safely
        _no_secret(out, err)


@pytest.mark.parametrize("argv", [["status"], ["shops"], ["worker", "--until-idle"]])
def test_wrong_redis_password(argv: list[str], fleet_user: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://fleet:wrong-{QPW}@{fleet_user}/0"
    code, out, err = run(capsys, *argv, "--store", url)
    assert code == 2 and out == ""
    line = one_error_line(err, "--store")
    assert "refused the password" in line
    _no_secret(line)
    assert "wrong-" not in line
    code, out, err = run(capsys, *argv, "--store", url, "--json")
    assert code == 2
    json_error(err, "--store")


def test_wrong_redis_password_for_migrate(fleet_user: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "desk.db"
    SqliteStore(src).close()
    code, _, err = run(capsys, "migrate", "--from", f"sqlite:{src}", "--to",
                       f"redis://fleet:nope@{fleet_user}/0", "--json")
    assert code == 2
    json_error(err, "--to")


def test_unknown_scheme_is_not_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "status", "--store", f"mongodb://admin:{PW}@db.local/x")
    assert code == 2
    line = one_error_line(err, "--store")
    _no_secret(line)
    assert "admin" not in line and "db.local" not in line


# -- metrics ------------------------------------------------------------------------------

def test_non_loopback_metrics_without_token_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as e:
        settings_from_dict({"metrics": {"host": "0.0.0.0", "port": 9464}})
    assert e.value.field == "metrics"
    assert "token" in str(e.value)
    settings_from_dict({"metrics": {"host": "0.0.0.0", "port": 9464, "token": "t0k"}})
    for host in ("127.0.0.1", "localhost", "::1", "127.8.9.10"):
        settings_from_dict({"metrics": {"host": host, "port": 9464}})


def test_worker_refuses_non_loopback_metrics_without_token(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[metrics]\nhost = "0.0.0.0"\nport = 9464\n', encoding="utf-8")
    code, out, err = run(capsys, "worker", "--until-idle", "--executor", "noop", "--config",
                         str(cfg), "--db", str(tmp_path / "q.db"))
    assert code == 2 and "worker " not in out
    assert "token" in one_error_line(err, "metrics")


def _get(port: int, headers: dict[str, str]) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        assert exc.code != 401 or exc.headers.get("WWW-Authenticate", "").startswith("Bearer")
        return int(exc.code)


def test_metrics_off_loopback_answer_401_without_the_token(make_store: Any,
                                                           clock: Any) -> None:
    from tests.unit.test_prometheus import engine_statistics

    stats = engine_statistics(make_store, clock)

    async def go() -> None:
        with pytest.raises(ConfigError):
            await serve_metrics(lambda: stats, host="0.0.0.0", port=0)
        server = await serve_metrics(lambda: stats, host="0.0.0.0", port=0, token="t0k-en")
        try:
            port = server.sockets[0].getsockname()[1]
            assert await asyncio.to_thread(_get, port, {}) == 401
            assert await asyncio.to_thread(_get, port, {"Authorization": "Bearer nope"}) == 401
            assert await asyncio.to_thread(_get, port, {"Authorization": "t0k-en"}) == 401
            assert await asyncio.to_thread(
                _get, port, {"Authorization": "Bearer t0k-en"}) == 200
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(go())


def test_metrics_on_loopback_need_no_token(make_store: Any, clock: Any) -> None:
    from tests.unit.test_prometheus import engine_statistics

    stats = engine_statistics(make_store, clock)

    async def go() -> None:
        server = await serve_metrics(lambda: stats, host="127.0.0.1", port=0)
        try:
            port = server.sockets[0].getsockname()[1]
            assert await asyncio.to_thread(_get, port, {}) == 200
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(go())
