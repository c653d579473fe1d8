"""The one document loader: bytes -> JSON/YAML -> strict structs, or one located error.

* Every document is read once; its sha256 is kept so reports can print it and
  a caller can pin it (``expect_sha256``): a document cut at a rule boundary
  is still a valid document, and only the pin tells it from the whole.
* JSON and YAML (the libyaml loader when built) refuse duplicate keys, naming
  the key and its line. YAML timestamps stay text: each field decides what a
  timestamp is.
* A key given as null is refused unless the field is required and its type
  allows null: a null never stands for "use the default".
* Conversion is :func:`msgspec.convert` with ``strict=True``; its error path
  (``$.mandatory_checkpoints[0].scope``) becomes the field as people write it
  (``mandatory_checkpoints.0.scope``) and the line it is on, and an unknown
  key comes with the closest valid name.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Sequence
from functools import cache
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, get_args, get_origin

import msgspec

from roadcheck.documents._read import (
    Loc,
    Problem,
    decode,
    located,
    normalize_sha256,
    problems,
    read_document,
    suggest,
    where,
)
from roadcheck.errors import InputError, SpecError

__all__ = [
    "Loaded",
    "Loc",
    "Problem",
    "convert",
    "decode",
    "first_problem",
    "load",
    "located",
    "normalize_sha256",
    "problems",
    "read_document",
    "suggest",
    "where",
]

T = TypeVar("T")


class Loaded(msgspec.Struct, Generic[T], frozen=True):
    """A converted document, the sha256 of its bytes and the decoded plain value (a frozen
    msgspec struct: a dataclass's methods would be built at every command's start)."""

    value: T
    sha256: str
    raw: Any


# ---------------------------------------------------------------- types

def _unwrap(t: Any) -> Any:
    while get_origin(t) is Annotated:
        t = get_args(t)[0]
    return t


def _members(t: Any) -> list[Any]:
    t = _unwrap(t)
    if get_origin(t) in (Union, types.UnionType):
        return [a for a in get_args(t)]
    return [t]


def _is_struct(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, msgspec.Struct)


@cache
def _fields(cls: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(cls)


#: What :func:`_pick` needs of one member of a declared type: the member, its type
#: without ``Annotated``, its struct tag (``(tag field, tag)``, ``None`` when it is no
#: struct), and whether an object, a list or any other value converts into it.
_Shape = tuple[Any, Any, "tuple[str | None, Any] | None", bool, bool, bool]
#: The shapes of each declared type's members, worked out once per type.
_SHAPES: dict[Any, tuple[_Shape, ...]] = {}


def _work_out(t: Any) -> tuple[_Shape, ...]:
    out = []
    for m in _members(t):
        base = _unwrap(m)
        origin = get_origin(base)
        tag = None
        if _is_struct(base):
            cfg = base.__struct_config__
            tag = (cfg.tag_field, cfg.tag)
        out.append((m, base, tag, tag is None and (base is dict or origin is dict),
                    origin in (list, tuple, set, frozenset) or base in (list, tuple),
                    not (base is type(None) or tag is not None or base in (dict, list, tuple)
                         or origin in (dict, list, tuple, set, frozenset))))
    return tuple(out)


def _shapes(t: Any) -> tuple[_Shape, ...]:
    try:
        return _SHAPES[t]
    except KeyError:
        found = _SHAPES[t] = _work_out(t)
        return found
    except TypeError:  # a type that cannot be a key: worked out each time
        return _work_out(t)


def _picked(t: Any, value: Any) -> _Shape | None:
    """The shape of the member of ``t`` (a union or not) that a plain value would convert
    into."""
    if isinstance(value, dict):
        for shape in _shapes(t):
            tag = shape[2]
            if tag is not None:
                if tag[0] is None or value.get(tag[0]) == tag[1]:
                    return shape
            elif shape[3]:
                return shape
    elif isinstance(value, list):
        for shape in _shapes(t):
            if shape[4]:
                return shape
    else:
        for shape in _shapes(t):
            if shape[5]:
                return shape
    return None


def _pick(t: Any, value: Any) -> Any:
    """The member of ``t`` (a union or not) that a plain value would convert into."""
    shape = _picked(t, value)
    return None if shape is None else shape[0]


def _child(t: Any, value: Any, part: str | int) -> tuple[Any, Any]:
    """The value and declared type one step down, or (None, None)."""
    m = _pick(t, value)
    base = _unwrap(m)
    if m is None:
        return None, None
    if _is_struct(base) and isinstance(value, dict):
        for f in _fields(base):
            if f.encode_name == part:
                return value.get(part), f.type
        return None, None
    if isinstance(value, dict):
        args = get_args(base)
        return value.get(part), (args[1] if len(args) == 2 else Any)
    if isinstance(value, list) and isinstance(part, int) and part < len(value):
        args = get_args(base)
        return value[part], (args[0] if args else Any)
    return None, None


@cache
def _struct_keys(cls: type[msgspec.Struct]) -> tuple[dict[str, msgspec.structs.FieldInfo],
                                                     tuple[str, ...], str | None]:
    """A struct's fields by key, its required keys in order, and its tag field."""
    fields = {f.encode_name: f for f in _fields(cls)}
    return (fields, tuple(name for name, f in fields.items() if f.required),
            cls.__struct_config__.tag_field)


_ARGS: dict[Any, tuple[Any, ...]] = {}


def _args(t: Any) -> tuple[Any, ...]:
    """``get_args(t)``, worked out once per type."""
    try:
        return _ARGS[t]
    except KeyError:
        found = _ARGS[t] = get_args(t)
        return found
    except TypeError:  # a type that cannot be a key
        return get_args(t)


def _walk(value: Any, t: Any, loc: Loc, found: list[Problem]) -> None:
    """Nulls standing for a default, and missing required keys, in document order, added to
    ``found``.

    A missing key is reported at its object (which comes before the object's
    own keys), a null at its key. An object with an unknown key reports that
    key, not the missing one: it is most often the missing one misspelt.
    """
    shape = _picked(t, value)
    if shape is None:
        return
    base = shape[1]
    if shape[2] is not None and isinstance(value, dict):
        fields, required, tag = _struct_keys(base)
        missing = [name for name in required if name not in value]
        if missing and all(k in fields or k == tag for k in value):
            found.append(Problem((*loc, missing[0]), "required", loc))
        for key, v in value.items():
            f = fields.get(key)
            if f is None:
                continue
            at = (*loc, key)
            if v is None and not f.required:
                found.append(Problem(at, "is null: write a value, or leave the key out for its "
                                         "default"))
            else:
                _walk(v, f.type, at, found)
    elif isinstance(value, dict):
        args = _args(base)
        if len(args) == 2:
            for k, v in value.items():
                _walk(v, args[1], (*loc, k), found)
    elif isinstance(value, list):
        args = _args(base)
        if args:
            for i, v in enumerate(value):
                _walk(v, args[0], (*loc, i), found)


def _position(doc: Any, at: Loc) -> tuple[int, ...]:
    """Where ``at`` is in the document, as key and item indexes: document order is line order."""
    out: list[int] = []
    node = doc
    for part in at:
        if isinstance(node, dict) and part in node:
            out.append(list(node).index(part))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            out.append(part)
            node = node[part]
        else:
            break
    return tuple(out)


def first_problem(doc: Any, found: Sequence[Problem]) -> Problem:
    """The problem that comes first in the document (an object before its keys; ties: the
    earliest in ``found``)."""
    return min(found, key=lambda p: _position(doc, p.at))


# ---------------------------------------------------------------- conversion

@cache
def _surrogate() -> Callable[[str], re.Match[str] | None]:
    return re.compile("[\ud800-\udfff]").search


def _has_surrogate(text: str) -> bool:
    """ASCII text holds none: the pattern is compiled for the first text that is not."""
    return not text.isascii() and _surrogate()(text) is not None


def _refuse_surrogates(value: Any, loc: Loc) -> None:
    """Text that holds a lone surrogate (an escape such as ``"\\ud800"``) is no text."""
    if isinstance(value, str):
        if _has_surrogate(value):
            raise Problem(loc, "holds a lone surrogate (an escape that is no character)")
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and _has_surrogate(k):
                raise Problem(loc, "has a key holding a lone surrogate (an escape that is no "
                                   "character)")
            _refuse_surrogates(v, (*loc, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _refuse_surrogates(v, (*loc, i))


def convert(doc: Any, typ: type[T], found: Sequence[Problem] = ()) -> T:
    """Convert a decoded document into ``typ``, strictly; raises :class:`Problem`.

    With several problems (``found`` adds the caller's own, located in the same
    document) the one that comes first by line is raised.
    """
    _refuse_surrogates(doc, ())
    walked: list[Problem] = []
    _walk(doc, typ, (), walked)
    try:
        value = msgspec.convert(doc, typ, strict=True)
    except msgspec.ValidationError as exc:
        raise first_problem(doc, [*found, *walked, _explain(doc, typ, str(exc))]) from None
    # every missing key would have failed the conversion: what is left are nulls
    nulls = [p for p in walked if p.at == p.loc]
    if found or nulls:
        raise first_problem(doc, [*found, *nulls])
    return value


def load(path: str, typ: type[T], *, what: str, error: type[InputError] = SpecError,
         expect_sha256: str | None = None) -> Loaded[T]:
    """Read, decode and convert a document file; every problem is one located error."""
    data, digest = read_document(path, what, error, expect_sha256)
    raw = decode(data, path, what, error)
    with problems(what, path, error):
        value = convert(raw, typ)
    return Loaded(value, digest, raw)


@cache
def _message_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """msgspec's message with its path, the same about a key, and one part of the path:
    compiled for the first document that fails."""
    return (re.compile(r"(?s)(.*) - at `(.+)`\Z"), re.compile(r"(?s)(.*) - at `key` in `(.+)`\Z"),
            re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]"))
_NAMES = {"str": "a string", "int": "an integer", "float": "a number", "bool": "true or false",
          "array": "a list", "object": "an object", "null": "null"}


def _path(text: str) -> list[str | int]:
    parts: list[str | int] = []
    for name, index in _message_patterns()[2].findall(text.removeprefix("$")):
        parts.append(name if name else (int(index) if index.isdigit() else "..."))
    return parts


def _explain(doc: Any, typ: Any, text: str) -> Problem:
    """Turn msgspec's message into a located problem, resolving ``[...]`` map entries."""
    at, at_key, _ = _message_patterns()
    key_error = at_key.match(text)
    m = key_error or at.match(text)
    message, path = (text, []) if m is None else (m.group(1), _path(m.group(2)))
    loc: list[str | int] = []
    value, t = doc, typ
    for part in path:
        if part == "...":
            # msgspec does not say which entry of a map failed: find it by converting each.
            vt = get_args(_unwrap(_pick(t, value)))[1] if isinstance(value, dict) else Any
            for k, v in value.items() if isinstance(value, dict) else ():
                try:
                    msgspec.convert(v, vt, strict=True)
                except msgspec.ValidationError as exc:
                    inner = _explain(v, vt, str(exc))
                    return Problem((*loc, k, *inner.loc), inner.message, (*loc, k, *inner.at))
            return Problem(tuple(loc), _sentence(message))
        loc.append(part)
        value, t = _child(t, value, part)
    here = tuple(loc)
    if key_error:
        return Problem(here, "every key " + _reason(message, None))
    unknown = re.match(r"Object contains unknown field `(.+)`", message)
    if unknown:
        name = unknown.group(1)
        return Problem(here, f"unknown key {name!r}{_hint(name, t, value)}", (*here, name))
    missing = re.match(r"Object missing required field `(.+)`", message)
    if missing:
        return Problem((*here, missing.group(1)), "required", here)
    return Problem(here, _reason(message, t))


def _hint(name: str, t: Any, value: Any) -> str:
    struct = _unwrap(_pick(t, value)) if t is not None else None
    if not _is_struct(struct):
        return ""
    hints = getattr(struct, "key_hints", {})
    if name in hints:
        return f" ({hints[name]})"
    close = suggest(name, [f.encode_name for f in _fields(struct)])
    return f"; did you mean {close!r}?" if close else ""


def _names(spec: str) -> str:
    parts = [_NAMES.get(p.strip(), p.strip()) for p in spec.split("|")]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _alternatives(t: Any) -> str | None:
    for m in _members(t):
        base = _unwrap(m)
        if get_origin(base) is Literal:
            values = [repr(v) for v in get_args(base)]
            return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]
    return None


def _meta_message(t: Any) -> str | None:
    for m in [t, *_members(t)]:
        if get_origin(m) is Annotated:
            for meta in get_args(m)[1:]:
                extra = getattr(meta, "extra", None)
                if extra and "message" in extra:
                    return str(extra["message"])
    return None


def _reason(message: str, t: Any) -> str:
    custom = _meta_message(t) if t is not None else None
    if custom:
        return custom
    expected = re.match(r"Expected `(.+?)`, got `(.+?)`\Z", message)
    if expected:
        return f"must be {_names(expected.group(1))}, got {_names(expected.group(2))}"
    enum = re.match(r"Invalid enum value (.+)\Z", message)
    if enum:
        options = _alternatives(t) if t is not None else None
        return (f"must be {options}, got {enum.group(1)}" if options
                else f"invalid value {enum.group(1)}")
    length = re.match(r"Expected `(.+?)` of length (>=|<=) (\d+)\Z", message)
    if length:
        kind, op, n = length.groups()
        if op == ">=" and n == "1":
            return "must be a non-empty string" if kind == "str" else "must not be empty"
        return f"must have a length {op} {n}"
    bound = re.match(r"Expected `(.+?)` (>=|>|<=|<) (\S+)\Z", message)
    if bound:
        return f"must be {_names(bound.group(1))} {bound.group(2)} {bound.group(3)}"
    pattern = re.match(r"Expected `str` matching regex (.+)\Z", message)
    if pattern:
        return f"must match {pattern.group(1)}"
    return _sentence(message)


def _sentence(text: str) -> str:
    return text[:1].lower() + text[1:] if text else text

