"""Cline's hooks (an executable per hook under ``.clinerules/hooks/``), as Cline's hook
reference (docs.cline.bot/features/hooks/hook-reference) defines them.

Every hook gets ``hookName``, ``taskId`` (the session) and its own object
(``preToolUse``: ``toolName``, ``parameters``); it answers ``{"cancel": bool,
"errorMessage": ...}``. A Cline hook cannot ask the person, so an ``ask`` is a cancel
whose message says how a person approves the call.

* ``UserPromptSubmit``: ``userPromptSubmit.prompt`` is a user ``message``;
* ``PreToolUse``: the call is checked; what the guard does not allow is cancelled;
* ``PostToolUse``: the call ran (``success`` false: it failed) and is observed; its
  status is Cline's ``success`` alone, which is all the payload says of it (no exit
  code: ``result`` is the text the model reads);
* ``TaskComplete``: the assistant handed the task back, an assistant ``message``.

An error is answered as a cancel on standard output, exit 0.
"""

from __future__ import annotations

from typing import Any

from roadcheck.guard.adapters._common import event_kind
from roadcheck.guard.hooks import (
    Adapter,
    BadInput,
    HookAnswer,
    HookRequest,
    Kind,
    Outcome,
    dumps,
    field_of,
    json_args,
    make_call,
    read_object,
)

KINDS: dict[str, Kind] = {"UserPromptSubmit": "prompt", "PreToolUse": "pre",
                          "PostToolUse": "post", "TaskComplete": "stop"}
OTHERS = frozenset({"TaskStart", "TaskResume", "TaskCancel", "TaskError", "PreCompact",
                    "SessionShutdown"})
SHELL_TOOLS = ("execute_command",)
AGENT = "cline"


def _part(doc: dict[str, Any], key: str) -> dict[str, Any]:
    part = doc.get(key)
    if not isinstance(part, dict):
        shown = "missing" if part is None else f"a {type(part).__name__}"
        raise BadInput(f"'{key}' must be an object, got {shown}")
    return part


def parse(data: bytes) -> HookRequest:
    """A Cline hook event."""
    doc = read_object(data)
    name = field_of(doc, "hookName", str, "a non-empty string")
    session = field_of(doc, "taskId", str, "a non-empty string")
    kind = event_kind(name, KINDS, OTHERS)
    if kind == "ignore":
        return HookRequest("ignore", name, session)
    if kind == "prompt":
        part = _part(doc, "userPromptSubmit")
        return HookRequest("prompt", name, session,
                           text=field_of(part, "prompt", str, "a non-empty string"))
    if kind == "stop":
        return HookRequest("stop", name, session, agent=AGENT)
    part = _part(doc, "preToolUse" if kind == "pre" else "postToolUse")
    tool = field_of(part, "toolName", str, "a non-empty string")
    args = json_args(part.get("parameters"), "parameters", text_ok=True)
    call = make_call(tool, args, None, shell_tools=SHELL_TOOLS, agent=AGENT)
    if kind == "post" and part.get("success") is False:
        result = part.get("result")
        return HookRequest("failed", name, session, call=call, agent=AGENT,
                           text=result if isinstance(result, str) and result
                           else "the call failed")
    return HookRequest(kind, name, session, call=call, agent=AGENT)


def answer(request: HookRequest, outcome: Outcome, grant: bool) -> HookAnswer:
    """The answer Cline reads for ``request``."""
    decision = outcome.decision
    if decision is None or decision.allowed:
        return HookAnswer(0, dumps({"cancel": False}), "", decision)
    message = outcome.message or f"roadcheck guard: {decision.message}"
    return HookAnswer(0, dumps({"cancel": True, "errorMessage": message}), "", decision)


def fail(reason: str) -> HookAnswer:
    """A cancel on standard output (exit 0)."""
    text = f"roadcheck guard: denied: {reason}"
    return HookAnswer(0, dumps({"cancel": True, "errorMessage": text}), text + "\n")


ADAPTER = Adapter("cline", parse, answer, fail, can_ask=False,
                  options=frozenset({"--approver"}))
