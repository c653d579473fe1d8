"""Typed decoding for the readers' hot path, with the duplicate-key guarantee kept.

A reader that decodes a large file into msgspec structs declaring only what it
reads pays for what it keeps, not for the whole JSON tree: msgspec skips the
rest in C. Two things the generic decoders gave for free are kept here:

- one reusable :class:`msgspec.json.Decoder` per struct type, and a reusable
  encoder for the check below;
- duplicate keys (see :mod:`roadcheck.ingest._json`) are still found. Re-encoding
  what was decoded writes every key it kept once, with one colon after it, and
  every string with the colons it holds, so when a line has as many colons as
  its re-encoding no key was dropped (:func:`kept_every_key`). Fields a struct
  does not declare are dropped too: such a line is "look closer", and the exact
  check of :mod:`roadcheck.ingest._json` decides.

:func:`jsonl` decodes a JSON Lines file a line at a time from views of its bytes
(:func:`line_views`), and :func:`no_cycle_collection` pauses the cycle collector
while a file's records are built.

:func:`kept_lines` decodes a JSON Lines file a chunk of lines at a time (one call
into msgspec per chunk, not per line) and checks the keys by length, which costs
no counting at all: with floats kept as written (``float_hook=msgspec.Raw``, see
:func:`lines_decoder`) a re-encoding is never longer than what it was decoded
from, and a dropped key makes it shorter (:func:`kept_lines` says why).

Where the C extension is built, :func:`line_checker` gives the first, cheaper
answer to "did any object repeat a key": :func:`roadcheck._accel.check_lines` reads a
file's lines once, in C, and vouches that each is one JSON value, valid UTF-8,
with no key given twice in any object at any depth. It says nothing about fields
a struct does not declare, so a reader that takes its word decodes with *closed*
structs (``forbid_unknown_fields``: an undeclared field is a validation error)
and gives such a line the re-encoding check above; where it says False (an
escaped key, deep nesting, anything invalid) the re-encoding check decides too.
``ROADCHECK_PURE_PYTHON=1`` or a missing extension leaves the re-encoding check
alone, with the same results.

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
import orjson

from roadcheck._ext import line_checker, native

__all__ = [
    "I64",
    "Slow",
    "as_long_lived",
    "chunk_end",
    "decoder",
    "huge_integer",
    "jsonl",
    "kept_every_key",
    "kept_every_key_at",
    "kept_lines",
    "line_bounds",
    "line_checker",
    "line_views",
    "lines_decoder",
    "native",
    "no_cycle_collection",
]

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


def as_long_lived() -> None:
    """Count every object the cycle collector tracks as long-lived, at once, instead of
    the collection the next allocation would start.

    A reader that has just built a large file's records with the collector paused
    (:func:`no_cycle_collection`) leaves its youngest generation far over its threshold:
    the next allocation would walk every record only to find it alive (none holds a
    cycle), about a tenth of the reading of a long transcript. ``gc.freeze`` then
    ``gc.unfreeze`` moves every tracked object to the oldest generation without walking
    any; a full collection still looks at them. Left alone where a program froze objects
    itself (they stay frozen).
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


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


def _float_text(text: str) -> msgspec.Raw:
    """A float kept as the text it was written as; one beyond a double's range (which
    orjson, the strict path, refuses) is refused here too."""
    if float(text) in _INFINITE:
        raise ValueError("a number beyond a double's range")
    return msgspec.Raw(text.encode())


_INFINITE = (float("inf"), float("-inf"))
#: Every digit as 0, every other byte as a space: a run of :data:`_HUGE` in a translated
#: text is an integer orjson may read as an infinite double (and refuse).
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_HUGE = b"0" * 309


def huge_integer(data: bytes | memoryview) -> bool:
    """True when ``data`` may hold an integer of 309 digits or more: orjson reads such a
    number as a double, which can be infinite, and refuses it, where msgspec decodes it
    as an int. The fast paths give way on it without the C check (which tells numbers
    from strings); strings this long in digits are rare."""
    return _HUGE in bytes(data).translate(_DIGITS)


def lines_decoder(kind: Any) -> msgspec.json.Decoder[Any]:
    """A reusable decoder for :func:`kept_lines`: ``kind``, with every float kept as the
    :class:`msgspec.Raw` text it was written as (re-encoded, it is the same bytes), and
    one beyond a double's range refused, as the strict path refuses it."""
    return msgspec.json.Decoder(kind, float_hook=_float_text)


_CHUNK = 1 << 16


def chunk_end(data: bytes, pos: int) -> int:
    """The end of the chunk of whole lines of ``data`` that starts at ``pos``: the first
    line end at or after about 64 kB on, or the end of ``data``."""
    end = data.find(b"\n", min(pos + _CHUNK, len(data)))
    return len(data) if end < 0 else end + 1
_ENCODER = msgspec.json.Encoder()


def kept_lines(data: bytes, decoder: msgspec.json.Decoder[Any],
               closed: msgspec.json.Decoder[Any] | None = None
               ) -> Iterator[tuple[range | list[int], list[Any]]]:
    """(line numbers, values) for the lines of a JSON Lines file holding more than
    blanks, a chunk of about 64 kB at a time, each line decoded by ``decoder``
    (from :func:`lines_decoder`) and checked to repeat no key. Raises :class:`Slow` for a
    line ``decoder`` cannot decode or one that repeats a key.

    The check is exact and counts nothing. ``decoder``'s structs must leave absent fields
    out of the encoding (``UNSET`` defaults) and hold no :class:`msgspec.Raw` field. Then
    re-encoding a decoded line is never longer than the line: keys and strings are
    written with the fewest escapes JSON allows (msgspec escapes only the quote, the
    backslash and control characters, with the short escapes where JSON has them),
    integers as JSON writes them (``-0`` loses its sign), floats as the text they were
    written as, no blanks; a key given twice loses a key and its value, and a field the
    structs do not declare is skipped. So a re-encoding exactly as long as its line lost
    nothing, and every string in it was decoded (checked to be UTF-8). A chunk is
    re-encoded whole, as a list: when it has as many values as lines, no line is empty,
    and the list is as long as the lines, less their line ends, plus its brackets and
    commas, each line is one value that lost nothing. Otherwise each line of the chunk
    is decoded on its own, and one whose re-encoding is shorter (a blank, an undeclared
    field, a key given twice) is read again by orjson and checked exactly
    (:mod:`roadcheck.ingest._json`).

    ``closed``: the same structs with ``forbid_unknown_fields`` (``decoder`` itself for
    structs that cannot meet an undeclared field, such as ``Any``). Where
    :func:`line_checker` is available, a chunk is decoded by ``closed`` first: when that
    succeeds (every field declared, so nothing was skipped), the chunk has as many values
    as lines and no empty line, and ``check_lines`` vouches its lines (once for the whole
    file, else for the chunk), each line is one value that repeated no key and lost
    nothing, and it is taken without the re-encoding. Any other chunk is checked by the
    length of its re-encoding, as above.
    """
    from roadcheck.ingest._json import repeated_key

    size = len(data)
    view = memoryview(data)
    find = data.find
    decode_lines, decode = decoder.decode_lines, decoder.decode
    buf = bytearray()
    into = _ENCODER.encode_into
    check = line_checker() if closed is not None else None
    decode_closed = closed.decode_lines if closed is not None else None
    whole = check is not None and check(data)  # every line vouched at once
    if check is None and huge_integer(data):
        raise Slow  # a number the strict path may refuse: it decides
    pos, n = 0, 1  # n: the number of the line that starts at pos
    while pos < size:
        end = chunk_end(data, pos)
        lines, empty, at = 0, False, pos
        while at < end:
            stop = find(b"\n", at, end)
            if stop < 0:
                stop = end
            if stop == at:
                empty = True
            lines += 1
            at = stop + 1
        values: list[Any] | None = None
        if check is not None and decode_closed is not None:
            try:
                values = decode_closed(view[pos:end])
            except msgspec.ValidationError:
                values = None  # an undeclared field, maybe: the re-encoding checks
            except msgspec.DecodeError:
                raise Slow from None
            if values is not None and len(values) == lines and not empty and (
                    whole or check(data, pos, end)):
                yield range(n, n + lines), values
                pos, n = end, n + lines
                continue
        if values is None:
            try:
                values = decode_lines(view[pos:end])
            except (msgspec.DecodeError, msgspec.ValidationError):
                raise Slow from None
        k = len(values)
        # where the C check is there, a chunk it does not vouch for (a number the readers
        # read differently, an escaped key) is read line by line, and such a line by orjson
        vouched = check is None or whole or check(data, pos, end)
        if k == lines and not empty and vouched:
            into(values, buf)
            ends = lines if data[end - 1] == 0x0A else lines - 1
            if len(buf) == end - pos - ends + k + 1:
                yield range(n, n + k), values
                pos, n = end, n + lines
                continue
        del values
        numbers: list[int] = []
        kept: list[Any] = []
        at = pos
        while at < end:
            stop = find(b"\n", at, end)
            if stop < 0:
                stop = end
            if at < stop and (data[at] > 0x20 or _NONBLANK.search(data, at, stop)):
                try:
                    value = decode(view[at:stop])
                except (msgspec.DecodeError, msgspec.ValidationError):
                    raise Slow from None
                into(value, buf)
                if len(buf) != stop - at or not (
                        vouched or (check is not None and check(data, at, stop))):
                    if len(buf) > stop - at:
                        raise Slow  # never: the re-encoding cannot grow
                    line = data[at:stop]
                    try:
                        exact = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        raise Slow from None
                    if repeated_key(line, exact) is not None:
                        raise Slow
                numbers.append(n)
                kept.append(value)
            n += 1
            at = stop + 1
        yield numbers, kept
        pos = end
