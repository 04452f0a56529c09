"""Prints a fingerprint of everything that goes into the bundle (used to skip a rebuild).

The spec, the entry script, the sources (core/, desktop/), resources/, pyproject.toml and the
installed distributions with their versions: change any of them and the build runs again.
"""

from __future__ import annotations

import hashlib
import sys
from importlib.metadata import distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ["packaging/shopfleet.spec", "packaging/shopfleet_main.py", "pyproject.toml",
          "core", "desktop", "resources"]


def fingerprint(root: Path = ROOT) -> str:
    """A hex digest over the bundle's inputs."""
    h = hashlib.sha256()
    h.update(sys.version.encode())
    for name in INPUTS:
        path = root / name
        files = [path] if path.is_file() else sorted(
            p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for f in files:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions())
    h.update("\n".join(dists).encode())
    return h.hexdigest()


if __name__ == "__main__":
    print(fingerprint())
