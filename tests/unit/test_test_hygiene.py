"""A lint over tests/: no test may skip itself when a project dependency is missing, and none
may compare a wall-clock duration against a number.

* ``pytest.importorskip`` of something ``make setup`` installs (pyproject's dependencies and
  its ``desktop``, ``dev`` and ``redis`` extras) turns a broken install into a green run with
  tests skipped: import it plainly, so a missing dependency fails.
* A wall-clock threshold (``assert time.monotonic() - t0 < 10``, ``assert elapsed < 4``) passes
  on an idle machine and fails on a busy one, or passes without proving anything: check an
  order, wait for an event, or drive the fake clock (core/clock.py, core/testing.py).

Each finding names the file, the line and the rule. ``ALLOWED`` lists the exceptions, each with
its reason; keep it short.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
EXTRAS_INSTALLED = ("desktop", "dev", "redis")
"""The extras ``make setup`` installs (``bench`` is installed only by ``make bench``)."""

CLOCK_CALLS = {"time", "monotonic", "perf_counter", "monotonic_ns", "perf_counter_ns",
               "time_ns"}
DURATION_NAME = re.compile(r"(^|_)(elapsed|took|duration|spent|waited|dt)($|_)|_s$|^t_?\d*$")
"""Names a duration is kept in. ``_s$`` / ``t0``-like names count only when the value came
from a clock difference (see ``_durations``), the others always."""
ALWAYS_DURATION = re.compile(r"(^|_)(elapsed|took|duration|spent)($|_)")

ALLOWED: dict[tuple[str, int | str], str] = {
    ("integration/test_demo_site.py", "test_slow_delays_every_page"):
        "a lower bound (the slow fault delays a page by at least delay_ms): a busy machine "
        "only makes it truer, and no event can stand in for a delay the site must add",
}
"""(path relative to tests/, line or function name) → why this one is fine."""


def _requirement_name(req: str) -> str:
    return re.split(r"[\s<>=!~\[;(]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def project_dependencies() -> set[str]:
    """Distribution names ``make setup`` installs, normalised."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    reqs = list(project.get("dependencies", []))
    for extra in EXTRAS_INSTALLED:
        reqs += project.get("optional-dependencies", {}).get(extra, [])
    return {_requirement_name(r) for r in reqs}


def _distributions_of(module: str) -> set[str]:
    top = module.split(".")[0]
    names = importlib.metadata.packages_distributions().get(top, [])
    out = {n.lower().replace("_", "-") for n in names}
    out.add(top.lower().replace("_", "-"))   # e.g. "redis" → redis, "qasync" → qasync
    return out


def _test_files() -> Iterator[Path]:
    yield from sorted(TESTS.rglob("*.py"))


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr in CLOCK_CALLS:
        # time.time(), loop.time(), but not some_record.time()
        return f.attr != "time" or (isinstance(f.value, ast.Name)
                                    and f.value.id in ("time", "loop"))
    return isinstance(f, ast.Name) and f.id in CLOCK_CALLS - {"time"}


def _clock_difference(node: ast.AST, durations: set[str]) -> bool:
    """A subtraction with a clock call (or a known duration) in it."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and any(
                _is_clock_call(x) for x in ast.walk(sub)):
            return True
        if isinstance(sub, ast.Name) and sub.id in durations:
            return True
    return False


def _number(node: ast.AST) -> bool:
    """A literal number, or arithmetic on literals and UPPER_CASE constants."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _number(node.operand)
    if isinstance(node, ast.BinOp):
        return _number(node.left) and _number(node.right)
    return isinstance(node, ast.Name) and node.id.isupper()


def _durations(fn: ast.AST) -> set[str]:
    """Names assigned a clock difference in this function (``dt = time.time() - t0``)."""
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _clock_difference(node.value, out):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(
                node.target, ast.Name) and _clock_difference(node.value, out):
            out.add(node.target.id)
    return out


def _is_duration(node: ast.AST, durations: set[str]) -> bool:
    if _clock_difference(node, durations):
        return True
    for sub in ast.walk(node):
        name = sub.id if isinstance(sub, ast.Name) else (
            sub.attr if isinstance(sub, ast.Attribute) else None)
        if name is not None and ALWAYS_DURATION.search(name):
            return True
    return False


def wall_clock_thresholds(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, function) of each assert comparing a wall-clock duration with a number."""
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    seen: set[int] = set()
    for fn in funcs:
        durations = _durations(fn)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Assert) or node.lineno in seen:
                continue
            for cmp in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
                if not any(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE)
                           for op in cmp.ops):
                    continue
                sides = [cmp.left, *cmp.comparators]
                if any(_is_duration(s, durations) for s in sides) and any(
                        _number(s) for s in sides):
                    seen.add(node.lineno)
                    yield node.lineno, fn.name
                    break


def importorskips(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) of each ``pytest.importorskip("module")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "importorskip")
                or (isinstance(node.func, ast.Name) and node.func.id == "importorskip")):
            arg = node.args[0] if node.args else None
            name = arg.value if isinstance(arg, ast.Constant) and isinstance(
                arg.value, str) else "?"
            yield node.lineno, name


def _allowed(rel: str, line: int, func: str) -> bool:
    return (rel, line) in ALLOWED or (rel, func) in ALLOWED


def test_no_importorskip_of_a_project_dependency() -> None:
    deps = project_dependencies()
    assert {"pyside6-essentials", "redis", "qasync", "playwright"} <= deps  # read right
    found = []
    for path in _test_files():
        rel = str(path.relative_to(TESTS))
        for line, module in importorskips(ast.parse(path.read_text(encoding="utf-8"))):
            if (module == "?" or _distributions_of(module) & deps
                    or module.split(".")[0] in {"PySide6", "shiboken6"}) and not _allowed(
                    rel, line, module):
                found.append(f"tests/{rel}:{line}: importorskip({module!r}) of a project "
                             "dependency: import it (a missing one must fail)")
    assert not found, "\n".join(found)


def test_no_wall_clock_thresholds() -> None:
    found = []
    for path in _test_files():
        rel = str(path.relative_to(TESTS))
        for line, func in wall_clock_thresholds(ast.parse(path.read_text(encoding="utf-8"))):
            if not _allowed(rel, line, func):
                found.append(f"tests/{rel}:{line} ({func}): an assert compares a wall-clock "
                             "duration with a number: check an order, wait for an event or "
                             "use the fake clock")
    assert not found, "\n".join(found)


def test_the_lint_catches_what_it_is_for() -> None:
    """The rules themselves, on small samples (so a lint that finds nothing still works)."""
    bad = ast.parse(
        "import pytest, time\n"
        "qt = pytest.importorskip('PySide6')\n"
        "def test_a():\n"
        "    t0 = time.monotonic()\n"
        "    assert time.monotonic() - t0 < 10\n"
        "def test_b():\n"
        "    elapsed = run()\n"
        "    assert elapsed <= 4.0\n"
        "def test_c():\n"
        "    dt = time.perf_counter() - start\n"
        "    assert 0.5 < dt\n"
        "def test_d():\n"
        "    held_at = time.time()\n"
        "    assert time.time() - held_at < 4\n")
    assert [line for line, _ in wall_clock_thresholds(bad)] == [5, 8, 11, 14]
    assert list(importorskips(bad)) == [(2, "PySide6")]
    assert _distributions_of("PySide6") & project_dependencies()
    good = ast.parse(
        "import time\n"
        "def test_ok():\n"
        "    end = time.monotonic() + 30\n"
        "    while not done():\n"
        "        assert time.monotonic() < end, 'condition not reached'\n"
        "    assert first_at < second_at\n"
        "    assert len(stamps) > 10\n")
    assert list(wall_clock_thresholds(good)) == []
