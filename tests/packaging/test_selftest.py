"""The self-test from source, on Debian's Chromium: what an operator sees when it passes or
when the configured browser does not work."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from core.selftest import run_self_test

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_self_test_runs_one_demo_task_and_passes(tmp_path: Path) -> None:
    home = os.environ["SHOPFLEET_HOME"]  # the isolated "user" folder of this test
    out = io.StringIO()
    assert run_self_test(out=out) == 0, out.getvalue()
    text = out.getvalue()
    assert "[ok  ] task ran in the browser: collect_data for pdd-1" in text
    assert "[ok  ] extracted data is what the site shows: 20 rows" in text
    assert "[ok  ] the site saw one login and no write" in text
    # #17: the demo shop's own profile (locale en-US, a user agent) on every request
    assert ("[ok  ] the shop's profile reached the site: " in text
            and "requests with Accept-Language en-US" in text
            and "and the shop's own user agent" in text), text
    assert "self-test passed" in text and "FAIL" not in text
    # The user's data folder was not used: no database, no key, and the variable is back.
    assert os.environ["SHOPFLEET_HOME"] == home
    assert list(Path(home).iterdir()) == []
    temp = next(line.split(": ", 1)[1] for line in text.splitlines()
                if "temporary data folder" in line)
    assert not Path(temp).exists()  # cleaned up


def test_a_configured_browser_that_does_not_start_fails_with_the_doctors_findings(
        tmp_path: Path) -> None:
    fake = tmp_path / "chrome"
    fake.write_text('#!/bin/sh\necho "Chromium 120.0.0.0"\n')  # answers --version, no browser
    fake.chmod(0o755)
    config = tmp_path / "shopfleet.toml"
    config.write_text(f'[browser]\nexecutable_path = "{fake}"\n')
    out = io.StringIO()
    assert run_self_test(config=config, out=out) == 1
    text = out.getvalue()
    assert "[FAIL]" in text and "self-test FAILED" in text
    assert "browser findings:" in text
    assert f"configured [browser] executable_path: Chromium 120.0.0.0 at {fake}" in text
