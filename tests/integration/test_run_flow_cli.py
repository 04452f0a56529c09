"""`shopfleet run-flow`: one flow now on real Chromium, each step printed, evidence on failure."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from core.cli import main
from core.demosite import DemoSite

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def setup_shop(db: str, site: DemoSite, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = next(s for s in site.shops() if s.name == "temu-2")
    assert main(["shop", "add", shop.name, "--platform", shop.platform, "--base-url",
                 shop.base_url, "--username", shop.username, "--db", db]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(shop.password + "\n"))
    assert main(["shop", "set-password", shop.name, "--stdin", "--db", db]) == 0


def test_run_flow_prints_steps_and_results_then_fails_with_evidence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    with DemoSite() as site:
        setup_shop(db, site, monkeypatch)
        capsys.readouterr()
        code = main(["run-flow", "collect_data", "--shop", "temu-2", "--param", "page=2",
                     "--db", db])
        out = capsys.readouterr().out
        assert code == 0, out
        assert "log in" in out and "done" in out
        results = json.loads(out.split("done; results:\n", 1)[1])
        assert results["skus"] and len(results["skus"]) == len(results["views"])

        site.set_fault("layout_changed", platform="temu")
        code = main(["run-flow", "reply_customer", "--shop", "temu-2", "--param",
                     "message_id=1", "--param", "reply=hello", "--db", db])
        out = capsys.readouterr().out
        assert code == 1
        assert "FAILED (page_changed)" in out
        shot = next(line.split(": ", 1)[1] for line in out.splitlines()
                    if "evidence screenshot" in line)
        assert Path(shot).read_bytes()[:4] == b"\x89PNG"
        assert site.records(kind="reply") == []

        code = main(["run-flow", "reply_customer", "--shop", "temu-2", "--param",
                     "message_id=1", "--db", db])
        assert code == 2                                       # a missing parameter
        assert "{params.reply}" in capsys.readouterr().err


def test_run_flow_on_every_shop_a_selector_picks_goes_on_past_a_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """#18: ``run-flow --shops``: each picked shop in turn, its steps under its name, a failing
    shop does not stop the next one, exit 1 and a summary naming the failed shop."""
    db = str(tmp_path / "r.db")
    with DemoSite() as site:
        picked = [s for s in site.shops() if s.name in ("pdd-2", "temu-2")]
        for shop in picked:
            assert main(["shop", "add", shop.name, "--platform", shop.platform, "--base-url",
                         shop.base_url, "--username", shop.username, "--db", db]) == 0
            monkeypatch.setattr("sys.stdin", io.StringIO(shop.password + "\n"))
            assert main(["shop", "set-password", shop.name, "--stdin", "--db", db]) == 0
            assert main(["shop", "tag", shop.name, "grp", "--db", db]) == 0
        site.set_fault("layout_changed", platform="temu")
        capsys.readouterr()
        code = main(["run-flow", "reply_customer", "--shops", "tag:grp", "--param",
                     "message_id=1", "--param", "reply=hello", "--db", db])
        out = capsys.readouterr().out
        assert code == 1, out
        pdd, temu = out.split("for shop temu-2\n")
        assert "for shop pdd-2" in pdd and "FAILED" not in pdd
        assert "FAILED (page_changed)" in temu
        assert out.splitlines()[-1] == "2 shops: 1 done, 1 failed (temu-2)"
        assert [r["shop"] for r in site.records(kind="reply")] == ["pdd-2"]
