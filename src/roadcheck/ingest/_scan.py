"""Finding a document's top-level keys without decoding it, for format detection.

Detection asks every registered reader about the same bytes; :func:`scanning`
lets them share one scan of a large document instead of one each.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

__all__ = ["_keys_at", "scanning"]

# One JSON string (escapes included) or one bracket: enough to follow objects without
# decoding them (the duplicate-key locator in _json uses the same tokens).
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_COLON = re.compile(rb"\s*:")


#: While :func:`scanning` holds a document, the keys of its first object at each depth,
#: so the detectors of every format share one scan of a large file.
_memo: dict[int, list[bytes] | None] = {}
_memo_data: list[bytes] = []


@contextlib.contextmanager
def scanning(data: bytes) -> Iterator[None]:
    """Within the block, :func:`_keys_at` scans ``data`` once per depth, for every caller."""
    _memo.clear()
    _memo_data[:] = [data]
    try:
        yield
    finally:
        _memo.clear()
        _memo_data.clear()


def _object_keys(data: bytes, depth: int) -> list[bytes] | None:
    """Every key of the first object that opens at ``depth``, in order; None when the
    element at that depth is not an object."""
    keys: list[bytes] = []
    level = 0
    inside = False
    for m in _TOKEN.finditer(data):
        tok = m.group()
        first = tok[0]
        if first == 0x22:
            if inside and level == depth and _COLON.match(data, m.end()):
                keys.append(tok[1:-1])
        elif first in (0x7B, 0x5B):  # { [
            level += 1
            if level == depth and first == 0x7B:
                inside = True
            elif level == depth:
                return None
        else:
            if inside and level == depth:
                return keys
            level -= 1
            if level < 0:
                return None if not inside else keys
    return keys if inside else None


def _keys_at(data: bytes, depth: int, wanted: frozenset[bytes]) -> bytes | None:
    """The first key of ``wanted`` found in the first object that opens at ``depth``.

    Scans string and bracket tokens only (a C-level regex does the skipping) and
    stops as soon as it knows: at a wanted key, or when that first object closes.
    Inside :func:`scanning` the whole object's keys are scanned once and shared.
    """
    if _memo_data and data is _memo_data[0]:
        if depth not in _memo:
            _memo[depth] = _object_keys(data, depth)
        keys = _memo[depth]
        return next((k for k in keys if k in wanted), None) if keys is not None else None
    level = 0
    inside = False
    for m in _TOKEN.finditer(data):
        tok = m.group()
        first = tok[0]
        if first == 0x22:  # a string: a key when it sits in the object and a colon follows
            if inside and level == depth and _COLON.match(data, m.end()):
                key = tok[1:-1]
                if key in wanted:
                    return key
        elif first in (0x7B, 0x5B):  # { [
            level += 1
            if level == depth and first == 0x7B:
                inside = True
            elif level == depth:
                return None  # the element at this depth is not an object
        else:
            if inside and level == depth:
                return None  # the object closed without a wanted key
            level -= 1
            if level < 0:
                return None
    return None
