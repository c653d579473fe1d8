"""The evidence record: one per gate evaluation or refusal, chained by ``prev_hash`` / ``hash``.

Declared once here: its JSON Schema, its documentation and the type every store
decodes a record line into (one pass, :func:`roadcheck.evidence.record.read_record`).
The structs hold no reference to anything but values (``gc=False``), so a million
decoded records cost the garbage collector nothing. Field order and hashing live
in :mod:`roadcheck.evidence.record`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = ["ArtifactRef", "EvidenceRecord", "GateReport", "HeadWitness", "ProducerReport",
           "TokenUsage"]

Hex64 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
#: A chain link: a sha256 in hex, as the schema says; not matched as it is read, since
#: verification compares it with the digest it recomputes (or the one before it),
#: which refuses any other text.
Link = Annotated[str, msgspec.Meta(extra_json_schema={"pattern": r"^[0-9a-f]{64}$"})]


class GateReport(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """What the gate said."""

    kind: str
    summary: str
    detail: str
    #: The gate command's exit code; null when no command ran to the end.
    exit_code: int | None
    #: The tail of the gate's output.
    output: str


class TokenUsage(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """Tokens an agent attempt used, summed over its turns."""

    input_tokens: Annotated[int, msgspec.Meta(ge=0)]
    output_tokens: Annotated[int, msgspec.Meta(ge=0)]
    total_tokens: Annotated[int, msgspec.Meta(ge=0)]


class ProducerReport(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """What an agent producer did in one attempt; never its API key."""

    kind: Literal["agent"]
    provider: Literal["anthropic", "openai"]
    #: The model asked for, and the model the endpoint says served it.
    model: str
    served_model: str | None
    #: The provider's id of each request (one per turn), for its own logs.
    request_ids: list[str]
    turns: Annotated[int, msgspec.Meta(ge=0)]
    tool_calls: Annotated[int, msgspec.Meta(ge=0)]
    #: Why the last turn ended: ``end``, ``tool_use``, ``max_tokens``, ``refusal``...
    stop: str | None
    #: ``ok`` or why the attempt failed before its gate: ``refusal``, ``empty``,
    #: ``max-tokens``, ``provider-error``, ``turns-exhausted``, ``budget-exhausted``, ``stopped``.
    outcome: str
    usage: TokenUsage
    #: Null when neither the provider nor the agent's ``price`` says what it cost.
    #: A whole number stays one (the record's hash covers the number as it was written).
    cost: Annotated[int, msgspec.Meta(ge=0)] | Annotated[float, msgspec.Meta(ge=0)] | None
    cost_source: Literal["provider", "price"] | None
    #: sha256 of the request's prompt (system, task with feedback, tools, settings).
    prompt_sha256: Hex64


class ArtifactRef(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """The artifact the gate judged; sha256 and bytes are null when it was missing."""

    path: str
    sha256: Hex64 | None
    bytes: Annotated[int, msgspec.Meta(ge=0)] | None
    #: What the agent producer that made it did in this attempt; absent when the
    #: producer is a command (absent and null are kept apart: the hash covers which).
    producer: ProducerReport | msgspec.UnsetType | None = msgspec.UNSET
    #: The tail of the producer command's output (stdout, then stderr), as a gate's is
    #: kept; absent when the producer is an agent, or none ran in the attempt (an
    #: effect adopted from its owner's record).
    output: str | msgspec.UnsetType = msgspec.UNSET


class EvidenceRecord(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """One gate evaluation, pass or fail, durable before the transition it justifies.

    A review refused by the role guard (the acting identity produced what it
    would review) is a record too: verdict ``refused``, gate kind ``role-guard``,
    the reviewed artifact.
    """

    run_id: str
    workflow: str
    phase: str
    attempt: Annotated[int, msgspec.Meta(ge=1)]
    iteration: Annotated[int, msgspec.Meta(ge=0)]
    verdict: Literal["pass", "fail", "refused"]
    gate: GateReport
    artifact: ArtifactRef | None
    role: str
    identity: str
    started_at: str
    finished_at: str
    #: sha256 of the run's params, fixed when the run was created.
    params_sha256: Hex64
    #: The ``hash`` of the record before it in the run (64 zeros for the first).
    prev_hash: Link
    #: sha256 of the record's canonical JSON without ``hash``.
    hash: Link


class HeadWitness(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A witness's signed statement that a run's chain reached a head: kept outside the
    run's store (``roadcheck evidence witness``), it lets a verifier see that the store
    was rolled back to before that head (``roadcheck evidence verify --witness``)."""

    kind: Literal["roadcheck-head-witness"]
    run_id: str
    #: The head witnessed: how many records the chain held, and the last one's hash.
    records: Annotated[int, msgspec.Meta(ge=0)]
    last_hash: Hex64
    #: RFC 3339 UTC time the witness saw the head.
    witnessed_at: str
    #: The witness's Ed25519 public key (32 raw bytes, base64url without padding).
    public_key: str
    #: Its signature over the RFC 8785 canonical JSON of every other field.
    signature: str
