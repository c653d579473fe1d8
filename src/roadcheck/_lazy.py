"""Module-level ``__getattr__`` that imports a public name's home module on first use,
and the ``__dir__`` that lists those names before they are loaded (for ``dir()``,
``help()`` and completion)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's flag, without importing typing (see roadcheck/__init__.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_dir", "lazy_getattr"]


def lazy_getattr(package: str, namespace: dict[str, Any],
                 table: Mapping[str, str]) -> Callable[[str], Any]:
    """Build a ``__getattr__`` resolving ``name`` from ``table[name]`` and caching it."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # __import__ with a fromlist returns the submodule itself (no importlib to import)
        value = getattr(__import__(module, fromlist=["_"]), name)
        namespace[name] = value
        return value

    return __getattr__


def lazy_dir(namespace: dict[str, Any], table: Mapping[str, str]) -> Callable[[], list[str]]:
    """Build a ``__dir__`` listing the module's names and the lazy ones not yet loaded."""

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __dir__
