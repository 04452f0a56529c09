"""Names a package loads when first used (#20: start-up imports only what a command uses).

A package lists where each public name lives and sets ``__getattr__ = lazy_names(__name__,
_WHERE)``; the name's module is imported on first access and the value kept in the package,
so the next access is a plain attribute. Shared by ``core``, ``core.store`` and ``core.notify``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps a name to the (relative)
    module that defines it."""
    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        vars(sys.modules[package])[name] = value
        return value
    return __getattr__
