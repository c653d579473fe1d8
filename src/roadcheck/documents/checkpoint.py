"""The resume checkpoint document: what a task believed when it last looked.

Timestamps are ISO 8601 text (YAML timestamps are read as text too); durations
are ``90s``, ``30m``, ``24h``, ``7d``, ``1h30m`` or a number of seconds. Paths are
relative to the checkpoint's directory. ``remaining`` is required (``[]`` when
nothing is left), so a checkpoint cut short before its steps is unusable.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import msgspec

__all__ = [
    "ArtifactDoc",
    "BlockerDoc",
    "BudgetDoc",
    "CadenceDoc",
    "CapabilityDoc",
    "CheckpointDoc",
    "DateGateDoc",
    "EffectDoc",
    "ExpectDoc",
    "FindingDoc",
    "MembersDoc",
    "StepDoc",
    "TaskDoc",
]

Text = Annotated[str, msgspec.Meta(min_length=1)]
Timestamp = Annotated[str, msgspec.Meta(
    min_length=1, description="ISO 8601 timestamp; UTC when it names no offset")]
Duration = (Annotated[str, msgspec.Meta(min_length=1, description="90s, 30m, 24h, 7d, 1h30m")]
            | Annotated[float, msgspec.Meta(gt=0, description="seconds")])
Seconds = Annotated[float, msgspec.Meta(gt=0, extra={"message": "must be a number of seconds > 0"})]
Amount = Annotated[float, msgspec.Meta(ge=0, extra={"message": "must be a number >= 0"})]
Count = Annotated[int, msgspec.Meta(ge=0, extra={"message": "must be a whole number >= 0"})]
Digest = Annotated[str, msgspec.Meta(
    pattern=r"^sha256:[0-9a-f]{64}$",
    extra={"message": "must be 'sha256:' followed by 64 lowercase hex digits"})]
Argv = Annotated[list[Text], msgspec.Meta(
    min_length=1,
    extra={"message": "must be a non-empty list of arguments (a command is never run in a "
                      "shell)"})]
Paths = Text | list[Text]
RetryClass = Literal["safe_to_retry", "unsafe_to_retry", "reconcile_first"]


class _Doc(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    key_hints: ClassVar[dict[str, str]] = {}


class TaskDoc(_Doc, frozen=True, kw_only=True):
    """The durable task file and the state the checkpoint last saw it in."""

    path: Text
    state: Text | None = None


class MembersDoc(_Doc, frozen=True, kw_only=True):
    """``glob`` under the artifact directory matches ``count`` files."""

    glob: Text
    count: Count


class ExpectDoc(_Doc, frozen=True, kw_only=True):
    """What an artifact must satisfy beyond existing."""

    min_bytes: Count | None = None
    format: Literal["json", "jsonl", "yaml"] | None = None
    members: MembersDoc | None = None
    newer_than: Paths = []


class ArtifactDoc(_Doc, frozen=True, kw_only=True):
    """An expected output, with its recorded digest and invariants."""

    path: Text
    state: Text | None = None
    digest: Digest | None = None
    expect: ExpectDoc | None = None


_ONE_STATE = ("an effect has one 'state' field; attempted is an event, confirmed a "
              "conclusion, and they never share a field")


class EffectDoc(_Doc, frozen=True, kw_only=True):
    """A side effect outside the machine, and how to ask its owner about it."""

    key_hints = {"confirmed": _ONE_STATE, "attempted": _ONE_STATE}
    state: Literal["attempted", "confirmed", "unknown"]
    remote_id: Text | None = None
    idempotency_key: Text | None = None
    ledger: Text | None = None
    reconcile: Argv | None = None
    timeout: Seconds = 10.0


class CapabilityDoc(_Doc, frozen=True, kw_only=True):
    """A permission: a recorded ``state`` (with a max age) or a ``check`` command."""

    state: Literal["allowed", "denied"] | None = None
    checked_at: Timestamp | None = None
    max_age: Duration | None = None
    check: Argv | None = None
    timeout: Seconds = 10.0


class BudgetDoc(_Doc, frozen=True, kw_only=True):
    """``limit`` against exactly one of ``spent``, ``spent_file`` or ``spent_command``."""

    limit: Amount
    spent: Amount | None = None
    spent_file: Text | None = None
    spent_command: Argv | None = None
    timeout: Seconds = 10.0


class BlockerDoc(_Doc, frozen=True, kw_only=True):
    """Active while ``active`` and before ``until``; with ``file``, while that file exists."""

    name: Text
    active: bool = True
    until: Timestamp | None = None
    file: Text | None = None


class DateGateDoc(_Doc, frozen=True, kw_only=True):
    """A window outside which the task must not act."""

    name: Text
    not_before: Timestamp | None = None
    not_after: Timestamp | None = None


class CadenceDoc(_Doc, frozen=True, kw_only=True):
    """A promised delivery rhythm: the last output must be younger than ``every``."""

    every: Duration
    last_output_at: Timestamp | None = None
    command: Argv | None = None
    timeout: Seconds = 10.0


class StepDoc(_Doc, frozen=True, kw_only=True):
    """An unfinished step, its recorded retry class and the effect it creates."""

    step: Text
    retry_class: RetryClass
    effect: Text | None = None
    idempotency_key: Text | None = None


class FindingDoc(_Doc, frozen=True, kw_only=True):
    """A finding of the revalidation that wrote this checkpoint (informational)."""

    question: Text
    code: Text
    message: str


class CheckpointDoc(_Doc, frozen=True, kw_only=True):
    """A resume checkpoint (YAML or JSON)."""

    observed_at: Timestamp
    task: TaskDoc | None = None
    inputs: Paths = []
    inputs_digest: Digest | None = None
    artifacts: dict[Text, ArtifactDoc] = {}
    external_effects: dict[Text, EffectDoc] = {}
    capabilities: dict[Text, CapabilityDoc] = {}
    budgets: dict[Text, BudgetDoc] = {}
    blockers: list[BlockerDoc] = []
    date_gates: list[DateGateDoc] = []
    cadence: CadenceDoc | None = None
    #: The steps left; required (``[]`` when nothing is left).
    remaining: list[StepDoc]
    next_action: Text | None = None
    #: Written by ``--write-next``: the decision and findings of that revalidation.
    decision: Literal["continue", "reconcile_first", "escalate"] | None = None
    findings: list[FindingDoc] = []
