"""Module-level ``__getattr__`` that imports a public name's home module on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, namespace: dict[str, Any],
                 table: Mapping[str, str]) -> Callable[[str], Any]:
    """Build a ``__getattr__`` resolving ``name`` from ``table[name]`` and caching it."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
