"""Checks a task must pass at submission, beyond its own fields: its flow exists, every
placeholder it uses is given, and files it uploads are inside the asset folders."""

from __future__ import annotations

from collections.abc import Callable

from .config import Settings
from .specs import TaskSpec
from .store.records import ShopRecord


def submission_validator(settings: Settings) -> Callable[[TaskSpec, ShopRecord], None] | None:
    """A validator for :class:`core.store.SqliteStore` that checks flows and placeholders."""
    return None  # TODO(lead): wire core.flows checks once the flow package lands
