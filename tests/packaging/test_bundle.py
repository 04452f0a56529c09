"""The Linux one-folder app: built with the shared spec, self-tested, free of test tools.

Builds ``dist/shopfleet`` with ``packaging/build_linux.sh`` (which reuses an up-to-date build;
a clean build takes about a minute here), then runs the frozen binary's ``--self-test`` against
Debian's Chromium.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "dist" / "shopfleet"
EXE = BUNDLE / "shopfleet"

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="the Linux build script")]


@pytest.fixture(scope="module")
def bundle() -> Path:
    proc = subprocess.run(["sh", "packaging/build_linux.sh"], cwd=ROOT, capture_output=True,
                          text=True, timeout=1200, env={**os.environ, "PY": sys.executable})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert EXE.is_file() and os.access(EXE, os.X_OK)
    return BUNDLE


@pytest.mark.timeout(1500)
def test_the_frozen_self_test_runs_a_demo_task_in_chromium(bundle: Path, tmp_path: Path) -> None:
    home = Path(os.environ["SHOPFLEET_HOME"])
    started = time.monotonic()
    proc = subprocess.run([str(EXE), "--self-test"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "self-test (frozen app" in out
    assert "[ok  ] browser found:" in out and "/usr/bin/chromium" in out
    assert "[ok  ] task ran in the browser: collect_data for pdd-1 page 7: done" in out
    assert "[ok  ] extracted data is what the site shows: 20 rows" in out
    assert "self-test passed" in out
    assert list(home.iterdir()) == []  # the user's data folder was left alone
    print(f"\nfrozen self-test: {took:.1f}s")


@pytest.mark.timeout(1500)
def test_the_bundle_has_the_driver_and_qt_plugins_but_no_tests_or_browser(bundle: Path) -> None:
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        from check_bundle import problems
    finally:
        sys.path.pop(0)
    assert problems(bundle) == []
    internal = bundle / "_internal"
    names = {p.name.split(".")[0].split("-")[0] for p in internal.rglob("*")}
    assert not names & {"pytest", "_pytest", "pytestqt", "hypothesis", "mypy", "ruff"}
    plugins = internal / "PySide6" / "Qt" / "plugins"
    assert (plugins / "platforms" / "libqxcb.so").is_file()
    assert (plugins / "platforms" / "libqoffscreen.so").is_file()
    assert (plugins / "imageformats" / "libqsvg.so").is_file()
    assert (internal / "resources" / "flows" / "collect_data.json").is_file()
    assert (internal / "resources" / "translations" / "shopfleet_zh_CN.qm").is_file()
    assert not list((internal / "resources").rglob("*.py"))
    driver = internal / "playwright" / "driver"
    assert os.access(driver / "node", os.X_OK)
    assert not list(driver.rglob(".local-browsers"))


@pytest.mark.timeout(1500)
def test_the_frozen_command_line_answers(bundle: Path) -> None:
    proc = subprocess.run([str(EXE), "doctor", "--json"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert '"ok": true' in proc.stdout and "/usr/bin/chromium" in proc.stdout
    proc = subprocess.run([str(EXE), "--self-test", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "--keep" in proc.stdout


@pytest.mark.timeout(1500)
def test_a_frozen_worker_joins_a_fleet_on_redis(bundle: Path, redis_url: str,
                                               tmp_path: Path) -> None:
    """What an operator runs on a second machine: the installed app's worker on Redis."""
    from core.build import open_store
    from core.config import Settings
    from core.testing.fleet_client import specs_for

    store = open_store(Settings(), url=redis_url, validate=False)
    store.add_shop("pdd-1", platform="pdd", base_url="http://pdd.fleet.test/shop/1")
    store.submit_many(specs_for(20, ["pdd-1"]))
    cfg = tmp_path / "fleet.toml"
    cfg.write_text('[gates.default_domain]\nrate_per_s = 100\nburst = 100\n')
    try:
        proc = subprocess.run(
            [str(EXE), "worker", "--store", redis_url, "--config", str(cfg), "--executor",
             "noop", "--until-idle", "--quiet"], capture_output=True, text=True, timeout=120,
            cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert store.counts()["done"] == 20
        assert [w.state for w in store.workers()] == ["stopped"]
    finally:
        store.close()
