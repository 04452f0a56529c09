"""Refresh the console's translations: extract strings, fill zh_CN, compile the .qm.

Run from the project folder: ``python resources/translations/update.py``. It runs
``pyside6-lupdate`` over desktop/, writes the Chinese texts of ``zh_CN.py`` into the .ts (a
translator may edit the .ts in Qt Linguist instead; texts there win over the table), and
compiles ``shopfleet_zh_CN.qm`` with ``pyside6-lrelease``. Exits non-zero if a string has no
translation.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TS = HERE / "shopfleet_zh_CN.ts"
QM = HERE / "shopfleet_zh_CN.qm"


def tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else name


def main() -> int:
    sys.path.insert(0, str(HERE))
    from zh_CN import ZH_CN

    sources = sorted(str(p) for p in (ROOT / "desktop").glob("*.py"))
    subprocess.run([tool("pyside6-lupdate"), *sources, "-ts", str(TS), "-target-language",
                    "zh_CN", "-no-obsolete", "-locations", "none"], check=True)
    tree = ET.parse(TS)
    missing = []
    for msg in tree.iter("message"):
        # desktop.i18n.tr(text, *args) fills %1, %2… itself; lupdate reads the 2nd and 3rd
        # arguments as Qt's disambiguation and plural count. We use neither: drop them, so
        # the runtime lookup (context "", no disambiguation) finds the message.
        for c in msg.findall("comment"):
            msg.remove(c)
        msg.attrib.pop("numerus", None)
        for t in msg.findall("translation"):
            for nf in t.findall("numerusform"):
                t.remove(nf)
        src = msg.findtext("source") or ""
        tr = msg.find("translation")
        assert tr is not None
        if tr.text and tr.get("type") != "unfinished":
            continue
        text = ZH_CN.get(src)
        if text is None:
            missing.append(src)
            continue
        tr.text = text
        tr.attrib.pop("type", None)
    tree.write(TS, encoding="utf-8", xml_declaration=True)
    subprocess.run([tool("pyside6-lrelease"), str(TS), "-qm", str(QM)], check=True)
    for m in missing:
        print(f"untranslated: {m!r}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
