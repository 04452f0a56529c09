"""The engine without a window (``shopfleet worker``, the headless demo): its run loop, its live
text summary and the no-op executions' log. The command itself is :mod:`core.cli.worker`.

SIGINT or SIGTERM stop it gracefully: running tasks reach a safe step, checkpoint, and go back
to the queue; a second signal aborts what is left (still released, with its checkpoint).
"""

from __future__ import annotations

import asyncio
import queue
import signal
import sys
import threading
from collections.abc import Callable
from typing import TextIO

from .engine import Engine, EngineStatistics, Leftover
from .engine.control import Execution
from .events import BreakerChanged, EngineProblem, Event, GateHeld, TaskStateChanged
from .store import ClaimedTask


def summary_line(s: EngineStatistics) -> str:
    open_breakers = [b.name for b in s.breakers if b.state.value != "closed"]
    rate = f"{s.success_rate * 100:.0f}%" if s.success_rate is not None else "-"
    parts = [
        f"running {s.running}/{s.slots}", f"queued {s.queued}",
        f"done/min {s.done_per_min}", f"failed/min {s.failed_per_min}", f"success {rate}",
        f"oldest {s.oldest_wait_s:.0f}s", f"browsers {s.browsers_alive}",
    ]
    if open_breakers:
        parts.append("breakers open: " + ", ".join(open_breakers))
    return " | ".join(parts)


def event_printer(out: TextIO) -> Callable[[Event], None]:
    """Print the events a person watching a worker cares about, one line each."""
    def show(ev: Event) -> None:
        if isinstance(ev, TaskStateChanged) and ev.state != "running":
            out.write(f"  task {ev.task_id:<6} {ev.shop:<10} {ev.state:<8} {ev.reason}\n")
        elif isinstance(ev, BreakerChanged):
            out.write(f"  breaker {ev.name}: {ev.state} ({ev.reason})\n")
        elif isinstance(ev, GateHeld):
            out.write(f"  gate {ev.domain}: held {ev.seconds:.0f}s (Retry-After)\n")
        elif isinstance(ev, EngineProblem):
            out.write(f"  PROBLEM in {ev.job}: {ev.error}\n")
        out.flush()
    return show


LEFT_WORK_EXIT = 3
"""``worker --until-idle`` stopped with work left (held back beyond its reach, tickets,
quarantine): it says what and why, and exits with this code."""


async def run_worker(engine: Engine, *, until_idle: bool, out: TextIO | None = None,
                     summary_every_s: float = 5.0, quiet: bool = False,
                     metrics: tuple[str, int] | None = None, metrics_token: str = "",
                     reach_s: float = 0.0) -> int:
    """Run until idle (or until a signal), printing a summary; returns an exit code.

    With ``until_idle``, work that is only held back (gates, breakers, back-off, not_before)
    is waited for when it becomes claimable within ``reach_s``; stopping with work left says
    what is left and why and returns :data:`LEFT_WORK_EXIT`."""
    out = out if out is not None else sys.stdout  # the stream now, not the one at import
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    signals = 0
    aborts: list[asyncio.Future[None]] = []

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            out.write("stopping: running tasks checkpoint at their next safe step …\n")
            stop_requested.set()
        else:
            out.write("aborting the rest (they are released with their checkpoints)\n")
            aborts.append(asyncio.ensure_future(engine.stop(grace_s=0)))
        out.flush()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):  # Windows, or not the main thread
            pass
    unsubscribe = engine.bus.subscribe(event_printer(out)) if not quiet else (lambda: None)

    async def summaries() -> None:
        while True:
            await asyncio.sleep(summary_every_s)
            out.write(summary_line(engine.statistics()) + "\n")
            out.flush()

    ticker = asyncio.create_task(summaries())
    server = None
    if metrics is not None:
        from .metrics_http import serve_metrics

        host, port = metrics
        server = await serve_metrics(engine.statistics, host=host, port=port,
                                     labels={"worker": engine.owner}, token=metrics_token)
        out.write(f"metrics: http://{host}:{port}/metrics\n")
    left: object = None
    try:
        async with engine:
            work: asyncio.Task[object] = asyncio.create_task(
                engine.run_until_idle(reach_s=reach_s) if until_idle else engine.run())
            stopper = asyncio.create_task(stop_requested.wait())
            await asyncio.wait([work, stopper], return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if not work.done():
                await engine.stop()
                await asyncio.wait([work])
            left = work.result()
    finally:
        ticker.cancel()
        unsubscribe()
        if server is not None:
            server.close()
        for sig in installed:
            loop.remove_signal_handler(sig)
    out.write(summary_line(engine.statistics()) + "\n")
    if until_idle and isinstance(left, Leftover) and not stop_requested.is_set() \
            and not left.empty:
        out.write("stopped with work left:\n")
        for line in left.reasons:
            out.write(f"  {line}\n")
        out.flush()
        return LEFT_WORK_EXIT
    return 0


class ExecLog:
    """Lines ``task_id domain granted_at owner shop started_at ended_at issued_at`` for each
    no-op execution (see :class:`~core.engine.control.Execution`; ``issued_at`` is ``-`` with
    local gates), written by a thread (never on the loop) with a flush per batch: what a fleet
    test counts."""

    def __init__(self, path: str, owner: str) -> None:
        self._q: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._owner = owner
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._thread = threading.Thread(target=self._drain, name="exec-log", daemon=True)
        self._thread.start()

    def __call__(self, task: ClaimedTask, ex: Execution) -> None:
        issued = "-" if ex.issued_at is None else f"{ex.issued_at:.6f}"
        self._q.put(f"{task.id} {task.domain} {ex.granted_at:.6f} {self._owner} {task.shop} "
                    f"{ex.started_at:.6f} {ex.ended_at:.6f} {issued}\n")

    def _drain(self) -> None:
        while True:
            line = self._q.get()
            lines = []
            while line is not None:
                lines.append(line)
                try:
                    line = self._q.get_nowait()
                except queue.Empty:
                    break
            if lines:
                self._file.write("".join(lines))
                self._file.flush()
            if line is None:
                self._file.close()
                return

    def close(self) -> None:
        self._q.put(None)
        self._thread.join(10)
