"""The SWE-agent reader: ``.traj`` trajectory files into the shared event model.

SWE-agent writes one JSON document per instance it ran: ``trajectory`` (one step
per command the agent ran: ``action``, ``observation``, ``thought``,
``response``, ``execution_time``, ``state``), ``history`` (the chat messages the
model saw: ``role``, ``content``, ``message_type``, on an assistant message
``action`` and, with function calling, ``tool_calls``; on a tool message
``tool_call_ids``, a list), ``info`` (``exit_status``, ``submission``,
``model_stats``...) and ``replay_config``. The mapping:

- the ``system`` and ``user`` messages of ``history`` before the model's first
  answer (the system prompt, the issue) are ``message`` events of that role;
- each step of ``trajectory`` with a ``thought`` is an assistant ``message``
  (``yields_turn`` false: a command follows), then an ``action``: the step's
  command as ``command``, its ``observation`` as ``result``, ``step`` = its
  index. The tool is the function call the model made for it, found in
  ``history`` (the assistant message whose ``action`` is the step's command, in
  order): ``action_type`` = the function's name, ``args`` = its arguments,
  ``call_id``; without one (a model that writes commands as text) the tool is
  the command's first word and ``args`` is ``{"command": ...}``;
- the end of the file is the ``final`` event: ``exit_status`` from ``info``, and
  ``task_success`` true exactly when it is ``submitted`` (the agent submitted its
  patch by itself; SWE-agent records no test result).

SWE-agent records no approval and no handoff. Structure the reader does not
understand is the file's ERROR, naming the file, the line and the field. See
docs/frameworks/swe-agent.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import EmbeddedDuplicate, decode_embedded
from roadcheck.ingest._where import ANY, object_lines

__all__ = ["detect_swe_agent", "read_swe_agent", "swe_agent_events"]

AGENT = "swe-agent"
_TOP_KEYS = frozenset({b"trajectory", b"history", b"info", b"replay_config", b"environment"})


def detect_swe_agent(data: bytes) -> float:
    """Certain for a document whose top-level keys include ``trajectory`` and one of
    ``history`` / ``info`` / ``replay_config``; else 0."""
    from roadcheck.ingest import CERTAIN
    from roadcheck.ingest._scan import _keys_at

    if data.lstrip()[:1] != b"{":
        return 0.0
    if _keys_at(data, 1, frozenset({b"trajectory"})) is None:
        return 0.0
    others = _TOP_KEYS - {b"trajectory", b"environment"}
    return CERTAIN if _keys_at(data, 1, others) is not None else 0.0


class _Bad(Exception):
    """A malformed record: the message names the field, ``line`` where it is."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class _Call(NamedTuple):
    """The function call the model made for a command (from ``history``)."""

    name: str
    args: Any
    call_id: str | None


def _text(value: Any, what: str, line: int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        parts = [p.get("text") for p in value if isinstance(p, dict)]
        if all(isinstance(p, str) for p in parts) and len(parts) == len(value):
            return "\n".join(p for p in parts if isinstance(p, str))
    raise _Bad(f"{what} must be a string, got {type(value).__name__}", line)


def _first_word(command: str) -> str:
    words = command.split()
    return words[0] if words else ""


def _function_call(msg: dict[str, Any], what: str, line: int | None) -> _Call | None:
    """The one function call of an assistant message, or None when it makes none."""
    calls = msg.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        raise _Bad(f"{what}: 'tool_calls' must be a list, got {type(calls).__name__}", line)
    if not calls:
        return None
    if len(calls) != 1:
        raise _Bad(f"{what}: 'tool_calls' holds {len(calls)} calls for one command; "
                   "SWE-agent runs one call a step", line)
    call = calls[0]
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise _Bad(f"{what}: tool_calls[0] has no 'function.name'", line)
    name: str = fn["name"]
    call_id = call.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise _Bad(f"{what}: tool_calls[0] 'id' must be a string, got "
                   f"{type(call_id).__name__}", line)
    try:
        args = decode_embedded(fn.get("arguments"), "function.arguments")
    except EmbeddedDuplicate as exc:
        raise _Bad(f"{what}: tool_calls[0]: {exc}", line) from None
    return _Call(name, args, call_id)


class _History:
    """The chat messages of a ``.traj``, checked, and the calls its answers make."""

    def __init__(self, history: Any, lines: dict[Any, int]) -> None:
        if history is None:
            history = []
        if not isinstance(history, list):
            raise _Bad(f"'history' must be a list, got {type(history).__name__}", 1)
        self.lines = lines
        self.leading: list[tuple[str, str, int | None]] = []
        #: (command, its call or None), in order, for every assistant message
        self.answers: list[tuple[str, _Call | None]] = []
        answered = False
        for i, msg in enumerate(history):
            answered = self.read(i, msg, answered)
        self.pos = 0

    def read(self, i: int, msg: Any, answered: bool) -> bool:
        """Read message ``i``; returns whether the model has answered by then."""
        line = self.lines.get(("history", i))
        what = f"history[{i}]"
        if not isinstance(msg, dict):
            raise _Bad(f"{what} is {type(msg).__name__}, not an object", line)
        role = msg.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise _Bad(f"{what}: unknown 'role' {role!r}", line)
        ids = msg.get("tool_call_ids")
        if ids is not None and not (isinstance(ids, list)
                                    and all(isinstance(x, str) for x in ids)):
            raise _Bad(f"{what}: 'tool_call_ids' must be a list of strings", line)
        if role == "assistant":
            action = msg.get("action")
            if action is not None and not isinstance(action, str):
                raise _Bad(f"{what}: 'action' must be a string, got {type(action).__name__}",
                           line)
            self.answers.append((action or "", _function_call(msg, what, line)))
            return True
        if not answered and role in ("system", "user"):
            self.leading.append((role, _text(msg.get("content"), f"{what}: 'content'", line),
                                 line))
        return answered

    def call_for(self, command: str) -> _Call | None:
        """The call of the next assistant message that ran ``command``, or None."""
        for k in range(self.pos, len(self.answers)):
            action, call = self.answers[k]
            if action == command:
                self.pos = k + 1
                return call
        return None


def _step_fields(step: Any, i: int, line: int | None) -> tuple[str, str, Any]:
    """(command, thought, observation) of trajectory step ``i``, checked."""
    what = f"trajectory[{i}]"
    if not isinstance(step, dict):
        raise _Bad(f"{what} is {type(step).__name__}, not an object", line)
    if "action" not in step:
        raise _Bad(f"{what}: missing required key 'action'", line)
    command = step["action"]
    if not isinstance(command, str):
        raise _Bad(f"{what}: 'action' must be a string, got {type(command).__name__}", line)
    thought = _text(step.get("thought"), f"{what}: 'thought'", line)
    observation = step.get("observation")
    if observation is not None and not isinstance(observation, str):
        raise _Bad(f"{what}: 'observation' must be a string, got "
                   f"{type(observation).__name__}", line)
    return command, thought, observation


def _info(doc: dict[str, Any], line: int | None) -> dict[str, Any]:
    info = doc.get("info")
    if info is None:
        return {"task_success": False}
    if not isinstance(info, dict):
        raise _Bad(f"'info' must be an object, got {type(info).__name__}", line)
    status = info.get("exit_status")
    if status is not None and not isinstance(status, str):
        raise _Bad(f"'info.exit_status' must be a string, got {type(status).__name__}", line)
    out: dict[str, Any] = {"task_success": status == "submitted"}
    if status is not None:
        out["exit_status"] = status
    return out


def swe_agent_events(doc: Any, data: bytes = b"") -> list[Event]:
    """Map one decoded ``.traj`` document to events. Raises :class:`TraceError` naming the
    line and field (the lines are found in ``data``, the document's bytes)."""
    try:
        return _events(doc, data)
    except _Bad as exc:
        raise TraceError(str(exc), line=exc.line) from None


def _events(doc: Any, data: bytes) -> list[Event]:
    if not isinstance(doc, dict):
        raise _Bad(f"expected a JSON object, got {type(doc).__name__}", 1)
    steps = doc.get("trajectory")
    if not isinstance(steps, list):
        raise _Bad("missing required key 'trajectory'" if steps is None
                   else f"'trajectory' must be a list, got {type(steps).__name__}", 1)
    if not steps:
        raise _Bad("the file holds no run: 'trajectory' is empty (the agent ran no step)", 1)
    lines = object_lines(data, ("trajectory", ANY), ("history", ANY)) if data else {}
    history = _History(doc.get("history"), lines)
    events: list[Event] = []

    def add(kind: str, agent: str, line: int | None, **fields: Any) -> None:
        events.append(Event.make(len(events) + 1, kind, agent, line=line, **fields))

    for role, text, line in history.leading:
        add("message", role, line, role=role, text=text)
    for i, step in enumerate(steps):
        line = lines.get(("trajectory", i))
        command, thought, observation = _step_fields(step, i, line)
        if thought:
            add("message", AGENT, line, role="assistant", text=thought, yields_turn=False,
                step=i)
        call = history.call_for(command)
        fields: dict[str, Any]
        if call is not None:
            fields = {"action_type": call.name, "args": call.args}
            if call.call_id is not None:
                fields["call_id"] = call.call_id
        else:
            fields = {"action_type": _first_word(command) or "(empty)",
                      "args": {"command": command}}
        fields["command"] = command
        if observation is not None:
            fields["result"] = observation
        fields["step"] = i
        add("action", AGENT, line, **fields)
    add("final", AGENT, None, **_info(doc, 1))
    return events


def read_swe_agent(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per ``.traj`` document (id = the path)."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _runs, _trajectory)


def _runs(path: str, data: bytes) -> list[tuple[str, bytes, Any]]:
    from roadcheck.ingest.transcripts import _decode

    return [(path, data, _decode(path, data))]


def _trajectory(run: tuple[str, bytes, Any]) -> Trajectory:
    from roadcheck.ingest import BadRun

    path, data, doc = run
    try:
        events = swe_agent_events(doc, data)
    except TraceError as exc:
        raise BadRun(path, exc.message, exc.line) from None
    meta: dict[str, Any] = {}
    final = events[-1].data
    if "exit_status" in final:
        meta["exit_status"] = final["exit_status"]
    return Trajectory(path, tuple(events), path, "swe-agent", meta)
