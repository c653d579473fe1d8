"""Gemini CLI's hooks (``settings.json``), as its hooks reference (docs/hooks/reference.md)
defines them.

A Gemini CLI hook cannot ask the person, so an ``ask`` is a ``deny`` whose reason says
how a person approves the call.

* ``BeforeAgent``: the prompt is a user ``message``;
* ``BeforeTool``: the call (``tool_name``, ``tool_input``) is checked; what the guard
  does not allow is ``{"decision": "deny", "reason": ...}``;
* ``AfterTool``: the call ran and is observed; it failed when ``tool_response.error``
  is set or, for a shell call, its ``llmContent`` gives an ``Exit Code`` other than 0
  or a signal (Gemini CLI sets ``error`` only when the command could not run);
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
        if not error and "command" in call and isinstance(response, dict):
            error = _shell_failure(response.get("llmContent"))
        if error:
            text = error if isinstance(error, str) else str(error)
            return HookRequest("failed", name, session, call=call, text=text, agent=AGENT)
    return HookRequest(kind, name, session, call=call, agent=AGENT)


def _shell_failure(content: object) -> str | None:
    """How a shell call failed, from the text Gemini CLI's shell tool gives the model: an
    ``Exit Code:`` line other than 0 (its ``error`` is set only when the command could not
    run), a signal, or a run cancelled on timeout. None when it says no failure."""
    if not isinstance(content, str):
        return None
    if content.startswith("Command execution timed out and was cancelled"):
        return content.split("\n", 1)[0]
    for line in content.split("\n"):
        if line.startswith("Exit Code: ") and line[11:].lstrip("-").isdigit() \
                and int(line[11:]) != 0:
            return line
        if line.startswith("Signal: ") and line[8:] not in ("(none)", "", "null"):
            return line
    return None


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
