"""The workflow document: ordered phases, each a producer and a gate written in code.

A gate is one of five kinds, chosen by the one key that names it
(``command``, ``schema``, ``callable``, ``score`` or ``accept``); the loader
turns that key into the union's tag, so a document never spells the kind
twice. These structs are the workflow model the harness runs.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "AGENT_TOOLS",
    "GATE_KINDS",
    "PROVIDERS",
    "AcceptGate",
    "AgentProducer",
    "AgentSpec",
    "Budget",
    "CallableGate",
    "CommandGate",
    "EffectSpec",
    "Gate",
    "Param",
    "Phase",
    "Price",
    "SchemaGate",
    "ScoreGate",
    "WorkflowSpec",
]

#: Gate kinds, cheapest and most deterministic first.
GATE_KINDS = ("command", "schema", "callable", "score", "accept")

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Argv = Annotated[list[NonEmpty], msgspec.Meta(
    min_length=1,
    extra={"message": "must be a non-empty list of arguments (never run through a shell)"})]
Seconds = Annotated[float, msgspec.Meta(gt=0)]
PhaseName = Annotated[str, msgspec.Meta(
    pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$",
    extra={"message": "a phase name is 1-64 letters, digits, '_' or '-'"})]
Dotted = Annotated[str, msgspec.Meta(
    pattern=r"^[^:]+:.+$", extra={"message": "must be written module:function"})]


class _Gate(msgspec.Struct, forbid_unknown_fields=True, frozen=True, tag_field="kind"):
    @property
    def kind(self) -> str:
        """The gate kind."""
        return str(self.__struct_config__.tag)


class CommandGate(_Gate, frozen=True, tag="command"):
    """Passes when the command exits 0; never run through a shell."""

    command: Argv
    timeout: Seconds = 300.0


class SchemaGate(_Gate, frozen=True, tag="schema"):
    """Passes when the artifact is JSON that satisfies a JSON Schema file."""

    schema_: NonEmpty = msgspec.field(name="schema")


class CallableGate(_Gate, frozen=True, tag="callable"):
    """A Python function ``module:function`` returning a pass flag plus summary and detail."""

    callable: Dotted


class ScoreGate(_Gate, frozen=True, tag="score"):
    """A command that prints a number; passes when the number reaches ``threshold``."""

    score: Argv
    threshold: float
    timeout: Seconds = 300.0


class AcceptGate(_Gate, frozen=True, tag="accept"):
    """An accept contract applied to the artifact (needs :mod:`roadcheck.acceptance`)."""

    accept: NonEmpty


Gate = CommandGate | SchemaGate | CallableGate | ScoreGate | AcceptGate

#: The model providers an agent producer speaks to (``openai``: any OpenAI-compatible endpoint).
PROVIDERS = ("anthropic", "openai")
#: The tools an agent producer may be given; the harness runs them itself.
AGENT_TOOLS = ("read_file", "write_artifact")
EnvName = Annotated[str, msgspec.Meta(
    pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
    extra={"message": "must name an environment variable (letters, digits, '_')"})]


class Budget(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """What agent producers may spend: tokens (input plus output) and/or cost (currency units).

    The loop stops before an attempt once what is spent reaches a limit.
    """

    tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    cost: Annotated[float, msgspec.Meta(gt=0)] | None = None


class Price(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The model's price per million tokens, used when the provider reports no cost."""

    input: Annotated[float, msgspec.Meta(ge=0)]
    output: Annotated[float, msgspec.Meta(ge=0)]


class AgentSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A model that writes the phase's artifact; the gate judges it like any other.

    Prompts are inline text or files (taken from the workflow's folder) where
    ``{name}`` stands for a param or built-in value and ``{input_text}`` for the
    content of the phase's input. The API key is read only from the environment
    variable ``api_key_env`` (``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` by default).
    """

    provider: Literal["anthropic", "openai"]
    model: NonEmpty
    #: Another endpoint than the provider's own (vLLM, Ollama, LM Studio, a proxy...).
    base_url: NonEmpty | None = None
    api_key_env: EnvName | None = None
    system: NonEmpty | None = None
    system_file: NonEmpty | None = None
    task: NonEmpty | None = None
    task_file: NonEmpty | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 4096
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    #: Tools the model may call; the harness runs them inside the run's allowed roots.
    tools: tuple[Literal["read_file", "write_artifact"], ...] = ()
    #: Model turns per attempt when tools are given (each tool result is one more turn).
    max_turns: Annotated[int, msgspec.Meta(ge=1, le=50)] = 8
    #: Receive the reply as a stream of events instead of one response.
    stream: bool = False
    #: Seconds per HTTP request; the SDK retries 429 and 5xx ``max_retries`` times with backoff.
    timeout: Seconds = 120.0
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2
    price: Price | None = None
    #: What this phase's attempts may spend in all.
    budget: Budget | None = None


class AgentProducer(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A producer that is a model: ``producer: {agent: {...}}``."""

    agent: AgentSpec


class EffectSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A side effect a phase has outside the run, and how to ask its owner about it.

    The engine records ``attempted`` before the producer runs and ``confirmed``
    only when the gate passes or ``reconcile`` finds the effect. ``reconcile``
    is a read-only command run without a shell: exit 0 found (its stdout may
    stand in for a missing artifact), 1 not found, anything else unknown.
    """

    retry_class: Literal["safe_to_retry", "unsafe_to_retry", "reconcile_first"]
    idempotency_key: NonEmpty | None = None
    reconcile: Argv | None = None
    timeout: Seconds = 60.0


class Phase(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One phase: a role runs a producer that writes the artifact; a gate judges it."""

    name: PhaseName
    role: NonEmpty
    #: A command (argv, never run through a shell) or ``{agent: {...}}``, a model.
    producer: Argv | AgentProducer
    artifact: NonEmpty
    gate: Gate
    max_attempts: Annotated[int, msgspec.Meta(ge=1, le=100)] = 3
    #: The phase whose artifact this phase reviews; its role must differ.
    reviews: NonEmpty | None = None
    #: What ``{input}`` means here; by default the previous (or reviewed) phase's artifact.
    input: NonEmpty | None = None
    timeout: Seconds = 600.0
    #: A side effect outside the run: recorded attempted/confirmed, reconciled on resume.
    effect: EffectSpec | None = None

    @property
    def gate_kind(self) -> str:
        """The kind of this phase's gate."""
        return self.gate.kind

    def template_args(self) -> list[str]:
        """Every templated string of the phase."""
        producer = self.producer
        if isinstance(producer, AgentProducer):
            agent = producer.agent
            args = [agent.model, *(f for f in (agent.base_url, agent.system_file,
                                                 agent.task_file) if f is not None)]
        else:
            args = list(producer)
        args.append(self.artifact)
        if self.input is not None:
            args.append(self.input)
        gate = self.gate
        if isinstance(gate, CommandGate):
            args.extend(gate.command)
        elif isinstance(gate, ScoreGate):
            args.extend(gate.score)
        elif isinstance(gate, SchemaGate):
            args.append(gate.schema_)
        elif isinstance(gate, AcceptGate):
            args.append(gate.accept)
        if self.effect is not None:
            if self.effect.idempotency_key is not None:
                args.append(self.effect.idempotency_key)
            args.extend(self.effect.reconcile or ())
        return args


class Param(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A declared workflow param; without a ``default`` every run must set it."""

    default: str | None = None
    description: str | None = None


class WorkflowSpec(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A whole workflow: its name, declared params and ordered phases."""

    workflow: NonEmpty
    #: Name -> its default (text), or ``{default: ..., description: ...}``; a param
    #: declared without a default is required.
    declarations: dict[NonEmpty, str | Param] = msgspec.field(default={}, name="params")
    phases: Annotated[list[Phase], msgspec.Meta(min_length=1)]
    #: Directories besides the run directory where artifacts may live (relative ones
    #: are taken from the workflow's folder).
    allowed_roots: tuple[NonEmpty, ...] = ()
    #: What the agent producers of one run may spend in all, across resumes.
    budget: Budget | None = None

    @property
    def params(self) -> dict[str, str]:
        """Every declared param that has a default, with its default."""
        out = {}
        for name, decl in self.declarations.items():
            default = decl if isinstance(decl, str) else decl.default
            if default is not None:
                out[name] = default
        return out

    @property
    def declared_params(self) -> frozenset[str]:
        """Every param the workflow declares (and so accepts)."""
        return frozenset(self.declarations)

    @property
    def required_params(self) -> frozenset[str]:
        """The declared params without a default: each run must set them."""
        return self.declared_params - frozenset(self.params)

    def phase(self, name: str) -> Phase:
        """The phase called ``name``."""
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)
