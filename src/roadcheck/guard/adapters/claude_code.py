"""Claude Code's hooks (``settings.json``), as documented at code.claude.com/docs/hooks.

* ``UserPromptSubmit``: the prompt is a user ``message``;
* ``PreToolUse``: the call is checked; ``ask`` and ``deny`` are
  ``hookSpecificOutput.permissionDecision`` with ``permissionDecisionReason``; an
  allowed call gets no decision (``allow`` with ``--grant``);
* ``PermissionRequest``: the same check; a denied call is answered
  ``decision.behavior: deny``, anything else is left to the prompt;
* ``PostToolUse`` / ``PostToolUseFailure``: the call ran (or failed) and is observed;
* ``Stop`` / ``SubagentStop``: the assistant hands the turn back, an assistant
  ``message`` (``last_assistant_message`` is its text); while an obligation is open,
  or (with ``--contract``) the message makes a claim the session does not back, the
  answer is ``decision: block`` with the reason; a warning for the person (the
  re-prompts ran out) is ``systemMessage``.

Anything that goes wrong is exit 2 with the reason on standard error: the one exit
code on which Claude Code stops the call.
"""

from __future__ import annotations

from roadcheck.guard.adapters._common import claude_shape, stop_answer
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
                          "PostToolUseFailure": "failed", "Stop": "stop",
                          "SubagentStop": "stop"}
#: Events Claude Code documents that the guard does not read.
OTHERS = frozenset({"Notification", "SessionStart", "SessionEnd", "PreCompact", "PostCompact",
                    "SubagentStart", "Setup", "StopFailure", "ConfigChange", "TeammateIdle",
                    "TaskCompleted", "InstructionsLoaded", "WorktreeCreate", "WorktreeRemove",
                    "Elicitation", "ElicitationResult"})


def parse(data: bytes) -> HookRequest:
    """A Claude Code hook event."""
    return claude_shape(read_object(data), KINDS, shell_tools=("Bash",), others=OTHERS)


def answer(request: HookRequest, outcome: Outcome, grant: bool) -> HookAnswer:
    """The answer Claude Code reads for ``request``."""
    decision = outcome.decision
    if request.kind == "stop":
        return stop_answer(outcome)
    if decision is None:
        return HookAnswer(0)
    if request.kind == "permission":
        if decision.verdict != "deny":
            return HookAnswer(0, "", "", decision)
        out = {"hookSpecificOutput": {"hookEventName": request.event,
                                      "decision": {"behavior": "deny",
                                                   "message": outcome.message}}}
        return HookAnswer(0, dumps(out), "", decision)
    if decision.allowed and not grant:
        return HookAnswer(0, "", "", decision)
    out = {"hookSpecificOutput": {"hookEventName": request.event,
                                  "permissionDecision": decision.verdict,
                                  "permissionDecisionReason": outcome.message or "allowed"}}
    return HookAnswer(0, dumps(out), "", decision)


ADAPTER = Adapter("claude-code", parse, answer, denied, can_ask=True,
                  transcript_format="claude-code",
                  options=frozenset({"--approver", "--grant", "--catch-up", "--contract",
                                     "--max-reprompts"}))
