"""What several CLIs share: Claude Code's hook payload shape, which others copied."""

from __future__ import annotations

from typing import Any

from roadcheck.guard.hooks import (
    BadInput,
    HookAnswer,
    HookRequest,
    Kind,
    Outcome,
    dumps,
    field_of,
    json_args,
    make_call,
    optional_text,
)


def tool_call(doc: dict[str, Any], *, shell_tools: tuple[str, ...], call_id_key: str | None,
              tool_key: str = "tool_name", input_key: str = "tool_input",
              agent: str = "claude", text_ok: bool = False) -> dict[str, Any]:
    """The call of a ``tool_name`` / ``tool_input`` / ``tool_use_id`` payload."""
    tool = field_of(doc, tool_key, str, "a non-empty string")
    args = json_args(doc.get(input_key), input_key, text_ok=text_ok)
    call_id = None
    if call_id_key is not None and doc.get(call_id_key) is not None:
        call_id = field_of(doc, call_id_key, str, "a non-empty string")
    return make_call(tool, args, call_id, shell_tools=shell_tools, agent=agent)


def claude_shape(doc: dict[str, Any], kinds: dict[str, Kind], *, shell_tools: tuple[str, ...],
                 call_id_key: str | None = "tool_use_id", text_ok: bool = False,
                 others: frozenset[str] = frozenset(), agent: str = "claude") -> HookRequest:
    """A payload shaped as Claude Code's: ``hook_event_name``, ``session_id``, and per event
    ``prompt``, ``tool_name``/``tool_input``/``tool_use_id``, ``error``, the last message."""
    name = field_of(doc, "hook_event_name", str, "a non-empty string")
    session = field_of(doc, "session_id", str, "a non-empty string")
    kind = event_kind(name, kinds, others)
    transcript = doc.get("transcript_path")
    transcript = transcript if isinstance(transcript, str) else None
    if kind == "ignore":
        return HookRequest("ignore", name, session)
    if kind == "prompt":
        return HookRequest("prompt", name, session,
                           text=field_of(doc, "prompt", str, "a non-empty string"),
                           transcript=transcript)
    if kind == "stop":
        sub = doc.get("agent_type")
        own = doc.get("agent_transcript_path") if name == "SubagentStop" else None
        return HookRequest("stop", name, session, text=optional_text(doc, "last_assistant_message"),
                           agent=sub if isinstance(sub, str) and sub else agent,
                           transcript=transcript).stopping(
            stop_hook_active(doc), own if isinstance(own, str) and own else None)
    call = tool_call(doc, shell_tools=shell_tools, call_id_key=call_id_key, text_ok=text_ok,
                     agent=agent)
    if kind == "post" and "tool_response" in doc:
        call["result"] = response_text(doc["tool_response"])
    text = None
    if kind == "failed":
        error = doc.get("error")
        text = error if isinstance(error, str) and error else "the call failed"
    return HookRequest(kind, name, session, call=call, text=text, agent=agent,
                       transcript=transcript)


def stop_hook_active(doc: dict[str, Any]) -> bool | None:
    """The event's ``stop_hook_active``: True when the agent already continues because a
    stop hook held it; None when the CLI does not say."""
    value = doc.get("stop_hook_active")
    return value if isinstance(value, bool) else None


def response_text(value: Any) -> str:
    """A call's output as text: a shell call's standard output and error, else the text
    the CLI gave, else its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        parts = [value[key] for key in ("stdout", "stderr", "output", "llmContent")
                 if isinstance(value.get(key), str) and value[key]]
        if parts:
            return "\n".join(parts)
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return str(value)


def stop_answer(outcome: Outcome, *, decision: str = "block",
                empty: str = "") -> HookAnswer:
    """A stop's answer as Claude Code, Codex and Gemini CLI read it: ``decision`` with the
    ``reason`` while it is held, ``systemMessage`` (for the person) with a warning."""
    out: dict[str, Any] = {}
    reason = outcome.stop_reason()
    if reason:
        out["decision"] = decision
        out["reason"] = reason
    if outcome.warning:
        out["systemMessage"] = outcome.warning
    return HookAnswer(0, dumps(out)) if out else HookAnswer(0, empty)


def event_kind(name: str, kinds: dict[str, Kind], others: frozenset[str]) -> Kind:
    """What the event ``name`` is to the guard; one it does not know is bad input.

    An event the CLI documents and the guard does not read is left alone; a name it has
    never heard of could be a call about to run, so it is not let through unanswered.
    """
    if name in kinds:
        return kinds[name]
    if name in others:
        return "ignore"
    raise BadInput(f"unknown hook event '{name}'")


def no_call_id(request: HookRequest) -> HookRequest:
    """The request with its call's id left out: the approval binds the tool and arguments."""
    if request.call is None or "call_id" not in request.call:
        return request
    call = {k: v for k, v in request.call.items() if k != "call_id"}
    return HookRequest(request.kind, request.event, request.session, call, request.text,
                       request.agent, request.transcript)


__all__ = ["BadInput", "claude_shape", "event_kind", "no_call_id", "response_text",
           "stop_answer", "stop_hook_active", "tool_call"]
