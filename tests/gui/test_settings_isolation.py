"""#15 item 7: the demo's Settings never write the operator's configuration: the demo hands the
console a file in its own temporary folder, and a console without a file saves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core import data_dir
from tests.gui.conftest import Run

pytestmark = pytest.mark.gui


def test_the_demo_console_gets_a_config_file_in_its_own_folder(
        qapp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop import demo

    seen: dict[str, Any] = {}

    async def fake_console(settings: Any, store: Any, host: Any, **kw: Any) -> int:
        seen.update(kw)
        seen["folder"] = Path(store.path).parent
        seen["folder_existed"] = seen["folder"].exists()
        store.close()
        return 0

    monkeypatch.setattr(demo, "run_console", fake_console)
    assert demo.run_demo(["--tasks", "1"]) == 0
    path = seen["config_path"]
    assert path is not None and path.parent == seen["folder"]
    assert seen["folder_existed"]
    assert path.parent != data_dir() and not str(path).startswith(str(data_dir()))
    assert not seen["folder"].exists()          # the temp folder is gone (no --keep)


def test_a_console_without_a_config_file_saves_nothing(
        console: Any, run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SHOPFLEET_HOME", str(home))
    console.ctx.config_path = None
    console.open_settings()
    dlg = console.dialog
    dlg.widgets["queue.max_backlog"].setValue(4321)
    dlg.accept()
    assert not dlg.isVisible()
    run.until(lambda: "not saved" in console.statusBar().currentMessage())
    assert not (data_dir() / "shopfleet.toml").exists() or \
        "4321" not in (data_dir() / "shopfleet.toml").read_text(encoding="utf-8")
