"""The native trajectory event: one JSON object per line, its type chosen by ``event``.

These structs declare the format for its JSON Schema and its documentation;
the replay hot path (:func:`roadcheck.ingest.native.iter_events`) checks the same
rules inline, because it runs once per recorded line. Unlike every other
document, an event keeps keys it does not declare: readers of other formats
add ids (``call_id``, ``span_id``, ``step_id``) and a trajectory may carry
whatever its recorder wrote; only the declared keys are typed and required.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

__all__ = ["ActionEvent", "CheckpointEvent", "Event", "FinalEvent", "HandoffEvent",
           "MessageEvent", "VerifiedValue"]

#: A name rules match on (a tool, a checkpoint, an agent): never empty.
Name = Annotated[str, msgspec.Meta(min_length=1)]


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="event"):
    #: Strictly increasing through the file; orders the events.
    seq: int
    #: Who recorded the event.
    agent: str | None = None
    #: A timestamp, printed and never used for ordering.
    ts: str | None = None


class ActionEvent(_Event, frozen=True, kw_only=True, tag="action"):
    """A tool call or action."""

    action_type: Name
    #: ``true`` marks an action that cannot be taken back.
    irreversible: bool | None = None
    #: The MCP tool's ``destructiveHint`` / ``readOnlyHint`` annotations, as the server
    #: declared them (hints a server may get wrong, never proof).
    destructive_hint: bool | None = None
    read_only_hint: bool | None = None
    args: Any = None
    result: Any = None
    #: The call failed, and why (a selector's ``ok`` is false).
    error: str | None = None
    #: The exit status of the command the call ran (``ok`` needs 0).
    exit_code: int | None = None


class CheckpointEvent(_Event, frozen=True, kw_only=True, tag="checkpoint"):
    """A confirmation or approval."""

    checkpoint_id: Name
    confirmed_by: str | None = None
    #: The call an approval names, for a rule with ``binds``: its tool, the digest of
    #: its arguments (:func:`roadcheck.events.args_digest`) and its call id.
    tool: str | None = None
    args_sha256: Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$")] | None = None
    call_id: str | None = None


class VerifiedValue(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A payload field whose verification is stated: only ``verified: true`` counts."""

    value: Any
    verified: bool


class HandoffEvent(_Event, frozen=True, kw_only=True, tag="handoff"):
    """What crossed a border between two agents."""

    from_agent: Name
    to_agent: Name
    #: Field -> a bare value (unverified) or ``{"value": v, "verified": bool}``.
    payload: dict[str, Any]


class FinalEvent(_Event, frozen=True, kw_only=True, tag="final"):
    """The last line: the run's claim about itself, printed for contrast, never judged."""

    task_success: bool


class MessageEvent(_Event, frozen=True, kw_only=True, tag="message"):
    """A message of a transcript."""

    role: Literal["user", "assistant", "system", "tool"]
    text: str | None = None
    #: An assistant message that hands the turn back to the user.
    yields_turn: bool | None = None


Event = ActionEvent | CheckpointEvent | HandoffEvent | FinalEvent | MessageEvent
