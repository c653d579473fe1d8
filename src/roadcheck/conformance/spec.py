"""The replay spec: which checkpoints are mandatory, and what each handoff must carry.

A spec is a JSON or YAML document declared by the structs of
:mod:`roadcheck.documents.spec` and read by the one document loader: unknown keys
are refused at every depth (a misspelt ``require_verifed`` must not silently
turn a check off, and the error suggests the right name), selectors name known
event fields with their types, a null never stands for a default, and the
first problem is reported on one line with the file, line and field. A spec
with nothing to check is unusable: it would pass everything.

:class:`Spec` is the document as read: its structs (:attr:`Spec.doc`, a
:class:`~roadcheck.documents.spec.SpecDoc`), where it was read from, and
:attr:`Spec.sha256`, the sha256 of the bytes it was read from, which every report
prints and ``--expect-spec-sha256`` pins. The engine compiles it into lookup
tables once (:class:`~roadcheck.conformance.engine.CompiledSpec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import msgspec

from roadcheck.documents.selector import SelectorDoc
from roadcheck.documents.spec import (
    BindsDoc,
    CheckpointRuleDoc,
    DeriveDoc,
    HandoffContractDoc,
    SpecDoc,
)
from roadcheck.errors import SpecError

__all__ = [
    "RULE_KINDS",
    "RULE_SELECTORS",
    "DeriveRule",
    "HandoffContract",
    "MandatoryCheckpoint",
    "Spec",
    "bound_parts",
    "guarded_actions",
    "load_spec",
    "parse_spec",
]

#: The spec document's own structs, under the names the engine has always given them.
MandatoryCheckpoint = CheckpointRuleDoc
HandoffContract = HandoffContractDoc
DeriveRule = DeriveDoc

#: The parts of a call a checkpoint can bind, in the order they are named.
_BOUND = ("tool", "args", "call")


def guarded_actions(rule: CheckpointRuleDoc) -> tuple[str | SelectorDoc, ...]:
    """What a rule guards (its ``must_precede``, one entry or a list) as a tuple."""
    must = rule.must_precede
    return tuple(must) if isinstance(must, list) else (must,)


def bound_parts(binds: BindsDoc | None) -> tuple[str, ...]:
    """The parts of the guarded call a checkpoint must name (a subset of ``tool``,
    ``args``, ``call``, in that order); empty when the rule binds nothing."""
    if binds is None:
        return ()
    return tuple(name for name in _BOUND if getattr(binds, name))


@dataclass(frozen=True)
class Spec:
    """A whole replay spec: the document's structs and where they were read from."""

    #: The document, as the loader read it.
    doc: SpecDoc = field(default_factory=SpecDoc)
    #: Where the spec was read from; not part of the document.
    source: str | None = field(default=None, compare=False)
    #: The sha256 (hex) of the bytes the spec was read from; None when built in memory.
    sha256: str | None = field(default=None, compare=False)
    #: True when the document was read and checked by :func:`parse_spec` (its selectors
    #: compile without checking again).
    checked: bool = field(default=False, compare=False, repr=False)

    @property
    def mandatory_checkpoints(self) -> list[CheckpointRuleDoc]:
        """The mandatory checkpoint rules, as the document declares them."""
        return self.doc.mandatory_checkpoints

    @property
    def handoff_contracts(self) -> list[HandoffContractDoc]:
        """The handoff contracts, as the document declares them."""
        return self.doc.handoff_contracts

    @property
    def derive(self) -> list[DeriveDoc]:
        """The derive rules, as the document declares them."""
        return self.doc.derive

    def to_dict(self) -> dict[str, Any]:
        """The spec as a document that :func:`parse_spec` reads back to an equal spec."""
        out: dict[str, Any] = {
            "mandatory_checkpoints": [_rule_dict(m) for m in self.doc.mandatory_checkpoints],
            "handoff_contracts": [
                {"from_agent": c.from_agent, "to_agent": c.to_agent,
                 "required_fields": list(c.required_fields),
                 "require_verified": c.require_verified,
                 **({"severity": c.severity} if c.severity != "block" else {})}
                for c in self.doc.handoff_contracts],
        }
        if self.doc.derive:
            out["derive"] = [{"checkpoint_id": d.checkpoint_id,
                              "when": msgspec.to_builtins(d.when)} for d in self.doc.derive]
        if self.doc.examples:
            out["examples"] = [msgspec.to_builtins(e) for e in self.doc.examples]
        for kind in RULE_KINDS:
            rules = getattr(self.doc, kind)
            if rules:
                out[kind] = [_plain(r) for r in rules]
        return out


def _rule_dict(rule: CheckpointRuleDoc) -> dict[str, Any]:
    """A rule as a spec document entry (defaults left out, one guarded action unlisted)."""
    guarded = [g if isinstance(g, str) else msgspec.to_builtins(g)
               for g in guarded_actions(rule)]
    out: dict[str, Any] = {"checkpoint_id": rule.checkpoint_id,
                           "must_precede": guarded[0] if len(guarded) == 1 else guarded}
    if rule.scope != "first":
        out["scope"] = rule.scope
    if rule.consume:
        out["consume"] = True
    if rule.confirmed_by is not None:
        out["confirmed_by"] = list(rule.confirmed_by)
    if rule.voided_by:
        out["voided_by"] = [msgspec.to_builtins(s) for s in rule.voided_by]
    binds = bound_parts(rule.binds)
    if binds:
        out["binds"] = dict.fromkeys(binds, True)
    if rule.severity != "block":
        out["severity"] = rule.severity
    return out


#: The rules on what actions may do, each a list of the spec, in the order they are judged.
RULE_KINDS = ("forbidden", "limits", "obligations", "flows")
#: The selectors of each kind of rule, and whether each must select actions.
RULE_SELECTORS: dict[str, tuple[tuple[str, bool], ...]] = {
    "forbidden": (("when", True),), "limits": (("when", True),),
    "obligations": (("after", False), ("require", False)),
    "flows": (("source", False), ("sink", True)),
}


def _check_selector(sel: SelectorDoc, loc: tuple[str | int, ...]) -> None:
    """A selector's conditions (one form each, patterns that compile), problems at ``loc``."""
    from roadcheck.documents._read import Problem
    from roadcheck.selectors import check_selector_doc

    try:
        check_selector_doc(sel)
    except Problem as p:
        raise Problem((*loc, *p.loc), p.message) from None


def _check_guard(sel: SelectorDoc, loc: tuple[str | int, ...]) -> None:
    """An action selector in ``must_precede``: it must select actions only."""
    from roadcheck.documents._read import Problem

    _check_selector(sel, loc)
    kind = "action" if sel.event is None else msgspec.to_builtins(sel.event)
    if kind != "action":
        raise Problem((*loc, "event"), "a guarded action selector selects actions: leave "
                                       f"'event' out or write 'action', not {kind!r}")


def _check_binds(binds: BindsDoc | None, loc: tuple[str | int, ...]) -> None:
    """Binding nothing, or the arguments without the tool, is a problem."""
    from roadcheck.documents._read import Problem

    if binds is None:
        return
    names = bound_parts(binds)
    if not names:
        raise Problem(loc, "binds names nothing: set tool, args or call to true, or leave "
                           "binds out")
    if "args" in names and "tool" not in names:
        raise Problem((*loc, "args"), "binding the arguments needs tool: true too (the same "
                                      "arguments mean another thing to another tool)")


def _check(d: SpecDoc) -> None:
    """What the structs cannot say; a problem raises :class:`Problem`."""
    from roadcheck.documents._read import Problem

    for i, r in enumerate(d.mandatory_checkpoints):
        loc: tuple[str | int, ...] = ("mandatory_checkpoints", i, "must_precede")
        listed = isinstance(r.must_precede, list)
        for j, g in enumerate(guarded_actions(r)):
            if not isinstance(g, str):
                _check_guard(g, (*loc, j) if listed else loc)
        for k, sel in enumerate(r.voided_by):
            _check_selector(sel, ("mandatory_checkpoints", i, "voided_by", k))
        _check_binds(r.binds, ("mandatory_checkpoints", i, "binds"))
    for i, rule in enumerate(d.derive):
        # A problem in a derive selector has always been reported at derive.N.when.0.
        _check_selector(rule.when, ("derive", i, "when", 0))
    _check_rules(d)
    if not d.mandatory_checkpoints and not d.handoff_contracts and not any(
            getattr(d, kind) for kind in RULE_KINDS):
        raise Problem((), "the spec declares no mandatory checkpoint and no handoff contract; "
                          "it would pass everything")
    seen: dict[tuple[str, str], int] = {}
    for i, c in enumerate(d.handoff_contracts):
        pair = (c.from_agent, c.to_agent)
        if pair in seen:
            raise Problem(("handoff_contracts", i),
                          f"a second contract for {pair[0]}->{pair[1]} "
                          f"(the first is handoff_contracts.{seen[pair]})")
        seen[pair] = i


_DEFAULTS = {"severity": "block", "match": "session"}


def _plain(rule: Any) -> dict[str, Any]:
    """A rule as a document entry: unset and default keys left out."""
    return {k: v for k, v in msgspec.to_builtins(rule).items()
            if v is not None and _DEFAULTS.get(k) != v}


def _check_rules(d: SpecDoc) -> None:
    """The selectors of forbidden, limits, obligations and flows; rule ids used once."""
    from roadcheck.documents._read import Problem

    ids: dict[str, str] = {}
    for kind in RULE_KINDS:
        for i, rule in enumerate(getattr(d, kind)):
            for name, actions in RULE_SELECTORS[kind]:
                loc = (kind, i, name)
                (_check_guard if actions else _check_selector)(getattr(rule, name), loc)
            if rule.id in ids:
                raise Problem((kind, i, "id"), f"rule id {rule.id!r} is already used by "
                                               f"{ids[rule.id]}")
            ids[rule.id] = f"{kind}.{i}"


def parse_spec(doc: Any, source: str | None = None, sha256: str | None = None) -> Spec:
    """Validate a decoded spec document; the first problem is reported, on one line."""
    from roadcheck.documents._read import problems
    from roadcheck.documents.loader import convert

    with problems("spec", source, SpecError):
        d = convert(doc, SpecDoc)
        _check(d)
    return Spec(d, source, sha256, checked=True)


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
