"""Guard LangChain agents and LangGraph tool nodes with a :class:`~roadcheck.Guard`.

::

    lc_guard = GuardMiddleware(guard)
    agent = create_agent(model, tools, checkpointer=InMemorySaver(), middleware=[
        HumanInTheLoopMiddleware(interrupt_on=lc_guard.interrupt_on("send_report")),
        lc_guard])                                     # after HITL: it sees edited calls
    out = agent.invoke({"messages": [...]}, config)
    request = out["__interrupt__"][0].value             # the calls the guard asked about
    answer = {"decisions": [{"type": "approve"}]}
    agent.invoke(Command(resume=lc_guard.review(request, answer, by="owner")), config)

Three pieces:

* :meth:`GuardMiddleware.when`, the ``when=`` predicate of
  ``HumanInTheLoopMiddleware``'s ``interrupt_on``: true when the guard would
  ask about the call. The middleware calls it again when the run resumes and
  needs the same answer, so it is kept per tool call id.
* :meth:`GuardMiddleware.review` records the reviewer's answer: each approved
  (or edited) call becomes checkpoints confirmed by ``by``, bound to that call.
* :meth:`GuardMiddleware.wrap_tool_call`, the last word before a tool runs
  (as agent middleware, or ``ToolNode(tools, wrap_tool_call=...)``): a call
  the guard does not allow does not run (``on_deny="raise"``: the run stops
  with :class:`~roadcheck.GuardDenied`; ``"reject"``: the model gets an error
  ``ToolMessage`` saying why); an allowed call is observed as it starts.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from roadcheck.guard.core import Decision, Guard, GuardDenied
from roadcheck.integrations import require
from roadcheck.integrations._guard import action, let_through, record_approval

_middleware = require("langchain.agents.middleware", "langgraph")
_messages = require("langchain_core.messages", "langgraph")
_Base: Any = _middleware.AgentMiddleware

__all__ = ["GuardMiddleware"]


class GuardMiddleware(_Base):  # type: ignore[misc]
    """Agent middleware (and a tool-node wrapper) that runs only what the guard allows."""

    def __init__(self, guard: Guard, *, on_deny: Literal["raise", "reject"] = "raise") -> None:
        if on_deny not in ("raise", "reject"):
            raise ValueError(f"on_deny is 'raise' or 'reject', not {on_deny!r}")
        super().__init__()
        self.guard = guard
        self.on_deny = on_deny
        #: tool call id -> whether ``when`` asked for a review (its answer must not change).
        self._asked: dict[str, bool] = {}
        self._lock = threading.Lock()

    # -- HumanInTheLoopMiddleware ----------------------------------------------------------

    def when(self, request: Any) -> bool:
        """True when the guard would ask a person about this call (``interrupt_on`` ``when=``)."""
        call = request.tool_call
        cid = call.get("id")
        with self._lock:
            if isinstance(cid, str) and cid in self._asked:
                return self._asked[cid]
            asked = self.guard.check(_call(call)).verdict == "ask"
            if isinstance(cid, str):
                self._asked[cid] = asked
            return asked

    def interrupt_on(self, *tools: str, allowed_decisions: Sequence[str] = (
            "approve", "edit", "reject")) -> dict[str, Any]:
        """An ``interrupt_on`` mapping that reviews these tools when the guard would ask."""
        return {name: {"allowed_decisions": list(allowed_decisions), "when": self.when}
                for name in tools}

    def review(self, request: Mapping[str, Any], answer: Any, by: str) -> Any:
        """Record ``by``'s answer to an interrupt's ``request``; returns ``answer`` to resume with.

        ``request`` is the interrupt's value: a batched ``HITLRequest`` (answered
        ``{"decisions": [...]}``, one per action request) or a per-call
        ``ToolApprovalRequest`` (answered with one decision). An ``approve``
        records the call as asked, an ``edit`` the edited call; a ``reject`` or
        ``respond`` records nothing.
        """
        if request.get("type") == "tool_approval":
            pairs = [({**request, "id": request.get("tool_call_id")}, answer)]
        else:
            pairs = list(zip(request["action_requests"], answer["decisions"], strict=True))
        for asked, decision in pairs:
            if decision["type"] == "approve":
                call = asked
            elif decision["type"] == "edit":
                call = {**decision["edited_action"], "id": asked.get("id")}
            else:
                continue
            with self._lock:
                record_approval(self.guard, _call(call), by)
        return answer

    # -- the tool call ---------------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the call only if the guard allows it (observed as it starts)."""
        decision = self._let_through(request.tool_call)
        if not decision.allowed:
            return self._stop(decision, request.tool_call)
        return handler(request)

    async def awrap_tool_call(self, request: Any,
                              handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """:meth:`wrap_tool_call` for asynchronous runs."""
        decision = self._let_through(request.tool_call)
        if not decision.allowed:
            return self._stop(decision, request.tool_call)
        return await handler(request)

    def _let_through(self, tool_call: Mapping[str, Any]) -> Decision:
        with self._lock:  # a tool node runs the calls of one message in threads
            return let_through(self.guard, _call(tool_call))

    def _stop(self, decision: Decision, tool_call: Mapping[str, Any]) -> Any:
        if self.on_deny == "raise":
            raise GuardDenied(decision)
        return _messages.ToolMessage(content=f"roadcheck guard: {decision.message}",
                                     tool_call_id=tool_call.get("id") or "",
                                     name=tool_call.get("name"), status="error")


def _call(tool_call: Mapping[str, Any]) -> dict[str, Any]:
    cid = tool_call.get("id")
    return action(tool_call["name"], tool_call.get("args"), cid if isinstance(cid, str) else None)
