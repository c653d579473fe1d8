"""Thin integrations for frameworks that have no file format of their own.

Each module needs its framework, installed with the matching extra
(``pip install 'roadcheck[openai-agents]'``, ``'roadcheck[langgraph]'``); importing
:mod:`roadcheck` never does.

Without its extra an integration raises :class:`MissingExtraError`, an
:class:`ImportError` (so ``try: ... except ImportError`` keeps working) that is
also an :class:`~roadcheck.errors.InputError`: under an ``roadcheck`` command it is one
``error[missing-extra]: ...`` line and exit 2. Left uncaught in a program of
its own, it is printed as that one line instead of a traceback.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType, TracebackType

from roadcheck.errors import InputError

__all__ = ["MissingExtraError", "require"]


class MissingExtraError(InputError, ImportError):
    """A framework integration was used without its package installed (``missing-extra``)."""

    reason = "missing-extra"


def _one_line_hook(previous: object) -> object:
    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if isinstance(exc, MissingExtraError):
            # the hint is the whole story; a traceback above it only hides it
            sys.stderr.write(f"error[{exc.reason}]: {exc}\n")
            sys.stderr.flush()
            return
        previous(kind, exc, tb)  # type: ignore[operator]

    hook.roadcheck_missing_extra = True  # type: ignore[attr-defined]
    return hook


def _install_hook() -> None:
    """Print an uncaught :class:`MissingExtraError` as one line; every other error as before."""
    if not getattr(sys.excepthook, "roadcheck_missing_extra", False):
        sys.excepthook = _one_line_hook(sys.excepthook)  # type: ignore[assignment]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or fail with one line naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        _install_hook()
        raise MissingExtraError(
            f"{module} is not installed: pip install 'roadcheck[{extra}]'") from None
