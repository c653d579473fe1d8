"""Guard pydantic-ai tools: a call the guard would ask about becomes a deferred approval.

::

    agent = Agent(model, toolsets=[GuardToolset(FunctionToolset([send_report]), guard)],
                  output_type=[str, DeferredToolRequests])
    result = agent.run_sync("weekly report")
    if isinstance(result.output, DeferredToolRequests):        # the send did not run
        results = approve(result.output, by="owner")           # who said yes, per call
        result = agent.run_sync(message_history=result.all_messages(),
                                deferred_tool_results=results)

:class:`GuardToolset` checks every call of the tools it wraps before it runs:

* ``allow``: the call is observed as it starts (checked and observed with
  nothing in between, so two calls at once cannot both spend one approval),
  then runs;
* ``ask``: it raises pydantic-ai's ``ApprovalRequired`` (the decision is in the
  call's metadata under ``roadcheck_guard``), so the run ends with the call in
  ``DeferredToolRequests.approvals``. When the run resumes with the call
  approved, the approval is recorded as checkpoints bound to that call,
  confirmed by the ``approved_by`` of the call's metadata (what :func:`approve`
  writes) or else the guard's ``approver``; then the call is checked again;
* anything else (a ``deny``, an approval by someone the rule does not accept,
  or one that names nobody) raises :class:`~roadcheck.GuardDenied`: the call does
  not run and the run stops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from roadcheck.guard.core import Guard, GuardDenied
from roadcheck.integrations import require
from roadcheck.integrations._guard import action, let_through, record_approval

_toolsets = require("pydantic_ai.toolsets", "pydantic-ai")
_exceptions = require("pydantic_ai.exceptions", "pydantic-ai")
_Wrapper: Any = _toolsets.WrapperToolset

__all__ = ["GuardToolset", "approve"]

#: The metadata key that names who approved a deferred call.
APPROVED_BY = "approved_by"


@dataclass
class GuardToolset(_Wrapper):  # type: ignore[misc]
    """A pydantic-ai toolset whose calls a :class:`~roadcheck.Guard` checks before they run."""

    guard: Guard

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        """Check the call; let it run (observed as it starts), defer it, or stop it."""
        call = action(name, tool_args, ctx.tool_call_id)
        if ctx.tool_call_approved:
            by = _approved_by(ctx.tool_call_metadata) or self.guard.approver
            if by is None:
                raise GuardDenied(self.guard.check(call))
            record_approval(self.guard, call, by)
        else:
            asked = self.guard.check(call)
            if asked.verdict == "ask":
                raise _exceptions.ApprovalRequired(metadata={"roadcheck_guard": asked.to_dict()})
        decision = let_through(self.guard, call)
        if not decision.allowed:
            raise GuardDenied(decision)
        return await self.wrapped.call_tool(name, tool_args, ctx, tool)


def _approved_by(metadata: Any) -> str | None:
    who = metadata.get(APPROVED_BY) if isinstance(metadata, Mapping) else None
    return who if isinstance(who, str) and who else None


def approve(requests: Any, by: str) -> Any:
    """``DeferredToolResults`` approving every call ``requests`` asks about, as ``by``."""
    tools = require("pydantic_ai.tools", "pydantic-ai")
    ids = [call.tool_call_id for call in requests.approvals]
    return tools.DeferredToolResults(approvals=dict.fromkeys(ids, True),
                                     metadata={i: {APPROVED_BY: by} for i in ids},
                                     answered_by=dict.fromkeys(ids, by))
