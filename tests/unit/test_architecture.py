"""The import rules of core/ and desktop/, checked on an ``ast`` import graph.

Every import counts: at module level, inside ``if TYPE_CHECKING:`` and inside functions (a
function-level import is still a dependency; hiding a circle in a function does not break it).
A package's ``__init__`` is a module of its own; importing ``a.b`` does not count as importing
``a``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "desktop")

# Circles that the restructuring's second part breaks (the files move then). An entry may only
# be removed: a new circle fails, and so does an entry whose circle is gone (delete it).
ALLOWED_CIRCLES: dict[frozenset[str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``module`` imports, anywhere in its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # ``from pkg import sub`` imports the submodule when there is one.
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod
                       for a in node.names]
        else:
            continue
        for t in targets:
            r = _resolve(t, known)
            if r is not None and r != module:
                out.add(r)
    return out


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports_of(m, p, known) for m, p in known.items()}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles_but_the_allowed_ones() -> None:
    found = circles(import_graph())
    new = [sorted(c) for c in found if not any(c <= allowed for allowed in ALLOWED_CIRCLES)]
    assert new == [], f"new import circles: {new}"


def test_the_allowed_circles_only_shrink() -> None:
    found = circles(import_graph())
    stale = [sorted(a) for a in ALLOWED_CIRCLES if not any(c <= a for c in found)]
    assert stale == [], f"these circles are gone: delete them from ALLOWED_CIRCLES: {stale}"


def test_store_imports_neither_engine_queries_nor_cli() -> None:
    graph = import_graph()
    banned = ("core.engine", "core.queries", "core.cli", "core.build", "core.worker", "core.demo",
              "desktop")
    bad = [f"{m} imports {t}" for m, ts in sorted(graph.items())
           if m == "core.store" or m.startswith("core.store.")
           for t in sorted(ts) if t.startswith(banned)]
    assert bad == []


def test_only_the_entry_point_imports_the_command_line() -> None:
    graph = import_graph()
    # The command line's own modules import each other; nothing else in core or desktop does.
    bad = [f"{m} imports {t}" for m, ts in sorted(graph.items())
           if m != "core.cli" and not m.startswith("core.cli.")
           for t in sorted(ts) if t == "core.cli" or t.startswith("core.cli.")]
    assert bad == []


def test_desktop_imports_core_only_through_the_facade() -> None:
    graph = import_graph()
    bad = [f"{m} imports {t}" for m, ts in sorted(graph.items()) if m.startswith("desktop")
           for t in sorted(ts) if t.startswith("core.")]
    assert bad == []


# -- the checker checks ------------------------------------------------------------------------


def test_circles_finds_a_function_level_circle(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from . import b\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from .a import x\n")
    (tmp_path / "pkg" / "c.py").write_text("from typing import TYPE_CHECKING\n"
                                           "if TYPE_CHECKING:\n    from pkg.a import y\n")
    known = {"pkg": tmp_path / "pkg" / "__init__.py",
             **{f"pkg.{n}": tmp_path / "pkg" / f"{n}.py" for n in "abc"}}
    graph = {m: imports_of(m, p, known) for m, p in known.items()}
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.a"}
    assert circles(graph) == [frozenset({"pkg.a", "pkg.b"})]
