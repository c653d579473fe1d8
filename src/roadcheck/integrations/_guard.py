"""What every framework guard shares: a tool call as a guard action, let through or not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from roadcheck.findings import Finding
from roadcheck.guard.core import Decision, Guard
from roadcheck.ingest._json import EmbeddedDuplicate, decode_embedded
from roadcheck.reasons import Reason

__all__ = ["EmbeddedDuplicate", "action", "arguments", "let_through", "record_approval",
           "refused"]


def action(tool: str, args: Any, call_id: str | None = None,
           agent: str | None = None) -> dict[str, Any]:
    """The guard action for a tool call: ``action_type``, ``args`` and its ``call_id``."""
    call: dict[str, Any] = {"event": "action", "action_type": tool, "args": args}
    if call_id is not None:
        call["call_id"] = call_id
    if agent is not None:
        call["agent"] = agent
    return call


def arguments(raw: str | Mapping[str, Any] | None) -> Any:
    """A tool call's arguments as the model sent them (a JSON text is parsed).

    Text that is not JSON stays text, so its digest still names exactly those
    characters and an approval of other arguments does not fit it. JSON text
    whose object repeats a key raises :class:`EmbeddedDuplicate`: two JSON
    readers would read different arguments from it, so no answer about it can
    hold (the caller denies the call, see :func:`refused`).
    """
    if raw is None or isinstance(raw, Mapping):
        return None if raw is None else dict(raw)
    return decode_embedded(raw, "arguments")


def refused(guard: Guard, tool: str | None, call_id: str | None, why: str) -> Decision:
    """A ``deny`` (``bad-input``) for a call the guard cannot read one way; logged like a check."""
    decision = Decision("deny", tool, None, (Finding(Reason.BAD_INPUT, why),), ("",),
                        call_id=call_id)
    if guard.log is not None:
        guard.log(decision)
    return decision


def let_through(guard: Guard, call: Mapping[str, Any]) -> Decision:
    """Check ``call``; when it is allowed, observe it at once, as the call that now runs.

    Checking and observing with nothing in between is what keeps two calls
    made at the same time from both spending one approval. The call is
    observed before it runs, so without its result, and an approval it
    consumed is spent even if the tool then fails.
    """
    decision = guard.check(call)
    if decision.allowed:
        guard.observe(call)
    return decision


def record_approval(guard: Guard, call: Mapping[str, Any], by: str) -> Decision:
    """Record that ``by`` approved ``call`` (bound to it), and answer the check that follows.

    An ``ask`` records the checkpoints it found missing. An ``allow`` records
    one for each rule that guards the call all the same: what allows it may be
    the approval of an identical call, which that call will spend. A ``deny``
    records nothing: approving cannot mend it.
    """
    decision = guard.check(call)
    if decision.verdict == "allow":
        decision = replace(decision, missing=guard.guarding(call))
    if decision.verdict != "deny" and decision.missing:
        guard.approve(decision, by=by, agent=call.get("agent"))
        decision = guard.check(call)
    return decision
