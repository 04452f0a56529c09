"""The demo console under Xvfb with real Chromium and the demo site: it works for a while and
saves screenshots of the main window, the tickets, a ticket dialog and the dashboard."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import missing_tool

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def test_demo_console_screenshots(tmp_path_factory: pytest.TempPathFactory) -> None:
    if shutil.which("xvfb-run") is None:
        missing_tool("xvfb-run is not installed (apt-get install xvfb)")
    if not Path("/usr/bin/chromium").exists() and shutil.which("chromium") is None:
        missing_tool("no Chromium to drive")
    folder = Path(os.environ.get("SHOPFLEET_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    proc = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", sys.executable, "-m",
         "desktop.demo", "--screenshots", str(folder), "--run-for", "30", "--lang", "en"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=480)
    print(f"screenshots in {folder}")
    if "could not load the Qt platform plugin" in proc.stderr.lower():
        missing_tool("Qt's xcb platform plugin cannot load here (install libxcb-cursor0, "
                    "libxcb-icccm4, libxcb-keysyms1)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("main_window.png", "tickets.png", "dashboard.png", "gates.png"):
        shot = folder / name
        assert shot.exists() and shot.stat().st_size > 20_000, name
    # Faults were switched on: at least one ticket opened and its dialog was captured.
    assert (folder / "ticket_dialog.png").exists()
