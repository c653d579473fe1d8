"""Gemini CLI's hooks (``settings.json``), as its hooks reference (docs/hooks/reference.md)
defines them.

A Gemini CLI hook cannot ask the person, so an ``ask`` is a ``deny`` whose reason says
how a person approves the call.

* ``BeforeAgent``: the prompt is a user ``message``;
* ``BeforeTool``: the call (``tool_name``, ``tool_input``) is checked; what the guard
  does not allow is ``{"decision": "deny", "reason": ...}``;
* ``AfterTool``: the call ran (``tool_response.error`` set: it failed) and is observed;
* ``AfterAgent``: the assistant's answer (``prompt_response``) is an assistant
  ``message``; while an obligation is open, or (with ``--contract``) the answer makes
  a claim the session does not back, the answer is ``decision: deny`` with the
  reason, which Gemini CLI sends back to the model as a new prompt; a warning for the
  person is its ``systemMessage``.

Anything that goes wrong is exit 2 with the reason on standard error, which Gemini CLI
takes as a block of the call.
"""

from __future__ import annotations

from roadcheck.guard.adapters._common import (
    event_kind,
    response_text,
    stop_answer,
    stop_hook_active,
    tool_call,
)
from roadcheck.guard.hooks import (
    Adapter,
    HookAnswer,
    HookRequest,
    Kind,
    Outcome,
    denied,
    dumps,
    field_of,
    optional_text,
    read_object,
)

KINDS: dict[str, Kind] = {"BeforeAgent": "prompt", "BeforeTool": "pre", "AfterTool": "post",
                          "AfterAgent": "stop"}
OTHERS = frozenset({"SessionStart", "SessionEnd", "BeforeModel", "AfterModel",
                    "BeforeToolSelection", "Notification", "PreCompress"})
SHELL_TOOLS = ("run_shell_command",)
AGENT = "gemini"


def parse(data: bytes) -> HookRequest:
    """A Gemini CLI hook event."""
    doc = read_object(data)
    name = field_of(doc, "hook_event_name", str, "a non-empty string")
    session = field_of(doc, "session_id", str, "a non-empty string")
    kind = event_kind(name, KINDS, OTHERS)
    if kind == "ignore":
        return HookRequest("ignore", name, session)
    if kind == "prompt":
        return HookRequest("prompt", name, session,
                           text=field_of(doc, "prompt", str, "a non-empty string"))
    if kind == "stop":
        return HookRequest("stop", name, session, text=optional_text(doc, "prompt_response"),
                           agent=AGENT).stopping(stop_hook_active(doc))
    call = tool_call(doc, shell_tools=SHELL_TOOLS, call_id_key=None, agent=AGENT)
    if kind == "post":
        response = doc.get("tool_response")
        if response is not None:
            call["result"] = response_text(response)
        error = response.get("error") if isinstance(response, dict) else None
        if error:
            text = error if isinstance(error, str) else str(error)
            return HookRequest("failed", name, session, call=call, text=text, agent=AGENT)
    return HookRequest(kind, name, session, call=call, agent=AGENT)


def answer(request: HookRequest, outcome: Outcome, grant: bool) -> HookAnswer:
    """The answer Gemini CLI reads for ``request``."""
    decision = outcome.decision
    if request.kind == "stop":
        return stop_answer(outcome, decision="deny", empty="{}\n")
    if decision is None:
        return HookAnswer(0, "{}\n")
    if decision.allowed:
        return HookAnswer(0, dumps({"decision": "allow"}) if grant else "{}\n", "", decision)
    reason = outcome.message or f"roadcheck guard: {decision.message}"
    return HookAnswer(0, dumps({"decision": "deny", "reason": reason}), "", decision)


ADAPTER = Adapter("gemini", parse, answer, denied, can_ask=False,
                  options=frozenset({"--approver", "--grant", "--contract", "--max-reprompts"}))
