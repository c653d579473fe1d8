"""The harness's trajectory: the native events ``roadcheck run`` writes for each run.

Each line of ``runs/<run-id>/trajectory.jsonl`` is one of these, in the native
format (``roadcheck replay`` reads it; the fields beyond the native ones are kept
and ignored there). Fields are written in declaration order, only when set.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["HarnessAction", "HarnessCheckpoint", "HarnessEvent", "HarnessFinal"]


class HarnessEvent(msgspec.Struct, frozen=True, omit_defaults=True, gc=False):
    """What every line holds first."""

    seq: int
    ts: str
    agent: str


class HarnessAction(HarnessEvent, frozen=True, omit_defaults=True, gc=False):
    """A step of the run: ``produce:<phase>``, ``gate:<phase>``, ``effect:<phase>``,
    ``role-guard`` or ``budget``; each sets the fields it knows."""

    event: Literal["action"]
    action_type: str
    phase: str | UnsetType = UNSET
    attempt: int | UnsetType = UNSET
    iteration: int | UnsetType = UNSET
    #: Who acted (the invocation's identity).
    identity: str | UnsetType = UNSET
    #: ``agent`` for an agent producer, and the attempt's outcome.
    producer: str | UnsetType = UNSET
    outcome: str | UnsetType = UNSET
    #: A producer command's exit code (null when it did not run to its end).
    exit_code: int | UnsetType | None = UNSET
    #: An effect's state and who recorded it.
    state: str | UnsetType = UNSET
    by: str | UnsetType = UNSET
    #: A gate's kind and verdict.
    kind: str | UnsetType = UNSET
    verdict: str | UnsetType = UNSET
    #: Why a budget stopped the phase.
    reason: str | UnsetType = UNSET
    message: str | UnsetType = UNSET
    refused: bool | UnsetType = UNSET
    #: The hash of the evidence record the step made.
    evidence: str | UnsetType = UNSET


class HarnessCheckpoint(HarnessEvent, frozen=True, omit_defaults=True, gc=False):
    """A phase passed its gate: ``passed:<phase>``, confirmed by the identity that ran it."""

    event: Literal["checkpoint"]
    checkpoint_id: str
    confirmed_by: str
    evidence: str


class HarnessFinal(HarnessEvent, frozen=True, omit_defaults=True, gc=False):
    """The last line: the run's outcome."""

    event: Literal["final"]
    task_success: bool
    status: str
    exit: int
