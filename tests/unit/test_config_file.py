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


def test_notify_targets_and_the_digest_load_back_the_same(tmp_path: Path) -> None:
    # #19: [[notify]] is an array of tables; the console's settings dialog must keep it
    s = Settings().with_changes(digest={"at": "09:00", "tz": "Asia/Shanghai"})
    s = s.model_copy(update={"notify": [
        {"name": "ops", "kind": "dingtalk", "url": "https://oapi.dingtalk.test/robot/send",
         "events": ["ticket", "digest"], "quiet_hours": "22:00-07:00", "tz": "Asia/Shanghai"},
        {"name": "slack-ops", "kind": "slack", "url": "https://hooks.slack.test/x"}]})
    path = save_settings(s, tmp_path / "shopfleet.toml")
    assert load_settings(path) == s
    assert path.read_text(encoding="utf-8").count("[[notify]]") == 2
