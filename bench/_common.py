"""Shared helpers for the benchmarks: one JSON Lines shape, RSS, percentiles, a ``--quick`` flag.

Every benchmark prints one measurement a line::

    {"bench": "queue_ops", "subject": "shopfleet", "metric": "claim_ack_per_s",
     "value": 5123.4, "unit": "1/s", "params": {"mode": "FULL", "n": 20000}}

Progress and notes go to stderr, so stdout stays machine-readable. This module is imported by
the benchmarks (``from _common import emit``); running it alone does nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil

from core.demosite import DemoShop, DemoSite

_PROCESS = psutil.Process(os.getpid())


def emit(bench: str, subject: str, metric: str, value: float, unit: str,
         **params: Any) -> dict[str, Any]:
    """Print one measurement as a JSON line on stdout (flushed) and return it."""
    line = {"bench": bench, "subject": subject, "metric": metric,
            "value": round(float(value), 4), "unit": unit, "params": params}
    print(json.dumps(line, ensure_ascii=False), flush=True)
    return line


def note(message: str) -> None:
    """A progress line on stderr (never mixed into the JSON on stdout)."""
    print(f"# {message}", file=sys.stderr, flush=True)


def rss_mb() -> float:
    """Resident set size of this process now, in MiB."""
    return float(_PROCESS.memory_info().rss) / (1024 * 1024)


def percentiles(values: Sequence[float], ps: Sequence[float]) -> list[float]:
    """Percentiles of ``values`` by linear interpolation (numpy's default), one per ``ps``."""
    if not values:
        raise ValueError("percentiles of an empty sequence")
    data = sorted(values)
    out = []
    for p in ps:
        if not 0 <= p <= 100:
            raise ValueError(f"percentile {p} is outside 0..100")
        pos = (len(data) - 1) * p / 100.0
        lo, hi = math.floor(pos), math.ceil(pos)
        out.append(data[lo] + (data[hi] - data[lo]) * (pos - lo))
    return out


def arg_parser(description: str) -> argparse.ArgumentParser:
    """The benchmarks' common command line: ``--quick`` (under a minute) and ``--dir``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes that finish in under a minute")
    parser.add_argument("--dir", default=None,
                        help="parent folder for the temporary databases (default: the system "
                             "temp folder); every subject gets a fresh file in it")
    return parser


@contextlib.contextmanager
def temp_dir(prefix: str, parent: str | None = None) -> Iterator[Path]:
    """A fresh folder for one benchmark run, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.s`` is the elapsed wall time in seconds."""

    def __init__(self) -> None:
        self.s = 0.0
        self._t0 = 0.0

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.s = time.perf_counter() - self._t0


class SiteProcess:
    """``python -m core.demosite --port 0`` in a child process (its own CPU, like a real
    site); ``port`` once it serves, ``site`` knows its shops, URLs and demo logins."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "core.demosite", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            cwd=str(Path(__file__).resolve().parent.parent))
        assert self.proc.stdout is not None
        port = None
        for line in self.proc.stdout:
            m = re.search(r"127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            self.close()
            raise RuntimeError("the demo site did not start")
        self.port = port
        # An unstarted DemoSite on that port knows the shops, URLs and demo logins.
        self.site = DemoSite(port=port)

    def shops(self) -> list[DemoShop]:
        return self.site.shops()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- statistics and the machine's state (#20: figures a skeptic accepts) -------------------------

REPEATS = 5
"""Interleaved repetitions for every figure that has a target (``--quick``: fewer, indicative)."""


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, min and max of repeated measurements (``n`` is how many)."""
    if not values:
        raise ValueError("summary of an empty sequence")
    med = percentiles(values, [50])[0]
    return {"median": round(med, 4), "min": round(min(values), 4),
            "max": round(max(values), 4), "n": len(values)}


def emit_summary(bench: str, subject: str, metric: str, values: Sequence[float], unit: str,
                 *, quick: bool, **params: Any) -> dict[str, Any]:
    """One line for repeated measurements: ``value`` is the median; min, max and n in params.
    ``--quick`` figures are marked indicative (never met/unmet)."""
    s = summary(values)
    return emit(bench, subject, metric, s["median"], unit, min=s["min"], max=s["max"],
                n=s["n"], indicative=quick, **params)


def fsync_ms(folder: str | None = None, rounds: int = 20) -> float:
    """Median time of one small write + fsync in ``folder`` (the disk-sync calibration)."""
    times = []
    fd, path = tempfile.mkstemp(prefix="fsync-", dir=folder)
    try:
        for _ in range(rounds):
            os.write(fd, b"x" * 4096)
            t0 = time.perf_counter()
            os.fsync(fd)
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    return round(percentiles(times, [50])[0], 3)


def machine_params(folder: str | None = None) -> dict[str, Any]:
    """The machine's state when a run starts: CPUs, load averages, fsync time, Python."""
    load1, load5, _ = os.getloadavg()
    return {"cpus": os.cpu_count(), "load1": round(load1, 2), "load5": round(load5, 2),
            "fsync_ms": fsync_ms(folder), "python": sys.version.split()[0]}


def emit_machine(bench: str, folder: str | None = None) -> dict[str, Any]:
    """Print the machine line every benchmark run starts (and may end) with."""
    return emit(bench, "machine", "load1", os.getloadavg()[0], "1", **machine_params(folder))
