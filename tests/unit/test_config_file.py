"""Core writes the settings file; load_settings reads back what was written."""

from __future__ import annotations

from pathlib import Path

from core import load_settings, save_settings
from core.config import Settings


def test_saved_settings_load_back_the_same(tmp_path: Path) -> None:
    settings = Settings().with_changes(
        pool={"max_browsers": 7}, flows={"dirs": ["/srv/flows", 'C:\\flows "x"']},
        gates={"domains": {"shop.example": {"rate_per_s": 0.5, "burst": 2.0}}})
    path = save_settings(settings, tmp_path / "deep" / "shopfleet.toml")
    assert path.exists() and not path.with_suffix(".toml.tmp").exists()
    assert load_settings(path) == settings


def test_saving_replaces_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "shopfleet.toml"
    save_settings(Settings().with_changes(pool={"max_browsers": 3}), path)
    save_settings(Settings(), path)
    assert load_settings(path) == Settings()
