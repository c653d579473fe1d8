"""Mutations of valid documents, and a strict reference reader to judge what they made.

A mutation takes the bytes of a valid seed document and returns new bytes and a
one-line description. Two families:

- **tree mutations** parse the seed, change one node and write the document
  back: delete a key, rename a key (a typo: a letter dropped, swapped or
  doubled), change a value's type (string, number, bool, null, list, object,
  huge ints, ``1e309``, negative, empty, very long), duplicate a key with a
  different value, or put another value of the document in a string's place;
- **text mutations** work on the raw bytes: truncate at a line boundary or at
  a byte, insert control or bidi characters, swap, duplicate or delete a line,
  insert bytes that are not UTF-8.

Whether a mutation made the document *invalid* is never guessed from the
mutation's name: the mutated bytes are read back by :func:`parse` (strict
UTF-8, strict JSON, duplicate keys refused, YAML's own rules) and checked by a
surface's reference check (see ``surfaces.py``). Everything here is
deterministic in the ``random.Random`` it is given.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Mutation",
    "Pairs",
    "Raw",
    "Unparseable",
    "dump",
    "mutate",
    "parse",
]

Path = tuple[str | int, ...]


class Unparseable(Exception):
    """The bytes are not a document of their format (torn, not UTF-8, a duplicate key...)."""


class Raw:
    """A number written verbatim (``1e309``), so the reader sees exactly that text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class Pairs(list[tuple[str, Any]]):
    """An object written as key/value pairs in order; lets a key occur twice."""


@dataclass(frozen=True)
class Mutation:
    """One mutated document: its bytes and what was done to the seed."""

    data: bytes
    op: str
    detail: str


# ---------------------------------------------------------------- strict reading


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise Unparseable(f"duplicate key {dup!r}")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise Unparseable(f"{name} is not JSON")


def parse_json(data: bytes) -> Any:
    """Strict JSON: UTF-8, no raw control characters, no duplicate keys, no NaN."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unparseable(f"not UTF-8: {exc}") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise Unparseable(str(exc)) from None


def parse_jsonl(data: bytes) -> list[Any]:
    """One strict JSON value per non-blank line."""
    out = []
    for line in data.split(b"\n"):
        if line.strip():
            out.append(parse_json(line))
    return out


def _yaml_loader() -> type:
    import yaml

    class Strict(yaml.SafeLoader):
        pass

    def mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise Unparseable("an unhashable mapping key") from None
            if key in out:
                raise Unparseable(f"duplicate key {key!r}")
            out[key] = loader.construct_object(value_node, deep=deep)
        return out

    Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Strict


_LOADER: type | None = None


def parse_yaml(data: bytes) -> Any:
    """YAML as PyYAML's safe loader reads it, with duplicate keys refused."""
    global _LOADER
    import yaml

    if _LOADER is None:
        _LOADER = _yaml_loader()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unparseable(f"not UTF-8: {exc}") from None
    try:
        return yaml.load(data, Loader=_LOADER)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise Unparseable(str(exc).splitlines()[0]) from None
    except (ValueError, RecursionError, OverflowError) as exc:
        # PyYAML's timestamp constructor raises on dates out of range
        raise Unparseable(str(exc)) from None


def parse(data: bytes, fmt: str) -> Any:
    """Read ``data`` as ``fmt`` (``json``, ``jsonl`` or ``yaml``); :class:`Unparseable` if not."""
    if fmt == "json":
        return parse_json(data)
    if fmt == "jsonl":
        return parse_jsonl(data)
    return parse_yaml(data)


# ---------------------------------------------------------------- writing back


def _scalar(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, (_dt.datetime, _dt.date)):
        return json.dumps(value.isoformat().replace("+00:00", "Z"))
    if isinstance(value, float) and not math.isfinite(value):
        return "1e309" if value > 0 else "-1e309"
    return json.dumps(value, ensure_ascii=False)


def _emit(value: Any, indent: int | None, depth: int) -> str:
    if isinstance(value, dict):
        value = Pairs(value.items())
    if isinstance(value, Pairs):
        items = [f"{json.dumps(str(k), ensure_ascii=False)}: {_emit(v, indent, depth + 1)}"
                 for k, v in value]
        return _join("{", items, "}", indent, depth)
    if isinstance(value, list):
        return _join("[", [_emit(v, indent, depth + 1) for v in value], "]", indent, depth)
    return _scalar(value)


def _join(open_: str, items: list[str], close: str, indent: int | None, depth: int) -> str:
    if not items:
        return open_ + close
    if indent is None:
        return open_ + ", ".join(items) + close
    pad = " " * (indent * (depth + 1))
    return open_ + "\n" + ",\n".join(pad + i for i in items) + "\n" + " " * (indent * depth) + close


def dump(tree: Any, fmt: str) -> bytes:
    """Write a (possibly mutated) tree back as ``fmt``; YAML is written in its JSON form."""
    if fmt == "jsonl":
        return "".join(_emit(line, None, 0) + "\n" for line in tree).encode("utf-8")
    return (_emit(tree, 2, 0) + "\n").encode("utf-8")


# ---------------------------------------------------------------- tree mutations


def _nodes(tree: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    yield path, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, (*path, i))


def _get(tree: Any, path: Path) -> Any:
    for p in path:
        tree = tree[p]
    return tree


def _copy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _copy(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_copy(v) for v in tree]
    return tree


def _where(path: Path) -> str:
    return ".".join(str(p) for p in path) or "<root>"


def typo(rng: random.Random, key: str) -> str:
    """A misspelling of ``key``: one letter dropped, two swapped, or one doubled."""
    if len(key) < 2:
        return key + key
    i = rng.randrange(len(key))
    how = rng.choice(("drop", "swap", "double"))
    if how == "drop":
        return key[:i] + key[i + 1:]
    if how == "swap" and i + 1 < len(key) and key[i] != key[i + 1]:
        return key[:i] + key[i + 1] + key[i] + key[i + 2:]
    return key[:i] + key[i] + key[i:]


def _retyped(rng: random.Random, old: Any) -> Any:
    """A value of another type (or an edge value of a number or string) in place of ``old``."""
    options: list[Any] = [
        "", "x" * 10_000, 0, -1, 1.5, 10**30, 2**63, Raw("1e309"), Raw("-1e309"),
        True, False, None, [], {}, [old], {"value": old}, "true", "5", "-1",
    ]
    if isinstance(old, (int, float)) and not isinstance(old, bool):
        options += [str(old), -abs(old) - 1, old * 10**20]
    if isinstance(old, str):
        options += [old.upper(), old + " ", f"{old}{old}", " " * len(old)]
    if isinstance(old, bool):
        options += [str(old).lower(), int(old)]
    fresh = [o for o in options if not _same(o, old)]
    return rng.choice(fresh)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Raw) or isinstance(b, Raw):
        return False
    return type(a) is type(b) and a == b


def tree_mutation(rng: random.Random, tree: Any, fmt: str) -> tuple[Any, str, str] | None:
    """Change one node of ``tree`` (a fresh copy); ``None`` when the tree has no such node."""
    tree = _copy(tree)
    nodes = list(_nodes(tree))
    objects = [(p, n) for p, n in nodes if isinstance(n, dict) and n]
    inner = [(p, n) for p, n in nodes if p]
    op = rng.choice(("delete_key", "rename_key", "retype", "retype", "duplicate_key",
                     "other_value"))
    if op in ("delete_key", "rename_key", "duplicate_key"):
        if not objects:
            return None
        path, obj = rng.choice(objects)
        key = rng.choice(list(obj))
        if op == "delete_key":
            del obj[key]
            return tree, op, f"deleted {_where((*path, key))}"
        if op == "rename_key":
            new = typo(rng, str(key))
            if new in obj:
                return None
            rebuilt = {(new if k == key else k): v for k, v in obj.items()}
            _replace(tree, path, rebuilt)
            return _root(tree, path, rebuilt), op, f"renamed {_where((*path, key))} to {new!r}"
        other = _retyped(rng, obj[key])
        pairs = Pairs()
        first = rng.random() < 0.5
        for k, v in obj.items():
            if k == key and first:
                pairs.append((k, other))
            pairs.append((k, v))
            if k == key and not first:
                pairs.append((k, other))
        _replace(tree, path, pairs)
        return (_root(tree, path, pairs), op,
                f"duplicated {_where((*path, key))} ({'before' if first else 'after'})")
    if not inner:
        return None
    path, old = rng.choice(inner)
    if op == "retype":
        new = _retyped(rng, old)
        _replace(tree, path, new)
        shown = repr(new) if len(repr(new)) < 40 else repr(new)[:37] + "..."
        return _root(tree, path, new), op, f"{_where(path)}: {old!r:.40} -> {shown}"
    strings = sorted({n for _, n in nodes if isinstance(n, str) and n != old})
    if not isinstance(old, str) or not strings:
        return None
    new = rng.choice(strings)
    _replace(tree, path, new)
    return _root(tree, path, new), op, f"{_where(path)}: {old!r:.40} -> {new!r:.40}"


def _replace(tree: Any, path: Path, value: Any) -> None:
    if path:
        _get(tree, path[:-1])[path[-1]] = value


def _root(tree: Any, path: Path, value: Any) -> Any:
    return value if not path else tree


# ---------------------------------------------------------------- text mutations

_CONTROLS = [chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)]
_CONTROLS += ["\x1b[2J", "\x1b]0;title\x07", "\r", "\u0085", "\u009b"]
_BIDI = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u061c"]
_NOT_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\x80", b"\xf8\x88\x80\x80\x80"]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _char_insert(rng: random.Random, data: bytes, piece: str) -> tuple[bytes, int]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pos = rng.randrange(len(data) + 1)
        return data[:pos] + piece.encode("utf-8") + data[pos:], pos
    # prefer a place inside a quoted string or a value, where a reader keeps it
    quotes = [m.end() for m in re.finditer(r'"[^"\n]', text)]
    pos = rng.choice(quotes) if quotes and rng.random() < 0.7 else rng.randrange(len(text) + 1)
    return (text[:pos] + piece + text[pos:]).encode("utf-8"), pos


def text_mutation(rng: random.Random, data: bytes) -> tuple[bytes, str, str] | None:
    """Change the raw bytes of a document; ``None`` when the document is too small."""
    if len(data) < 2:
        return None
    lines = _lines(data)
    op = rng.choice(("truncate_line", "truncate_byte", "control", "bidi", "swap_lines",
                     "duplicate_line", "delete_line", "not_utf8"))
    if op == "truncate_line":
        if len(lines) < 2:
            return None
        keep = rng.randrange(1, len(lines))
        return b"".join(lines[:keep]), op, f"kept the first {keep} of {len(lines)} lines"
    if op == "truncate_byte":
        cut = rng.randrange(1, len(data))
        return data[:cut], op, f"kept the first {cut} of {len(data)} bytes"
    if op in ("control", "bidi"):
        piece = rng.choice(_CONTROLS if op == "control" else _BIDI)
        out, pos = _char_insert(rng, data, piece)
        return out, op, f"inserted {piece!r} at character {pos}"
    if op == "not_utf8":
        piece = rng.choice(_NOT_UTF8)
        pos = rng.randrange(len(data) + 1)
        return data[:pos] + piece + data[pos:], op, f"inserted {piece!r} at byte {pos}"
    if len(lines) < 2:
        return None
    i = rng.randrange(len(lines))
    if op == "swap_lines":
        j = rng.randrange(len(lines))
        if i == j or lines[i] == lines[j]:
            return None
        lines[i], lines[j] = lines[j], lines[i]
        detail = f"swapped lines {min(i, j) + 1} and {max(i, j) + 1}"
    elif op == "duplicate_line":
        lines.insert(i, lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n")
        detail = f"duplicated line {i + 1}"
    else:
        del lines[i]
        detail = f"deleted line {i + 1}"
    return b"".join(lines), op, detail


def mutate(rng: random.Random, data: bytes, fmt: str,
           parsed: Callable[[], Any] | None = None) -> Mutation:
    """One mutation of ``data`` (a ``json``, ``jsonl`` or ``yaml`` document), never a no-op."""
    try:
        tree = parsed() if parsed is not None else parse(data, fmt)
    except Unparseable:
        tree = None  # a seed that is itself malformed gets text mutations only
    for _ in range(50):
        if tree is not None and rng.random() < 0.55:
            done = tree_mutation(rng, tree, fmt)
            if done is None:
                continue
            new_tree, op, detail = done
            out = dump(new_tree, fmt)
        else:
            text = text_mutation(rng, data)
            if text is None:
                continue
            out, op, detail = text
        if out != data:
            return Mutation(out, op, detail)
    return Mutation(data[: len(data) // 2], "truncate_byte", "kept the first half")
