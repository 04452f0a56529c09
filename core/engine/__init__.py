"""The engine: dispatcher, rate gates, circuit breakers, statistics (the layers are listed in
:mod:`.engine`)."""

from __future__ import annotations

from .breakers import Breakers, BreakerState, BreakerView, CircuitBreaker
from .control import Executor, NoopExecutor, Outcome, TaskControl
from .engine import Engine, Leftover
from .gates import GateLevel, RateGates, TokenBucket
from .statistics import EngineStatistics

__all__ = [
    "BreakerState",
    "BreakerView",
    "Breakers",
    "CircuitBreaker",
    "Engine",
    "EngineStatistics",
    "Executor",
    "GateLevel",
    "Leftover",
    "NoopExecutor",
    "Outcome",
    "RateGates",
    "TaskControl",
    "TokenBucket",
]
