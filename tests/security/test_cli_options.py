"""``--db``, ``--config`` and ``--store`` work before or after the command's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.store import SqliteStore

from .clirun import json_error, one_error_line, run


@pytest.fixture
def two_dbs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for path, shop in ((a, "only-in-a"), (b, "only-in-b")):
        with SqliteStore(path) as s:
            s.add_shop(shop, platform="pdd", base_url="http://pdd.shopfleet.test/s")
    return a, b


@pytest.mark.parametrize("before", [True, False])
def test_db_before_or_after_the_command(two_dbs: tuple[Path, Path], before: bool,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, b = two_dbs
    argv = ["--db", str(b), "shops"] if before else ["shops", "--db", str(b)]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "only-in-b" in out and "only-in-a" not in out


def test_db_equals_form_and_nested_command(two_dbs: tuple[Path, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_dbs
    code, _, err = run(capsys, f"--db={b}", "shop", "pause", "only-in-b")
    assert code == 0, err
    with SqliteStore(b) as s:
        assert s.shop("only-in-b").paused
    with SqliteStore(a) as s:
        assert not s.shop("only-in-a").paused


def test_db_twice_with_different_values_is_refused(two_dbs: tuple[Path, Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_dbs
    code, out, err = run(capsys, "--db", str(a), "shops", "--db", str(b), "--json")
    assert code == 2 and out == ""
    json_error(err, "--db")


def test_config_before_the_command_is_read(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "c.db"
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[store]\npath = "{db}"\n[queue]\nmax_backlog = 7\n', encoding="utf-8")
    with SqliteStore(db) as s:
        s.add_shop("x", platform="pdd", base_url="http://pdd.shopfleet.test/s")
    code, out, err = run(capsys, "--config", str(cfg), "status")
    assert code == 0, err
    assert "of max 7" in out and str(db) in out


def test_config_before_worker_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A config that cannot be valid proves it was read: the worker stops on it."""
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[queue]\nmax_backlog = -1\n", encoding="utf-8")
    code, _, err = run(capsys, "--config", str(cfg), "worker", "--until-idle",
                       "--executor", "noop")
    assert code == 2
    one_error_line(err, "queue.max_backlog")


def test_store_before_the_command_is_used(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    with SqliteStore(db) as s:
        s.add_shop("via-store", platform="pdd", base_url="http://pdd.shopfleet.test/s")
    code, out, err = run(capsys, "--store", f"sqlite:{db}", "shops")
    assert code == 0, err
    assert "via-store" in out


def test_bad_argument_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "tasks", "--limit", "many")
    assert code == 2 and out == ""
    one_error_line(err, "--limit")
    code, out, err = run(capsys, "tasks", "--limit", "many", "--json")
    assert code == 2
    json_error(err, "--limit")
