"""The C extension :mod:`roadcheck._accel`, looked up once, without importing any reader.

Replay asks for it before the first file: this module imports nothing beyond ``os``,
so that asking costs a light command nothing it does not use (the readers' typed
decoders, and msgspec with them, load only where a file needs them).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, cast

__all__ = ["LineChecker", "line_checker", "native"]

#: ``check_lines(data, start=0, end=len(data)) -> bool``
LineChecker = Callable[..., bool]

_UNSET: Any = object()
_CHECK_LINES: Any = _UNSET
_NATIVE: Any = _UNSET


def native() -> Any:
    """The C extension :mod:`roadcheck._accel`, or None where it is not built or
    ``ROADCHECK_PURE_PYTHON`` is set (the Python path then reads alone, with the same
    results)."""
    global _NATIVE
    if _NATIVE is _UNSET:
        _NATIVE = None
        if not os.environ.get("ROADCHECK_PURE_PYTHON"):
            try:
                import roadcheck._accel as accel
            except ImportError:  # not built here: the Python path reads alone
                pass
            else:
                _NATIVE = accel
    return _NATIVE


def line_checker() -> LineChecker | None:
    """:func:`roadcheck._accel.check_lines`, or None where the extension is not built or
    ``ROADCHECK_PURE_PYTHON`` is set (the re-encoding checks then decide alone, with the same
    results).

    True from it means every line of the range that holds more than blanks is one JSON
    value (valid UTF-8, valid escapes, numbers of any length) with no key given twice in
    any object at any depth; False means "look closer", never "bad".
    """
    global _CHECK_LINES
    if _CHECK_LINES is _UNSET:
        accel = native()
        _CHECK_LINES = None if accel is None else accel.check_lines
    return cast("LineChecker | None", _CHECK_LINES)
