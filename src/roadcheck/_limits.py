"""How many bytes roadcheck reads of one input: 1 GiB, or ``ROADCHECK_MAX_INPUT_SIZE``.

A trajectory, a trace, a result, a spec or a contract is read whole into memory,
and decoded there: ``/dev/zero``, an endless pipe or a decompression bomb would
otherwise grow memory until the machine gives out. Every reader stops at the limit
and one byte (a regular file's size refuses it before any read) and refuses the
input with one line. The variable takes bytes, or a number with ``K``, ``M``, ``G``
or ``T`` (binary multiples: ``512M``, ``2G``); see docs/formats.md.
"""

from __future__ import annotations

import os
import re
from functools import cache

from roadcheck.errors import InputError

__all__ = ["DEFAULT_MAX_INPUT", "ENV", "max_input_size", "too_large"]

ENV = "ROADCHECK_MAX_INPUT_SIZE"
#: The default: a recorded run this large already takes several times it in memory once
#: decoded, and os.read gives at most 2 GiB in one call.
DEFAULT_MAX_INPUT = 1 << 30
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
#: compiled only where the variable is set (by re, on the first call of _parsed)
_SIZE = r"\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*"


@cache
def _parsed(raw: str) -> int:
    found = re.fullmatch(_SIZE, raw, re.IGNORECASE)
    size = int(found.group(1)) * _UNITS[found.group(2).upper()] if found else 0
    if size < 1:
        raise InputError(f"{ENV}={raw!r} is not a size: write bytes, or a number with K, M, "
                         "G or T (binary multiples), such as 2G")
    return size


def max_input_size() -> int:
    """The most bytes one input may hold. Raises :class:`InputError` (exit 2) for a
    value of ``ROADCHECK_MAX_INPUT_SIZE`` that is not a size."""
    raw = os.environ.get(ENV)
    return DEFAULT_MAX_INPUT if raw is None else _parsed(raw)


def _shown(size: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if size >= _UNITS[unit] and size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]} {unit}iB ({size} bytes)"
    return f"{size} bytes"


def too_large(limit: int, what: str = "the input") -> str:
    """The one-line reason for an input past ``limit``; the caller adds the file."""
    return (f"{what} is larger than {_shown(limit)}, the most roadcheck reads; set {ENV} "
            "(bytes, or with K, M, G) to read more")
