"""Codex's hooks (``hooks.json`` or ``[hooks]`` in ``config.toml``), as its schemas
(``codex-rs/hooks/schema/generated``) and output parser define them.

Codex refuses ``permissionDecision: "ask"`` and ``"allow"`` without a rewritten input,
and lets the call run when it does: so an ``ask`` is a ``deny`` whose reason says how a
person approves the call, an allowed call gets no output at all, and every deny has a
non-empty reason.

* ``UserPromptSubmit``: the prompt is a user ``message``;
* ``PreToolUse``: the call (``tool_name``, ``tool_input``, ``tool_use_id``) is checked;
* ``PermissionRequest`` (Codex is about to ask the person; no call id): the call is
  checked bound to its tool and arguments; what the guard does not allow is
  ``decision.behavior: deny``; an allowed call is left to Codex's prompt;
* ``PostToolUse``: the call ran and is observed; a shell call whose output says its
  command failed (the exit code Codex writes into it, read as its session files are)
  is observed as failed;
* ``Stop`` / ``SubagentStop``: an assistant ``message`` (``last_assistant_message``);
  ``decision: block`` while an obligation is open or (with ``--contract``) the
  message makes a claim the session does not back; a warning is ``systemMessage``.

Anything that goes wrong is exit 2 with the reason on standard error, which Codex
takes as a block of the call.
"""

from __future__ import annotations

from roadcheck.guard.adapters._common import claude_shape, no_call_id, stop_answer
from roadcheck.guard.hooks import (
    Adapter,
    HookAnswer,
    HookRequest,
    Kind,
    Outcome,
    denied,
    dumps,
    read_object,
)

KINDS: dict[str, Kind] = {"UserPromptSubmit": "prompt", "PreToolUse": "pre",
                          "PermissionRequest": "permission", "PostToolUse": "post",
                          "Stop": "stop", "SubagentStop": "stop"}
#: The tools whose ``tool_input.command`` is a shell line: Codex's hooks call them ``Bash``;
#: its session files call them ``shell`` / ``exec_command``.
OTHERS = frozenset({"SessionStart", "PreCompact", "PostCompact", "SubagentStart",
                    "StopFailure"})
SHELL_TOOLS = ("Bash", "shell", "exec_command", "local_shell")


def parse(data: bytes) -> HookRequest:
    """A Codex hook event."""
    doc = read_object(data)
    request = claude_shape(doc, KINDS, shell_tools=SHELL_TOOLS, others=OTHERS, agent="codex")
    if request.kind == "permission":
        return no_call_id(request)
    if request.kind == "post" and request.call is not None and "command" in request.call:
        from roadcheck.ingest._codex_output import response_failed

        if response_failed(doc.get("tool_response")):
            return HookRequest("failed", request.event, request.session, request.call,
                               request.call.get("result") or "the command failed",
                               agent=request.agent, transcript=request.transcript)
    return request


def answer(request: HookRequest, outcome: Outcome, grant: bool) -> HookAnswer:
    """The answer Codex reads for ``request`` (``grant`` has no form in Codex: ignored)."""
    decision = outcome.decision
    if request.kind == "stop":
        return stop_answer(outcome)
    if decision is None or decision.allowed:
        return HookAnswer(0, "", "", decision)
    reason = outcome.message or f"roadcheck guard: {decision.message}"
    if request.kind == "permission":
        out = {"hookSpecificOutput": {"hookEventName": request.event,
                                      "decision": {"behavior": "deny", "message": reason}}}
    else:
        out = {"hookSpecificOutput": {"hookEventName": request.event,
                                      "permissionDecision": "deny",
                                      "permissionDecisionReason": reason}}
    return HookAnswer(0, dumps(out), "", decision)


ADAPTER = Adapter("codex", parse, answer, denied, can_ask=False, transcript_format="codex",
                  options=frozenset({"--approver", "--catch-up", "--contract",
                                     "--max-reprompts"}))
