"""What several CLIs share: Claude Code's hook payload shape, which others copied."""

from __future__ import annotations

from typing import Any

from roadcheck.guard.hooks import (
    BadInput,
    HookRequest,
    Kind,
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
        return HookRequest("stop", name, session, text=optional_text(doc, "last_assistant_message"),
                           agent=sub if isinstance(sub, str) and sub else agent,
                           transcript=transcript)
    call = tool_call(doc, shell_tools=shell_tools, call_id_key=call_id_key, text_ok=text_ok,
                     agent=agent)
    text = None
    if kind == "failed":
        error = doc.get("error")
        text = error if isinstance(error, str) and error else "the call failed"
    return HookRequest(kind, name, session, call=call, text=text, agent=agent,
                       transcript=transcript)


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


__all__ = ["BadInput", "claude_shape", "event_kind", "no_call_id", "tool_call"]
