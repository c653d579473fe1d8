"""Duplicate JSON keys: refused by every reader, found cheaply on the hot path.

A JSON object with a key twice (``{"seq": 1, "seq": 9}``) means whatever the
parser decides: orjson and the standard library keep the last value, other
tools the first. A gate must not judge a record two readers would read
differently, so every trace reader refuses it as ``bad-input`` naming the key
and the line.

orjson cannot report duplicates, so the readers decode with orjson (fast and
strict) and then count (:func:`no_duplicate_keys`): every key written has one
colon after it, so when a file has as many colons as orjson writes back for
what it decoded, no key was lost. That costs one re-encoding and two byte
counts in C, a few per cent of a replay. Only a file where the counts differ
(or cannot be compared) is re-read exactly by :func:`find_duplicate` (the
standard library's parser with a hook that sees every key), which also names
the key and, through :func:`check_line` or :func:`check_document`, the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import orjson

from roadcheck.errors import TraceError

__all__ = [
    "MAX_DEPTH",
    "DuplicateKey",
    "EmbeddedDuplicate",
    "EmbeddedTooDeep",
    "check_document",
    "check_line",
    "decode_embedded",
    "deep_line",
    "depth_refused",
    "find_duplicate",
    "fits",
    "message",
    "no_duplicate_keys",
    "object_line",
    "pairs_hook",
    "repeated_key",
    "too_deep",
]


#: The deepest nesting of arrays and objects a reader takes, the outermost of a line (or of
#: a document) counted as 1 (docs/formats.md). orjson decodes 1,024 levels but encodes at
#: most 254, and the judge and the reports encode what was read, a report inside a level
#: or two of its own: 250 leaves them room.
MAX_DEPTH = 250


def too_deep() -> str:
    """The one-line error for JSON nested deeper than :data:`MAX_DEPTH`; the reader adds the
    line (and, for JSON text held in a field, the field)."""
    return (f"nested more than {MAX_DEPTH} levels deep (arrays and objects), the limit for "
            "every reader")


def depth_refused(data: bytes, exc: orjson.JSONDecodeError) -> int | None:
    """The line where ``data`` nests more than :data:`MAX_DEPTH` deep when that is why
    orjson refused it (past its own 1,024 levels), else None: the reader then says
    :func:`too_deep` rather than the parser's words."""
    if not _depth_words(exc):
        return None
    return deep_line(data, end=exc.pos + 1)


def _depth_words(exc: orjson.JSONDecodeError) -> bool:
    """True when orjson says it refused the JSON for its depth (only then is it scanned)."""
    msg = exc.msg.lower()
    return "depth" in msg or "recursion" in msg


def _nest(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


@cache
def _encoder_limit() -> int | None:
    """The nesting orjson's encoder refuses (255 levels), or None when it refuses another
    (then :func:`fits` walks the value instead)."""
    try:
        orjson.dumps(_nest(1, 254))
    except orjson.JSONEncodeError:
        return None
    try:
        orjson.dumps(_nest(1, 255))
    except orjson.JSONEncodeError:
        return 255
    return None


def _depth(value: Any, most: int) -> int:
    """The nesting of ``value`` (no recursion), or a number above ``most`` once it passes it."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        t = type(item)
        if t is dict:
            children: Any = item.values()
        elif t is list or t is tuple:
            children = item
        else:
            continue
        if level > deepest:
            deepest = level
            if deepest > most:
                return deepest
        stack.extend((c, level + 1) for c in children if type(c) in (dict, list, tuple))
    return deepest


def _padding(levels: int) -> int | None:
    """How many lists around a value make orjson refuse it exactly when it nests more
    than ``levels`` deep; None when the encoder's limit is not the one known."""
    limit = _encoder_limit()
    return None if limit is None else limit - 1 - levels


def fits(value: Any, levels: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests at most ``levels`` arrays and objects deep (exact).

    The C encoder counts (orjson refuses 255 levels: the value is wrapped so that
    it refuses one more than ``levels``); only a value it refuses is walked here.
    """
    pad = _padding(levels)
    if pad is not None and pad >= 0:
        try:
            orjson.dumps(_nest(value, pad))
            return True
        except orjson.JSONEncodeError:
            pass  # too deep, or something else orjson will not encode: counted exactly
    return _depth(value, levels) <= levels


def deep_line(data: bytes, levels: int = MAX_DEPTH, end: int | None = None) -> int | None:
    """The line of ``data`` (JSON text, one value or several; up to ``end``) where its
    nesting first passes ``levels``, or None. A scan of its brackets outside strings: the
    rare path."""
    from roadcheck.ingest._scan import _TOKEN

    level = 0
    for m in _TOKEN.finditer(data, 0, len(data) if end is None else end):
        first = m.group()[0]
        if first == 0x7B or first == 0x5B:  # { [
            level += 1
            if level > levels:
                return data.count(b"\n", 0, m.start()) + 1
        elif first == 0x7D or first == 0x5D:  # } ]
            level -= 1
    return None


class DuplicateKey(ValueError):
    """Raised by :func:`pairs_hook` at the first key an object repeats."""

    def __init__(self, key: str) -> None:
        super().__init__(message(key))
        self.key = key


def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` for the standard library's parser that refuses repeats."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return obj


def find_duplicate(data: bytes | str) -> str | None:
    """The first key that appears twice in one object of ``data``, or None (exact).

    ``data`` must already have been decoded once (by orjson): this is a second
    reading for duplicates only.
    """
    import json  # the exact reading is the rare path; the hot path needs no json module

    try:
        json.loads(data, object_pairs_hook=pairs_hook)
    except DuplicateKey as dup:
        return dup.key
    except (ValueError, RecursionError):
        return None  # the first reading decides what is valid JSON (and how deep it is)
    return None


def message(key: str) -> str:
    """The one-line error for a repeated key."""
    return (f"duplicate key {key!r} in one object: JSON readers disagree on which value "
            "counts, so the record is refused")


def no_duplicate_keys(data: bytes, decoded: Any, outer: int = 0) -> bool:
    """True when ``data`` (decoded by orjson into ``decoded``) repeats no key in any object.

    A cheap sufficient test, exact when it says True. Every key written has
    exactly one colon after it, and any other colon sits inside a string. No
    escape but ``\\u003a`` stands for a colon, so without one every decoded
    string holds as many colons as it was written with, and orjson writes them
    back raw: re-encoding ``decoded`` gives one colon per key it kept plus the
    colons of the strings it kept. A repeated key drops a key (and one value),
    so equal colon counts mean nothing was dropped. False means "look closer".

    ``decoded`` is also encoded wrapped, so that orjson refuses it when it nests
    more than :data:`MAX_DEPTH` deep: False then too, and the exact checks
    (:func:`check_line`, :func:`check_document`) refuse it. A caller whose
    ``decoded`` sits ``outer`` levels inside its document says so.

    Cheaper still, and tried first: when the re-encoding is ``data`` itself (a compact
    line as Claude Code, Codex and most exporters write it), ``data`` is text orjson
    wrote, and orjson never writes a key twice; one comparison of bytes says so. A
    JSON-lines file is read as the list of its lines' values: when ``decoded`` is a list
    and ``data``, its newlines written as commas (the one that ends the last line
    dropped), is the re-encoding inside its brackets, the file is compact lines orjson
    could have written. Commas for newlines change no colon and no ``\\u003a``, so this
    too says True only where the colon count would.
    """
    pad = max(_padding(MAX_DEPTH - outer) or 0, 0)
    try:
        written = orjson.dumps(_nest(decoded, pad))  # in ``pad`` lists: "[" x pad, "]" x pad
    except orjson.JSONEncodeError:
        return False
    # 2 for JSON lines (the brackets), 1 if the last ends; below 0 for spaced JSON, which
    # is never sliced: the lists' brackets hold no colon
    short = len(written) - 2 * pad - len(data)
    if short == 0 and memoryview(written)[pad:len(written) - pad] == data:
        return True
    if (type(decoded) is list and (short == 2 or (short == 1 and data.endswith(b"\n")))
            and data.replace(b"\n", b",").startswith(
                memoryview(written)[pad + 1:len(written) - pad - 1])):
        return True  # compact JSON lines: only their lengths are compared when spaced
    if b"\\" in data and (b"\\u003a" in data or b"\\u003A" in data):
        return False
    return data.count(b":") == written.count(b":")


def repeated_key(raw: bytes, rec: Any) -> str | None:
    """The key the JSON line ``raw`` (decoded by orjson as ``rec``) repeats, or None (exact)."""
    if no_duplicate_keys(raw, rec):
        return None
    return find_duplicate(raw)


def _written_so(raw: bytes, obj: dict[str, Any]) -> bool:
    """True when the line ``raw`` is byte for byte what orjson writes for ``obj`` (its
    decoding), within :data:`MAX_DEPTH`: what :func:`no_duplicate_keys` says True for first
    (``obj`` as the one value of a JSON-lines file), found with one encoding and one
    comparison, copying neither. A compact line as Claude Code and Codex write it; any
    other line is left to :func:`no_duplicate_keys`."""
    wrap = _LINE_WRAP
    if wrap < 1:
        return False
    try:
        written = orjson.dumps(_nest(obj, wrap))
    except orjson.JSONEncodeError:
        return False  # too deep, or not JSON orjson writes: the exact checks say which
    return len(written) == len(raw) + 2 * wrap and written.startswith(raw, wrap)


#: The lists :func:`no_duplicate_keys` wraps a JSON-lines file's values in (its list of
#: them, then the padding), or 0 when the encoder's limit is not the one known.
_LINE_PAD = _padding(MAX_DEPTH)
_LINE_WRAP = 0 if _LINE_PAD is None or _LINE_PAD < 0 else _LINE_PAD + 1


def object_line(raw: bytes, what: str) -> dict[str, Any]:
    """One line of a JSON-lines file that must be an object, decoded with no key given
    twice and nested at most :data:`MAX_DEPTH` deep. Raises ``ValueError`` with the one-line
    reason: ``unparseable JSON: ...``, the repeated key, the depth, or ``{what} is a JSON
    object, got list``; the reader adds the line."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if depth_refused(raw, exc) is not None:
            raise ValueError(too_deep()) from None
        raise ValueError(f"unparseable JSON: {exc.msg}") from None
    if obj.__class__ is dict and _written_so(raw, obj):
        return obj
    if not no_duplicate_keys(raw, [obj]):
        if not fits(obj):
            raise ValueError(too_deep())
        key = find_duplicate(raw)
        if key is not None:
            raise ValueError(message(key))
    if not isinstance(obj, dict):
        raise ValueError(f"{what} is a JSON object, got {type(obj).__name__}")
    return obj


class EmbeddedDuplicate(ValueError):
    """A JSON string field (tool arguments) holds an object that repeats a key.

    The message names the field and the key; the reader adds the file, the line
    and the record it was reading.
    """

    def __init__(self, field: str, key: str) -> None:
        super().__init__(f"{field!r} holds JSON with a {message(key)}")
        self.field, self.key = field, key


class EmbeddedTooDeep(EmbeddedDuplicate):
    """A JSON string field holds a value nested more than :data:`MAX_DEPTH` deep.

    A kind of :class:`EmbeddedDuplicate` (JSON text a reader refuses), so every reader
    that catches that one, for the field and the record it names, refuses this too.
    """

    def __init__(self, field: str) -> None:
        ValueError.__init__(self, f"{field!r} holds JSON {too_deep()}")
        self.field, self.key = field, ""


def _flat_colons(value: dict[str, Any]) -> int:
    """The colons a flat object (most arguments) is written with: one a key, plus those in
    its keys and strings; -1 when a value is an array or an object."""
    kept = len(value)
    for k, v in value.items():
        if ":" in k:
            kept += k.count(":")
        t = type(v)
        if t is str:
            if ":" in v:
                kept += v.count(":")
        elif t is dict or t is list:
            return -1
    return kept


def decode_embedded(raw: Any, field: str) -> Any:
    """The value of a field that carries JSON as text, such as a tool call's arguments.

    A string is decoded (a blank one is ``{}``); a string that is not JSON is
    kept as it is (the call was made, whatever its arguments were); ``None`` is
    ``{}``; anything else is returned unchanged. A decoded object that repeats a
    key raises :class:`EmbeddedDuplicate` naming ``field``: two JSON readers would
    read different arguments from it. The outer line's check cannot see inside a
    string, so every reader that decodes such a field calls this. A decoded value nested
    more than :data:`MAX_DEPTH` deep raises :class:`EmbeddedTooDeep` (also an
    :class:`EmbeddedDuplicate`).

    Cheap: text with fewer than two colons cannot hold two keys, and otherwise
    the colon count of :func:`no_duplicate_keys` decides before any exact reading
    (for a flat object, counted from the decoded keys and strings without
    re-encoding them).
    """
    if type(raw) is not str:
        return {} if raw is None else raw
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if _depth_words(exc) and deep_line(raw.encode("utf-8", "surrogatepass")) is not None:
            raise EmbeddedTooDeep(field) from None  # past orjson's own limit
        return raw if raw.strip() else {}
    if len(raw) > MAX_DEPTH and raw.count("[") + raw.count("{") > MAX_DEPTH and not fits(
            value):  # text shorter than the limit cannot open more than it
        raise EmbeddedTooDeep(field)
    colons = raw.count(":")
    if colons < 2:
        return value  # two keys need two colons
    kept = -1
    if type(value) is dict:
        kept = _flat_colons(value)
    elif type(value) is not list:
        return value
    if kept < 0:
        kept = orjson.dumps(value).count(b":")
    if kept != colons or ("\\" in raw and ("\\u003a" in raw or "\\u003A" in raw)):
        key = find_duplicate(raw)
        if key is not None:
            raise EmbeddedDuplicate(field, key)
    return value


def check_line(raw: bytes, rec: Any, line: int, path: str | None) -> None:
    """Raise :class:`TraceError` when the JSONL line ``raw`` (decoded as ``rec``) repeats a
    key, or nests more than :data:`MAX_DEPTH` deep."""
    if no_duplicate_keys(raw, [rec]):
        return
    if not fits(rec):
        raise TraceError(too_deep(), path=path, line=line)
    key = find_duplicate(raw)
    if key is not None:
        raise TraceError(message(key), path=path, line=line)




def _line_of(data: bytes, key: str) -> int | None:
    """The line where ``key`` appears for the second time in one object."""
    import json

    from roadcheck.ingest._scan import _COLON, _TOKEN  # compiled only where a key repeats

    stack: list[set[str] | None] = []
    for m in _TOKEN.finditer(data):
        tok = m.group()
        if tok == b"{":
            stack.append(set())
        elif tok == b"[":
            stack.append(None)
        elif tok in (b"}", b"]"):
            if stack:
                stack.pop()
        elif stack and stack[-1] is not None and _COLON.match(data, m.end()):
            keys = stack[-1]
            name = json.loads(tok)
            if name == key and name in keys:
                return data.count(b"\n", 0, m.start()) + 1
            keys.add(name)
    return None


def check_document(data: bytes, decoded: Any, path: str | None = None, *,
                   values: bool = False) -> None:
    """Raise :class:`TraceError` naming the key and line when ``data`` repeats a key, or
    naming the line where it nests more than :data:`MAX_DEPTH` deep.

    ``decoded`` is what orjson made of ``data``; the cheap test runs first and
    the exact re-reading only when it cannot rule a repeated key out. ``values``: the
    document is JSON values one after another, and ``decoded`` the list of them (a list
    the file does not write, so not a level of its nesting).
    """
    if no_duplicate_keys(data, decoded, -1 if values else 0):
        return
    if not fits(decoded, MAX_DEPTH + 1 if values else MAX_DEPTH):
        raise TraceError(too_deep(), path=path, line=deep_line(data))
    key = find_duplicate(data)
    if key is not None:
        raise TraceError(message(key), path=path, line=_line_of(data, key))


def lines_of(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each line of ``data`` holding more than blanks.

    One line is copied at a time: ``data.split`` would hold a second copy of
    the whole file while it is read.
    """
    pos, n, size = 0, 0, len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        if end < 0:
            end = size
        n += 1
        raw = data[pos:end]
        pos = end + 1
        if raw and not raw.isspace():  # not blank (no copy of the line to tell)
            yield n, raw

