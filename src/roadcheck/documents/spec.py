"""The replay spec document: mandatory checkpoints, handoff contracts, derive rules, and
the rules on what actions may do (forbidden, limits, obligations, flows)."""

# No ``from __future__ import annotations``: msgspec reads the annotations as objects
# (see roadcheck.documents.selector).
from typing import Annotated, Literal

import msgspec

from roadcheck.documents.selector import SelectorDoc

__all__ = ["BindsDoc", "CheckpointRuleDoc", "DeriveDoc", "ExampleDoc", "FlowDoc",
           "ForbiddenDoc", "HandoffContractDoc", "LimitDoc", "ObligationDoc", "SpecDoc"]

Name = Annotated[str, msgspec.Meta(min_length=1)]
Names = Annotated[list[Name], msgspec.Meta(min_length=1)]
#: A guarded action: its type, or an action selector (``{action_type: Bash, command: ...}``).
Guard = Name | SelectorDoc
Guards = Annotated[list[Guard], msgspec.Meta(min_length=1)]
#: ``block``: a finding of the rule blocks (exit 1); ``warn``: it is a warning (exit 0).
Severity = Literal["block", "warn"]
#: A rule's id: letters, digits, ``_``, ``-`` and ``.``, as reports and tools name it.
RuleId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]+$")]


class _Doc(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    pass


class BindsDoc(_Doc, frozen=True):
    """What of the guarded call a checkpoint must name to license it.

    ``tool``: the checkpoint's ``tool`` is the action's ``action_type``;
    ``args``: its ``args_sha256`` is the digest of the action's ``args``;
    ``call``: its ``call_id`` is the action's ``call_id`` (one occurrence).
    """

    tool: bool = False
    args: bool = False
    call: bool = False


class CheckpointRuleDoc(_Doc, frozen=True):
    """A checkpoint that must be recorded before a guarded action runs."""

    checkpoint_id: Name
    #: The guarded action type or action selector, or a list of them.
    must_precede: Guard | Guards
    #: ``first``: one checkpoint before the first guarded action satisfies the rule;
    #: ``each``: every occurrence needs a valid checkpoint before it.
    scope: Literal["first", "each"] = "first"
    #: One checkpoint licenses one guarded action only.
    consume: bool = False
    #: Only checkpoints confirmed by one of these count. A key id (``ed25519:`` and 16
    #: hex digits) counts only a checkpoint that carries that key's valid, unexpired
    #: signed approval of the call it names (:mod:`roadcheck.evidence.approval`).
    confirmed_by: list[Name] | None = None
    #: Event selectors after which an earlier checkpoint no longer counts.
    voided_by: list[SelectorDoc] = []
    #: The checkpoint licenses only the call it names (tool, arguments digest, call id).
    binds: BindsDoc | None = None
    severity: Severity = "block"


class HandoffContractDoc(_Doc, frozen=True):
    """What a handoff from one agent to another must carry."""

    from_agent: Name
    to_agent: Name
    required_fields: list[Name] = []
    #: Every required field must arrive as ``{"value": v, "verified": true}``.
    require_verified: bool = False
    severity: Severity = "block"


class DeriveDoc(_Doc, frozen=True):
    """Events matching ``when`` also count as checkpoint ``checkpoint_id``."""

    checkpoint_id: Name
    when: SelectorDoc


class ExampleDoc(_Doc, frozen=True, omit_defaults=True):
    """A spec test: a recorded run and the verdict the spec must give it.

    ``roadcheck spec check`` replays ``trajectory`` (relative to the spec file) and fails
    when the verdict, or the set of reason codes, differs; replay ignores examples.
    """

    trajectory: Name
    verdict: Literal["PASS", "BLOCK", "ERROR"]
    #: The reason codes the verdict must carry (as a set); left out, any reasons do.
    reasons: list[Name] | None = None


class ForbiddenDoc(_Doc, frozen=True):
    """An action matching ``when`` is blocked, unless a checkpoint ``unless`` came first
    (one checkpoint licenses one action)."""

    id: RuleId
    when: SelectorDoc
    unless: Name | None = None
    severity: Severity = "block"


class LimitDoc(_Doc, frozen=True):
    """At most ``at_most`` actions match ``when`` in a run; each one beyond is blocked."""

    id: RuleId
    when: SelectorDoc
    at_most: Annotated[int, msgspec.Meta(ge=0)]
    severity: Severity = "block"


class ObligationDoc(_Doc, frozen=True):
    """Once an event matches ``after``, an event matching ``require`` must follow before
    the run ends."""

    id: RuleId
    after: SelectorDoc
    require: SelectorDoc
    severity: Severity = "block"


class FlowDoc(_Doc, frozen=True):
    """No ``sink`` after a ``source`` (``session``), or no sink whose arguments carry a
    value from a source's result (``value``), unless checkpoint ``unless`` came between."""

    id: RuleId
    source: SelectorDoc
    sink: SelectorDoc
    unless: Name | None = None
    match: Literal["session", "value"] = "session"
    severity: Severity = "block"


class SpecDoc(_Doc, frozen=True):
    """A replay spec (JSON or YAML)."""

    mandatory_checkpoints: list[CheckpointRuleDoc] = []
    handoff_contracts: list[HandoffContractDoc] = []
    derive: list[DeriveDoc] = []
    #: Spec tests run by ``roadcheck spec check``; replay ignores them.
    examples: list[ExampleDoc] = []
    forbidden: list[ForbiddenDoc] = []
    limits: list[LimitDoc] = []
    obligations: list[ObligationDoc] = []
    flows: list[FlowDoc] = []
