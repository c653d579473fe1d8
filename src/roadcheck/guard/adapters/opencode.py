"""OpenCode, through the plugin in ``examples/guard/opencode/roadcheck-guard.js``.

OpenCode's hooks are plugin functions, not commands: the plugin runs
``roadcheck guard opencode`` for each of them, with one JSON object on standard input
named after OpenCode's own hook input (``event``, ``sessionID``, ``callID``, ``tool``,
``args``, ``error``, ``text``, and ``exit``: the exit code the bash tool gives in its
output's ``metadata``), and reads one JSON answer, ``{"decision": "allow"}`` or
``{"decision": "deny", "reason": ...}``. The plugin throws (which stops the call, and
OpenCode shows the reason) on anything but an ``allow`` with exit code 0.

* ``chat.message``: the user's message (``text``) is a user ``message``;
* ``tool.execute.before``: the call is checked; an ``ask`` is a ``deny`` whose reason
  says how a person approves the call (a plugin cannot ask);
* ``tool.execute.after``: the call ran (``error`` set: it failed) and is observed; a
  bash call whose ``exit`` is not 0 failed, and one without an exit code (null: the
  command was killed or timed out; absent: an older plugin) has no known status
  (``exit_code: null``), so it is not taken to have succeeded;
* ``session.idle``: the assistant handed the turn back, an assistant ``message``.
"""

from __future__ import annotations

from roadcheck.guard.adapters._common import event_kind
from roadcheck.guard.hooks import (
    EXIT_BLOCK,
    Adapter,
    HookAnswer,
    HookRequest,
    Kind,
    Outcome,
    dumps,
    field_of,
    json_args,
    make_call,
    optional_text,
    read_object,
)

KINDS: dict[str, Kind] = {"chat.message": "prompt", "tool.execute.before": "pre",
                          "tool.execute.after": "post", "session.idle": "stop"}
SHELL_TOOLS = ("bash",)
AGENT = "opencode"


def parse(data: bytes) -> HookRequest:
    """One event from the OpenCode plugin."""
    doc = read_object(data)
    name = field_of(doc, "event", str, "a non-empty string")
    session = field_of(doc, "sessionID", str, "a non-empty string")
    kind = event_kind(name, KINDS, frozenset())
    if kind == "ignore":
        return HookRequest("ignore", name, session)
    if kind == "prompt":
        return HookRequest("prompt", name, session,
                           text=field_of(doc, "text", str, "a non-empty string"))
    if kind == "stop":
        return HookRequest("stop", name, session, text=optional_text(doc, "text"), agent=AGENT)
    tool = field_of(doc, "tool", str, "a non-empty string")
    args = json_args(doc.get("args"), "args")
    call_id = field_of(doc, "callID", str, "a non-empty string")
    call = make_call(tool, args, call_id, shell_tools=SHELL_TOOLS, agent=AGENT)
    error = optional_text(doc, "error")
    if kind == "post" and error:
        return HookRequest("failed", name, session, call=call, text=error, agent=AGENT)
    if kind == "post" and "command" in call:
        code = doc.get("exit")
        if type(code) is int and code != 0:
            return HookRequest("failed", name, session, call=call, text=f"exit code {code}",
                               agent=AGENT)
        # the bash tool's exit code; null (killed, timed out) or absent: not known
        call["exit_code"] = code if type(code) is int else None
    return HookRequest(kind, name, session, call=call, agent=AGENT)


def answer(request: HookRequest, outcome: Outcome, grant: bool) -> HookAnswer:
    """The answer the plugin reads for ``request``."""
    decision = outcome.decision
    if request.kind == "stop" and outcome.open:
        reason = "roadcheck guard: still open: " + "; ".join(outcome.open)
        return HookAnswer(0, dumps({"decision": "deny", "reason": reason}))
    if decision is None or decision.allowed:
        return HookAnswer(0, dumps({"decision": "allow"}), "", decision)
    reason = outcome.message or f"roadcheck guard: {decision.message}"
    return HookAnswer(0, dumps({"decision": "deny", "reason": reason}), "", decision)


def fail(reason: str) -> HookAnswer:
    """A deny the plugin reads whichever way it looks: the JSON, the exit code, stderr."""
    text = f"roadcheck guard: denied: {reason}"
    return HookAnswer(EXIT_BLOCK, dumps({"decision": "deny", "reason": text}), text + "\n")


ADAPTER = Adapter("opencode", parse, answer, fail, can_ask=False,
                  options=frozenset({"--approver"}))
