"""Checking what callers hand a store before it writes or reads (shared by every store):
a batch of submissions, and the arguments of a task listing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..config import PrioritySettings
from ..errors import InvalidInput, SpecError
from ..specs import TaskSpec
from ..urgency import estimator_for
from .records import ShopRecord, TaskState

Validator = Callable[[TaskSpec, ShopRecord], None]
"""Extra per-task checks at submission (flows and placeholders), raising :class:`SpecError`."""


class Prepared(NamedTuple):
    """A checked submission with its priority inputs resolved (a tuple: a batch of a
    thousand builds a thousand of them)."""

    spec: TaskSpec
    shop: ShopRecord
    base: float
    urgency: float
    urgency_fixed: int
    urgency_next_at: float | None
    start_at: float = 0.0
    """When it joins the queue (``now`` unless delayed: then it waits as ``scheduled``)."""


def prepare_specs(specs: Sequence[TaskSpec], shops: dict[str, ShopRecord],
                  priority: PrioritySettings, validator: Validator | None, now: float
                  ) -> list[Prepared]:
    """Check every task of a batch (its shop, type, key, flow) and resolve its base priority
    and urgency; the first problem raises a :class:`SpecError` naming the task's field
    (``tasks[2].shop`` in a batch), so nothing of the batch is written."""
    if not specs:
        raise SpecError("(input)", "holds no tasks")
    out: list[Prepared] = []
    seen_keys: dict[str, int] = {}
    multi = len(specs) > 1
    for i, spec in enumerate(specs):
        where = f"tasks[{i}]." if multi else ""
        shop = shops.get(spec.shop)
        if shop is None:
            raise SpecError(f"{where}shop", f"no shop named {spec.shop!r} "
                            "(add it with 'shopfleet shop add')")
        base = spec.priority
        if base is None:
            base = priority.types.get(spec.type)
            if base is None:
                raise SpecError(f"{where}type", f"unknown task type {spec.type!r}: give "
                                "'priority' or add the type to [priority.types]")
        if spec.key is not None:
            if spec.key in seen_keys:
                raise SpecError(f"{where}key", f"{spec.key!r} appears twice in the batch "
                                f"(also tasks[{seen_keys[spec.key]}])")
            seen_keys[spec.key] = i
        if validator is not None:
            try:
                validator(spec, shop)
            except SpecError as exc:
                raise SpecError(f"{where}{exc.field}", exc.reason) from None
        if spec.urgency is not None:
            urgency, fixed, next_at = float(spec.urgency), 1, None
        else:
            est = estimator_for(shop.platform).estimate(
                task_type=spec.type, deadline=spec.deadline_ts, now=now)
            urgency, fixed, next_at = float(est.points), 0, est.next_change_at
        try:
            start_at = spec.start_at(now)
        except SpecError as exc:
            raise SpecError(f"{where}{exc.field}", exc.reason) from None
        out.append(Prepared(spec, shop, float(base), urgency, fixed, next_at, start_at))
    return out


def check_listing(state: str | None, limit: int) -> None:
    """The arguments of :meth:`core.store.base.Store.tasks`, as the command line names them.

    Raises:
        InvalidInput: ``state`` is not a task state, or ``limit`` is below 1.
    """
    if state is not None and state not in {s.value for s in TaskState}:
        raise InvalidInput("--state", f"{state!r} is not a task state "
                           f"({', '.join(s.value for s in TaskState)})")
    if limit < 1:
        raise InvalidInput("--limit", "must be at least 1")
