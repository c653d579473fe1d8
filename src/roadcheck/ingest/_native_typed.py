"""The typed decode of a native file: the common, valid file in one msgspec call.

Kept apart from :mod:`roadcheck.ingest.native` so that a process which only parses
single events (the guard's hook) does not import msgspec.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
import orjson

from roadcheck.events import Event
from roadcheck.ingest._json import no_duplicate_keys

__all__ = ["typed_records"]

# One struct per event type, holding exactly the keys docs/formats.md declares. A file
# whose every line decodes into one of them, with nothing undeclared, is decoded by
# msgspec in C, type checks included, and the replay engine reads the records'
# attributes. Whatever the structs cannot vouch for (an undeclared key, a wrong type,
# a blank line, a repeated key, a number orjson reads differently) returns None and
# the file goes through :func:`roadcheck.ingest.native.iter_events`, which names the
# problem: the typed path never decides anything the strict reader would decide
# differently.

_Name = Annotated[str, msgspec.Meta(min_length=1)]


class _Record(msgspec.Struct, tag_field="event", forbid_unknown_fields=True, omit_defaults=True,
              kw_only=True, gc=False):
    # omit_defaults: a record re-encodes to the keys it was written with (a key written
    # as null re-encodes to nothing, and the colon count below sends the file the slow
    # way), which is what makes the repeated-key check exact.
    kind: ClassVar[str]
    seq: int
    agent: str | None = None
    ts: str | None = None


class _Action(_Record, tag="action"):
    kind = "action"
    action_type: _Name
    irreversible: Any = None
    args: Any = None
    result: Any = None


class _Checkpoint(_Record, tag="checkpoint"):
    kind = "checkpoint"
    checkpoint_id: _Name
    confirmed_by: Any = None


class _Handoff(_Record, tag="handoff"):
    kind = "handoff"
    from_agent: _Name
    to_agent: _Name
    payload: dict[str, Any]


class _Message(_Record, tag="message"):
    kind = "message"
    role: Literal["user", "assistant", "system", "tool"]
    text: str | None = None
    yields_turn: bool | None = None


_DECODE_LINES = msgspec.json.Decoder(_Action | _Checkpoint | _Handoff | _Message).decode_lines
_ENCODE = msgspec.json.Encoder().encode
loads = orjson.loads
# orjson reads an integer beyond 64 bits as a float and msgspec as an int: a run of 19
# digits or more (anywhere, strings included) is left to the strict reader. Found with
# two passes in C: every digit becomes 0, every other byte a space.
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_NUMBER = b"0" * 19


def typed_records(data: bytes) -> tuple[list[Any], Event] | None:
    """The records of a valid native JSONL file before its final line, and its final event.

    None means "read it with :func:`roadcheck.ingest.native.iter_events`": the file may well
    be valid, but only that reader judges it. A result is exactly what that reader
    would accept: one record per line, every line an object of a declared event
    type with its required keys well typed, ``seq`` strictly increasing, one
    ``final`` and it is last, no key repeated in any object. The final line is
    read whole, as :func:`iter_events` reads it (``--by`` reads any of its fields).
    """
    end = len(data.rstrip())  # blank lines after the final one are allowed
    cut = data.rfind(b"\n", 0, end) + 1
    body, last = data[:cut], data[cut:end]
    if _LONG_NUMBER in body.translate(_DIGITS) or (
            b"\\" in body and (b"\\u003a" in body or b"\\u003A" in body)):
        return None
    try:
        records = _DECODE_LINES(body)
        final = loads(last)
    except (msgspec.DecodeError, orjson.JSONDecodeError, RecursionError):
        return None
    if len(records) != body.count(b"\n"):
        return None  # a blank line, which msgspec skips: the strict reader numbers lines
    if type(final) is not dict or final.get("event") != "final":
        return None
    seq, agent, ts = final.get("seq"), final.get("agent"), final.get("ts")
    if (type(seq) is not int or type(final.get("task_success")) is not bool
            or (agent is not None and type(agent) is not str)
            or (ts is not None and type(ts) is not str)):
        return None
    seqs = [r.seq for r in records]
    seqs.append(seq)
    if len(set(seqs)) != len(seqs) or sorted(seqs) != seqs or seqs[0] <= -(1 << 62):
        return None
    # Every key written has one colon after it; the records re-encode to the same keys
    # (no undeclared key, no default written out) and the same strings, so equal counts
    # mean no object repeated a key (see roadcheck.ingest._json.no_duplicate_keys).
    if body.count(b":") != _ENCODE(records).count(b":") or not no_duplicate_keys(last, final):
        return None
    return records, Event(seq, "final", agent, ts, final, len(records) + 1)
