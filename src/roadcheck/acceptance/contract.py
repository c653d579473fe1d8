"""The accept contract: what a result must look like, and what each claim must be backed by.

A contract is built in Python (:class:`Contract`) or read from a JSON/YAML
document (:func:`load_contract`)::

    required: {status: string, target_id: string}
    enums:
      status: [created, updated, sent]
      target_id: [cust_1001, cust_1002, cust_1003]
    claims:
      created: create_record
      sent: {tool: send_invoice, args: {id: target_id}}
    json_schema: {...}          # optional, checked with jsonschema

A contract file is declared by the structs of :mod:`roadcheck.documents.contract`
and read by the one document loader (unknown keys refused with the closest
valid name, duplicate keys and defaulting nulls refused, errors with file,
line and field). Importing the gate stays cheap: ``from roadcheck import verify``
loads no YAML and no jsonschema. Everything the gate needs on its hot path
(type tests, allow-list keys, claim patterns) is computed once here, when the
contract is built.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from roadcheck.errors import SpecError

__all__ = [
    "TYPE_NAMES",
    "Claim",
    "Contract",
    "json_type",
    "load_contract",
    "parse_contract",
    "value_key",
]

#: The type names a contract may use, in the order the docs list them.
TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")

# bool is a subclass of int in Python but never a number in JSON: the tests exclude it.
_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}

_PY_TYPES: dict[Any, str] = {
    str: "string", int: "integer", float: "number", bool: "boolean",
    list: "array", tuple: "array", dict: "object", type(None): "null", None: "null",
}


def json_type(value: Any) -> str:
    """The JSON type name of a value (a Python type name for anything else)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def value_key(value: Any) -> tuple[str, Any] | None:
    """A hashable key that compares like JSON values: ``true`` is not ``1``, ``1`` is ``1.0``.

    Returns ``None`` for values that cannot be on an allow-list (arrays, objects,
    anything that is not JSON).
    """
    t = type(value)
    if t is str:
        return ("s", value)
    if t is bool:
        return ("b", value)
    if t is int or t is float:
        return ("n", value)
    if value is None:
        return ("z", None)
    if isinstance(value, str):
        return ("s", str(value))
    if isinstance(value, bool):
        return ("b", bool(value))
    if isinstance(value, (int, float)):
        return ("n", value)
    return None


def _sort_key(value: Any) -> tuple[int, Any]:
    key = value_key(value)
    assert key is not None  # allow-lists hold scalars only (checked when built)
    kind, v = key
    rank = {"b": 0, "n": 1, "s": 2, "z": 3}[kind]
    return (rank, v if kind != "z" else 0)


def _names_of(spec: Any, where: str) -> tuple[str, ...]:
    """Turn a type spec (a name, a Python type, or a list of either) into type names."""
    items = list(spec) if isinstance(spec, (list, tuple, set, frozenset)) else [spec]
    if not items:
        raise SpecError(f"{where}: an empty list of types allows nothing")
    names: list[str] = []
    for item in items:
        if isinstance(item, str):
            if item not in _TYPE_TESTS:
                raise SpecError(f"{where}: unknown type name {item!r} "
                                f"(use one of {', '.join(TYPE_NAMES)})")
            name = item
        else:
            try:
                found = _PY_TYPES.get(item)
            except TypeError:  # an unhashable value is not a type
                found = None
            if found is None:
                raise SpecError(f"{where}: {item!r} is not a type; use one of "
                                f"{', '.join(TYPE_NAMES)}")
            name = found
        if name not in names:
            names.append(name)
    return tuple(names)


@dataclass(frozen=True)
class Claim:
    """What backs one claimed verb: a call of ``tool``, optionally bound to result fields.

    ``args`` maps an argument name of the call to a field of the result:
    ``Claim("send_invoice", args={"id": "target_id"})`` is backed only by a
    ``send_invoice`` call whose ``id`` argument equals the result's ``target_id``.
    """

    tool: str
    args: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise SpecError(f"a claim's tool must be a non-empty string, got {self.tool!r}")
        if not isinstance(self.args, Mapping):
            raise SpecError(f"claim '{self.tool}': args must map argument names to result fields")
        for arg, fld in self.args.items():
            if not isinstance(arg, str) or not arg or not isinstance(fld, str) or not fld:
                raise SpecError(f"claim '{self.tool}': args must map argument names to result "
                                f"field names, got {arg!r}: {fld!r}")
        object.__setattr__(self, "args", dict(self.args))


@dataclass(frozen=True, eq=False)
class Contract:
    """What "this result is real" means, checkable by machine.

    Args:
        required: field name -> type (a name such as ``"string"``, a Python type
            such as ``str``, or a list of either for "any of these").
        enums: field name -> allowed values (an allow-list of scalars).
        claims: claimed verb -> the tool that must back it, as a name or a :class:`Claim`.
        json_schema: an optional JSON Schema the result must also satisfy.
        claim_requires_action: another name for ``claims``; both are merged.
        source: where the contract was read from (set by :func:`load_contract`).
    """

    required: Mapping[str, Any] = field(default_factory=dict)
    enums: Mapping[str, Iterable[Any]] = field(default_factory=dict)
    claims: Mapping[str, str | Claim] = field(default_factory=dict)
    json_schema: Mapping[str, Any] | None = None
    claim_requires_action: Mapping[str, str | Claim] | None = None
    source: str | None = None

    # Compiled forms, filled in by __post_init__ for the hot path.
    _types: tuple[tuple[str, tuple[str, ...], tuple[Callable[[Any], bool], ...]], ...] = field(
        init=False, repr=False)
    _allowed: tuple[tuple[str, frozenset[tuple[str, Any]], str], ...] = field(
        init=False, repr=False)
    _claims: tuple[tuple[str, Claim, Callable[[str], Any]], ...] = field(init=False, repr=False)
    _validator: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.required, Mapping):
            raise SpecError("required: must map field names to types")
        types = []
        for name, spec in self.required.items():
            _field_name(name, "required")
            names = _names_of(spec, f"required.{name}")
            types.append((name, names, tuple(_TYPE_TESTS[n] for n in names)))
        set_(self, "required", {name: names[0] if len(names) == 1 else list(names)
                                for name, names, _ in types})
        set_(self, "_types", tuple(types))

        if not isinstance(self.enums, Mapping):
            raise SpecError("enums: must map field names to lists of allowed values")
        allowed = []
        enums: dict[str, list[Any]] = {}
        for name, values in self.enums.items():
            _field_name(name, "enums")
            if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
                raise SpecError(f"enums.{name}: must be a list of allowed values")
            listed = list(values)
            for v in listed:
                if value_key(v) is None:
                    raise SpecError(f"enums.{name}: allowed values are strings, numbers, "
                                    f"booleans or null, got {json_type(v)}")
            ordered = sorted(listed, key=_sort_key)
            keys = frozenset(k for k in map(value_key, ordered) if k is not None)
            enums[name] = ordered
            allowed.append((name, keys, _show_list(ordered)))
        set_(self, "enums", enums)
        set_(self, "_allowed", tuple(allowed))

        merged: dict[str, Claim] = {}
        for label, table in (("claims", self.claims), ("claim_requires_action",
                                                       self.claim_requires_action or {})):
            if not isinstance(table, Mapping):
                raise SpecError(f"{label}: must map claimed verbs to tools")
            for verb, rule in table.items():
                if not isinstance(verb, str) or not verb.strip():
                    raise SpecError(f"{label}: a claimed verb must be a non-empty string, "
                                    f"got {verb!r}")
                merged[verb] = _claim(rule, f"{label}.{verb}")
        set_(self, "claims", merged)
        set_(self, "claim_requires_action", None)
        # A verb matches as a whole word, in any case; lookarounds rather than \b so
        # that verbs which start or end with punctuation still match as written.
        set_(self, "_claims", tuple(
            (verb, rule, re.compile(rf"(?<!\w){re.escape(verb.strip())}(?!\w)",
                                    re.IGNORECASE).search)
            for verb, rule in merged.items()))

        if self.json_schema is not None:
            set_(self, "_validator", _compile_schema(self.json_schema))

    @property
    def validator(self) -> Any:
        """The compiled JSON Schema validator, or ``None`` when there is no ``json_schema``."""
        return self._validator


def _field_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where}: field names must be non-empty strings, got {name!r}")


def _show_list(values: list[Any]) -> str:
    return "[" + ", ".join(repr(v) for v in values) + "]"


def _claim(rule: Any, where: str) -> Claim:
    if isinstance(rule, Claim):
        return rule
    if isinstance(rule, str):
        if not rule:
            raise SpecError(f"{where}: the tool name is empty")
        return Claim(rule)
    if isinstance(rule, Mapping):
        extra = sorted(str(k) for k in rule if k not in ("tool", "args"))
        if extra:
            raise SpecError(f"{where}: unknown key {extra[0]!r} (a claim has 'tool' and 'args')")
        if "tool" not in rule:
            raise SpecError(f"{where}: missing 'tool'")
        try:
            return Claim(rule["tool"], rule.get("args") or {})
        except SpecError as exc:
            raise SpecError(f"{where}: {exc.message}") from None
    raise SpecError(f"{where}: a claim is a tool name or {{tool: ..., args: {{...}}}}, "
                    f"got {json_type(rule)}")


def _compile_schema(schema: Any) -> Any:
    """Check a JSON Schema and return its validator (jsonschema loads only here)."""
    if not isinstance(schema, Mapping):
        raise SpecError(f"json_schema: must be an object, got {json_type(schema)}")
    import jsonschema
    from jsonschema.exceptions import SchemaError

    doc = dict(schema)
    with warnings.catch_warnings():
        # jsonschema only warns about an unknown $schema and falls back to its latest
        # draft; a contract should say which dialect it means, so refuse instead.
        warnings.simplefilter("error", DeprecationWarning)
        try:
            cls = jsonschema.validators.validator_for(doc)
        except DeprecationWarning:
            raise SpecError(f"json_schema: unknown $schema {doc.get('$schema')!r}") from None
    try:
        cls.check_schema(doc)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise SpecError(f"json_schema{'/' + where if where else ''}: not a valid JSON Schema: "
                        f"{exc.message}") from None
    return cls(doc)


def parse_contract(doc: Any, source: str | None = None, data: bytes | None = None) -> Contract:
    """Build a :class:`Contract` from a decoded JSON/YAML document.

    ``source`` names the file; when it exists, errors carry the line they are about.
    (``data`` is accepted for compatibility and no longer needed.)
    """
    from roadcheck.documents.contract import ContractDoc
    from roadcheck.documents.loader import Problem, convert, located, problems

    if not isinstance(doc, dict):
        raise SpecError(f"the contract must be an object, got {json_type(doc)}", path=source)
    with problems("contract", source, SpecError):
        d = convert(doc, ContractDoc)
        if not (d.required or d.enums or d.claims or d.claim_requires_action or d.json_schema):
            raise Problem((), "the contract declares nothing to check; it would accept any "
                              "object")
    try:
        return Contract(
            required={k: v if isinstance(v, str) else list(v) for k, v in d.required.items()},
            enums=d.enums,
            claims={k: _from_doc(v) for k, v in d.claims.items()},
            json_schema=d.json_schema,
            claim_requires_action={k: _from_doc(v) for k, v in d.claim_requires_action.items()},
            source=source,
        )
    except SpecError as exc:
        # the message starts with the section it is about: point at that section's line
        section = re.split(r"[.:/ ]", exc.message, maxsplit=1)[0]
        raise located(Problem((), exc.message, (section,)), "contract", source,
                      SpecError) from None


def _from_doc(rule: Any) -> str | Claim:
    return rule if isinstance(rule, str) else Claim(rule.tool, dict(rule.args))


def load_contract(path: str | PathLike[str], *, expect_sha256: str | None = None) -> Contract:
    """Read a JSON (``.json``) or YAML contract file; an unusable one raises :class:`SpecError`.

    With ``expect_sha256`` (hex, ``sha256:`` prefix allowed) a file whose bytes hash
    differently is refused: a contract cut at an entry boundary (a claim lost) is still
    a valid contract, and only the pin tells it from the whole.
    """
    from roadcheck.documents.loader import decode, read_document

    source = str(path)
    data, _ = read_document(source, "contract", SpecError, expect_sha256)
    return parse_contract(decode(data, source, "contract", SpecError), source)
