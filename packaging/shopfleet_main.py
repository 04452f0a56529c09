"""The frozen app's entry point (PyInstaller runs this file, not ``core.cli``).

* no arguments: open the operator console (the first-run wizard comes first when there is no
  database yet);
* ``--self-test``: run the packaged self-test without a window (see ``core.cli.selftest``);
* anything else: the ``shopfleet`` command line (``shopfleet doctor``, ``shopfleet worker``...).

A frozen app has no installed package metadata, so the ``shopfleet.gui`` entry points the CLI
uses to find the window may not resolve; the window's commands are registered here instead.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Sequence


def _gui_entry(name: str) -> Callable[[list[str]], int] | None:
    """The window's entry points, looked up directly (no importlib.metadata in the bundle)."""
    try:
        if name == "console":
            from desktop.app import main as console

            return console
        if name == "demo":
            from desktop.demo import run_demo

            return run_demo
    except ImportError:  # a bundle built without the desktop extra: CLI only
        return None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch the frozen app's command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--self-test"]:
        from core.cli.selftest import main as self_test

        return self_test(args[1:])
    if not args:
        args = ["console"]
    import core.cli.console

    # core.cli finds the window through console.gui_entry; in the bundle, answer directly.
    core.cli.console.gui_entry = _gui_entry
    from core.cli import main as cli_main

    return int(cli_main(args) or 0)


if __name__ == "__main__":
    # pyqtgraph and friends may start helper processes: a frozen child must not rerun main().
    multiprocessing.freeze_support()
    sys.exit(main())
