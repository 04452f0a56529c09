"""Every visible string of the console has a Chinese translation, and the .qm is current."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import missing_tool

ROOT = Path(__file__).resolve().parents[2]
TS = ROOT / "resources" / "translations" / "shopfleet_zh_CN.ts"
pytestmark = pytest.mark.gui


def _sources(ts: Path) -> set[str]:
    return {m.findtext("source") or "" for m in ET.parse(ts).iter("message")}


def test_every_string_in_the_code_is_translated(tmp_path: Path) -> None:
    lupdate = Path(sys.executable).parent / "pyside6-lupdate"
    if not lupdate.exists() and shutil.which("pyside6-lupdate") is None:
        missing_tool("pyside6-lupdate is not installed")
    fresh = tmp_path / "fresh.ts"
    subprocess.run([str(lupdate if lupdate.exists() else "pyside6-lupdate"),
                    *sorted(str(p) for p in (ROOT / "desktop").glob("*.py")),
                    "-ts", str(fresh), "-locations", "none"], check=True, capture_output=True)
    missing = _sources(fresh) - _sources(TS)
    assert not missing, ("run: python resources/translations/update.py — untranslated: "
                         f"{sorted(missing)[:10]}")
    unfinished = [m.findtext("source") for m in ET.parse(TS).iter("message")
                  if (t := m.find("translation")) is not None
                  and (t.get("type") == "unfinished" or not (t.text or "").strip())]
    assert unfinished == []
    # The shipped .qm says what the .ts says: every message, loaded as the console loads it
    # (by content, whatever lrelease's version; a checkout's file times say nothing).
    from PySide6.QtCore import QTranslator

    qm = TS.with_suffix(".qm")
    translator = QTranslator()
    assert translator.load(str(qm)), qm
    checked, stale = 0, []
    for ctx in ET.parse(TS).iter("context"):
        for m in ctx.iter("message"):
            if m.get("numerus") == "yes":
                continue
            source, want = m.findtext("source") or "", m.findtext("translation") or ""
            checked += 1
            if translator.translate(ctx.findtext("name") or "", source,
                                    m.findtext("comment")) != want:
                stale.append(source)
    assert checked > 100
    assert stale == [], ("run: pyside6-lrelease resources/translations/shopfleet_zh_CN.ts "
                         f"-qm resources/translations/shopfleet_zh_CN.qm — stale: {stale[:5]}")


def test_words_translated_inside_composed_texts_are_extracted() -> None:
    # lupdate does not look inside f-strings: a tr("…") there must also be listed where it
    # sees it (desktop/names.py IN_TEXT), or the text stays English in Chinese.
    import ast

    known = _sources(TS)
    used = set()
    for f in (ROOT / "desktop").glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "tr" and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                used.add(node.args[0].value)
    assert sorted(used - known) == []
