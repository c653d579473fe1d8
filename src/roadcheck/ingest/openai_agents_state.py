"""The OpenAI Agents SDK RunState reader: a saved, paused run into the shared event model.

The SDK serializes a run it paused for human approval (``result.to_state()``,
``RunState.to_json()`` / ``to_string()``) as one JSON object: ``$schemaVersion``,
``current_agent``, ``original_input`` (a string, or a list of input items),
``generated_items`` (the run items so far, each ``type``, ``raw_item`` and
``agent``: ``message_output_item``, ``tool_call_item``, ``tool_call_output_item``,
``handoff_call_item``, ``handoff_output_item``, ``tool_approval_item``...),
``model_responses``, ``context`` (its ``approvals``: per tool name ``approved`` and
``rejected``, each a list of call ids or true / false for every call) and
``current_step`` (``next_step_interruption`` with the pending ``interruptions``).
The mapping:

- the original input, and each ``input_item`` and ``message_output_item``, is a
  ``message`` event (``role``, ``text``);
- a ``tool_call_item`` answered by its ``tool_call_output_item`` (same
  ``call_id``) is an ``action``: ``action_type`` = the tool name, ``args`` = its
  JSON ``arguments`` decoded, ``call_id``, ``result`` = the output, placed where
  the call is;
- a call the context approves is a ``checkpoint`` ``agents-sdk-approval``
  (``confirmed_by: user``, ``call_id``, ``tool``) just before it;
- a call the context rejects never ran: no action. The SDK answers it with the
  rejection message as its output; any other output for it is the file's ERROR;
- a call waiting for approval (a ``tool_approval_item`` neither approved nor
  rejected) never ran: no action, and the trajectory's ``meta`` lists it under
  ``pending_approvals``; an output for it is the file's ERROR. A call with no
  output and no decision did not run either;
- a ``handoff_output_item`` is a ``handoff`` (``from_agent``, ``to_agent``; the
  ``payload`` is the arguments of its ``handoff_call_item``);
- the end of the state is the ``final`` event (``task_success`` false: a state records
  no outcome; ``interrupted``: the run is paused).

Structure the reader does not understand is the file's ERROR naming the file, the line
and the field. See docs/frameworks/openai-agents-state.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import EmbeddedDuplicate, decode_embedded
from roadcheck.ingest._where import ANY, object_lines

__all__ = ["detect_openai_agents_state", "read_openai_agents_state", "run_state_events"]

CHECKPOINT = "agents-sdk-approval"
#: The schema versions of the SDK's RunState this reader knows (1.0 to 1.17).
_VERSION = re.compile(r"1\.(?:[0-9]|1[0-7])")
#: What the SDK answers a rejected call with, unless the rejection names its own message.
DEFAULT_REJECTION = "Tool execution was not approved."
_CALL_ITEMS = frozenset({"tool_call_item", "handoff_call_item"})
#: Run items that record nothing done: reasoning, hosted MCP bookkeeping, compaction.
_SILENT = frozenset({"reasoning_item", "mcp_list_tools_item", "mcp_approval_request_item",
                     "mcp_approval_response_item", "compaction_item",
                     "tool_search_call_item", "tool_search_output_item"})
_KNOWN = _SILENT | _CALL_ITEMS | {"input_item", "message_output_item",
                                  "tool_call_output_item", "handoff_output_item",
                                  "tool_approval_item"}


def detect_openai_agents_state(data: bytes) -> float:
    """Certain for a JSON object whose top-level keys include ``$schemaVersion``; else 0."""
    from roadcheck.ingest import CERTAIN
    from roadcheck.ingest._scan import _keys_at

    if data.lstrip()[:1] != b"{":
        return 0.0
    return CERTAIN if _keys_at(data, 1, frozenset({b"$schemaVersion"})) is not None else 0.0


class _Bad(Exception):
    """A malformed record: the message names the field, ``line`` where it is."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _obj(raw: Any, what: str, line: int | None) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Bad(f"{what} must be an object, got {type(raw).__name__}", line)
    return raw


def _str(raw: Any, what: str, line: int | None) -> str | None:
    if raw is not None and not isinstance(raw, str):
        raise _Bad(f"{what} must be a string, got {type(raw).__name__}", line)
    return raw


def _agent(raw: Any, what: str, line: int | None) -> str:
    ref = _obj(raw, f"{what}", line)
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        raise _Bad(f"{what} has no 'name'", line)
    return name


def _text(content: Any, what: str, line: int | None) -> str:
    """The text of a message's ``content``: a string, or its parts' texts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _Bad(f"{what} must be a string or a list of parts, got "
                   f"{type(content).__name__}", line)
    texts: list[str] = []
    for j, part in enumerate(content):
        part = _obj(part, f"{what}[{j}]", line)
        text = part.get("text", part.get("refusal"))
        if text is None:
            continue  # an image or a file: no text
        if not isinstance(text, str):
            raise _Bad(f"{what}[{j}] 'text' must be a string, got {type(text).__name__}", line)
        texts.append(text)
    return "\n".join(texts)


class _Call:
    """One tool or handoff call of the state, and what became of it."""

    __slots__ = ("agent", "args", "call_id", "handoff", "line", "output", "pos", "tool")

    def __init__(self, tool: str, args: Any, call_id: str, agent: str, line: int | None,
                 pos: int, handoff: bool) -> None:
        self.tool, self.args, self.call_id, self.agent = tool, args, call_id, agent
        self.line, self.pos, self.handoff = line, pos, handoff
        self.output: tuple[Any, int | None] | None = None


def _approval_records(context: Any, line: int | None,
                      lines: dict[Any, int]) -> dict[str, tuple[Any, Any, dict[str, Any]]]:
    """Per tool name: (approved, rejected, the record), each list or bool, checked."""
    if context is None:
        return {}
    context = _obj(context, "'context'", line)
    approvals = context.get("approvals")
    if approvals is None:
        return {}
    approvals = _obj(approvals, "'context.approvals'", line)
    out: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
    for tool, rec in approvals.items():
        at = lines.get(("context", "approvals", tool), line)
        what = f"context.approvals[{tool!r}]"
        rec = _obj(rec, what, at)
        decided = []
        for key in ("approved", "rejected"):
            value = rec.get(key, [])
            if not (isinstance(value, bool) or (isinstance(value, list)
                                                and all(isinstance(v, str) for v in value))):
                raise _Bad(f"{what} '{key}' must be true, false or a list of call ids", at)
            decided.append(value)
        messages = rec.get("rejection_messages", {})
        if not isinstance(messages, dict) or not all(isinstance(v, str)
                                                     for v in messages.values()):
            raise _Bad(f"{what} 'rejection_messages' must map call ids to strings", at)
        _str(rec.get("sticky_rejection_message"), f"{what} 'sticky_rejection_message'", at)
        out[tool] = (decided[0], decided[1], rec)
    return out


def _decision(records: dict[str, tuple[Any, Any, dict[str, Any]]], tool: str,
              call_id: str) -> bool | None:
    """The SDK's answer for one call: approved (True), rejected (False) or none yet."""
    record = records.get(tool)
    if record is None:
        return None
    approved, rejected, _ = record
    if isinstance(approved, list) and call_id in approved:
        return True
    if isinstance(rejected, list) and call_id in rejected:
        return False
    if approved is True:
        return True  # a sticky approval wins over a sticky rejection, as in the SDK
    if rejected is True:
        return False
    return None


def _rejection_messages(records: dict[str, tuple[Any, Any, dict[str, Any]]], tool: str,
                        call_id: str) -> set[str]:
    """The outputs the SDK answers a rejected call with."""
    out = {DEFAULT_REJECTION}
    record = records.get(tool)
    if record is not None:
        rec = record[2]
        message = rec.get("rejection_messages", {}).get(call_id)
        if message is not None:
            out.add(message)
        if rec.get("sticky_rejection_message") is not None:
            out.add(rec["sticky_rejection_message"])
    return out


def _call_of(item: dict[str, Any], raw: dict[str, Any], what: str,
             line: int | None) -> tuple[str, Any, str]:
    """(tool name, decoded arguments, call id) of a call item's ``raw_item``."""
    call_id = raw.get("call_id", raw.get("id"))
    if not isinstance(call_id, str) or not call_id:
        raise _Bad(f"{what}: 'raw_item' has no 'call_id'", line)
    tool = _str(item.get("tool_name"), f"{what}: 'tool_name'", line)
    if tool is None:
        tool = _str(raw.get("name"), f"{what}: 'raw_item.name'", line)
    if tool is None:
        tool = _str(raw.get("type"), f"{what}: 'raw_item.type'", line)
    if not tool:
        raise _Bad(f"{what}: 'raw_item' has no 'name'", line)
    if "arguments" in raw:
        field, value = "raw_item.arguments", raw["arguments"]
    elif "input" in raw:  # a custom tool call
        field, value = "raw_item.input", raw["input"]
    else:
        field, value = "raw_item.action", raw.get("action")
    try:
        args = decode_embedded(value, field)
    except EmbeddedDuplicate as exc:
        raise _Bad(f"{what}: {exc}", line) from None
    return tool, args, call_id


class _State:
    """The run items of a state, read in order."""

    def __init__(self, doc: dict[str, Any], lines: dict[Any, int]) -> None:
        self.doc, self.lines = doc, lines
        #: (position, kind, agent, line, fields) of the messages and handoffs
        self.staged: list[tuple[int, str, str, int | None, dict[str, Any]]] = []
        self.calls: dict[str, _Call] = {}
        self.order: list[_Call] = []
        self.requests: dict[str, int | None] = {}  # call id -> line of its approval item

    def message(self, pos: int, agent: str, line: int | None, role: str, text: str) -> None:
        self.staged.append((pos, "message", agent, line, {"role": role, "text": text}))

    def input(self, value: Any, agent: str) -> None:
        """The original input: a string, or a list of input items (an assistant's message
        or call in it is ``agent``'s, the current agent)."""
        if isinstance(value, str):
            self.message(-1, "user", 1, "user", value)
            return
        if not isinstance(value, list):
            raise _Bad("'original_input' must be a string or a list, got "
                       f"{type(value).__name__}", 1)
        for i, raw in enumerate(value):
            line = self.lines.get(("original_input", i), 1)
            what = f"original_input[{i}]"
            # before every generated item, in their order
            self.raw_input(i - len(value), _obj(raw, what, line), what, line, agent)

    def raw_input(self, pos: int, raw: dict[str, Any], what: str, line: int | None,
                  agent: str) -> None:
        kind = raw.get("type", "message")
        if kind == "message":
            role = raw.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise _Bad(f"{what}: unknown 'role' {role!r}", line)
            self.message(pos, agent if role == "assistant" else role, line, role,
                         _text(raw.get("content"), f"{what}: 'content'", line))
            return
        if kind == "function_call":
            tool, args, call_id = _call_of({}, raw, what, line)
            self.call(_Call(tool, args, call_id, agent, line, pos, False), what)
            return
        if kind == "function_call_output":
            self.answer(raw.get("call_id"), raw.get("output"), what, line)
            return
        raise _Bad(f"{what}: unknown input item 'type' {kind!r}", line)

    def call(self, call: _Call, what: str) -> None:
        if call.call_id in self.calls:
            raise _Bad(f"{what}: call id {call.call_id!r} is called twice", call.line)
        self.calls[call.call_id] = call
        self.order.append(call)

    def answer(self, call_id: Any, output: Any, what: str, line: int | None) -> None:
        if not isinstance(call_id, str) or not call_id:
            raise _Bad(f"{what}: 'raw_item' has no 'call_id'", line)
        call = self.calls.get(call_id)
        if call is None:
            raise _Bad(f"{what}: output for call {call_id!r}, which no earlier item calls",
                       line)
        if call.output is not None:
            raise _Bad(f"{what}: call {call_id!r} is answered twice", line)
        call.output = (output, line)

    def item(self, i: int, item: Any) -> None:
        line = self.lines.get(("generated_items", i))
        what = f"generated_items[{i}]"
        item = _obj(item, what, line)
        kind = item.get("type")
        if not isinstance(kind, str) or kind not in _KNOWN:
            raise _Bad(f"{what}: unknown item 'type' {kind!r}", line)
        if kind in _SILENT:
            return
        agent = _agent(item.get("agent"), f"{what}: 'agent'", line)
        raw = _obj(item.get("raw_item"), f"{what}: 'raw_item'", line)
        if kind == "input_item":
            self.raw_input(i, raw, what, line, agent)
        elif kind == "message_output_item":
            role = raw.get("role", "assistant")
            if role != "assistant":
                raise _Bad(f"{what}: 'raw_item.role' must be 'assistant', got {role!r}", line)
            self.message(i, agent, line, "assistant",
                         _text(raw.get("content"), f"{what}: 'raw_item.content'", line))
        elif kind in _CALL_ITEMS:
            tool, args, call_id = _call_of(item, raw, what, line)
            self.call(_Call(tool, args, call_id, agent, line, i, kind == "handoff_call_item"),
                      what)
        elif kind == "tool_call_output_item":
            self.answer(raw.get("call_id"), item.get("output", raw.get("output")), what, line)
        elif kind == "handoff_output_item":
            self.handoff(i, item, raw, what, line)
        else:  # tool_approval_item
            self.request(raw, what, line)

    def handoff(self, i: int, item: dict[str, Any], raw: dict[str, Any], what: str,
                line: int | None) -> None:
        src = _agent(item.get("source_agent"), f"{what}: 'source_agent'", line)
        dst = _agent(item.get("target_agent"), f"{what}: 'target_agent'", line)
        call_id = _str(raw.get("call_id"), f"{what}: 'raw_item.call_id'", line)
        fields: dict[str, Any] = {"from_agent": src, "to_agent": dst, "payload": {}}
        if call_id is not None:
            call = self.calls.get(call_id)
            if call is None or not call.handoff:
                raise _Bad(f"{what}: handoff output for call {call_id!r}, which no earlier "
                           "handoff_call_item calls", line)
            if call.output is not None:
                raise _Bad(f"{what}: handoff call {call_id!r} is answered twice", line)
            call.output = (raw.get("output"), line)
            fields["payload"] = call.args if isinstance(call.args, dict) else {"value": call.args}
            fields["call_id"] = call_id
        self.staged.append((i, "handoff", src, line, fields))

    def request(self, raw: dict[str, Any], what: str, line: int | None) -> None:
        call_id = raw.get("call_id", raw.get("id"))
        if not isinstance(call_id, str) or not call_id:
            raise _Bad(f"{what}: 'raw_item' has no 'call_id'", line)
        self.requests.setdefault(call_id, line)


def _interruptions(state: _State, step: Any) -> None:
    """The approval items ``current_step`` holds (a paused run's pending calls)."""
    if step is None:
        return
    line = state.lines.get(("current_step",), 1)
    step = _obj(step, "'current_step'", line)
    if step.get("type") != "next_step_interruption":
        return
    data = _obj(step.get("data", {}), "'current_step.data'", line)
    items = data.get("interruptions", [])
    if not isinstance(items, list):
        raise _Bad("'current_step.data.interruptions' must be a list, got "
                   f"{type(items).__name__}", line)
    for i, item in enumerate(items):
        at = state.lines.get(("current_step", "data", "interruptions", i), line)
        what = f"current_step.data.interruptions[{i}]"
        item = _obj(item, what, at)
        if item.get("type") != "tool_approval_item":
            raise _Bad(f"{what}: 'type' must be 'tool_approval_item', got "
                       f"{item.get('type')!r}", at)
        state.request(_obj(item.get("raw_item"), f"{what}: 'raw_item'", at), what, at)


def run_state_events(doc: Any, data: bytes = b"") -> tuple[list[Event], list[str]]:
    """Map one decoded RunState document to (events, the call ids awaiting approval).
    Raises :class:`TraceError` naming the line and field (found in ``data``)."""
    try:
        return _events(doc, data)
    except _Bad as exc:
        raise TraceError(str(exc), line=exc.line) from None


def _events(doc: Any, data: bytes) -> tuple[list[Event], list[str]]:
    if not isinstance(doc, dict):
        raise _Bad(f"expected a JSON object, got {type(doc).__name__}", 1)
    version = doc.get("$schemaVersion")
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise _Bad(f"unsupported '$schemaVersion' {version!r}: this reader knows the "
                   "RunState schema versions 1.0 to 1.17", 1)
    lines = object_lines(data, ("generated_items", ANY), ("original_input", ANY),
                         ("current_step",), ("current_step", "data", "interruptions", ANY),
                         ("context", "approvals", ANY)) if data else {}
    current = _agent(doc.get("current_agent"), "'current_agent'", 1)
    if "original_input" not in doc:
        raise _Bad("missing required key 'original_input'", 1)
    items = doc.get("generated_items", [])
    if not isinstance(items, list):
        raise _Bad(f"'generated_items' must be a list, got {type(items).__name__}", 1)
    state = _State(doc, lines)
    state.input(doc["original_input"], current)
    for i, item in enumerate(items):
        state.item(i, item)
    _interruptions(state, doc.get("current_step"))
    records = _approval_records(doc.get("context"), 1, lines)
    staged = list(state.staged)
    pending: list[str] = []
    for call in state.order:
        if call.handoff:
            continue
        decision = _decision(records, call.tool, call.call_id)
        what = f"call {call.call_id!r} ({call.tool})"
        if decision is False:
            if call.output is not None and not _is_rejection(call, records):
                raise _Bad(f"{what} was rejected, yet its output is not the rejection "
                           f"message: {_short(call.output[0])}", call.output[1])
            continue
        if decision is None and call.call_id in state.requests:
            if call.output is not None:
                raise _Bad(f"{what} awaits approval, yet has an output", call.output[1])
            pending.append(call.call_id)
            continue
        if decision is True:
            staged.append((call.pos, "checkpoint", "user", call.line,
                           {"checkpoint_id": CHECKPOINT, "confirmed_by": "user",
                            "call_id": call.call_id, "tool": call.tool}))
        if call.output is None:
            continue  # no output: the call has not run
        fields: dict[str, Any] = {"action_type": call.tool, "args": call.args,
                                  "call_id": call.call_id, "result": call.output[0]}
        staged.append((call.pos, "action", call.agent, call.line, fields))
    staged.sort(key=lambda s: s[0])  # stable: a checkpoint stays before its action
    events: list[Event] = [Event.make(n, kind, agent, line=line, **fields)
                           for n, (_, kind, agent, line, fields) in enumerate(staged, 1)]
    # a saved state records no outcome: task_success false, as every reader of a session says
    events.append(Event.make(len(events) + 1, "final", None, task_success=False,
                             interrupted=bool(pending)))
    return events, pending


def _is_rejection(call: _Call, records: dict[str, tuple[Any, Any, dict[str, Any]]]) -> bool:
    assert call.output is not None
    output = call.output[0]
    return isinstance(output, str) and output in _rejection_messages(records, call.tool,
                                                                     call.call_id)


def _short(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 60 else text[:57] + "..."


def read_openai_agents_state(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per RunState document (id = the path)."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _runs, _trajectory)


def _runs(path: str, data: bytes) -> list[tuple[str, bytes, Any]]:
    from roadcheck.ingest.transcripts import _decode

    return [(path, data, _decode(path, data))]


def _trajectory(run: tuple[str, bytes, Any]) -> Trajectory:
    from roadcheck.ingest import BadRun

    path, data, doc = run
    try:
        events, pending = run_state_events(doc, data)
    except TraceError as exc:
        raise BadRun(path, exc.message, exc.line) from None
    meta: dict[str, Any] = {"schema_version": doc["$schemaVersion"],
                            "current_agent": doc["current_agent"]["name"]}
    if pending:
        meta["pending_approvals"] = pending
    return Trajectory(path, tuple(events), path, "openai-agents-state", meta)
