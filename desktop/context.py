"""What the console window works with (the settings, the store, the engine's host)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import EngineHost, Settings, Store


@dataclass
class ConsoleContext:
    """What the window works with."""

    settings: Settings
    store: Store
    host: EngineHost | None
    config_path: Path | None = None
    title_suffix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
