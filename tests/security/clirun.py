"""Helpers for the command-line security tests: run the real CLI, read what it left behind."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.cli import main

REPO = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``shopfleet ARGV`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def shop_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store file with shop pdd-1 (its login and password set through the CLI)."""
    import io

    path = str(tmp_path / "cli.db")
    assert main(["shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                 "http://pdd.shopfleet.test/shop/pdd-1", "--username", "pdd-1",
                 "--db", path]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret-pw\n"))
    assert main(["shop", "set-password", "pdd-1", "--stdin", "--db", path]) == 0
    return path


def run_proc(*argv: str, env: dict[str, str] | None = None, stdin: str | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``shopfleet ARGV`` as a separate process (this tree first on the path)."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "core.cli", *argv], capture_output=True,
                          text=True, env=full, input=stdin, timeout=timeout)


def one_error_line(err: str, field: str) -> str:
    """The single error line, which must name ``field``."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert field in lines[0], (field, lines[0])
    return lines[0]


def json_error(err: str, field: str | None = None) -> dict[str, Any]:
    """The one JSON object a failing command prints under --json."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    obj = json.loads(lines[0])
    assert isinstance(obj, dict) and obj.get("error"), obj
    if field is not None:
        assert obj.get("field") == field, obj
    return obj


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its digest (what "nothing written" compares)."""
    return {str(p.relative_to(folder)): digest(p) for p in sorted(folder.rglob("*"))
            if p.is_file()}
