"""Reason codes: kebab-case strings that are public API.

A value is never renamed; a code that must change is deprecated and a new one added.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Reason", "propagated"]


class Reason(StrEnum):
    """Every reason code assay emits, with the verdict it belongs to."""

    # replay
    TRAJECTORY_CONFORMS = "trajectory-conforms"
    CHECKPOINT_SKIPPED = "checkpoint-skipped"
    CHECKPOINT_AFTER_ACTION = "checkpoint-after-action"
    HANDOFF_CONTRACT_VIOLATION = "handoff-contract-violation"
    UNVERIFIED_CLAIM_CONSUMED = "unverified-claim-consumed-as-ground-truth"
    #: A template: ``N`` is the length of the longest chain, see :func:`propagated`.
    UNVERIFIED_CLAIM_PROPAGATED = "unverified-claim-propagated-N-hops"
    UNCONTRACTED_HANDOFF = "uncontracted-handoff"
    # run (gated workflow harness)
    RUN_COMPLETED = "run-completed"
    GATE_FAILED = "gate-failed"
    WAITING_FOR_ROLE = "waiting-for-role"
    ROLE_GUARD_REFUSED = "role-guard-refused"
    # shared
    BAD_INPUT = "bad-input"


def propagated(hops: int) -> str:
    """Return the concrete propagation code for a chain of ``hops`` handoffs."""
    return Reason.UNVERIFIED_CLAIM_PROPAGATED.value.replace("-N-", f"-{hops}-")
