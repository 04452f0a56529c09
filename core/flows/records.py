"""What a run of a flow takes and gives back: the shop, checkpoints, step events, results."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import SpecError
from ..origins import OriginPolicy


@dataclass(frozen=True)
class ShopInfo:
    """What a flow may know about its shop. The password never appears in ``repr``."""

    name: str
    platform: str
    base_url: str
    username: str = ""
    password: str = field(default="", repr=False)
    allowed_origins: tuple[str, ...] = ()
    """Origins its tasks may load besides ``base_url``'s (the shop's and its platform's)."""
    login_url: str = ""
    """Where credentials are typed, when not on the shop's own origin."""

    def policy(self) -> OriginPolicy:
        """The origins this shop's tasks may load."""
        return OriginPolicy.for_shop(self.base_url, self.allowed_origins,
                                     self.login_url or None)

    def placeholder_values(self) -> dict[str, str]:
        """The values of ``{shop.x}`` placeholders."""
        return {"name": self.name, "platform": self.platform, "base_url": self.base_url,
                "username": self.username, "password": self.password}

    def fields(self) -> frozenset[str]:
        """The fields that have a value (what ``check_flow``'s ``shop_fields`` wants)."""
        return frozenset(k for k, v in self.placeholder_values().items() if v)


@dataclass(frozen=True)
class Checkpoint:
    """Where a run stands; saved by the runner, stored with the task.

    Attributes:
        next_step: index of the first step not yet done.
        results: what ``extract`` (and ``screenshot`` with ``into``) steps produced so far.
        writes_done: indices of write steps that completed (never run again).
        write_in_flight: index of a write step that started and has not been confirmed.
    """

    next_step: int = 0
    results: dict[str, Any] = field(default_factory=dict)
    writes_done: list[int] = field(default_factory=list)
    write_in_flight: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {"next_step": self.next_step, "results": dict(self.results),
                "writes_done": list(self.writes_done), "write_in_flight": self.write_in_flight}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        """Read back what :meth:`to_dict` wrote.

        Raises:
            SpecError: the data is not a checkpoint.
        """
        try:
            next_step = data.get("next_step", 0)
            results = data.get("results", {})
            writes = data.get("writes_done", [])
            in_flight = data.get("write_in_flight")
        except AttributeError:
            raise SpecError("checkpoint", "must be an object") from None
        if not isinstance(next_step, int) or isinstance(next_step, bool) or next_step < 0:
            raise SpecError("checkpoint.next_step", "must be a non-negative integer")
        if not isinstance(results, dict):
            raise SpecError("checkpoint.results", "must be an object")
        if not isinstance(writes, list) or not all(
                isinstance(w, int) and not isinstance(w, bool) for w in writes):
            raise SpecError("checkpoint.writes_done", "must be a list of step indices")
        if in_flight is not None and (
                not isinstance(in_flight, int) or isinstance(in_flight, bool)):
            raise SpecError("checkpoint.write_in_flight", "must be a step index or null")
        return cls(next_step=next_step, results=dict(results), writes_done=list(writes),
                   write_in_flight=in_flight)


StepStatus = Literal["started", "done", "skipped", "replayed", "verified", "failed"]


@dataclass(frozen=True)
class StepEvent:
    """One step's progress, reported to ``on_step`` and kept in the run's step log.

    ``index`` is ``None`` for the opening of the flow's ``start_url``. Statuses: ``started``;
    ``done``; ``skipped`` (``if_visible`` did not match, or a completed write on resume);
    ``replayed`` (a read step run again on resume); ``verified`` (an interrupted write found
    done by its ``verify``); ``failed``.
    """

    index: int | None
    action: str
    name: str
    status: StepStatus
    duration_ms: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "action": self.action, "name": self.name,
                "status": self.status, "duration_ms": self.duration_ms, "error": self.error}


@dataclass(frozen=True)
class RunResult:
    """How a run ended without an error.

    Attributes:
        status: ``done`` (every step ran) or ``yielded`` (stopped for preemption).
        results: what ``extract`` steps produced.
        checkpoint: the last checkpoint, already passed to ``save_checkpoint``.
        steps: the step log (terminal statuses only).
    """

    status: Literal["done", "yielded"]
    results: dict[str, Any]
    checkpoint: Checkpoint
    steps: tuple[StepEvent, ...]
