"""Settings cross-field checks (#15): the refusal names the fields that disagree."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli import main
from core.config import Settings
from core.errors import ConfigError


@pytest.mark.parametrize(("queue", "names"), [
    ({"heartbeat_s": 100}, ("heartbeat_s", "worker_lost_after_s")),
    ({"lease_s": 1}, ("lease_s", "heartbeat_s")),
    ({"retry_backoff_s": 60, "retry_backoff_max_s": 10},
     ("retry_backoff_max_s", "retry_backoff_s")),
])
def test_timings_that_disagree_are_refused_naming_both_fields(
        queue: dict[str, float], names: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as e:
        Settings().with_changes(queue=queue)
    assert all(n in str(e.value) for n in names), str(e.value)


def test_agreeing_timings_pass() -> None:
    s = Settings().with_changes(queue={"heartbeat_s": 1, "worker_lost_after_s": 5,
                                       "lease_s": 3})
    assert s.queue.lease_s == 3


def test_a_config_file_with_disagreeing_timings_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[queue]\nheartbeat_s = 100\n")
    code = main(["status", "--config", str(cfg), "--db", str(tmp_path / "x.db")])
    _, err = capsys.readouterr()
    assert code == 2 and "heartbeat_s" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.db").exists()
