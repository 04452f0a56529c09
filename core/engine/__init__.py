"""The engine: dispatcher, rate gates, circuit breakers, statistics."""

from __future__ import annotations

from .breakers import Breakers, BreakerState, BreakerView, CircuitBreaker
from .engine import Engine, EngineStatistics, Executor, NoopExecutor, Outcome, TaskControl
from .gates import GateLevel, RateGates, TokenBucket

__all__ = [
    "BreakerState",
    "BreakerView",
    "Breakers",
    "CircuitBreaker",
    "Engine",
    "EngineStatistics",
    "Executor",
    "GateLevel",
    "NoopExecutor",
    "Outcome",
    "RateGates",
    "TaskControl",
    "TokenBucket",
]
