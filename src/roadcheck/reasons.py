"""Reason codes: kebab-case strings that are public API.

A value is never renamed; a code that must change is deprecated and a new one added.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Reason", "propagated"]


class Reason(StrEnum):
    """Every reason code roadcheck emits, with the verdict it belongs to."""

    # replay
    TRAJECTORY_CONFORMS = "trajectory-conforms"
    CHECKPOINT_SKIPPED = "checkpoint-skipped"
    CHECKPOINT_AFTER_ACTION = "checkpoint-after-action"
    HANDOFF_CONTRACT_VIOLATION = "handoff-contract-violation"
    UNVERIFIED_CLAIM_CONSUMED = "unverified-claim-consumed-as-ground-truth"
    #: A template: ``N`` is the length of the longest chain, see :func:`propagated`.
    UNVERIFIED_CLAIM_PROPAGATED = "unverified-claim-propagated-N-hops"
    UNCONTRACTED_HANDOFF = "uncontracted-handoff"
    CONTRACTED_HANDOFF_ABSENT = "contracted-handoff-absent"
    NO_ACTIONS_RECORDED = "no-actions-recorded"
    FORBIDDEN_ACTION = "forbidden-action"
    LIMIT_EXCEEDED = "limit-exceeded"
    OBLIGATION_UNMET = "obligation-unmet"
    TAINTED_FLOW = "tainted-flow"
    # run (gated workflow harness)
    RUN_COMPLETED = "run-completed"
    GATE_FAILED = "gate-failed"
    WAITING_FOR_ROLE = "waiting-for-role"
    ROLE_GUARD_REFUSED = "role-guard-refused"
    # revalidate (resume-time revalidation)
    TASK_CURRENT = "task-current"
    TASK_UNREADABLE = "task-unreadable"
    TASK_CANCELLED = "task-cancelled"
    TASK_FINISHED = "task-finished"
    TASK_DEADLINE_PASSED = "task-deadline-passed"
    TASK_INSTRUCTIONS_CHANGED = "task-instructions-changed"
    TASK_ATTEMPTS_EXHAUSTED = "task-attempts-exhausted"
    INPUTS_CHANGED = "inputs-changed"
    ARTIFACT_VALID = "artifact-valid"
    ARTIFACT_MISSING = "artifact-missing"
    ARTIFACT_TOO_SMALL = "artifact-too-small"
    ARTIFACT_DIGEST_MISMATCH = "artifact-digest-mismatch"
    ARTIFACT_UNPARSEABLE = "artifact-unparseable"
    ARTIFACT_MEMBERS_MISMATCH = "artifact-members-mismatch"
    ARTIFACT_STALE = "artifact-stale"
    ARTIFACT_NOT_REGULAR = "artifact-not-regular"
    ARTIFACT_OUTSIDE_ROOT = "artifact-outside-root"
    EFFECT_CONFIRMED = "effect-confirmed"
    EFFECT_NOT_FOUND = "effect-not-found"
    EFFECT_UNKNOWN = "effect-unknown"
    EFFECT_UNRECONCILED = "effect-unreconciled"
    CAPABILITY_ALLOWED = "capability-allowed"
    CAPABILITY_LOST = "capability-lost"
    CAPABILITY_STALE = "capability-stale"
    BUDGET_AVAILABLE = "budget-available"
    BUDGET_EXHAUSTED = "budget-exhausted"
    BUDGET_UNKNOWN = "budget-unknown"
    BLOCKER_ACTIVE = "blocker-active"
    DATE_GATE_CLOSED = "date-gate-closed"
    CADENCE_MET = "cadence-met"
    CADENCE_MISSED = "cadence-missed"
    CADENCE_UNKNOWN = "cadence-unknown"
    STEP_CLASSIFIED = "step-classified"
    STEP_NEEDS_OPERATOR = "step-needs-operator"
    CHECKPOINT_WRITTEN = "checkpoint-written"
    # run: effects on resume
    ARTIFACT_CHANGED = "artifact-changed"
    EFFECT_UNKNOWN_STOP = "effect-unknown-stop"
    # run and evidence: the stored evidence fails verification
    EVIDENCE_BROKEN = "evidence-broken"
    # shared
    BAD_INPUT = "bad-input"


def propagated(hops: int) -> str:
    """Return the concrete propagation code for a chain of ``hops`` handoffs."""
    return Reason.UNVERIFIED_CLAIM_PROPAGATED.value.replace("-N-", f"-{hops}-")
