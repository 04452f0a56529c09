"""Checks a built one-folder app: the Playwright driver is in, no browser, no test tools.

    python packaging/check_bundle.py dist/shopfleet

Exits 1 and lists the offending paths otherwise. Used by the build scripts and the tests.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FORBIDDEN = ("pytest", "_pytest", "pytestqt", "hypothesis", "mypy", "mypyc", "ruff",
             "PyInstaller", "crawlee")
"""Top-level package names that must not appear anywhere in the bundle."""

# Folders of a downloaded browser (Playwright's chromium-1255/, chrome-linux64/...), not the
# driver's own lib/server/chromium/ sources.
_BROWSER_DIR = re.compile(
    r"(chromium|chromium_headless_shell|chromium-headless-shell|firefox|webkit)-\d+|"
    r"chrome-(linux|linux64|linux-arm64|win|win64|mac|mac-arm64|mac-x64)")


def _internal(bundle: Path) -> Path:
    for cand in (bundle / "_internal", bundle / "Contents" / "Frameworks", bundle):
        if cand.is_dir():
            return cand
    return bundle


def problems(bundle: Path) -> list[str]:
    """Everything wrong with the bundle, in plain words (empty: fine)."""
    out: list[str] = []
    if not bundle.is_dir():
        return [f"{bundle} does not exist"]
    inside = _internal(bundle)
    for path in inside.rglob("*"):
        name = path.name.lower()
        stem = name.split(".")[0].split("-")[0]
        if stem in {f.lower() for f in FORBIDDEN}:
            out.append(f"test/dev package in the bundle: {path.relative_to(bundle)}")
        if path.is_dir() and (name == ".local-browsers" or _BROWSER_DIR.fullmatch(name)):
            out.append(f"a browser in the bundle: {path.relative_to(bundle)}")
    # The archive of pure-Python modules: look inside it too.
    try:
        from PyInstaller.archive.readers import CArchiveReader, ZlibArchiveReader
    except ImportError:  # checking without PyInstaller installed: the folders are enough
        CArchiveReader = ZlibArchiveReader = None  # type: ignore[assignment,misc]
    if ZlibArchiveReader is not None:
        for exe in [p for p in bundle.iterdir() if p.is_file() and p.name.startswith("shopfleet")]:
            try:
                pkg = CArchiveReader(str(exe))
                pyz_names = [n for n in pkg.toc if n.endswith(".pyz") or n == "PYZ-00.pyz"]
            except Exception:
                continue
            for pyz_name in pyz_names:
                try:
                    pyz = pkg.open_embedded_archive(pyz_name)
                except Exception:
                    continue
                for mod in pyz.toc:
                    if mod.split(".")[0] in FORBIDDEN:
                        out.append(f"test/dev module in the archive: {mod}")
    pyz_files = list(inside.rglob("*.pyz"))
    if ZlibArchiveReader is not None:
        for pyz_file in pyz_files:
            try:
                reader = ZlibArchiveReader(str(pyz_file))
            except Exception:
                continue
            for mod in reader.toc:
                if mod.split(".")[0] in FORBIDDEN:
                    out.append(f"test/dev module in {pyz_file.name}: {mod}")
    driver = list(inside.rglob("playwright/driver/package/cli.js"))
    if not driver:
        out.append("the Playwright driver (playwright/driver/package/cli.js) is missing")
    nodes = [p for p in inside.rglob("playwright/driver/node*") if p.is_file()]
    if not nodes:
        out.append("the Playwright driver's node executable is missing")
    if not (inside / "resources" / "flows").is_dir():
        out.append("resources/flows is missing")
    return sorted(set(out))


def main(argv: list[str]) -> int:
    bundle = Path(argv[0] if argv else "dist/shopfleet")
    found = problems(bundle)
    for p in found:
        print(p, file=sys.stderr)
    if found:
        print(f"{bundle}: {len(found)} problem(s)", file=sys.stderr)
        return 1
    print(f"{bundle}: driver present, no browser, no test packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
