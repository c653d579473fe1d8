"""Reading a document: its bytes and their sha256, JSON or YAML decoded with duplicate keys
refused, and a problem found in it turned into one located error.

The typed conversion (:mod:`roadcheck.documents.loader`) is left out, and msgspec with
it: a caller that checks a plain document itself (the replay spec, see
:mod:`roadcheck.conformance.spec`) loads only this.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from roadcheck._digest import sha256_hex
from roadcheck.errors import InputError, SpecError

__all__ = ["Loc", "Problem", "decode", "located", "normalize_sha256", "problems",
           "read_document", "suggest", "where"]

Loc = tuple[str | int, ...]
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"


class Problem(Exception):
    """One problem at one place of a document; ``at`` is where its line is looked up."""

    def __init__(self, loc: Loc, message: str, at: Loc | None = None) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message
        self.at = loc if at is None else at


def suggest(name: str, names: list[str]) -> str | None:
    """The valid name closest to a misspelt one, or None (every reader of a document or a
    record that knows its keys names the closest one the same way)."""
    lowered = {n.lower(): n for n in names}
    if name.lower() in lowered:
        return lowered[name.lower()]
    import difflib

    found = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return found[0] if found else None


def where(loc: Loc) -> str:
    """``mandatory_checkpoints.0.scope``: a location as people write it."""
    return ".".join(str(p) for p in loc)


def located(problem: Problem, what: str, source: str | None,
            error: type[InputError] = SpecError) -> InputError:
    """The one-line error for a problem: ``FILE:LINE: unusable WHAT: FIELD: message``."""
    line = None
    if source is not None:
        import os

        if os.path.isfile(source):
            from roadcheck._docs import line_of

            line = line_of(source, problem.at)
    text = f"{where(problem.loc)}: {problem.message}" if problem.loc else problem.message
    return error(f"unusable {what}: {text}", path=source, line=line)


@contextmanager
def problems(what: str, source: str | None,
             error: type[InputError] = SpecError) -> Iterator[None]:
    """Turn a :class:`Problem` raised inside the block into the located one-line error."""
    try:
        yield
    except Problem as p:
        raise located(p, what, source, error) from None


# ---------------------------------------------------------------- bytes

def normalize_sha256(text: str) -> str:
    """Lowercase hex of a pinned sha256 (``sha256:`` prefix allowed); ValueError if malformed."""
    value = text.strip().lower().removeprefix("sha256:")
    if not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ValueError(f"{text!r} is not a sha256 (64 hex digits)")
    return value


def read_document(path: str, what: str, error: type[InputError] = SpecError,
                  expect_sha256: str | None = None) -> tuple[bytes, str]:
    """The bytes of a document and their sha256; a pinned sha256 that differs is an error,
    and so is a document larger than the input limit (:mod:`roadcheck._limits`)."""
    from roadcheck._limits import max_input_size, too_large

    limit = max_input_size()
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)  # /dev/zero never ends: reading stops past the limit
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}", path=path) from None
    if len(data) > limit:
        raise error(too_large(limit, f"the {what}"), path=path)
    digest = sha256_hex(data)
    if expect_sha256 is not None:
        try:
            want = normalize_sha256(expect_sha256)
        except ValueError as exc:
            raise error(str(exc), path=path) from None
        if digest != want:
            raise error(f"the {what} is not the pinned one: its sha256 is {digest}, "
                        f"expected {want}", path=path)
    return data, digest


# ---------------------------------------------------------------- decoding

class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int | None = None, first: int | None = None) -> None:
        super().__init__(key)
        self.key = key
        self.line = line
        self.first = first


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def decode(data: bytes, path: str, what: str, error: type[InputError] = SpecError) -> Any:
    """Decode a JSON (``.json``) or YAML document, refusing duplicate keys."""
    from roadcheck._text_check import check_utf8

    check_utf8(data, path, error)
    if not data.strip():
        raise error("empty document", path=path)
    if path.endswith(".json"):
        import json

        try:
            # strictly: the standard library would let an encoded surrogate through; a
            # leading BOM dropped as "utf-8-sig" drops it (its error positions counted
            # after the BOM alike), without importing that codec at every start
            text = (data[3:] if data.startswith(b"\xef\xbb\xbf") else data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"not UTF-8 text (byte {exc.start})", path=path,
                        line=data.count(b"\n", 0, exc.start) + 1) from None
        try:
            return json.loads(text, object_pairs_hook=_pairs, parse_constant=_not_json)
        except _DuplicateKey as dup:
            line, first = _duplicate_lines(data, dup.key)
            raise error(f"unusable {what}: duplicate key {dup.key!r}"
                        + (f" (first at line {first})" if first else ""),
                        path=path, line=line) from None
        except json.JSONDecodeError as exc:
            raise error(f"invalid JSON: {exc.msg} at column {exc.colno}", path=path,
                        line=exc.lineno) from None
        except (ValueError, RecursionError) as exc:
            raise error(f"invalid JSON: {exc}", path=path) from None
    return _decode_yaml(data, path, what, error)


def _decode_yaml(data: bytes, path: str, what: str, error: type[InputError]) -> Any:
    import yaml

    try:
        return yaml.load(data, Loader=_yaml_loader())  # a safe loader, see _yaml_loader
    except _DuplicateKey as dup:
        raise error(f"unusable {what}: duplicate key {dup.key!r} (first at line {dup.first})",
                    path=path, line=dup.line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise error(f"invalid YAML: {exc.problem}", path=path,
                    line=None if mark is None else mark.line + 1) from None
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {exc}", path=path) from None
    except (ValueError, RecursionError) as exc:
        raise error(f"invalid YAML: {exc}", path=path) from None


@cache
def _yaml_loader() -> type:
    """The safe loader (libyaml's when built) that refuses duplicate keys, timestamps as text."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class DocumentLoader(base):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == _MERGE:
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.get(key)
                    except TypeError:  # unhashable: the base class says so
                        continue
                    line = key_node.start_mark.line + 1
                    if first is not None:
                        raise _DuplicateKey(key, line, first)
                    seen[key] = line
            return super().construct_mapping(node, deep)

    DocumentLoader.yaml_implicit_resolvers = {
        ch: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
        for ch, resolvers in base.yaml_implicit_resolvers.items()}
    return DocumentLoader


def _duplicate_lines(data: bytes, key: Any) -> tuple[int | None, int | None]:
    """The lines of a JSON object's repeated key (second, first), found by composing it."""
    import yaml

    try:
        root = yaml.compose(data, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None, None
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            lines = [k.start_mark.line + 1 for k, _ in node.value if k.value == key]
            if len(lines) > 1:
                return lines[1], lines[0]
            stack.extend(v for _, v in reversed(node.value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return None, None
