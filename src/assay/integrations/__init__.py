"""Thin integrations for frameworks that have no file format of their own.

Each module needs its framework, installed with the matching extra
(``pip install 'assay[openai-agents]'``, ``'assay[langgraph]'``); importing
:mod:`assay` never does.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtraError", "require"]


class MissingExtraError(ImportError):
    """A framework integration was used without its package installed."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or fail with one line naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"{module} is not installed: pip install 'assay[{extra}]'") from None
