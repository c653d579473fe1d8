"""GitHub Copilot CLI's hooks (``.github/hooks/*.json``), as its CLI hooks reference
defines them, in the format it sends to events named in PascalCase (``PreToolUse``:
``hook_event_name``, ``session_id``, ``tool_name``, ``tool_input``). Its camelCase format
names no event, and is refused.

* ``UserPromptSubmit``: the prompt is a user ``message``;
* ``PreToolUse``: the call is checked; ``ask`` and ``deny`` are ``permissionDecision``
  with ``permissionDecisionReason`` (at the top level, as the CLI reference gives them,
  and under ``hookSpecificOutput`` as in the format of the PascalCase events); an
  allowed call gets no decision (``allow`` with ``--grant``); an ``ask`` the person
  approves is recorded when the call's ``PostToolUse`` comes, bound to its tool and
  arguments (Copilot gives no call id);
* ``PostToolUse`` / ``PostToolUseFailure``: the call ran (or failed) and is observed; a
  shell call (``bash``, ``powershell``) is read from the ``<exited with exit code N>``
  line that ends its ``text_result_for_llm`` (Copilot gives a command that exited 1 the
  ``result_type`` ``success``): non-zero is a failure, and without the line its exit
  status is not known (``exit_code: null``), so it is not taken to have succeeded;
* ``Stop`` / ``SubagentStop``: an assistant ``message``; ``decision: block`` while an
  obligation is open.

Copilot CLI never blocks on a failing hook (a non-zero exit or a timeout is logged and
the call runs), so an error is answered as a deny on standard output, exit 0. A hook
that crashes or is killed before it answers lets the call run: what must be enforced
there goes through ``roadcheck guard``'s MCP proxy instead.
"""

from __future__ import annotations

import re

from roadcheck.guard.adapters._common import claude_shape
from roadcheck.guard.hooks import (
    Adapter,
    HookAnswer,
    HookRequest,
    Kind,
    Outcome,
    dumps,
    read_object,
)

KINDS: dict[str, Kind] = {"UserPromptSubmit": "prompt", "PreToolUse": "pre",
                          "PostToolUse": "post", "PostToolUseFailure": "failed",
                          "Stop": "stop", "SubagentStop": "stop"}
OTHERS = frozenset({"SessionStart", "SessionEnd", "SubagentStart", "ErrorOccurred",
                    "PreCompact", "Notification", "PermissionRequest"})
SHELL_TOOLS = ("bash", "powershell")
#: The line Copilot CLI's shell tools end their output with.
_EXITED = re.compile(r"<exited with exit code (-?\d+)>\s*\Z")


def parse(data: bytes) -> HookRequest:
    """A Copilot CLI hook event (the PascalCase format)."""
    doc = read_object(data)
    request = claude_shape(doc, KINDS, shell_tools=SHELL_TOOLS, call_id_key=None, text_ok=True,
                           others=OTHERS, agent="copilot")
    if request.kind == "post":
        result = doc.get("tool_result")
        kind = result.get("result_type") if isinstance(result, dict) else None
        text = result.get("text_result_for_llm") if isinstance(result, dict) else None
        if kind in ("failure", "error"):
            return HookRequest("failed", request.event, request.session, request.call,
                               text if isinstance(text, str) and text else "the call failed",
                               agent=request.agent)
        if kind == "denied":  # it did not run
            return HookRequest("ignore", request.event, request.session)
        if request.call is not None and "command" in request.call:
            return _shell_status(request, text)
    return request


def _shell_status(request: HookRequest, text: object) -> HookRequest:
    """A shell call as its exit code says: Copilot CLI marks a command that exited
    non-zero a ``success`` and writes ``<exited with exit code N>`` at the end of the
    text it gives the model. Without that line (a command left running, a text cut
    short) the exit status is not known, and the call is not taken to have succeeded."""
    call = dict(request.call or {})
    found = _EXITED.search(text) if isinstance(text, str) else None
    if found is None:
        call["exit_code"] = None
    elif int(found.group(1)) != 0:
        return HookRequest("failed", request.event, request.session, call, found.group(0),
                           agent=request.agent)
    else:
        call["exit_code"] = 0
    return HookRequest("post", request.event, request.session, call, agent=request.agent)


def answer(request: HookRequest, outcome: Outcome, grant: bool) -> HookAnswer:
    """The answer Copilot CLI reads for ``request``."""
    decision = outcome.decision
    if request.kind == "stop":
        if not outcome.open:
            return HookAnswer(0)
        reason = "roadcheck guard: still open: " + "; ".join(outcome.open)
        return HookAnswer(0, dumps({"decision": "block", "reason": reason}))
    if decision is None or (decision.allowed and not grant):
        return HookAnswer(0, "", "", decision)
    return HookAnswer(0, dumps(_decision(request.event, decision.verdict,
                                         outcome.message or "allowed")), "", decision)


def _decision(event: str, verdict: str, reason: str) -> dict[str, object]:
    """The decision both ways Copilot reads one: its own top-level fields, and the
    ``hookSpecificOutput`` of the format its PascalCase events follow."""
    return {"permissionDecision": verdict, "permissionDecisionReason": reason,
            "hookSpecificOutput": {"hookEventName": event, "permissionDecision": verdict,
                                   "permissionDecisionReason": reason}}


def fail(reason: str) -> HookAnswer:
    """A deny on standard output (exit 0): Copilot CLI runs the call on a failed hook."""
    text = f"roadcheck guard: denied: {reason}"
    return HookAnswer(0, dumps(_decision("PreToolUse", "deny", text)), text + "\n")


ADAPTER = Adapter("copilot", parse, answer, fail, can_ask=True,
                  options=frozenset({"--approver", "--grant"}))
