"""The workflow spec: ordered phases, each a producer and a gate written in code.

A workflow is a JSON or YAML document validated by pydantic. Unknown keys are
refused, every gate is one of the kinds in :data:`GATE_KINDS` (a natural-language
"please check" has no place to go), and a review phase whose role equals the
role of the phase it reviews is rejected here, before anything runs.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from string import Formatter
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from assay.errors import SpecError

__all__ = [
    "GATE_KINDS",
    "AcceptGate",
    "CallableGate",
    "CommandGate",
    "EffectSpec",
    "Gate",
    "Phase",
    "SchemaGate",
    "ScoreGate",
    "WorkflowSpec",
    "accept_available",
    "load_workflow_spec",
    "parse_workflow_spec",
]

#: Gate kinds, cheapest and most deterministic first.
GATE_KINDS = ("command", "schema", "callable", "score", "accept")
#: Placeholders every producer and gate argument may use, besides the workflow's params.
PLACEHOLDERS = frozenset({"run_dir", "run_id", "artifact", "input", "python", "spec_dir",
                          "phase"})

NonEmpty = Annotated[str, Field(min_length=1)]
Argv = Annotated[list[NonEmpty], Field(min_length=1)]
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandGate(_Model):
    """Passes when the command exits 0; never run through a shell."""

    command: Argv
    timeout: float = Field(default=300.0, gt=0)

    @property
    def kind(self) -> str:
        """The gate kind."""
        return "command"


class SchemaGate(_Model):
    """Passes when the artifact is JSON that satisfies a JSON Schema file."""

    schema_: NonEmpty = Field(alias="schema")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def kind(self) -> str:
        """The gate kind."""
        return "schema"


class CallableGate(_Model):
    """A Python function ``module:function`` returning a pass flag plus summary and detail."""

    callable: NonEmpty

    @property
    def kind(self) -> str:
        """The gate kind."""
        return "callable"

    @field_validator("callable")
    @classmethod
    def _dotted(cls, v: str) -> str:
        module, sep, func = v.partition(":")
        if not sep or not module or not func:
            raise ValueError(f"'{v}' must be written module:function")
        return v


class ScoreGate(_Model):
    """A command that prints a number; passes when the number reaches ``threshold``."""

    score: Argv
    threshold: float
    timeout: float = Field(default=300.0, gt=0)

    @property
    def kind(self) -> str:
        """The gate kind."""
        return "score"


class AcceptGate(_Model):
    """An accept contract applied to the artifact (needs :mod:`assay.acceptance`)."""

    accept: NonEmpty

    @property
    def kind(self) -> str:
        """The gate kind."""
        return "accept"


def accept_available() -> bool:
    """True when the accept capability is installed."""
    return importlib.util.find_spec("assay.acceptance") is not None


def _gate_tag(v: Any) -> str | None:
    if isinstance(v, dict):
        found = [k for k in GATE_KINDS if k in v]
        return found[0] if len(found) == 1 else None
    return getattr(v, "kind", None)


Gate = Annotated[
    Annotated[CommandGate, Tag("command")]
    | Annotated[SchemaGate, Tag("schema")]
    | Annotated[CallableGate, Tag("callable")]
    | Annotated[ScoreGate, Tag("score")]
    | Annotated[AcceptGate, Tag("accept")],
    Discriminator(_gate_tag),
]


def _placeholders(args: list[str]) -> set[str]:
    names: set[str] = set()
    for arg in args:
        try:
            parsed = list(Formatter().parse(arg))
        except ValueError as exc:
            raise ValueError(f"bad template {arg!r}: {exc}") from None
        names.update(name for _, name, _, _ in parsed if name is not None)
    return names


class EffectSpec(_Model):
    """A side effect a phase has outside the run, and how to ask its owner about it.

    The engine records ``attempted`` before the producer runs and ``confirmed``
    only when the gate passes or ``reconcile`` finds the effect. ``reconcile``
    is a read-only command run without a shell: exit 0 found (its stdout may
    stand in for a missing artifact), 1 not found, anything else unknown.
    """

    retry_class: Literal["safe_to_retry", "unsafe_to_retry", "reconcile_first"]
    idempotency_key: NonEmpty | None = None
    reconcile: Argv | None = None
    timeout: float = Field(default=60.0, gt=0)


class Phase(_Model):
    """One phase: a role runs a producer that writes the artifact; a gate judges it."""

    name: NonEmpty
    role: NonEmpty
    producer: Argv
    artifact: NonEmpty
    gate: Gate
    max_attempts: int = Field(default=3, ge=1, le=100)
    #: The phase whose artifact this phase reviews; its role must differ.
    reviews: NonEmpty | None = None
    #: What ``{input}`` means here; by default the previous (or reviewed) phase's artifact.
    input: NonEmpty | None = None
    timeout: float = Field(default=600.0, gt=0)
    #: A side effect outside the run: recorded attempted/confirmed, reconciled on resume.
    effect: EffectSpec | None = None

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if not _NAME.fullmatch(v):
            raise ValueError(f"phase name {v!r} must be letters, digits, '_' or '-'")
        return v

    @field_validator("gate", mode="before")
    @classmethod
    def _known_kind(cls, v: Any) -> Any:
        if isinstance(v, dict):
            kinds = [k for k in GATE_KINDS if k in v]
            if not kinds:
                keys = ", ".join(repr(k) for k in v) or "nothing"
                raise ValueError(f"unknown gate kind ({keys}); a gate is one of "
                                 f"{', '.join(GATE_KINDS)}: code, never a request to check")
            if len(kinds) > 1:
                raise ValueError(f"a gate has one kind, got {', '.join(kinds)}")
        elif isinstance(v, str):
            raise ValueError("a gate is an object (command, schema, callable, score or accept), "
                             "not text: a natural-language check is not a gate")
        return v

    @property
    def gate_kind(self) -> str:
        """The kind of this phase's gate."""
        return str(self.gate.kind)

    def template_args(self) -> list[str]:
        """Every templated string of the phase."""
        args = [*self.producer, self.artifact]
        if self.input is not None:
            args.append(self.input)
        if isinstance(self.gate, CommandGate):
            args.extend(self.gate.command)
        elif isinstance(self.gate, ScoreGate):
            args.extend(self.gate.score)
        elif isinstance(self.gate, SchemaGate):
            args.append(self.gate.schema_)
        elif isinstance(self.gate, AcceptGate):
            args.append(self.gate.accept)
        if self.effect is not None:
            if self.effect.idempotency_key is not None:
                args.append(self.effect.idempotency_key)
            args.extend(self.effect.reconcile or ())
        return args


class WorkflowSpec(_Model):
    """A whole workflow: its name, default params and ordered phases."""

    workflow: NonEmpty
    params: dict[str, str] = Field(default_factory=dict)
    phases: Annotated[list[Phase], Field(min_length=1)]

    @model_validator(mode="after")
    def _coherent(self) -> WorkflowSpec:
        by_name: dict[str, Phase] = {}
        for phase in self.phases:
            if phase.name in by_name:
                raise ValueError(f"two phases are named {phase.name!r}")
            if phase.reviews is not None:
                reviewed = by_name.get(phase.reviews)
                if reviewed is None:
                    where = ("a later phase" if any(p.name == phase.reviews for p in self.phases)
                             else "no phase")
                    raise ValueError(f"phase {phase.name!r} reviews {phase.reviews!r}, which "
                                     f"names {where}; a review must follow the phase it reviews")
                if reviewed.role == phase.role:
                    raise ValueError(
                        f"role guard: phase {phase.name!r} reviews {reviewed.name!r} under the "
                        f"same role {phase.role!r}; a reviewer must hold a different role")
            if isinstance(phase.gate, AcceptGate) and not accept_available():
                raise ValueError(f"phase {phase.name!r}: gate kind 'accept' is not available in "
                                 "this installation (assay.acceptance is missing)")
            allowed = PLACEHOLDERS | set(self.params)
            unknown = _placeholders(phase.template_args()) - allowed
            if unknown:
                raise ValueError(f"phase {phase.name!r} uses unknown placeholder(s) "
                                 f"{', '.join('{' + u + '}' for u in sorted(unknown))}")
            by_name[phase.name] = phase
        return self

    def phase(self, name: str) -> Phase:
        """The phase called ``name``."""
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    parts = [str(p) for p in err["loc"]]
    # pydantic puts the union tag after "gate"; the document never spells it twice
    parts = [p for i, p in enumerate(parts)
             if not (i and parts[i - 1] == "gate" and p in GATE_KINDS)]
    loc = ".".join(parts)
    msg = err["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def parse_workflow_spec(doc: Any, source: str | None = None) -> WorkflowSpec:
    """Validate a decoded workflow document; every problem is one :class:`SpecError` line."""
    if not isinstance(doc, dict):
        raise SpecError(f"a workflow must be an object, got {type(doc).__name__}", path=source)
    try:
        return WorkflowSpec.model_validate(doc)
    except ValidationError as exc:
        raise SpecError(f"unusable workflow: {_first_error(exc)}", path=source) from None


def load_workflow_spec(path: str | Path) -> WorkflowSpec:
    """Read a JSON or YAML workflow file."""
    from assay._docs import load_document

    source = str(path)
    return parse_workflow_spec(load_document(source, error=SpecError), source)

