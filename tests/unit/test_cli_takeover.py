"""``shopfleet takeover --shop NAME`` (#15): its refusals come before any browser opens — an
unknown shop (exit 2, the field named), a shop another takeover holds (the holder named), a
shop whose task a worker still runs (the task and the worker named). The real headed takeover
is tests/integration/test_takeover_chromium.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import Settings, open_store
from tests.helpers import spec
from tests.security.clirun import run, shop_db


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SHOPFLEET_HOME", str(tmp_path / "home"))
    return shop_db(tmp_path, monkeypatch)


def no_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any browser launch fails the test: every refusal here comes before one."""
    def launch(*_a: object, **_k: object) -> None:
        raise AssertionError("a browser was opened")
    monkeypatch.setattr("core.browser.pool.BrowserPool.__aenter__", launch)


def test_an_unknown_shop_exits_2_naming_the_field(
        db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    no_browser(monkeypatch)
    capsys.readouterr()
    code, out, err = run(capsys, "takeover", "--shop", "nope", "--db", db)
    assert (code, out) == (2, "")
    assert err.strip() == ("shopfleet: error: shop: no shop named 'nope' "
                           "(add it with 'shopfleet shop add')")
    code, _, err = run(capsys, "takeover", "--shop", "nope", "--json", "--db", db)
    assert code == 2 and json.loads(err)["field"] == "shop"
    # neither a ticket nor a shop, or both; an answer for a shop's takeover
    for argv, field in ((["takeover"], "ticket"), (["takeover", "3", "--shop", "pdd-1"],
                                                   "ticket"),
                        (["takeover", "--shop", "pdd-1", "--answer", "done"], "answer"),
                        (["takeover", "--shop", "pdd-1", "--wait-running-s", "-1"],
                         "--wait-running-s"),
                        # not a number of seconds: a NaN wait never ends, holding the shop
                        (["takeover", "--shop", "pdd-1", "--wait-running-s", "nan"],
                         "--wait-running-s"),
                        (["takeover", "--shop", "pdd-1", "--max-s", "inf"], "--max-s")):
        code, _, err = run(capsys, *argv, "--json", "--db", db)
        assert code == 2 and json.loads(err)["field"] == field, argv
    store = open_store(Settings(), Path(db))
    try:
        assert store.shop_hold("pdd-1") is None          # nothing held, nothing written
    finally:
        store.close()


def test_a_shop_held_by_another_takeover_is_refused_naming_the_holder(
        db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    no_browser(monkeypatch)
    store = open_store(Settings(), Path(db))
    try:
        store.hold_shop("pdd-1", "takeover:other", lease_s=300,
                        what="alice@host-b (ticket #9)")
        capsys.readouterr()
        code, out, err = run(capsys, "takeover", "--shop", "pdd-1", "--db", db)
        assert code == 1 and out == ""
        assert len(err.strip().splitlines()) == 1
        assert "shop pdd-1 is held by alice@host-b (ticket #9)" in err
        hold = store.shop_hold("pdd-1")                  # still theirs
        assert hold is not None and hold.owner == "takeover:other"
    finally:
        store.close()


def test_a_shop_whose_task_a_worker_runs_is_refused_naming_the_worker(
        db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    no_browser(monkeypatch)
    store = open_store(Settings(), Path(db))
    try:
        tid = store.submit(spec(shop="pdd-1", params={"page": 1}))
        claimed = store.claim("host-b/4242/ab12")
        assert claimed is not None and claimed.id == tid
        capsys.readouterr()
        code, out, err = run(capsys, "takeover", "--shop", "pdd-1", "--wait-running-s", "0",
                             "--db", db)
        assert code == 1 and out == ""
        assert f"shop pdd-1 still runs task #{tid} (worker host-b/4242/ab12)" in err
        assert store.shop_hold("pdd-1") is None          # the refused takeover let go
    finally:
        store.close()
