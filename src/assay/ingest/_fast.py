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

A reader's fast path accepts only what its strict path accepts and builds the
same thing from it; anything unusual (a type the structs do not expect, a value
out of range) makes it give way to the strict path, which gives the one-line
error.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Annotated, Any

import msgspec

__all__ = ["I64", "Slow", "decoder", "kept_every_key", "no_cycle_collection"]

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
    if b"\\u003" in raw and (b"\\u003a" in raw or b"\\u003A" in raw):
        return False
    return raw.count(b":") == _ENCODE(decoded).count(b":")


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
