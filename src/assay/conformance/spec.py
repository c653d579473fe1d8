"""The replay spec: which checkpoints are mandatory, and what each handoff must carry.

A spec is a JSON or YAML document. Unknown keys are refused (a misspelt
``require_verifed`` must not silently turn a check off), every error is
collected and reported on one line with the file and line of the first, and a
spec with nothing to check is unusable: it would pass everything.

The models are frozen dataclasses checked by the small validator below rather
than pydantic models: the spec is read on every ``assay replay`` start, and
importing pydantic alone costs more than the whole start-up budget of the gate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from assay._validate import Invalid as _Invalid
from assay._validate import Loc, raise_first
from assay._validate import Reader as _Reader
from assay._validate import flag as _flag
from assay._validate import text as _text
from assay._validate import texts as _texts
from assay.errors import SpecError
from assay.selectors import Selector, compile_selector

__all__ = [
    "DeriveRule",
    "HandoffContract",
    "MandatoryCheckpoint",
    "Spec",
    "load_spec",
    "parse_spec",
]

def _one_or_more(value: Any, loc: Loc) -> tuple[str, ...]:
    if isinstance(value, str):
        return (_text(value, loc),)
    names = _texts(value, loc)
    if not names:
        raise _Invalid(loc, "must name at least one action type")
    return names


def _scope(value: Any, loc: Loc) -> str:
    if value not in ("first", "each"):
        raise _Invalid(loc, f"must be 'first' or 'each', got {value!r}")
    return str(value)


def _selector(value: Any, loc: Loc) -> dict[str, Any]:
    try:
        compile_selector(value)
    except ValueError as exc:
        raise _Invalid(loc, str(exc)) from None
    return dict(value)


def _selectors(value: Any, loc: Loc) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list):
        raise _Invalid(loc, "must be a list of event selectors")
    return tuple(_selector(v, (*loc, i)) for i, v in enumerate(value))


def _items(value: Any, loc: Loc) -> list[tuple[Any, Loc]]:
    if not isinstance(value, list):
        raise _Invalid(loc, "must be a list")
    return [(v, (*loc, i)) for i, v in enumerate(value)]


@dataclass(frozen=True)
class MandatoryCheckpoint:
    """A checkpoint that must be recorded before a guarded action runs."""

    checkpoint_id: str
    #: The action types the checkpoint guards (``must_precede``: one name or a list).
    guarded: tuple[str, ...]
    #: ``first``: one checkpoint before the first guarded action satisfies the rule.
    #: ``each``: every occurrence of a guarded action needs a checkpoint before it.
    scope: str = "first"
    #: When true, one checkpoint licenses one guarded action only.
    consume: bool = False
    #: When set, a checkpoint counts only if its ``confirmed_by`` is one of these.
    confirmed_by: tuple[str, ...] | None = None
    #: Event selectors after which an earlier checkpoint no longer counts.
    voided_by: tuple[dict[str, Any], ...] = ()

    @property
    def must_precede(self) -> str | list[str]:
        """The guarded action types as written: one name, or a list."""
        return self.guarded[0] if len(self.guarded) == 1 else list(self.guarded)

    def void_selectors(self) -> list[Selector]:
        """The compiled ``voided_by`` selectors."""
        return [compile_selector(s) for s in self.voided_by]

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
        return out


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

    def selector(self) -> Selector:
        """The compiled ``when`` selector."""
        return compile_selector(self.when)

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

    def to_dict(self) -> dict[str, Any]:
        """The spec as a document that :func:`parse_spec` reads back to an equal spec."""
        out: dict[str, Any] = {
            "mandatory_checkpoints": [m.to_dict() for m in self.mandatory_checkpoints],
            "handoff_contracts": [c.to_dict() for c in self.handoff_contracts],
        }
        if self.derive:
            out["derive"] = [d.to_dict() for d in self.derive]
        return out


def _checkpoint(doc: Any, loc: Loc, errors: list[_Invalid]) -> MandatoryCheckpoint | None:
    r = _Reader(doc, loc, ("checkpoint_id", "must_precede", "scope", "consume", "confirmed_by",
                           "voided_by"), errors)
    cid = r.get("checkpoint_id", _text)
    guarded = r.get("must_precede", _one_or_more)
    scope = r.get("scope", _scope, "first")
    consume = r.get("consume", _flag, False)
    confirmed_by = r.get("confirmed_by", _texts, None)
    voided_by = r.get("voided_by", _selectors, ())
    if cid is None or guarded is None or scope is None or consume is None or voided_by is None:
        return None
    return MandatoryCheckpoint(cid, guarded, scope, consume, confirmed_by, voided_by)


def _contract(doc: Any, loc: Loc, errors: list[_Invalid]) -> HandoffContract | None:
    r = _Reader(doc, loc, ("from_agent", "to_agent", "required_fields", "require_verified"),
                errors)
    src = r.get("from_agent", _text)
    dst = r.get("to_agent", _text)
    fields = r.get("required_fields", _texts, ())
    verified = r.get("require_verified", _flag, False)
    if src is None or dst is None or fields is None or verified is None:
        return None
    return HandoffContract(src, dst, fields, verified)


def _derive(doc: Any, loc: Loc, errors: list[_Invalid]) -> DeriveRule | None:
    r = _Reader(doc, loc, ("checkpoint_id", "when"), errors)
    cid = r.get("checkpoint_id", _text)
    when = r.get("when", _selector)
    if cid is None or when is None:
        return None
    return DeriveRule(cid, when)


def _spec(doc: Any, errors: list[_Invalid]) -> Spec:
    r = _Reader(doc, (), ("mandatory_checkpoints", "handoff_contracts", "derive"), errors)
    built: dict[str, list[Any]] = {}
    for key, make in (("mandatory_checkpoints", _checkpoint), ("handoff_contracts", _contract),
                      ("derive", _derive)):
        entries = r.get(key, _items, [])
        built[key] = [m for m in (make(v, loc, errors) for v, loc in entries or []) if m]
    spec = Spec(tuple(built["mandatory_checkpoints"]), tuple(built["handoff_contracts"]),
                tuple(built["derive"]))
    if r.ok and not errors and not spec.mandatory_checkpoints and not spec.handoff_contracts:
        errors.append(_Invalid((), "the spec declares no mandatory checkpoint and no handoff "
                               "contract; it would pass everything"))
    seen: dict[tuple[str, str], int] = {}
    for i, c in enumerate(spec.handoff_contracts):
        pair = (c.from_agent, c.to_agent)
        if pair in seen:
            errors.append(_Invalid(("handoff_contracts", i),
                                   f"a second contract for {pair[0]}->{pair[1]} "
                                   f"(the first is handoff_contracts.{seen[pair]})"))
        seen.setdefault(pair, i)
    return spec


def parse_spec(doc: Any, source: str | None = None) -> Spec:
    """Validate a decoded spec document; every problem is reported, on one line."""
    errors: list[_Invalid] = []
    spec = _spec(doc, errors)
    raise_first(errors, "spec", source, SpecError)
    return Spec(spec.mandatory_checkpoints, spec.handoff_contracts, spec.derive, source)


def load_spec(path: str | PathLike[str]) -> Spec:
    """Read a JSON or YAML spec file."""
    from assay._docs import load_document

    source = str(path)
    return parse_spec(load_document(source, error=SpecError), source)
