"""Start-up: the command line's common commands, a worker's first task, the console's first
paint — each a whole new process, beside ``python -c pass``.

Operators script ``shopfleet``; every call pays its start. Measured in one run
(``emit_machine`` first):

1. ``cli_start_s`` — process start to exit of ``shopfleet --help``, ``status``, ``tasks`` and
   ``shops`` on an SQLite file made for the run (a few shops and tasks), and of the peer
   ``python -c pass`` (the interpreter alone). The console script next to this Python (the
   one operators run; ``python -m core.cli`` when there is none), with this tree first on
   ``PYTHONPATH``. Interleaved: each repetition runs every subject once, in a rotated order.
   Bytecode is cached as after an install (one warm-up run each; ``PYTHONDONTWRITEBYTECODE``
   is dropped from the children's environment). ``cpu_s`` in the params is the child's user
   + system CPU time, which a loaded machine does not inflate the way it does wall time.
2. ``worker_first_task_s`` — process start of ``shopfleet worker --until-idle --executor
   noop`` to its line saying the first task is done, on an SQLite file (FULL) and on a
   loopback ``redis-server`` (append-only file, ``appendfsync always``: durable, like FULL),
   one shop and one queued task each time (set up before the clock starts), interleaved.
3. ``console_first_paint_s`` — process start of the console (offscreen Qt, the no-op
   executor, an SQLite file with 200 queued tasks) to the first paint of a table of its
   main window that has rows (an application-wide event filter notes it; the child prints
   the time and exits).

Targets (the issue's, fixed): ``--help`` < 0.2 s and ``status`` < 0.3 s, whole process,
median. ``--quick``: 3 repetitions, figures indicative (no met/unmet).

Run: ``python bench/startup.py [--quick]``; JSON Lines on stdout, progress on stderr.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import (
    REPEATS,
    arg_parser,
    emit,
    emit_machine,
    emit_summary,
    note,
    percentiles,
    temp_dir,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BENCH = "startup"
TARGETS = {"--help": 0.2, "status": 0.3}
"""Whole-process seconds, median (issue #20)."""
QUICK_REPEATS = 3
CONSOLE_TASKS = 200

TASK_LINE = ('{"type": "collect_data", "shop": "s0", "steps": '
             '[{"action": "navigate", "url": "https://s0.example/x"}]}\n')


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["SHOPFLEET_KEYCHAIN"] = "0"
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return env


def shopfleet() -> list[str]:
    script = Path(sys.executable).parent / "shopfleet"
    return [str(script)] if script.exists() else [sys.executable, "-m", "core.cli"]


def timed(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one whole process, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=env, cwd=str(ROOT), check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0,):
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: "
                           f"{proc.stderr.decode(errors='replace')[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def make_db(path: Path, env: dict[str, str], *, shops: int = 4, tasks: int = 5,
            store: str | None = None) -> list[str]:
    """Shops and queued tasks through the command line; returns the store option."""
    where = ["--store", store] if store else ["--db", str(path)]
    for i in range(shops):
        subprocess.run([*shopfleet(), *where, "shop", "add", f"s{i}", "--platform", "pdd",
                        "--base-url", f"https://s{i}.example/"], env=env, check=True,
                       stdout=subprocess.DEVNULL, cwd=str(ROOT))
    if tasks:
        f = path.with_suffix(".jsonl")
        f.write_text(TASK_LINE * tasks, encoding="utf-8")
        subprocess.run([*shopfleet(), *where, "submit", str(f)], env=env, check=True,
                       stdout=subprocess.DEVNULL, cwd=str(ROOT))
    return where


# -- 1. command-line start ----------------------------------------------------------------------


def cli_start(root: Path, repeats: int, quick: bool) -> None:
    env = child_env()
    db = root / "cli.db"
    where = make_db(db, env)
    subjects: dict[str, list[str]] = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--help": [*shopfleet(), "--help"],
        "status": [*shopfleet(), *where, "status"],
        "tasks": [*shopfleet(), *where, "tasks"],
        "shops": [*shopfleet(), *where, "shops"],
    }
    for argv in subjects.values():  # warm-up: bytecode written, files in the page cache
        timed(argv, env)
    walls: dict[str, list[float]] = {k: [] for k in subjects}
    cpus: dict[str, list[float]] = {k: [] for k in subjects}
    names = list(subjects)
    for rep in range(repeats):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            wall, cpu = timed(subjects[name], env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    peer = percentiles(walls["python -c pass"], [50])[0]
    for name in names:
        subject = "python" if name == "python -c pass" else "shopfleet"
        med = percentiles(walls[name], [50])[0]
        cpu = percentiles(cpus[name], [50])[0]
        note(f"{name}: median {med * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU")
        params: dict[str, Any] = {
            "command": name, "cpu_s": round(cpu, 4), "vs_python_pass": round(med / peer, 2),
            "store": "sqlite (a few shops and tasks)" if name in ("status", "tasks", "shops")
            else None, "bytecode": "cached"}
        if name in TARGETS:
            params["target"] = f"< {TARGETS[name]} s"
            if not quick:
                params["met"] = med < TARGETS[name]
        emit_summary(BENCH, subject, "cli_start_s", walls[name], "s", quick=quick,
                     **{k: v for k, v in params.items() if v is not None})


# -- 2. a worker's first task -------------------------------------------------------------------


def first_task(argv: Sequence[str], env: dict[str, str]) -> float:
    """Seconds from starting the worker to its line saying a task is done."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=str(ROOT), text=True)
    assert proc.stdout is not None
    took = None
    for line in proc.stdout:
        if " done " in line and line.lstrip().startswith("task "):
            took = time.perf_counter() - t0
            break
    proc.stdout.read()
    code = proc.wait(timeout=120)
    if took is None or code != 0:
        err = proc.stderr.read() if proc.stderr else ""
        raise RuntimeError(f"worker: no task done (exit {code}): {err[-500:]}")
    return took


def worker_start(root: Path, repeats: int, quick: bool) -> None:
    from core.testing.redis_server import RedisServer

    env = child_env()
    redis = RedisServer(durable=True)
    redis.start()
    try:
        times: dict[str, list[float]] = {"sqlite": [], "redis": []}
        order = list(times)
        for rep in range(repeats):
            for kind in order[rep % 2:] + order[:rep % 2]:
                if kind == "sqlite":
                    where = make_db(root / f"w{rep}.db", env, shops=1, tasks=1)
                else:
                    url = f"redis://127.0.0.1:{redis.port}/{rep % 16}"
                    subprocess.run(["redis-cli", "-p", str(redis.port), "-n",
                                    str(rep % 16), "FLUSHDB"], check=True,
                                   stdout=subprocess.DEVNULL)
                    where = make_db(root / f"r{rep}.db", env, shops=1, tasks=1, store=url)
                took = first_task([*shopfleet(), *where, "worker", "--until-idle",
                                   "--executor", "noop", "--max-wait", "0"], env)
                times[kind].append(took)
                note(f"worker on {kind} #{rep + 1}: first task done after {took:.2f}s")
    finally:
        redis.stop()
    for kind, values in times.items():
        emit_summary(BENCH, "shopfleet", "worker_first_task_s", values, "s", quick=quick,
                     store=kind, executor="noop", durable="synchronous=FULL" if kind ==
                     "sqlite" else "appendfsync always",
                     note="process start to the worker's line saying the task is done")


# -- 3. the console's first paint ---------------------------------------------------------------

_CONSOLE_CHILD = r"""
import os, sys, time
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QAbstractItemView, QApplication

class FirstPaint(QObject):
    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.Type.Paint:
            view = obj.parent()
            if isinstance(view, QAbstractItemView) and obj is view.viewport():
                model = view.model()
                if model is not None and model.rowCount() > 0 and view.isVisible():
                    print(f"PAINT {time.time():.6f}", flush=True)
                    os._exit(0)
        return False

import desktop.launch as launch
real = launch.make_app
def make_app(*a, **kw):
    app = real(*a, **kw)
    app._first_paint = FirstPaint(app)
    app.installEventFilter(app._first_paint)
    return app
launch.make_app = make_app
import desktop.app
desktop.app.make_app = make_app
sys.exit(desktop.app.main(sys.argv[1:]))
"""


def console_start(root: Path, repeats: int, quick: bool) -> None:
    env = child_env()
    values: list[float] = []
    for rep in range(repeats):
        db = root / f"console{rep}.db"
        make_db(db, env, shops=12, tasks=0)
        f = db.with_suffix(".jsonl")
        f.write_text("".join(TASK_LINE.replace('"s0"', f'"s{i % 12}"').replace(
            "s0.example", f"s{i % 12}.example") for i in range(CONSOLE_TASKS)),
            encoding="utf-8")
        subprocess.run([*shopfleet(), "--db", str(db), "submit", str(f)], env=env,
                       check=True, stdout=subprocess.DEVNULL, cwd=str(ROOT))
        t0 = time.time()
        proc = subprocess.run([sys.executable, "-c", _CONSOLE_CHILD, "--db", str(db),
                               "--executor", "noop", "--lang", "en"], env=env,
                              cwd=str(ROOT), capture_output=True, text=True, timeout=300,
                              check=False)
        stamp = next((float(line.split()[1]) for line in proc.stdout.splitlines()
                      if line.startswith("PAINT ")), None)
        if stamp is None:
            raise RuntimeError(f"console: no paint with rows (exit {proc.returncode}): "
                               f"{proc.stderr[-800:]}")
        values.append(stamp - t0)
        note(f"console #{rep + 1}: first paint with rows after {stamp - t0:.2f}s")
    emit_summary(BENCH, "shopfleet", "console_first_paint_s", values, "s", quick=quick,
                 qpa=env.get("QT_QPA_PLATFORM"), executor="noop", queued=CONSOLE_TASKS,
                 note="process start to the first paint of a main-window table with rows")


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "start-up benchmark")
    parser.add_argument("--only", choices=("cli", "worker", "console"), default=None,
                        help="run one part only")
    args = parser.parse_args()
    repeats = QUICK_REPEATS if args.quick else REPEATS
    emit_machine(BENCH, args.dir)
    with temp_dir("shopfleet-bench-startup-", args.dir) as root:
        if args.only in (None, "cli"):
            cli_start(root, repeats, args.quick)
        if args.only in (None, "worker"):
            worker_start(root, repeats, args.quick)
        if args.only in (None, "console"):
            console_start(root, repeats, args.quick)
    emit(BENCH, "machine", "load1_end", os.getloadavg()[0], "1",
         note=json.dumps({"load5": round(os.getloadavg()[1], 2)}))


if __name__ == "__main__":
    main()
