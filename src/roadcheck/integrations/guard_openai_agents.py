"""Guard OpenAI Agents SDK tools: approval asked for, and calls stopped, by a
:class:`~roadcheck.Guard`.

::

    agents_guard = AgentsGuard(guard)
    send_report = agents_guard.protect(send_report)        # a FunctionTool
    result = await Runner.run(agent, "weekly report")
    if result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            agents_guard.approve(state, item, by="owner")   # recorded, bound to that call
        result = await Runner.run(agent, state)

:meth:`AgentsGuard.protect` sets three of the tool's hooks:

* ``needs_approval``: the SDK interrupts the run for a call the guard answers
  ``ask`` (a checkpoint a person can give is missing);
* a tool input guardrail, the last word before the tool runs: anything but
  ``allow`` does not run (``on_deny="raise"``: the run stops with the SDK's
  ``ToolInputGuardrailTripwireTriggered``; ``"reject"``: the model is told
  why); an allowed call is observed there, as it starts, so two calls at once
  cannot both spend one approval.

Put every tool of the agent behind the guard (unguarded ones are let through
and observed): the guard knows only the calls it sees.

An approval given with ``RunState.approve`` alone is not known to the guard,
so the input guardrail still stops the call: :meth:`AgentsGuard.approve` records
the checkpoint (bound to the call's tool, arguments and call id), then approves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from roadcheck.guard.core import Decision, Guard
from roadcheck.integrations import require
from roadcheck.integrations._guard import (
    EmbeddedDuplicate,
    action,
    arguments,
    let_through,
    record_approval,
    refused,
)

_agents = require("agents", "openai-agents")

__all__ = ["AgentsGuard"]

NeedsApproval = Callable[[Any, dict[str, Any], str], Awaitable[bool]]


class AgentsGuard:
    """A :class:`~roadcheck.Guard` wired into OpenAI Agents SDK function tools."""

    def __init__(self, guard: Guard, *, on_deny: Literal["raise", "reject"] = "raise") -> None:
        if on_deny not in ("raise", "reject"):
            raise ValueError(f"on_deny is 'raise' or 'reject', not {on_deny!r}")
        self.guard = guard
        self.on_deny = on_deny
        self.input_guardrail = _agents.ToolInputGuardrail(
            guardrail_function=self._before, name="roadcheck_guard")
        #: call ids already let through (the SDK may run input guardrails twice).
        self._through: set[str] = set()

    def needs_approval(self, tool: str) -> NeedsApproval:
        """A ``needs_approval`` callable for ``tool``: true when the guard would ask."""
        async def needs(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            return self.guard.check(action(tool, params, call_id)).verdict == "ask"

        return needs

    def protect(self, tool: Any) -> Any:
        """Put ``tool`` (a ``FunctionTool``) behind the guard; returns the same tool."""
        if not isinstance(tool, _agents.FunctionTool):
            raise TypeError(f"protect() takes a FunctionTool, got {type(tool).__name__}")
        tool.needs_approval = self.needs_approval(tool.name)
        tool.tool_input_guardrails = [*(tool.tool_input_guardrails or ()), self.input_guardrail]
        return tool

    def approve(self, state: Any, item: Any, by: str) -> Decision:
        """``by`` approved the interrupted call ``item``: record it for that call, then approve.

        Returns the guard's answer for the call once the approval is recorded (a
        ``deny`` when the rule does not accept ``by``: the call will not run).
        """
        try:
            call = self._call(item)
        except EmbeddedDuplicate as exc:
            decision = refused(self.guard, item.tool_name or item.name, item.call_id, str(exc))
            state.reject(item, rejection_message=f"roadcheck guard: {decision.message}")
            return decision
        decision = record_approval(self.guard, call, by)
        state.approve(item)
        return decision

    def reject(self, state: Any, item: Any, message: str | None = None) -> None:
        """The person said no: the call does not run (nothing is recorded as approved)."""
        state.reject(item, rejection_message=message)

    # -- the guardrails --------------------------------------------------------------------

    @staticmethod
    def _call(item: Any) -> dict[str, Any]:
        return action(item.tool_name or item.name, arguments(item.arguments), item.call_id)

    @staticmethod
    def _context_call(ctx: Any) -> dict[str, Any]:
        return action(ctx.tool_name, arguments(ctx.tool_arguments), ctx.tool_call_id)

    def _before(self, data: Any) -> Any:
        ctx = data.context
        if ctx.tool_call_id in self._through:
            return _agents.ToolGuardrailFunctionOutput.allow()
        try:
            decision = let_through(self.guard, self._context_call(ctx))
        except EmbeddedDuplicate as exc:
            decision = refused(self.guard, ctx.tool_name, ctx.tool_call_id, str(exc))
        if decision.allowed:
            self._through.add(ctx.tool_call_id)
            return _agents.ToolGuardrailFunctionOutput.allow(output_info=decision.to_dict())
        if self.on_deny == "reject":
            return _agents.ToolGuardrailFunctionOutput.reject_content(
                f"roadcheck guard: {decision.message}", output_info=decision.to_dict())
        return _agents.ToolGuardrailFunctionOutput.raise_exception(
            output_info=decision.to_dict())
