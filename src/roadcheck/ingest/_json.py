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
from typing import Any

import orjson

from roadcheck.errors import TraceError

__all__ = [
    "DuplicateKey",
    "EmbeddedDuplicate",
    "check_document",
    "check_line",
    "decode_embedded",
    "find_duplicate",
    "message",
    "no_duplicate_keys",
    "object_line",
    "pairs_hook",
    "repeated_key",
]


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
        return None  # the first reading decides what is valid JSON
    return None


def message(key: str) -> str:
    """The one-line error for a repeated key."""
    return (f"duplicate key {key!r} in one object: JSON readers disagree on which value "
            "counts, so the record is refused")


def no_duplicate_keys(data: bytes, decoded: Any) -> bool:
    """True when ``data`` (decoded by orjson into ``decoded``) repeats no key in any object.

    A cheap sufficient test, exact when it says True. Every key written has
    exactly one colon after it, and any other colon sits inside a string. No
    escape but ``\\u003a`` stands for a colon, so without one every decoded
    string holds as many colons as it was written with, and orjson writes them
    back raw: re-encoding ``decoded`` gives one colon per key it kept plus the
    colons of the strings it kept. A repeated key drops a key (and one value),
    so equal colon counts mean nothing was dropped. False means "look closer".

    Cheaper still, and tried first: when the re-encoding is ``data`` itself (a compact
    line as Claude Code, Codex and most exporters write it), ``data`` is text orjson
    wrote, and orjson never writes a key twice; one comparison of bytes says so.
    """
    try:
        written = orjson.dumps(decoded)
    except orjson.JSONEncodeError:
        return False
    if written == data:
        return True
    if b"\\" in data and (b"\\u003a" in data or b"\\u003A" in data):
        return False
    return data.count(b":") == written.count(b":")


def repeated_key(raw: bytes, rec: Any) -> str | None:
    """The key the JSON line ``raw`` (decoded by orjson as ``rec``) repeats, or None (exact)."""
    if no_duplicate_keys(raw, rec):
        return None
    return find_duplicate(raw)


def object_line(raw: bytes, what: str) -> dict[str, Any]:
    """One line of a JSON-lines file that must be an object, decoded with no key given
    twice. Raises ``ValueError`` with the one-line reason: ``unparseable JSON: ...``, the
    repeated key, or ``{what} is a JSON object, got list``; the reader adds the line."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"unparseable JSON: {exc.msg}") from None
    key = repeated_key(raw, obj)
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


def decode_embedded(raw: Any, field: str) -> Any:
    """The value of a field that carries JSON as text, such as a tool call's arguments.

    A string is decoded (a blank one is ``{}``); a string that is not JSON is
    kept as it is (the call was made, whatever its arguments were); ``None`` is
    ``{}``; anything else is returned unchanged. A decoded object that repeats a
    key raises :class:`EmbeddedDuplicate` naming ``field``: two JSON readers would
    read different arguments from it. The outer line's check cannot see inside a
    string, so every reader that decodes such a field calls this.

    Cheap: text with fewer than two colons cannot hold two keys, and otherwise
    the colon count of :func:`no_duplicate_keys` decides before any exact reading
    (for a flat object, counted from the decoded keys and strings without
    re-encoding them).
    """
    if type(raw) is not str:
        return {} if raw is None else raw
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw if raw.strip() else {}
    colons = raw.count(":")
    if colons < 2:
        return value  # two keys need two colons
    kept = -1
    if type(value) is dict:
        # a flat object (most arguments): one colon per key kept, plus those in its text
        kept = len(value)
        for k, v in value.items():
            if ":" in k:
                kept += k.count(":")
            t = type(v)
            if t is str:
                if ":" in v:
                    kept += v.count(":")
            elif t is dict or t is list:
                kept = -1
                break
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
    """Raise :class:`TraceError` when the JSONL line ``raw`` (decoded as ``rec``) repeats a key."""
    if no_duplicate_keys(raw, [rec]):
        return
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


def check_document(data: bytes, decoded: Any, path: str | None = None) -> None:
    """Raise :class:`TraceError` naming the key and line when ``data`` repeats a key.

    ``decoded`` is what orjson made of ``data``; the cheap test runs first and
    the exact re-reading only when it cannot rule a repeated key out.
    """
    if no_duplicate_keys(data, decoded):
        return
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
        if raw.strip():
            yield n, raw

