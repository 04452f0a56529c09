"""`shopfleet demo --headless`: the newcomer's first minute, on real Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_headless_demo_runs_the_queue_empty_and_says_what_the_site_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SHOPFLEET_HOME", str(tmp_path / "home"))
    assert main(["demo", "--headless", "--tasks", "4"]) == 0
    out = capsys.readouterr().out
    assert "ShopFleet demo (headless)" in out
    assert "0 still queued" in out
    assert "the site recorded:" in out
    assert "joins this demo" not in out  # the console window has long landed
