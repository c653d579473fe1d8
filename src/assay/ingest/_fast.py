"""Typed decoding for the readers' hot path, with the duplicate-key guarantee kept.

A reader that decodes a large file into msgspec structs declaring only what it
reads pays for what it keeps, not for the whole JSON tree: msgspec skips the
rest in C. Two things the generic decoders gave for free are kept here:

- one reusable :class:`msgspec.json.Decoder` per struct type, and a reusable
  encoder for the check below;
- duplicate keys (see :mod:`assay.ingest._json`) are still found. Re-encoding
  what was decoded writes every key it kept once, with one colon after it, and
  every string with the colons it holds, so when a line has as many colons as
  its re-encoding no key was dropped (:func:`kept_every_key`). Fields a struct
  does not declare are dropped too: such a line is "look closer", and the exact
  check of :mod:`assay.ingest._json` decides.

:func:`jsonl` decodes a JSON Lines file a line at a time from views of its bytes
(:func:`line_views`), and :func:`no_cycle_collection` pauses the cycle collector
while a file's records are built.

A reader's fast path accepts only what its strict path accepts and builds the
same thing from it; anything unusual (a type the structs do not expect, a value
out of range) makes it give way to the strict path, which gives the one-line
error.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator
from typing import Annotated, Any

import msgspec

__all__ = ["I64", "Slow", "decoder", "jsonl", "kept_every_key", "kept_every_key_at",
           "line_bounds", "line_views", "no_cycle_collection"]

#: An integer orjson decodes as an integer (it turns larger ones into floats; 2**63 and up
#: give way to the strict path too): a field typed so refuses what that path reads differently.
I64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

_ENCODE = msgspec.json.Encoder().encode


class Slow(Exception):
    """The fast path gives way: the strict path reads the file and says what is wrong."""


def decoder(kind: Any) -> msgspec.json.Decoder[Any]:
    """One reusable decoder for ``kind``."""
    return msgspec.json.Decoder(kind)


def kept_every_key(raw: bytes, decoded: Any) -> bool:
    """True when ``decoded`` (typed structs of ``raw``) kept every key ``raw`` writes.

    Exact when True: a repeated key, or a field the structs do not declare,
    loses a key and its colon in the re-encoding. Structs must leave absent
    fields out of the encoding (``UNSET`` defaults); a ``\\u003a`` escape (a
    colon the re-encoding writes raw) is "look closer".
    """
    return kept_every_key_at(raw, 0, len(raw), decoded)


def kept_every_key_at(data: bytes, start: int, end: int, decoded: Any) -> bool:
    """:func:`kept_every_key` for the line ``data[start:end]``, read in place (no copy)."""
    at = data.find(b"\\u003", start, end)
    if at >= 0 and (data.find(b"\\u003a", at, end) >= 0 or data.find(b"\\u003A", at, end) >= 0):
        return False
    return data.count(b":", start, end) == _ENCODE(decoded).count(b":")


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause the cycle collector while a file's records are built (none holds a cycle).

    Building a large file's records allocates millions of objects that all stay
    alive; the collector would walk them again and again for nothing.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_NONBLANK = re.compile(rb"\S")


def line_bounds(data: bytes, *, utf8: bool = True) -> Iterator[tuple[int, int, int]]:
    """(line number, start, end) for each line of ``data`` holding more than blanks.

    In a file that is not ASCII, a line is checked to be UTF-8 here, because
    msgspec does not look inside the strings it skips (orjson, the strict path,
    refuses the whole line): such a line raises :class:`Slow`. ``utf8=False``
    leaves that out, for structs that skip no string (msgspec checks those it
    decodes).
    """
    find, search = data.find, _NONBLANK.search
    size = len(data)
    pos, n = 0, 0
    ascii_file = not utf8 or data.isascii()
    while pos < size:
        end = find(b"\n", pos, size)
        if end < 0:
            end = size
        n += 1
        if (pos < end and data[pos] > 0x20) or search(data, pos, end) is not None:
            if not ascii_file:
                try:
                    str(data[pos:end], "utf-8")
                except UnicodeDecodeError:
                    raise Slow from None
            yield n, pos, end
        pos = end + 1


def line_views(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """(line number, line) for each line of ``data`` holding more than blanks, as views.

    Nothing is copied: a :class:`msgspec.Raw` decoded from a view points into
    ``data``, which the caller holds anyway. Lines that are not UTF-8 raise
    :class:`Slow` (:func:`line_bounds`).
    """
    view = memoryview(data)
    for n, start, end in line_bounds(data):
        yield n, view[start:end]


def jsonl(data: bytes, decoder: msgspec.json.Decoder[Any]) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each line of a JSON Lines file, decoded by ``decoder``.

    Each line is decoded on its own, from a view of ``data`` (:func:`line_views`).
    A line that is not valid for ``decoder`` (or not UTF-8) raises :class:`Slow`.
    What ``decoder`` skips is checked no further than msgspec checks it (the
    JSON's shape, not a number's range): a reader whose strict path refuses
    duplicate keys checks them with :func:`kept_every_key`, which also gives
    such a line to orjson.
    """
    decode = decoder.decode
    for n, raw in line_views(data):
        try:
            value = decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise Slow from None
        yield n, value
