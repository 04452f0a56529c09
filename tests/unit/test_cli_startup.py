"""Start-up of the command line (#20): a command imports only what it uses.

Operators script ``shopfleet``, and every call pays its imports. Each case runs the command in
a fresh interpreter and lists the modules it imported: ``--help`` and a bad argument import no
settings, store, engine, flows or browser; ``status``, ``tasks`` and ``shops`` on an SQLite
file open the store and read it, without Playwright, the flows' pydantic schemas, the engine,
asyncio, sqlite-utils, Redis, Prometheus or Qt. A test on modules, not on time: the times are
bench/startup.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import Settings
from core.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]

NEVER = ("playwright", "PySide6", "shiboken6", "qasync", "redis", "prometheus_client",
         "sqlite_utils", "numpy", "core.flows", "core.engine", "core.demosite", "core.demo",
         "core.validation", "core.browser", "core.worker", "core.takeover",
         "core.notify.delivery", "urllib.request", "asyncio", "cryptography")
"""No command that only reads (or only prints help) imports these."""

NOT_FOR_HELP = (*NEVER, "pydantic", "core.config", "core.specs", "core.store.sqlite",
                "core.build", "platformdirs", "tomllib")
"""``--help`` and a bad argument open no settings and no store either."""

_PROBE = """
import json, sys
from core.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --help
    code = exc.code
sys.stdout.flush()
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def imported(*argv: str) -> tuple[int, set[str]]:
    """Run ``shopfleet ARGV`` in a fresh interpreter: (exit code, modules it imported)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True,
                         text=True, env=env, cwd=str(ROOT), timeout=120, check=False)
    last = out.stdout.strip().splitlines()[-1]
    data = json.loads(last)
    return int(data["code"]), set(data["modules"])


def heavy(modules: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules
                  if any(m == b or m.startswith(b + ".") for b in banned))


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "startup.db"
    store = SqliteStore(path, settings=Settings())
    store.add_shop("pdd-1", platform="pdd", base_url="http://pdd.shopfleet.test/shop/pdd-1")
    store.close()
    return str(path)


@pytest.mark.parametrize("argv", [("--help",), ("status", "--help"), ("tasks", "--bogus")])
def test_help_and_bad_arguments_import_no_settings_and_no_store(argv: tuple[str, ...]
                                                               ) -> None:
    code, modules = imported(*argv)
    assert code in (0, 2)
    assert heavy(modules, NOT_FOR_HELP) == []
    assert "core.cli.parser" in modules  # the probe did build the parser


@pytest.mark.parametrize("command", ["status", "tasks", "shops"])
def test_reading_commands_import_only_the_store(db: str, command: str) -> None:
    code, modules = imported("--db", db, command)
    assert code == 0
    assert heavy(modules, NEVER) == []
    assert "core.store.sqlite.store" in modules  # it did read the store


@pytest.mark.parametrize("argv, group", [
    (("status",), "queue"), (("--db", "x.db", "tasks"), "queue"), (("shops",), "shops"),
    (("--config=c.toml", "tickets"), "tickets")])
def test_a_command_registers_only_its_own_group(argv: tuple[str, ...], group: str) -> None:
    """``shopfleet status`` imports the queue commands' module, not the other groups'."""
    from core.cli.parser import GROUPS

    _, modules = imported(*argv, "--help")
    loaded = {m for m, _ in GROUPS if f"core.cli.{m}" in modules}
    assert loaded == {group}


@pytest.mark.parametrize("argv", [("--help",), ("-h", "status"), ("no-such-command",),
                                  ("--db", "status")])
def test_help_an_unknown_command_or_none_registers_every_group(argv: tuple[str, ...]) -> None:
    from core.cli.parser import GROUPS, groups_for

    assert groups_for(argv) == [m for m, _ in GROUPS]


def test_the_group_list_says_what_each_module_adds() -> None:
    """GROUPS is written by hand; each module registered alone adds exactly its commands."""
    import argparse

    from core.cli.args import Parser, common_options
    from core.cli.parser import GROUPS, register_group

    for module, commands in GROUPS:
        parser = Parser(prog="t")
        sub = parser.add_subparsers(dest="command")
        if module == "shop_import":  # joins the shop group: needs it registered first
            register_group("shops", sub, common_options())
            before = set(sub.choices) - {"shop"}
        else:
            before = set()
        register_group(module, sub, common_options())
        assert set(sub.choices) - before == set(commands), module
        assert isinstance(sub, argparse._SubParsersAction)


def test_worker_still_finds_its_engine(db: str) -> None:
    """The lazy imports are where they run: a worker imports the engine when it starts."""
    code, modules = imported("--db", db, "worker", "--executor", "noop", "--until-idle",
                             "--quiet")
    assert code == 0
    assert "core.engine.engine" in modules


def test_demo_site_default_port_is_the_sites() -> None:
    from core.cli.demo import DEMO_SITE_PORT
    from core.demosite._cli import DEFAULT_PORT

    assert DEMO_SITE_PORT == DEFAULT_PORT
