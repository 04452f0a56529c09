"""Small helpers shared by tests."""

from __future__ import annotations

from typing import Any

from core.specs import TaskSpec


def spec(type_: str = "collect_data", shop: str = "pdd-1", **kw: Any) -> TaskSpec:
    """A valid task spec with defaults."""
    data: dict[str, Any] = {"type": type_, "shop": shop, "flow": kw.pop("flow", type_)}
    data.update(kw)
    return TaskSpec.model_validate(data)
