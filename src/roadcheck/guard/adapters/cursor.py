"""Cursor's agent hooks (``.cursor/hooks.json``, version 1), as Cursor's hooks
documentation (cursor.com/docs/agent/hooks) defines them.

* ``beforeSubmitPrompt``: the prompt is a user ``message`` (answered ``continue: true``);
* ``preToolUse`` (``tool_name``, ``tool_input``, ``tool_use_id``),
  ``beforeShellExecution`` (``command``: the tool ``Shell``) and ``beforeMCPExecution``
  (``tool_name``, ``tool_input`` as JSON text): the call is checked, answered
  ``permission`` ``allow``, ``ask`` or ``deny`` with ``user_message`` and
  ``agent_message``; an allowed call is ``allow`` only with ``--grant``, else ``{}``;
* ``postToolUse``, ``postToolUseFailure``, ``afterShellExecution``,
  ``afterMCPExecution``: the call ran (or failed) and is observed; ``postToolUse`` is
  a success and ``postToolUseFailure`` a failure, as Claude Code's events are, while
  ``afterShellExecution`` carries no exit status (its ``command``, ``output`` and
  ``duration`` only), so the command it reports is observed with ``exit_code: null``
  and not taken to have succeeded;
* ``beforeReadFile`` (``file_path``: the tool ``Read``) is checked as a call, and
  ``afterFileEdit`` (the tool ``Edit``) observed as one;
* ``afterAgentResponse`` (``text``) and ``stop``: the assistant spoke / handed the turn
  back, an assistant ``message``; while an obligation is open, ``stop`` is answered
  with a ``followup_message`` that says what is still owed.

The session is the ``conversation_id``. An error is answered as a deny on standard
output (``permission: deny``, ``continue: false``), exit 0.
"""

from __future__ import annotations

from typing import Any

from roadcheck.guard.adapters._common import event_kind, tool_call
from roadcheck.guard.hooks import (
    Adapter,
    HookAnswer,
    HookRequest,
    Kind,
    Outcome,
    dumps,
    field_of,
    make_call,
    optional_text,
    read_object,
)

KINDS: dict[str, Kind] = {"beforeSubmitPrompt": "prompt", "preToolUse": "pre",
                          "beforeShellExecution": "pre", "beforeMCPExecution": "pre",
                          "postToolUse": "post", "afterShellExecution": "post",
                          "afterMCPExecution": "post", "postToolUseFailure": "failed",
                          "afterAgentResponse": "stop", "stop": "stop",
                          "beforeReadFile": "pre", "afterFileEdit": "post"}
OTHERS = frozenset({"sessionStart", "sessionEnd", "preCompact", "subagentStart", "subagentStop",
                    "afterAgentThought", "beforeTabFileRead", "afterTabFileEdit"})
SHELL_TOOLS = ("Shell",)
AGENT = "cursor"


def _call(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    if name in ("beforeShellExecution", "afterShellExecution"):
        command = field_of(doc, "command", str, "a non-empty string")
        call = make_call("Shell", {"command": command}, None, shell_tools=SHELL_TOOLS,
                         agent=AGENT)
        if name == "afterShellExecution":
            call["exit_code"] = None  # Cursor gives the output and the time, no exit status
        return call
    if name == "beforeReadFile":
        path = field_of(doc, "file_path", str, "a non-empty string")
        return make_call("Read", {"file_path": path}, None, agent=AGENT)
    if name == "afterFileEdit":
        path = field_of(doc, "file_path", str, "a non-empty string")
        return make_call("Edit", {"file_path": path}, None, agent=AGENT)
    return tool_call(doc, shell_tools=SHELL_TOOLS, call_id_key="tool_use_id", agent=AGENT,
                     text_ok=True)


def parse(data: bytes) -> HookRequest:
    """A Cursor hook event."""
    doc = read_object(data)
    name = field_of(doc, "hook_event_name", str, "a non-empty string")
    session = field_of(doc, "conversation_id", str, "a non-empty string")
    kind = event_kind(name, KINDS, OTHERS)
    if kind == "ignore":
        return HookRequest("ignore", name, session)
    if kind == "prompt":
        return HookRequest("prompt", name, session,
                           text=field_of(doc, "prompt", str, "a non-empty string"))
    if kind == "stop":
        return HookRequest("stop", name, session, text=optional_text(doc, "text"), agent=AGENT)
    call = _call(name, doc)
    if kind == "failed":
        error = doc.get("error_message") or doc.get("error")
        return HookRequest("failed", name, session, call=call, agent=AGENT,
                           text=error if isinstance(error, str) and error else "the call failed")
    return HookRequest(kind, name, session, call=call, agent=AGENT)


def answer(request: HookRequest, outcome: Outcome, grant: bool) -> HookAnswer:
    """The answer Cursor reads for ``request``."""
    decision = outcome.decision
    if request.kind == "prompt":
        return HookAnswer(0, dumps({"continue": True}))
    if request.kind == "stop":
        if request.event == "stop" and outcome.open:
            follow = "roadcheck guard: still open: " + "; ".join(outcome.open)
            return HookAnswer(0, dumps({"followup_message": follow}))
        return HookAnswer(0, "{}\n")
    if decision is None or (decision.allowed and not grant):
        return HookAnswer(0, "{}\n", "", decision)
    if decision.allowed:
        return HookAnswer(0, dumps({"permission": "allow"}), "", decision)
    message = outcome.message or f"roadcheck guard: {decision.message}"
    return HookAnswer(0, dumps({"permission": decision.verdict, "user_message": message,
                                "agent_message": message}), "", decision)


def fail(reason: str) -> HookAnswer:
    """A deny on standard output (exit 0), for a call and for a prompt alike."""
    text = f"roadcheck guard: denied: {reason}"
    return HookAnswer(0, dumps({"permission": "deny", "continue": False,
                                "user_message": text, "agent_message": text}), text + "\n")


ADAPTER = Adapter("cursor", parse, answer, fail, can_ask=True,
                  options=frozenset({"--approver", "--grant"}))
