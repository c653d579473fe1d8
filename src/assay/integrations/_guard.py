"""What every framework guard shares: a tool call as a guard action, and a call that ran."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assay.guard.core import Decision, Guard, _jsonable

__all__ = ["action", "arguments", "ran", "record_approval"]


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
    characters and an approval of other arguments does not fit it.
    """
    if raw is None or isinstance(raw, Mapping):
        return None if raw is None else dict(raw)
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw


def ran(guard: Guard, call: Mapping[str, Any], result: Any = None,
        error: str | None = None) -> None:
    """Observe that an allowed call ran, with its result (or its error)."""
    if error is not None:
        guard.observe({**call, "error": error})
    else:
        guard.observe({**call, "result": _jsonable(result)})


def record_approval(guard: Guard, call: Mapping[str, Any], by: str) -> Decision:
    """Record that ``by`` approved ``call`` (bound to it), and answer the check that follows.

    Only an ``ask`` is recorded; an ``allow`` needs nothing, and a ``deny``
    cannot be mended by approving.
    """
    decision = guard.check(call)
    if decision.verdict == "ask":
        guard.approve(decision, by=by, agent=call.get("agent"))
        decision = guard.check(call)
    return decision

