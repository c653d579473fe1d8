"""The evidence record: one per gate evaluation or refusal, chained by ``prev_hash`` / ``hash``.

Declared here for its JSON Schema and documentation; the stores in
:mod:`assay.evidence` write and verify records (field order and hashing live
in :mod:`assay.evidence.record`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = ["ArtifactRef", "EvidenceRecord", "GateReport"]

Hex64 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]


class GateReport(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """What the gate said."""

    kind: str
    summary: str
    detail: str
    #: The gate command's exit code; null when no command ran to the end.
    exit_code: int | None
    #: The tail of the gate's output.
    output: str


class ArtifactRef(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The artifact the gate judged; sha256 and bytes are null when it was missing."""

    path: str
    sha256: Hex64 | None
    bytes: Annotated[int, msgspec.Meta(ge=0)] | None


class EvidenceRecord(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
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
    prev_hash: Hex64
    #: sha256 of the record's canonical JSON without ``hash``.
    hash: Hex64
