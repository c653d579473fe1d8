"""The native trajectory format: JSONL, one event per line, read strictly.

Rules (docs/formats.md): ``seq`` strictly increasing integers; ``event`` one of
action / checkpoint / handoff / final / message; the keys each type requires;
exactly one ``final`` and it is the last line. Anything else is ``bad-input``
with the line number, never a guess.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from functools import cache
from typing import Any

import msgspec
import orjson

from roadcheck._limits import max_input_size, too_large
from roadcheck._text_check import check_utf8, utf8_problem
from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import (
    check_document,
    check_line,
    deep_line,
    depth_refused,
    no_duplicate_keys,
    too_deep,
)

__all__ = ["iter_events", "parse_record", "read_events", "read_native", "validate_events"]

_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "tool"})


def _require(rec: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str, line: int,
             path: str | None) -> Any:
    value = rec.get(key)
    if value is None:
        raise TraceError(f"{rec['event']} event is missing required key '{key}'", path=path,
                         line=line)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise TraceError(f"'{key}' must be {what}, got {type(value).__name__}", path=path,
                         line=line)
    if value == "":
        # a name is what rules match on: an empty one names nothing
        raise TraceError(f"'{key}' must be a non-empty string", path=path, line=line)
    return value


def parse_record(rec: Any, line: int, path: str | None = None) -> Event:
    """Validate one decoded record and return its :class:`Event`."""
    if not isinstance(rec, dict):
        raise TraceError(f"expected a JSON object, got {type(rec).__name__}", path=path, line=line)
    seq = rec.get("seq")
    if type(seq) is not int:
        what = "missing required key 'seq'" if seq is None else "'seq' must be an integer"
        raise TraceError(what, path=path, line=line)
    kind = rec.get("event")
    if kind == "action":
        _require(rec, "action_type", str, "a string", line, path)
    elif kind == "handoff":
        _require(rec, "from_agent", str, "a string", line, path)
        _require(rec, "to_agent", str, "a string", line, path)
        _require(rec, "payload", dict, "an object", line, path)
    elif kind == "checkpoint":
        _require(rec, "checkpoint_id", str, "a string", line, path)
    elif kind == "final":
        _require(rec, "task_success", bool, "true or false", line, path)
    elif kind == "message":
        role = _require(rec, "role", str, "a string", line, path)
        if role not in _MESSAGE_ROLES:
            raise TraceError(f"unknown message role '{role}'", path=path, line=line)
        text = rec.get("text")
        if text is not None and not isinstance(text, str):
            raise TraceError("'text' must be a string", path=path, line=line)
        yields = rec.get("yields_turn")
        if yields is not None and not isinstance(yields, bool):
            raise TraceError("'yields_turn' must be true or false", path=path, line=line)
    elif kind is None:
        raise TraceError("missing required key 'event'", path=path, line=line)
    else:
        raise TraceError(f"unknown event type {kind!r}", path=path, line=line)
    agent = rec.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise TraceError("'agent' must be a string", path=path, line=line)
    ts = rec.get("ts")
    if ts is not None and not isinstance(ts, str):
        raise TraceError("'ts' must be a string", path=path, line=line)
    return Event(seq, kind, agent, ts, rec, line)


def iter_events(data: bytes, path: str | None = None) -> Iterator[Event]:
    """Yield the events of a native JSONL document, validated.

    Raises :class:`TraceError` at the first problem, before any event: the whole
    document is read by :func:`read_events` first.
    """
    yield from read_events(data, path)


def read_events(data: bytes, path: str | None = None) -> list[Event]:
    """The events of a native JSONL document, in order; :class:`TraceError` at the first
    problem, in the order of the lines.

    This is the replay hot path. A file whose lines are each one object (the common
    case) is decoded in one call and its records checked in one loop
    (:func:`_common`); anything else, a file that fails a check included, is read
    line by line (:func:`_read_lines`), which names the first problem.
    """
    records = _one_per_line(data)
    if records is not None:
        events = _common(records, path)
        if events is not None and no_duplicate_keys(data, records):
            return events
    return _read_lines(data, path)


def _one_per_line(data: bytes) -> list[Any] | None:
    """The values of ``data``'s lines, decoded in one call, when each line provably holds
    exactly one; None sends the file to the line-by-line reading.

    The proof: every line starts with ``{`` and ends with ``}`` (the file starts
    with ``{``, ends with ``}`` and a newline at most, and every other newline sits in
    ``}\n{``), so no value spans a newline (after a ``}`` that closes an inner
    object, JSON allows only ``,``, ``}`` or ``]``, never the ``{`` the next line
    starts with), no line is blank, and as many values as lines leaves one a line.
    A value msgspec decodes and orjson would not (an integer past 64 bits) is not
    let through: the duplicate-key check re-encodes every value with orjson.
    """
    if data[:1] != b"{":
        return None
    newlines = data.count(b"\n")
    if data.endswith(b"}\n"):
        lines = newlines
    elif data.endswith(b"}"):
        lines = newlines + 1
    else:
        return None
    if data.count(b"}\n{") != lines - 1:
        return None
    try:
        values = _decode_lines(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    return values if len(values) == lines else None


#: msgspec's reading of JSON lines into plain values (dicts, lists, strings, numbers).
_decode_lines = msgspec.json.Decoder().decode_lines


def _common(records: list[Any], path: str | None) -> list[Event] | None:
    """The events of the decoded lines of a file whose every record passes the checks
    of :func:`_read_lines`; None at the first that does not (that reading then names it).
    A record of the four plain types is checked here; a ``message`` by
    :func:`parse_record`."""
    events: list[Event] = []
    add = events.append
    new = tuple.__new__
    last_seq = -(1 << 62)
    last = len(records)
    for line, rec in enumerate(records, 1):
        ok = False
        if type(rec) is not dict:
            return None
        agent = rec.get("agent")
        ts = rec.get("ts")
        try:
            seq = rec["seq"]
            kind = rec["event"]
            if (type(seq) is int and seq > last_seq and (agent is None or type(agent) is str)
                    and (ts is None or type(ts) is str)):
                if kind == "action":
                    value = rec["action_type"]
                    ok = type(value) is str and value != ""
                elif kind == "handoff":
                    value = rec["from_agent"]
                    other = rec["to_agent"]
                    ok = (type(value) is str and value != "" and type(other) is str
                          and other != "" and type(rec["payload"]) is dict)
                elif kind == "checkpoint":
                    value = rec["checkpoint_id"]
                    ok = type(value) is str and value != ""
                elif kind == "final":
                    ok = type(rec["task_success"]) is bool and line == last
        except KeyError:
            return None
        if ok:
            add(new(Event, (seq, kind, agent, ts, rec, line)))
        elif kind == "message" and type(seq) is int and seq > last_seq:
            try:
                add(parse_record(rec, line, path))
            except TraceError:
                return None
        else:
            return None
        last_seq = seq
    return events if events and events[-1].kind == "final" else None


def _read_lines(data: bytes, path: str | None) -> list[Event]:
    """:func:`read_events` line by line: each check in the order of the lines, the first
    failure raised with its message."""
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()  # the newline that ends the last line
    events: list[Event] = []
    add = events.append
    records: list[Any] = []  # every decoded line, for the duplicate-key check at the end
    keep = records.append
    loads = orjson.loads
    last_seq = -(1 << 62)
    final_line = 0
    line = 0
    for raw in lines:
        line += 1
        try:
            rec = loads(raw)
        except orjson.JSONDecodeError as exc:
            if not raw or raw.isspace():
                continue  # blank lines are allowed; checked here, off the common path
            bad = utf8_problem(raw)
            if bad is not None:
                raise TraceError(bad[1], path=path, line=line) from None
            if depth_refused(raw, exc) is not None:  # past orjson's 1,024 levels
                raise TraceError(too_deep(), path=path, line=line) from None
            if not events and _opens_document(raw):
                return list(_document_events(data, path))  # pretty-printed JSON
            raise TraceError(f"unparseable JSON: {exc.msg} at column {exc.colno}", path=path,
                             line=line) from None
        if final_line:
            raise TraceError(f"event after final (final is at line {final_line})", path=path,
                             line=line)
        keep(rec)
        if type(rec) is list and not events:
            return list(_document_events(data, path))  # a JSON array on one line
        # every record through parse_record, which names what is wrong (the common file
        # is read by _common; this reading is for the rest, and for the message)
        event = parse_record(rec, line, path)
        seq, kind = event.seq, event.kind
        if seq <= last_seq:
            raise TraceError(f"seq {seq} does not increase (previous seq {last_seq})",
                             path=path, line=line)
        last_seq = seq
        if kind == "final":
            final_line = line
        add(event)
    if not events:
        raise TraceError("empty trajectory: no events", path=path)
    if not final_line:
        raise TraceError("no final event: the trajectory is incomplete", path=path)
    if not no_duplicate_keys(data, records):  # see ingest._json: rare, then exact per line
        # (a repeated key, or a line nested more than MAX_DEPTH deep)
        for at, raw in enumerate(data.split(b"\n"), 1):
            if raw.strip():
                check_line(raw, loads(raw), at, path)
    return events


def _opens_document(raw: bytes) -> bool:
    """True for a first line that opens a multi-line JSON document: ``[...`` or a lone ``{``."""
    head = raw.strip()
    return head.startswith(b"[") or head == b"{"


@cache
def _ws() -> re.Pattern[str]:
    """JSON's whitespace, compiled for the first multi-line document (a JSONL file, the
    common case, never needs it)."""
    return re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int) -> int:
    match = _ws().match(text, pos)
    return pos if match is None else match.end()


def _document_items(data: bytes, path: str | None) -> tuple[str, list[tuple[int, Any]]]:
    """Decode a JSON array, or JSON values one after another, with the line each starts on."""
    import json

    check_utf8(data, path, TraceError)
    text = data.decode("utf-8")
    decode = json.JSONDecoder().raw_decode
    items: list[tuple[int, Any]] = []
    counted = [0, 1]  # newlines are counted once, up to the last item's start

    def line_at(at: int) -> int:
        counted[1] += text.count("\n", counted[0], at)
        counted[0] = at
        return counted[1]

    pos = _skip_ws(text, 0)
    array = text.startswith("[", pos)
    try:
        if array:
            pos = _skip_ws(text, pos + 1)
            while not text.startswith("]", pos):
                if items:
                    if not text.startswith(",", pos):
                        raise json.JSONDecodeError("Expecting ',' or ']'", text, pos)
                    pos = _skip_ws(text, pos + 1)
                value, end = decode(text, pos)
                items.append((line_at(pos), value))
                pos = _skip_ws(text, end)
            pos = _skip_ws(text, pos + 1)
            if pos < len(text):
                raise json.JSONDecodeError("Extra data after the array", text, pos)
        else:
            while pos < len(text):
                value, end = decode(text, pos)
                items.append((line_at(pos), value))
                pos = _skip_ws(text, end)
    except json.JSONDecodeError as exc:
        raise TraceError(f"unparseable JSON document: {exc.msg} at column {exc.colno}",
                         path=path, line=exc.lineno) from None
    except RecursionError:  # the standard library's parser recurses
        raise TraceError(too_deep(), path=path,
                         line=deep_line(data) or text.count("\n", 0, pos) + 1) from None
    # a repeated key (the standard library keeps the last value silently), or nesting past
    # the limit, refused as on the line-by-line path
    check_document(data, [value for _, value in items], path, values=not array)
    return ("array" if array else "object"), items


def _document_events(data: bytes, path: str | None) -> Iterator[Event]:
    """The events of a pretty-printed JSON array of native events (or of objects one after
    another), checked by the same rules as the JSONL lines; ``line`` is where each starts."""
    kind, items = _document_items(data, path)
    if items and not (isinstance(items[0][1], dict)
                      and ("event" in items[0][1] or "seq" in items[0][1])):
        start = data.count(b"\n", 0, len(data) - len(data.lstrip())) + 1
        raise TraceError(f"a JSON {kind} that does not hold native events: the native format "
                         "is one JSON event per line (or a JSON array of events); "
                         "--input-format names the other formats", path=path, line=start)
    last: Event | None = None
    for line, rec in items:
        if last is not None and last.kind == "final":
            raise TraceError(f"event after final (final is at line {last.line})", path=path,
                             line=line)
        event = parse_record(rec, line, path)
        if last is not None and event.seq <= last.seq:
            raise TraceError(f"seq {event.seq} does not increase (previous seq {last.seq})",
                             path=path, line=line)
        last = event
        yield event
    if last is None:
        raise TraceError("empty trajectory: no events", path=path)
    if last.kind != "final":
        raise TraceError("no final event: the trajectory is incomplete", path=path)


def validate_events(events: list[Event], path: str | None = None) -> None:
    """Check the whole-trajectory rules on events built by another reader."""
    if not events:
        raise TraceError("empty trajectory: no events", path=path)
    last: int | None = None
    for i, event in enumerate(events):
        if last is not None and event.seq <= last:
            raise TraceError(f"seq {event.seq} does not increase (previous seq {last})",
                             path=path, line=event.line)
        last = event.seq
        if event.kind == "final" and i != len(events) - 1:
            raise TraceError("event after final", path=path, line=events[i + 1].line)
    if events[-1].kind != "final":
        raise TraceError("no final event: the trajectory is incomplete", path=path)


_NATIVE_KEYS = frozenset({b"event", b"seq"})

#: A first record with ``event`` or ``seq`` but not both on its line: a native run, or a
#: malformed one the native reader names best; weaker than any other format's shape.
_NATIVE_SHAPE = 0.3
CERTAIN, FALLBACK = 1.0, 0.1  # the registry's levels (roadcheck.ingest), without importing it


def certainly_native(data: bytes) -> bool:
    """True when :func:`detect_native` is certain: ``event`` and ``seq`` on a first line
    that opens an object. It looks at that line only."""
    start = 0 if data[:1] == b"{" else len(data) - len(data.lstrip())
    if data[start:start + 1] != b"{":
        return False
    end = data.find(b"\n", start)
    first = data[start:] if end < 0 else data[start:end]
    return b'"event"' in first and b'"seq"' in first


def detect_native(data: bytes) -> float:
    """How sure the content is native: both ``event`` and ``seq`` on the first line is
    certain; either key in the first record is its shape; text that is no JSON object
    or array at all falls back here, so the reader says exactly what is wrong."""
    if certainly_native(data):
        return CERTAIN
    text = data.lstrip()
    head = text[:1]
    if head != b"{" and head != b"[":
        return FALLBACK
    end = text.find(b"\n")
    first = text if end < 0 else text[:end]
    from roadcheck.ingest._scan import _keys_at

    if _keys_at(text, 1 if head == b"{" else 2, _NATIVE_KEYS) is not None:
        return _NATIVE_SHAPE
    if head == b"[":
        return FALLBACK
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        return FALLBACK  # a broken or pretty-printed first record: the reader names it
    return 0.0


def read_entries(path: str, data: bytes) -> Iterator[Any]:
    """The native reader as a registry reader: one trajectory, or one failure."""
    from roadcheck.ingest import ReadFailure

    try:
        yield read_native(path, data)
    except TraceError as exc:
        yield ReadFailure(path, path, exc)


def read_native(path: str, data: bytes | None = None) -> Trajectory:
    """Read and validate a native JSONL trajectory file."""
    if data is None:
        data = read_bytes(path)
    return Trajectory(id=path, events=tuple(read_events(data, path)), path=path, source="native")


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """Read a file, decompressing gzip and zstd; OS errors become a one-line :class:`TraceError`.

    Compression is recognised by the file's magic bytes, never its name, so
    every reader and format detection see the decompressed document. No JSON
    document starts with either magic. An input larger than the limit
    (:func:`roadcheck._limits.max_input_size`: 1 GiB, or ``ROADCHECK_MAX_INPUT_SIZE``),
    read or decompressed, is refused: reading stops at the limit and one byte. A batch
    that reads many files gives the ``limit`` it read once; else it is read here.
    """
    if limit is None:
        limit = max_input_size()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(fd)
            data = (_read_regular(fd, size.st_size, limit) if stat.S_ISREG(size.st_mode)
                    else _read_stream(fd, limit))
        finally:
            os.close(fd)
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}", path=path) from None
    except ValueError as exc:  # a path holding a NUL
        raise TraceError(f"cannot read: {exc}", path=path) from None
    if data is None:
        raise TraceError(too_large(limit), path=path)
    return unpack_bytes(data, path, limit)


def _read_regular(fd: int, size: int, limit: int) -> bytes | None:
    """A regular file of ``size`` bytes (by its stat) read to its end: a short read is its
    end; a file that grew since the stat (the byte asked beyond its size came) is read on,
    up to ``limit`` and a byte. None when it holds more than ``limit`` bytes."""
    if size > limit:
        return None  # its size says so: nothing is read
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    chunks = [data]
    got = len(data)
    while got <= limit and (chunk := os.read(fd, min(1 << 16, limit + 1 - got))):
        chunks.append(chunk)  # os.read allocates what it is asked for
        got += len(chunk)
    return b"".join(chunks) if got <= limit else None


def _read_stream(fd: int, limit: int) -> bytes | None:
    """Read a pipe or device to its end, waking every tenth of a second; None once it has
    given more than ``limit`` bytes (reading stops there: ``/dev/zero`` never ends).

    A Ctrl-C that lands after the last check for signals and before a blocking
    read() would be held until the writer closes; waiting in select() with a
    timeout lets the interrupt through.
    """
    import select

    chunks: list[bytes] = []
    got = 0
    while True:
        try:
            ready = select.select([fd], [], [], 0.1)[0]
        except (OSError, ValueError):  # no select() for this kind of file: a plain read
            ready = [fd]
        if ready:
            chunk = os.read(fd, min(1 << 16, limit + 1 - got))
            if not chunk:
                return b"".join(chunks)
            got += len(chunk)
            if got > limit:
                return None
            chunks.append(chunk)


def unpack_bytes(data: bytes, path: str, limit: int | None = None) -> bytes:
    """Decompress gzip or zstd ``data`` and check that what is left is UTF-8 text. What a
    file decompresses to is held to the input limit too (``limit``, else the default)."""
    if data.startswith(_ZIP_MAGIC):
        return data  # an archive (an Inspect .eval log): its reader opens it
    if data.startswith(_GZIP_MAGIC):
        data = _gunzip(data, path, max_input_size() if limit is None else limit)
    elif data.startswith(_ZSTD_MAGIC):
        data = _unzstd(data, path, max_input_size() if limit is None else limit)
    check_utf8(data, path, TraceError)
    return data


_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


_UNPACKED = "decompressed, the input"


def _gunzip(data: bytes, path: str, limit: int) -> bytes:
    """The members of a gzip file, decompressed (each member's CRC and size checked by
    zlib), refused past ``limit`` bytes: decompression stops at the limit and a byte."""
    import zlib

    out: list[bytes] = []
    got = 0
    rest = data
    try:
        while rest:  # a file may hold several members, as concatenating .gz files makes
            member = zlib.decompressobj(wbits=31)
            piece = member.decompress(rest, limit + 1 - got)
            got += len(piece)
            if got > limit:
                raise TraceError(too_large(limit, _UNPACKED), path=path)
            if not member.eof:
                raise TraceError("cannot decompress gzip: Compressed file ended before the "
                                 "end-of-stream marker was reached", path=path)
            out.append(piece)
            rest = member.unused_data.lstrip(b"\0")  # zero padding between members, as gzip
    except zlib.error as exc:
        raise TraceError(f"cannot decompress gzip: {_one_line(exc)}", path=path) from None
    return b"".join(out)


#: The most a zstd block writes for a byte of input (a run-length block: 4 bytes in, 128 KiB
#: out): input is fed in pieces that cannot write far past the limit.
_ZSTD_RATIO = 1 << 15


def _unzstd(data: bytes, path: str, limit: int) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise TraceError("cannot read zstd-compressed input without the zstandard module: "
                         "pip install 'roadcheck[zstd]'", path=path) from None
    dctx = zstandard.ZstdDecompressor()
    out: list[bytes] = []
    got = pos = 0
    view = memoryview(data)
    try:
        while pos < len(data):  # several frames, as concatenating .zst files makes
            frame = dctx.decompressobj()
            while pos < len(data) and not frame.eof:
                step = max(1 << 10, min(1 << 20, (limit - got) // _ZSTD_RATIO))
                piece = frame.decompress(view[pos:pos + step])
                pos += step
                got += len(piece)
                if got > limit:
                    raise TraceError(too_large(limit, _UNPACKED), path=path)
                out.append(piece)
            if not frame.eof:
                raise TraceError("cannot decompress zstd: the stream is truncated", path=path)
            pos = min(pos, len(data)) - len(frame.unused_data)  # the next frame starts there
    except zstandard.ZstdError as exc:
        raise TraceError(f"cannot decompress zstd: {_one_line(exc)}", path=path) from None
    return b"".join(out)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
