"""Where the objects of a JSON document start: the line of each step, span or event.

A JSON document reader (SWE-agent, Jaeger, Zipkin, OpenHands, Claude Code's OTel logs)
names the line of the record it could not read, and gives each event the line of its
record. The document is
decoded by orjson first (so it is valid JSON); :func:`object_lines` then follows its
strings and punctuation, without decoding it again, and notes the line where each object
whose place matches a pattern opens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson

__all__ = ["ANY", "object_lines"]

#: In a pattern, any index of a list (or any key of an object).
ANY = None

# One bracket or comma, or everything between them (strings, escapes included, scalars,
# colons, blanks): an object member with a scalar value is one token, its key first.
_TOKEN = re.compile(rb'[\[\]{},]|(?:"[^"\\]*(?:\\.[^"\\]*)*"|[^"\[\]{},])+')
_KEY = re.compile(rb'\s*"([^"\\]*(?:\\.[^"\\]*)*)"')

Place = tuple[str | int, ...]
_PUNCT = frozenset(b"[]{},")


def _key_text(raw: bytes) -> str:
    """A key as the document means it: its escapes (``\\u0072``) read as JSON reads them."""
    if b"\\" not in raw:
        return raw.decode("utf-8", "replace")
    try:
        text: str = orjson.loads(b'"' + raw + b'"')
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")
    return text


def _matches(place: Sequence[str | int | None], pattern: Sequence[str | int | None]) -> bool:
    if len(place) != len(pattern):
        return False
    return all(want is ANY or want == got for got, want in zip(place, pattern, strict=True))


class _Frame:
    """One open container: whether it is an object, its current key or index, and
    whether it awaits a key (an object after ``{`` or ``,``)."""

    __slots__ = ("at", "awaits", "is_object")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.at: str | int = "" if is_object else 0
        self.awaits = is_object


def object_lines(data: bytes, *patterns: Sequence[str | int | None]) -> dict[Place, int]:
    """The line (1-based) of every object of ``data`` whose place matches a pattern.

    A place is the keys and list indices leading to the object from the top of the
    document: ``("trajectory", 3)`` is the fourth step of ``{"trajectory": [...]}``,
    ``(0, "spans", 2)`` the third span of the first element of a list. ``ANY`` in a
    pattern matches every key or index there. ``data`` must be JSON orjson decoded; one
    scan serves every pattern.
    """
    by_depth: dict[int, list[Sequence[str | int | None]]] = {}
    for pattern in patterns:
        by_depth.setdefault(len(pattern), []).append(pattern)
    found: dict[Place, int] = {}
    frames: list[_Frame] = []
    line, pos = 1, 0
    for m in _TOKEN.finditer(data):
        tok = m.group()
        first = tok[0]
        if len(tok) > 1 or first not in _PUNCT:  # between brackets: a key when awaited
            if frames and frames[-1].awaits:
                key = _KEY.match(tok)
                if key is not None:
                    frames[-1].at = _key_text(key.group(1))
                    frames[-1].awaits = False
        elif first == 0x7B or first == 0x5B:  # { [
            wanted = by_depth.get(len(frames)) if first == 0x7B else None
            if wanted is not None:
                place = tuple(f.at for f in frames)
                if any(_matches(place, pattern) for pattern in wanted):
                    line += data.count(b"\n", pos, m.start())
                    pos = m.start()
                    found[place] = line
            frames.append(_Frame(first == 0x7B))
        elif first == 0x7D or first == 0x5D:  # } ]
            if frames:
                frames.pop()
        elif first == 0x2C and frames:  # ,
            top = frames[-1]
            if top.is_object:
                top.awaits = True
            elif isinstance(top.at, int):
                top.at += 1
    return found
