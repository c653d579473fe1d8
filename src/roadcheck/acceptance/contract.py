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

A contract is declared by the structs of :mod:`roadcheck.documents.contract`
(:class:`Claim` is :class:`~roadcheck.documents.contract.ClaimDoc`) and a file is
read by the one document loader (unknown keys refused with the closest valid
name, duplicate keys and defaulting nulls refused, errors with file, line and
field). A :class:`Contract` holds that document (:attr:`Contract.doc`) and what
the gate needs on its hot path (type tests, allow-list keys, claim patterns),
computed once from it when the contract is built. Importing the gate stays
cheap: ``from roadcheck import verify`` loads no YAML and no jsonschema.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

from roadcheck.documents.contract import ClaimDoc, ContractDoc
from roadcheck.errors import SpecError

if TYPE_CHECKING:
    from roadcheck.acceptance.said import SaidRule

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


#: What backs one claimed verb: the contract document's own struct.
Claim = ClaimDoc

_Types = tuple[tuple[str, tuple[str, ...], tuple[Callable[[Any], bool], ...]], ...]
_Allowed = tuple[tuple[str, frozenset[tuple[str, Any]], str], ...]


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

    The values are checked and held as a :class:`~roadcheck.documents.contract.ContractDoc`
    (:attr:`doc`), the struct a contract file is read into.
    """

    __slots__ = ("_allowed", "_claims", "_enums", "_said", "_types", "_validator", "doc",
                 "source")

    doc: ContractDoc
    source: str | None
    _types: _Types
    _allowed: _Allowed
    _enums: dict[str, list[Any]]
    _claims: tuple[tuple[str, ClaimDoc, Callable[[str], Any]], ...]
    _validator: Any
    _said: tuple[SaidRule, ...]

    def __init__(self, required: Mapping[str, Any] | None = None,
                 enums: Mapping[str, Iterable[Any]] | None = None,
                 claims: Mapping[str, str | ClaimDoc] | None = None,
                 json_schema: Mapping[str, Any] | None = None,
                 claim_requires_action: Mapping[str, str | ClaimDoc] | None = None,
                 source: str | None = None) -> None:
        self._compile(_document(required, enums, claims, json_schema, claim_requires_action),
                      source)

    @classmethod
    def from_doc(cls, doc: ContractDoc, source: str | None = None) -> Contract:
        """The contract a document declares, holding that document."""
        contract = cls.__new__(cls)
        contract._compile(doc, source)
        return contract

    def _compile(self, doc: ContractDoc, source: str | None) -> None:
        self.doc = doc
        self.source = source
        types = []
        for name, spec in doc.required.items():
            names = _names_of(spec, f"required.{name}")
            types.append((name, names, tuple(_TYPE_TESTS[n] for n in names)))
        self._types = tuple(types)
        allowed = []
        self._enums = {}
        for name, values in doc.enums.items():
            ordered = sorted(values, key=_sort_key)
            keys = frozenset(k for k in map(value_key, ordered) if k is not None)
            self._enums[name] = ordered
            allowed.append((name, keys, _show_list(ordered)))
        self._allowed = tuple(allowed)
        merged: dict[str, ClaimDoc] = {}
        for label, table in (("claims", doc.claims),
                             ("claim_requires_action", doc.claim_requires_action)):
            for verb, rule in table.items():
                _verb(verb, label)
                merged[verb] = ClaimDoc(rule) if isinstance(rule, str) else rule
        # A verb matches as a whole word, in any case; lookarounds rather than \b so
        # that verbs which start or end with punctuation still match as written.
        self._claims = tuple(
            (verb, rule, re.compile(rf"(?<!\w){re.escape(verb.strip())}(?!\w)",
                                    re.IGNORECASE).search)
            for verb, rule in merged.items())
        self._validator = (None if doc.json_schema is None
                           else _compile_schema(doc.json_schema))
        self._said = _compile_said(doc)

    @property
    def required(self) -> dict[str, str | list[str]]:
        """Field name -> its type name, or the list of the names it may take."""
        return {name: names[0] if len(names) == 1 else list(names)
                for name, names, _ in self._types}

    @property
    def enums(self) -> dict[str, list[Any]]:
        """Field name -> its allowed values, in a stable order."""
        return {name: list(values) for name, values in self._enums.items()}

    @property
    def claims(self) -> dict[str, ClaimDoc]:
        """Claimed verb -> the claim that must back it (``claim_requires_action`` merged in)."""
        return {verb: rule for verb, rule, _ in self._claims}

    @property
    def claim_requires_action(self) -> None:
        """Always None: its claims are merged into :attr:`claims`."""
        return None

    @property
    def said(self) -> tuple[SaidRule, ...]:
        """The claims looked for in the agent's final message, compiled."""
        return self._said

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The JSON Schema the result must also satisfy, if any."""
        return self.doc.json_schema

    @property
    def validator(self) -> Any:
        """The compiled JSON Schema validator, or ``None`` when there is no ``json_schema``."""
        return self._validator

    def __repr__(self) -> str:
        return (f"Contract(required={self.required!r}, enums={self.enums!r}, "
                f"claims={self.claims!r}, json_schema={self.json_schema!r}, "
                f"source={self.source!r})")


def _compile_said(doc: ContractDoc) -> tuple[SaidRule, ...]:
    if not doc.said:
        return ()
    from roadcheck.acceptance.said import compile_said
    from roadcheck.documents.loader import Problem, where

    try:
        return compile_said(doc.said)
    except Problem as p:
        raise SpecError(f"{where(p.loc)}: {p.message}") from None


def _document(required: Mapping[str, Any] | None, enums: Mapping[str, Iterable[Any]] | None,
              claims: Mapping[str, str | ClaimDoc] | None, json_schema: Mapping[str, Any] | None,
              claim_requires_action: Mapping[str, str | ClaimDoc] | None) -> ContractDoc:
    """The document that values given in Python declare; what it cannot hold is refused."""
    required = {} if required is None else required
    if not isinstance(required, Mapping):
        raise SpecError("required: must map field names to types")
    types: dict[str, Any] = {}
    for name, spec in required.items():
        _field_name(name, "required")
        names = _names_of(spec, f"required.{name}")
        types[name] = names[0] if len(names) == 1 else list(names)
    enums = {} if enums is None else enums
    if not isinstance(enums, Mapping):
        raise SpecError("enums: must map field names to lists of allowed values")
    allowed: dict[str, list[Any]] = {}
    for name, values in enums.items():
        _field_name(name, "enums")
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
            raise SpecError(f"enums.{name}: must be a list of allowed values")
        listed = list(values)
        for v in listed:
            if value_key(v) is None:
                raise SpecError(f"enums.{name}: allowed values are strings, numbers, "
                                f"booleans or null, got {json_type(v)}")
        allowed[name] = listed
    tables: list[dict[str, str | ClaimDoc]] = []
    for label, table in (("claims", {} if claims is None else claims),
                         ("claim_requires_action", claim_requires_action or {})):
        if not isinstance(table, Mapping):
            raise SpecError(f"{label}: must map claimed verbs to tools")
        checked: dict[str, str | ClaimDoc] = {}
        for verb, rule in table.items():
            _verb(verb, label)
            checked[verb] = _claim(rule, f"{label}.{verb}")
        tables.append(checked)
    if json_schema is not None and not isinstance(json_schema, Mapping):
        raise SpecError(f"json_schema: must be an object, got {json_type(json_schema)}")
    return ContractDoc(required=types, enums=allowed, claims=tables[0],
                       claim_requires_action=tables[1],
                       json_schema=None if json_schema is None else dict(json_schema))


def _verb(verb: Any, label: str) -> None:
    if not isinstance(verb, str) or not verb.strip():
        raise SpecError(f"{label}: a claimed verb must be a non-empty string, got {verb!r}")


def _field_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where}: field names must be non-empty strings, got {name!r}")


def _show_list(values: list[Any]) -> str:
    return "[" + ", ".join(repr(v) for v in values) + "]"


def _claim(rule: Any, where: str) -> str | ClaimDoc:
    if isinstance(rule, ClaimDoc):
        return rule if type(rule.args) is dict else ClaimDoc(rule.tool, dict(rule.args))
    if isinstance(rule, str):
        if not rule:
            raise SpecError(f"{where}: the tool name is empty")
        return rule
    if isinstance(rule, Mapping):
        extra = sorted(str(k) for k in rule if k not in ("tool", "args"))
        if extra:
            raise SpecError(f"{where}: unknown key {extra[0]!r} (a claim has 'tool' and 'args')")
        if "tool" not in rule:
            raise SpecError(f"{where}: missing 'tool'")
        try:
            args = rule.get("args") or {}
            return ClaimDoc(rule["tool"], dict(args) if isinstance(args, Mapping) else args)
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
    from roadcheck.documents.loader import Problem, convert, located, problems

    if not isinstance(doc, dict):
        raise SpecError(f"the contract must be an object, got {json_type(doc)}", path=source)
    with problems("contract", source, SpecError):
        d = convert(doc, ContractDoc)
        if d.said:
            from roadcheck.acceptance.said import compile_said

            compile_said(d.said)  # a problem in a claim is located at its line
        if not (d.required or d.enums or d.claims or d.claim_requires_action or d.json_schema
                or d.said):
            raise Problem((), "the contract declares nothing to check; it would accept any "
                              "object")
    try:
        return Contract.from_doc(d, source)
    except SpecError as exc:
        # the message starts with the section it is about: point at that section's line
        section = re.split(r"[.:/ ]", exc.message, maxsplit=1)[0]
        raise located(Problem((), exc.message, (section,)), "contract", source,
                      SpecError) from None


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
