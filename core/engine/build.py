"""Assemble the parts from settings: a store with the submission checks, an executor, an
engine. Used by the worker, the demo, the desktop and the benchmarks alike."""

from __future__ import annotations

from pathlib import Path

from ..clock import SYSTEM_CLOCK, Clock
from ..config import Settings
from ..events import EventBus
from ..paths import default_db_path
from ..store import SqliteStore
from ..validation import submission_validator
from .engine import Engine, Executor, NoopExecutor


def open_store(settings: Settings, db: str | Path | None = None, *,
               clock: Clock = SYSTEM_CLOCK, validate: bool = True) -> SqliteStore:
    """The store at ``db`` (or the configured / default path), checking flows on submit."""
    path = Path(db) if db else (Path(settings.store.path) if settings.store.path
                                else default_db_path())
    return SqliteStore(path, settings=settings, clock=clock,
                       validator=submission_validator(settings) if validate else None)


def build_engine(settings: Settings, store: SqliteStore, *,
                 executor: Executor | str = "browser", clock: Clock = SYSTEM_CLOCK,
                 bus: EventBus | None = None, slots: int | None = None,
                 home: Path | None = None) -> Engine:
    """An engine over ``store``; ``executor`` is an executor or ``"browser"`` / ``"noop"``."""
    if executor == "browser":
        from .browser_executor import BrowserExecutor

        ex: Executor = BrowserExecutor(settings, store, home=home)
    elif executor == "noop":
        ex = NoopExecutor(clock=clock)
    elif isinstance(executor, str):
        raise ValueError(f"unknown executor {executor!r}")
    else:
        ex = executor
    return Engine(store, settings, executor=ex, clock=clock, bus=bus, slots=slots)
