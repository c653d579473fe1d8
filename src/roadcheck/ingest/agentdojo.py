"""The AgentDojo reader: the run files of the AgentDojo benchmark into the shared event model.

AgentDojo (github.com/ethz-spylab/agentdojo) writes one JSON document per task it runs,
``runs/<pipeline>/<suite>/<user task>/<attack type>/<injection task or none>.json``:
``suite_name``, ``pipeline_name``, ``user_task_id``, ``injection_task_id``,
``attack_type``, ``injections`` (the text injected, by place), ``messages`` (the chat:
``role`` ``system``, ``user``, ``assistant`` or ``tool``; ``content`` a string or a list
of ``{type, content}`` blocks; an assistant's ``tool_calls``, each ``function``,
``args``, ``id``; a tool message's ``tool_call_id``, ``tool_call`` and ``error``),
``error`` (what stopped the pipeline), then the evaluation: ``utility``, ``security``,
``duration``. The mapping:

- a ``system`` or ``user`` message is a ``message`` event of that role;
- an assistant message with text is an assistant ``message`` (``yields_turn`` true
  exactly when it calls no tool); its thinking blocks are left out;
- each of its tool calls is an ``action``: ``action_type`` = ``function``, ``args``,
  ``call_id`` = ``id``; the tool message answering it gives ``result`` (its text) and
  ``error`` (its ``error``, when not null);
- the end of the file is the ``final`` event: ``task_success`` = ``utility`` (false when
  the run was not evaluated), with ``utility``, ``security`` and the task ids beside it.

AgentDojo records no human approval and no handoff. Structure the reader does not
understand is the file's ERROR naming the file, the line and the field; so is a call
answered twice and a tool message answering no call. See docs/frameworks/agentdojo.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._where import ANY, object_lines

__all__ = ["agentdojo_events", "detect_agentdojo", "read_agentdojo"]

AGENT = "agentdojo"
_ROLES = ("system", "user", "assistant", "tool")
#: Content blocks that hold no text of the conversation (the model's reasoning).
_THINKING = frozenset({"thinking", "redacted_thinking"})
#: The task and evaluation facts the final event and the trajectory's meta carry.
_FACTS = ("utility", "security", "suite_name", "pipeline_name", "user_task_id",
          "injection_task_id", "attack_type")


def detect_agentdojo(data: bytes) -> float:
    """Certain for a document whose top-level keys include ``messages``, ``suite_name``
    and ``user_task_id``; else 0."""
    from roadcheck.ingest import CERTAIN
    from roadcheck.ingest._scan import _keys_at

    if data.lstrip()[:1] != b"{":
        return 0.0
    for wanted in (b"suite_name", b"user_task_id", b"messages"):
        if _keys_at(data, 1, frozenset({wanted})) is None:
            return 0.0
    return CERTAIN


class _Bad(Exception):
    """A malformed message: the text names the field, ``line`` where it is."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _str(raw: Any, what: str, line: int | None, *, required: bool = False) -> str | None:
    if raw is None and not required:
        return None
    if not isinstance(raw, str):
        raise _Bad(f"{what} must be a string, got {type(raw).__name__}", line)
    return raw


def _bool(raw: Any, what: str, line: int | None) -> bool | None:
    if raw is not None and not isinstance(raw, bool):
        raise _Bad(f"{what} must be true, false or null, got {type(raw).__name__}", line)
    return raw


def _text(content: Any, what: str, line: int | None) -> str:
    """The text of ``content``: a string, or the text blocks of a block list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _Bad(f"{what} must be a string, a list of blocks or null, got "
                   f"{type(content).__name__}", line)
    parts: list[str] = []
    for i, block in enumerate(content):
        where = f"{what}[{i}]"
        if not isinstance(block, dict):
            raise _Bad(f"{where} is {type(block).__name__}, not an object", line)
        kind = block.get("type")
        if isinstance(kind, str) and kind in _THINKING:
            continue
        if kind != "text":
            raise _Bad(f"{where}: unknown 'type' {kind!r} (known: text, thinking, "
                       "redacted_thinking)", line)
        text = block.get("content")
        if text is None:
            continue
        parts.append(_str(text, f"{where}: 'content'", line) or "")
    return "\n".join(parts)


class _Run:
    """The events of one run, built message by message, and the calls still unanswered."""

    def __init__(self, lines: dict[Any, int]) -> None:
        self.lines = lines
        self.events: list[dict[str, Any]] = []
        #: call id (or, for a call without one, its place) -> its action's fields
        self.pending: dict[Any, dict[str, Any]] = {}
        self.answered: set[Any] = set()
        self.ids: set[str] = set()

    def add(self, kind: str, agent: str, line: int | None, **fields: Any) -> dict[str, Any]:
        record = {"kind": kind, "agent": agent, "line": line, "fields": fields}
        self.events.append(record)
        return fields

    def read(self, i: int, msg: Any) -> None:
        line = self.lines.get(("messages", i))
        what = f"messages[{i}]"
        if not isinstance(msg, dict):
            # only objects have their line noted: name the one of the message before it
            before = max((n for (_, *at), n in self.lines.items() if len(at) == 1
                          and isinstance(at[0], int) and at[0] < i), default=1)
            raise _Bad(f"{what} is {type(msg).__name__}, not an object (after the message "
                       f"at line {before})" if before > 1 else
                       f"{what} is {type(msg).__name__}, not an object", before)
        role = msg.get("role")
        if role not in _ROLES:
            raise _Bad(f"{what}: unknown 'role' {role!r} (known: {', '.join(_ROLES)})", line)
        text = _text(msg.get("content"), f"{what}: 'content'", line)
        if role == "assistant":
            self.assistant(msg, text, i, what, line)
        elif role == "tool":
            self.tool(msg, text, what, line)
        else:
            self.add("message", role, line, role=role, text=text)

    def assistant(self, msg: dict[str, Any], text: str, i: int, what: str,
                  line: int | None) -> None:
        calls = msg.get("tool_calls")
        if calls is None:
            calls = []
        if not isinstance(calls, list):
            raise _Bad(f"{what}: 'tool_calls' must be a list or null, got "
                       f"{type(calls).__name__}", line)
        if text:
            self.add("message", AGENT, line, role="assistant", text=text,
                     yields_turn=not calls)
        for k, call in enumerate(calls):
            self.call(call, (i, k), f"{what}: tool_calls[{k}]",
                      self.lines.get(("messages", i, "tool_calls", k), line))

    def call(self, call: Any, place: tuple[int, int], what: str, line: int | None) -> None:
        if not isinstance(call, dict):
            raise _Bad(f"{what} is {type(call).__name__}, not an object", line)
        name = _str(call.get("function"), f"{what}: 'function'", line, required=True)
        if not name:
            raise _Bad(f"{what}: 'function' must be a non-empty string", line)
        args = call.get("args")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise _Bad(f"{what}: 'args' must be an object, got {type(args).__name__}", line)
        call_id = _str(call.get("id"), f"{what}: 'id'", line)
        fields: dict[str, Any] = {"action_type": name, "args": args}
        key: Any = place
        if call_id is not None:
            if call_id in self.ids:
                raise _Bad(f"{what}: call id {call_id!r} is used by an earlier call", line)
            self.ids.add(call_id)
            fields["call_id"] = key = call_id
        self.pending[key] = self.add("action", AGENT, line, **fields)

    def tool(self, msg: dict[str, Any], text: str, what: str, line: int | None) -> None:
        call = msg.get("tool_call")
        if call is not None and not isinstance(call, dict):
            raise _Bad(f"{what}: 'tool_call' must be an object, got {type(call).__name__}",
                       line)
        call = call or {}
        name = _str(call.get("function"), f"{what}: 'tool_call.function'", line)
        call_id = _str(msg.get("tool_call_id"), f"{what}: 'tool_call_id'", line)
        if call_id is None:
            call_id = _str(call.get("id"), f"{what}: 'tool_call.id'", line)
        error = _str(msg.get("error"), f"{what}: 'error'", line)
        key = call_id if call_id is not None else self.unnamed(name, what, line)
        target = self.pending.pop(key, None)
        if target is None:
            if key in self.answered:
                raise _Bad(f"{what}: call id {key!r} is answered twice", line)
            raise _Bad(f"{what}: the tool message answers call id {key!r}, which no earlier "
                       "tool call made", line)
        if name is not None and name != target["action_type"]:
            raise _Bad(f"{what}: 'tool_call.function' {name!r} is not the function of call "
                       f"{key!r} ({target['action_type']!r})", line)
        self.answered.add(key)
        target["result"] = text
        if error is not None:
            target["error"] = error

    def unnamed(self, name: str | None, what: str, line: int | None) -> Any:
        """The first unanswered call without an id (of the function ``name``, when given),
        for a tool message that names no call id."""
        for key, fields in self.pending.items():
            if isinstance(key, tuple) and name in (None, fields["action_type"]):
                return key
        raise _Bad(f"{what}: the tool message names no call id and answers no earlier call "
                   "without one", line)


def _facts(doc: dict[str, Any]) -> dict[str, Any]:
    """The task and the evaluation of the run, checked (None left out)."""
    facts: dict[str, Any] = {}
    for key in _FACTS:
        raw = doc.get(key)
        if key in ("utility", "security"):
            value: Any = _bool(raw, f"'{key}'", 1)
        else:
            value = _str(raw, f"'{key}'", 1, required=key in ("suite_name", "user_task_id"))
        if value is not None:
            facts[key] = value
    injections = doc.get("injections")
    if injections is not None and not isinstance(injections, dict):
        raise _Bad(f"'injections' must be an object, got {type(injections).__name__}", 1)
    duration = doc.get("duration")
    if duration is not None and (isinstance(duration, bool)
                                 or not isinstance(duration, (int, float))):
        raise _Bad(f"'duration' must be a number, got {type(duration).__name__}", 1)
    return facts


def agentdojo_events(doc: Any, data: bytes = b"") -> list[Event]:
    """Map one decoded run file to events. Raises :class:`TraceError` naming the line and
    the field (the lines are found in ``data``, the document's bytes)."""
    try:
        return _events(doc, data)
    except _Bad as exc:
        raise TraceError(str(exc), line=exc.line) from None


def _events(doc: Any, data: bytes) -> list[Event]:
    if not isinstance(doc, dict):
        raise _Bad(f"expected a JSON object, got {type(doc).__name__}", 1)
    messages = doc.get("messages")
    if not isinstance(messages, list):
        raise _Bad("missing required key 'messages'" if messages is None
                   else f"'messages' must be a list, got {type(messages).__name__}", 1)
    if not messages:
        raise _Bad("the file holds no run: 'messages' is empty", 1)
    facts = _facts(doc)
    run_error = _str(doc.get("error"), "'error'", 1)
    lines = (object_lines(data, ("messages", ANY), ("messages", ANY, "tool_calls", ANY))
             if data else {})
    run = _Run(lines)
    for i, msg in enumerate(messages):
        run.read(i, msg)
    events = [Event.make(n, r["kind"], r["agent"], line=r["line"], **r["fields"])
              for n, r in enumerate(run.events, 1)]
    final: dict[str, Any] = {"task_success": facts.get("utility") is True, **facts}
    if run_error is not None:
        final["error"] = run_error
    events.append(Event.make(len(events) + 1, "final", AGENT, **final))
    return events


def read_agentdojo(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per run file (id = the path)."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _runs, _trajectory)


def _runs(path: str, data: bytes) -> list[tuple[str, bytes, Any]]:
    from roadcheck.ingest.transcripts import _decode

    return [(path, data, _decode(path, data))]


def _trajectory(run: tuple[str, bytes, Any]) -> Trajectory:
    from roadcheck.ingest import BadRun

    path, data, doc = run
    try:
        events = agentdojo_events(doc, data)
    except TraceError as exc:
        raise BadRun(path, exc.message, exc.line) from None
    final = events[-1].data
    meta = {k: final[k] for k in _FACTS if k in final and k != "pipeline_name"}
    return Trajectory(path, tuple(events), path, "agentdojo", meta)
