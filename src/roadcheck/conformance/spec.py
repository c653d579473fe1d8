"""The replay spec: which checkpoints are mandatory, and what each handoff must carry.

A spec is a JSON or YAML document declared by the structs of
:mod:`roadcheck.documents.spec` and read by the one document loader: unknown keys
are refused at every depth (a misspelt ``require_verifed`` must not silently
turn a check off, and the error suggests the right name), selectors name known
event fields with their types, a null never stands for a default, and the
first problem is reported on one line with the file, line and field. A spec
with nothing to check is unusable: it would pass everything.

The classes below are the spec as the engine reads it, built once from the
document; :attr:`Spec.sha256` is the sha256 of the bytes it was read from, which
every report prints and ``--expect-spec-sha256`` pins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from roadcheck.errors import SpecError
from roadcheck.selectors import Selector, check_selector, compile_selector

__all__ = [
    "DeriveRule",
    "HandoffContract",
    "MandatoryCheckpoint",
    "Spec",
    "load_spec",
    "parse_spec",
]


@dataclass(frozen=True)
class MandatoryCheckpoint:
    """A checkpoint that must be recorded before a guarded action runs."""

    checkpoint_id: str
    #: What the checkpoint guards (``must_precede``: one entry or a list): action types,
    #: and action selectors (``{action_type: Bash, command: {words: [git, push]}}``).
    guarded: tuple[str | dict[str, Any], ...]
    #: ``first``: one checkpoint before the first guarded action satisfies the rule.
    #: ``each``: every occurrence of a guarded action needs a checkpoint before it.
    scope: str = "first"
    #: When true, one checkpoint licenses one guarded action only.
    consume: bool = False
    #: When set, a checkpoint counts only if its ``confirmed_by`` is one of these.
    confirmed_by: tuple[str, ...] | None = None
    #: Event selectors after which an earlier checkpoint no longer counts.
    voided_by: tuple[dict[str, Any], ...] = ()
    #: What of the guarded call a checkpoint must name to license it: a subset of
    #: ``("tool", "args", "call")`` in that order; empty when checkpoints are not bound.
    binds: tuple[str, ...] = ()
    #: True when the selectors were checked as the document was read (they compile
    #: without checking again).
    checked: bool = field(default=False, compare=False, repr=False)

    @property
    def must_precede(self) -> str | dict[str, Any] | list[str | dict[str, Any]]:
        """The guarded actions as written: one entry, or a list."""
        return self.guarded[0] if len(self.guarded) == 1 else list(self.guarded)

    def void_selectors(self) -> list[Selector]:
        """The compiled ``voided_by`` selectors."""
        return [compile_selector(s, checked=self.checked) for s in self.voided_by]

    def to_dict(self) -> dict[str, Any]:
        """The rule as a spec document entry (defaults left out)."""
        out: dict[str, Any] = {"checkpoint_id": self.checkpoint_id,
                               "must_precede": self.must_precede}
        if self.scope != "first":
            out["scope"] = self.scope
        if self.consume:
            out["consume"] = True
        if self.confirmed_by is not None:
            out["confirmed_by"] = list(self.confirmed_by)
        if self.voided_by:
            out["voided_by"] = [dict(s) for s in self.voided_by]
        if self.binds:
            out["binds"] = {name: True for name in self.binds}
        return out

    def guard_names(self) -> tuple[str, ...]:
        """The guarded action types named directly (not through a selector)."""
        return tuple(g for g in self.guarded if isinstance(g, str))

    def guard_selectors(self) -> list[Selector]:
        """The compiled action selectors of ``must_precede``."""
        return [compile_selector(g, checked=self.checked) for g in self.guarded
                if not isinstance(g, str)]


@dataclass(frozen=True)
class HandoffContract:
    """What a handoff from one agent to another must carry."""

    from_agent: str
    to_agent: str
    required_fields: tuple[str, ...] = ()
    #: When true, every required field must arrive as ``{"value": v, "verified": true}``.
    require_verified: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The contract as a spec document entry."""
        return {"from_agent": self.from_agent, "to_agent": self.to_agent,
                "required_fields": list(self.required_fields),
                "require_verified": self.require_verified}


@dataclass(frozen=True)
class DeriveRule:
    """Turns matching events into checkpoint events at the same position."""

    checkpoint_id: str
    when: dict[str, Any]
    #: True when ``when`` was checked as the document was read.
    checked: bool = field(default=False, compare=False, repr=False)

    def selector(self) -> Selector:
        """The compiled ``when`` selector."""
        return compile_selector(self.when, checked=self.checked)

    def to_dict(self) -> dict[str, Any]:
        """The rule as a spec document entry."""
        return {"checkpoint_id": self.checkpoint_id, "when": dict(self.when)}


@dataclass(frozen=True)
class Spec:
    """A whole replay spec."""

    mandatory_checkpoints: tuple[MandatoryCheckpoint, ...] = ()
    handoff_contracts: tuple[HandoffContract, ...] = ()
    derive: tuple[DeriveRule, ...] = ()
    #: Where the spec was read from; not part of the document.
    source: str | None = field(default=None, compare=False)
    #: The sha256 (hex) of the bytes the spec was read from; None when built in memory.
    sha256: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The spec as a document that :func:`parse_spec` reads back to an equal spec."""
        out: dict[str, Any] = {
            "mandatory_checkpoints": [m.to_dict() for m in self.mandatory_checkpoints],
            "handoff_contracts": [c.to_dict() for c in self.handoff_contracts],
        }
        if self.derive:
            out["derive"] = [d.to_dict() for d in self.derive]
        return out


def _selectors(raw: list[Any], loc: tuple[str | int, ...]) -> tuple[dict[str, Any], ...]:
    if not raw:
        return ()
    import msgspec

    from roadcheck.documents._read import Problem

    out = []
    for i, sel in enumerate(raw):
        plain = msgspec.to_builtins(sel)
        try:
            check_selector(plain)
        except Problem as p:
            raise Problem((*loc, i, *p.loc), p.message) from None
        out.append(plain)
    return tuple(out)


def _guard(sel: Any, loc: tuple[str | int, ...]) -> dict[str, Any]:
    """An action selector in ``must_precede``: it must select actions only."""
    import msgspec

    from roadcheck.documents._read import Problem

    plain: dict[str, Any] = msgspec.to_builtins(sel)
    try:
        check_selector(plain)
    except Problem as p:
        raise Problem((*loc, *p.loc), p.message) from None
    kind = plain.get("event", "action")
    if kind != "action":
        raise Problem((*loc, "event"), "a guarded action selector selects actions: leave "
                                       f"'event' out or write 'action', not {kind!r}")
    return plain


def _binds(binds: Any, loc: tuple[str | int, ...]) -> tuple[str, ...]:
    """The bound parts of the call, in a fixed order; binding nothing is a problem."""
    from roadcheck.documents._read import Problem

    if binds is None:
        return ()
    names = tuple(n for n in ("tool", "args", "call") if getattr(binds, n))
    if not names:
        raise Problem(loc, "binds names nothing: set tool, args or call to true, or leave "
                           "binds out")
    if "args" in names and "tool" not in names:
        raise Problem((*loc, "args"), "binding the arguments needs tool: true too (the same "
                                      "arguments mean another thing to another tool)")
    return names


_SPEC_KEYS = frozenset({"mandatory_checkpoints", "handoff_contracts", "derive"})
_RULE_KEYS = frozenset({"checkpoint_id", "must_precede", "scope", "consume", "confirmed_by",
                        "voided_by", "binds"})
_CONTRACT_KEYS = frozenset({"from_agent", "to_agent", "required_fields", "require_verified"})
_BINDS_KEYS = frozenset({"tool", "args", "call"})
_SCOPES = ("first", "each")


def _name(value: Any) -> bool:
    """A non-empty string that is all text (no lone surrogate)."""
    if type(value) is not str or not value:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _names(value: Any) -> bool:
    return type(value) is list and all(_name(v) for v in value)


def _plain(doc: Any) -> Any:
    """The document as :class:`~roadcheck.documents.spec.SpecDoc` would hold it, read without
    msgspec, or None to leave it to the typed conversion.

    Only a document every value of which is plainly right is taken here: exactly the
    declared keys, each of its exact type (no null, no empty name, no lone surrogate),
    no action selector (``voided_by``, ``derive`` and a selector in ``must_precede``
    are left to the conversion). The conversion accepts such a document and reads the
    same values from it; anything else, valid or not, goes to it, and so does every
    error message.
    """
    from types import SimpleNamespace

    if type(doc) is not dict or not _SPEC_KEYS.issuperset(doc):
        return None
    rules_in = doc.get("mandatory_checkpoints", [])
    contracts_in = doc.get("handoff_contracts", [])
    derive = doc.get("derive", [])
    if (type(rules_in) is not list or type(contracts_in) is not list
            or type(derive) is not list or derive):
        return None
    rules = []
    for r in rules_in:
        if (type(r) is not dict or not _RULE_KEYS.issuperset(r)
                or not _name(r.get("checkpoint_id"))):
            return None
        guarded = r.get("must_precede")
        if not (_name(guarded) or (_names(guarded) and guarded)):
            return None
        scope = r.get("scope", "first")
        consume = r.get("consume", False)
        confirmed_by = r.get("confirmed_by", [])
        voided_by = r.get("voided_by", [])
        if (type(scope) is not str or scope not in _SCOPES or type(consume) is not bool
                or not _names(confirmed_by) or type(voided_by) is not list or voided_by):
            return None
        binds = r.get("binds")
        if binds is not None:
            if type(binds) is not dict or not _BINDS_KEYS.issuperset(binds) or any(
                    type(v) is not bool for v in binds.values()):
                return None
            binds = SimpleNamespace(tool=binds.get("tool", False), args=binds.get("args", False),
                                    call=binds.get("call", False))
        elif "binds" in r:
            return None
        rules.append(SimpleNamespace(
            checkpoint_id=r["checkpoint_id"], must_precede=guarded, scope=scope,
            consume=consume, confirmed_by=r.get("confirmed_by"), voided_by=[], binds=binds))
    contracts = []
    for c in contracts_in:
        if (type(c) is not dict or not _CONTRACT_KEYS.issuperset(c)
                or not _name(c.get("from_agent")) or not _name(c.get("to_agent"))):
            return None
        required = c.get("required_fields", [])
        verified = c.get("require_verified", False)
        if not _names(required) or type(verified) is not bool:
            return None
        contracts.append(SimpleNamespace(from_agent=c["from_agent"], to_agent=c["to_agent"],
                                         required_fields=required, require_verified=verified))
    return SimpleNamespace(mandatory_checkpoints=rules, handoff_contracts=contracts, derive=[])


def _build(doc: Any) -> Spec:
    """The engine's spec from a decoded document; a problem raises :class:`Problem`."""
    from roadcheck.documents._read import Problem

    d = _plain(doc)
    if d is None:
        from roadcheck.documents.loader import convert
        from roadcheck.documents.spec import SpecDoc

        d = convert(doc, SpecDoc)
    rules = []
    for i, r in enumerate(d.mandatory_checkpoints):
        raw = r.must_precede if isinstance(r.must_precede, list) else [r.must_precede]
        loc = ("mandatory_checkpoints", i, "must_precede")
        listed = isinstance(r.must_precede, list)
        guarded = tuple(g if isinstance(g, str) else _guard(g, (*loc, j) if listed else loc)
                        for j, g in enumerate(raw))
        rules.append(MandatoryCheckpoint(
            r.checkpoint_id, guarded, r.scope, r.consume,
            None if r.confirmed_by is None else tuple(r.confirmed_by),
            _selectors(r.voided_by, ("mandatory_checkpoints", i, "voided_by")),
            _binds(r.binds, ("mandatory_checkpoints", i, "binds")), checked=True))
    contracts = tuple(HandoffContract(c.from_agent, c.to_agent, tuple(c.required_fields),
                                      c.require_verified) for c in d.handoff_contracts)
    derive = tuple(DeriveRule(r.checkpoint_id, _selectors([r.when], ("derive", i, "when"))[0],
                              checked=True) for i, r in enumerate(d.derive))
    if not rules and not contracts:
        raise Problem((), "the spec declares no mandatory checkpoint and no handoff contract; "
                          "it would pass everything")
    seen: dict[tuple[str, str], int] = {}
    for i, c in enumerate(contracts):
        pair = (c.from_agent, c.to_agent)
        if pair in seen:
            raise Problem(("handoff_contracts", i),
                          f"a second contract for {pair[0]}->{pair[1]} "
                          f"(the first is handoff_contracts.{seen[pair]})")
        seen[pair] = i
    return Spec(tuple(rules), contracts, derive)


def parse_spec(doc: Any, source: str | None = None, sha256: str | None = None) -> Spec:
    """Validate a decoded spec document; the first problem is reported, on one line."""
    from roadcheck.documents._read import problems

    with problems("spec", source, SpecError):
        spec = _build(doc)
    return Spec(spec.mandatory_checkpoints, spec.handoff_contracts, spec.derive, source, sha256)


def load_spec(path: str | PathLike[str], *, expect_sha256: str | None = None) -> Spec:
    """Read a JSON or YAML spec file.

    With ``expect_sha256`` (hex, ``sha256:`` prefix allowed) a file whose bytes
    hash differently is refused: a spec cut at a rule boundary is still a valid
    spec, and only the pin tells it from the whole.
    """
    from roadcheck.documents._read import decode, read_document

    source = str(path)
    data, digest = read_document(source, "spec", SpecError, expect_sha256)
    return parse_spec(decode(data, source, "spec", SpecError), source, digest)
