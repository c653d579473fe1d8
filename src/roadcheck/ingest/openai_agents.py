"""The OpenAI Agents SDK reader: recorded spans, run items and approvals into events.

The file is JSONL written by :class:`roadcheck.integrations.openai_agents.RoadcheckTracingProcessor`
(no SDK is needed to read it). Each line is one record, told apart by ``object``:

- ``trace``: the SDK's ``Trace.export()``;
- ``trace.span``: the SDK's ``Span.export()`` (``span_data.type`` agent,
  function, handoff, generation, custom...);
- ``run_item``: one item of a run result (``type`` tool_call_item,
  tool_approval_item, handoff_call_item...), with its ``call_id``, ``name``,
  ``arguments`` and ``output``;
- ``approval``: a decision on a ``tool_approval_item`` (``decision`` approved /
  rejected, ``confirmed_by``, ``checkpoint_id``, ``at``).

Every trace id is one trajectory (id ``<path>#<trace id>``), ordered by time:

- a ``function`` span is an ``action`` (``action_type`` = span name, ``args``
  = its decoded input, ``result`` = its output, ``error`` = the span error),
  of the agent whose ``agent`` span encloses it; the span the SDK opens for a
  call that waits for approval (no output, before the decision) and the span of
  a call whose approval was rejected (no output: the tool never ran) are no
  actions; a span with output is always an action, whatever decision was
  recorded (evidence that the tool ran outranks a decision record);
- a ``handoff`` span is a ``handoff`` (``from_agent``, ``to_agent``; the
  ``payload`` is the matching ``handoff_call_item``'s arguments, ``{}`` when
  the run items were not recorded);
- an ``approved`` decision is a ``checkpoint`` at its time; a rejection gives
  no checkpoint event;
- the end of the trace is the ``final`` event.

See docs/frameworks/openai-agents.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import (
    MAX_DEPTH,
    EmbeddedDuplicate,
    check_line,
    decode_embedded,
    depth_refused,
    fits,
    no_duplicate_keys,
    too_deep,
)
from roadcheck.ingest._keys import missing_key, unknown_key

__all__ = ["detect_openai_agents", "read_openai_agents"]

_OBJECTS = frozenset({"trace", "trace.span", "run_item", "approval"})
#: The keys of a span the SDK exports (``Span.export()``), and those read from every span:
#: a null ``parent_id`` is a root span, a null ``error`` a span that did not fail.
_SPAN_KEYS = frozenset({"object", "id", "trace_id", "parent_id", "started_at", "ended_at",
                        "span_data", "error"})
_SPAN_NEEDS = ("parent_id", "error")
#: The keys of the span data the reader reads, per span kind, with the other keys the SDK
#: writes there. A function span's ``output`` is null while its call has not run: without
#: the key, a call that ran would read as one that waited for approval.
_FUNCTION_NEEDS = ("input", "output")
_FUNCTION_KEYS = frozenset({"type", "name", "input", "output", "mcp_data"})
_HANDOFF_NEEDS = ("from_agent", "to_agent")
_AGENT_KEYS = frozenset({"type", "name", "handoffs", "tools", "output_type"})
#: The keys the recorder writes (roadcheck.integrations.openai_agents): any other is a
#: misspelling, refused, since a lost ``checkpoint_id`` or ``type`` changes the road.
_RUN_ITEM_KEYS = frozenset({"object", "trace_id", "type", "agent", "call_id", "at", "name",
                            "arguments", "output"})
_RUN_ITEM_NEEDS = ("type", "agent", "call_id")
_APPROVAL_KEYS = frozenset({"object", "trace_id", "tool_name", "call_id", "agent", "decision",
                            "at", "confirmed_by", "checkpoint_id"})
#: The span kinds the SDK exports (``span_data.type``); task and turn spans export as custom.
_SPAN_TYPES = frozenset({"agent", "function", "generation", "response", "handoff", "custom",
                         "guardrail", "transcription", "speech", "speech_group", "mcp_tools"})


def _looks_like_a_call(data: dict[str, Any]) -> bool:
    """True when span data carries what a function or handoff span records."""
    return ("name" in data and ("input" in data or "output" in data or "mcp_data" in data)) \
        or "from_agent" in data or "to_agent" in data


class _Bad(Exception):
    """A malformed record; the reader turns it into a TraceError naming it."""


#: A recorder record: one JSON object per line whose first key names the record kind.
_RECORD = re.compile(rb'^[ \t]*\{\s*"object"\s*:\s*"(?:trace|trace\.span|run_item|approval)"',
                     re.MULTILINE)


def detect_openai_agents(data: bytes) -> bool:
    """True when a line near the start (any line, in any order) is a recorder record."""
    return _RECORD.search(data, 0, 65536) is not None


def _short(raw: Any) -> str:
    """A value for a message: its repr, cut short."""
    text = repr(raw)
    return text if len(text) <= 60 else text[:57] + "..."


def _text_or_none(rec: dict[str, Any], key: str) -> str | None:
    """An optional string field; any other type is malformed."""
    value = rec.get(key)
    if value is not None and not isinstance(value, str):
        raise _Bad(f"'{key}' must be a string, got {type(value).__name__}")
    return value


def _when(raw: Any, what: str) -> datetime:
    if not isinstance(raw, str):
        raise _Bad(f"'{what}' must be an ISO timestamp string")
    try:
        dt = datetime.fromisoformat(raw)
    except ValueError:
        raise _Bad(f"'{what}' {raw!r} is not an ISO timestamp") from None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def _decoded(raw: Any, field: str) -> Any:
    """A span's output: JSON text decoded (refused nested past the limit), else as it is."""
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as exc:
            if depth_refused(raw.encode("utf-8", "surrogatepass"), exc) is not None:
                raise _Bad(f"{field!r} holds JSON {too_deep()}") from None
            return raw
        if raw.count("[") + raw.count("{") > MAX_DEPTH and not fits(value):
            raise _Bad(f"{field!r} holds JSON {too_deep()}")
        return value
    return {} if raw is None else raw


def _arguments(raw: Any, field: str) -> Any:
    """A call's arguments: JSON text decoded, refusing a key given twice in it."""
    try:
        return decode_embedded(raw, field)
    except EmbeddedDuplicate as exc:
        raise _Bad(str(exc)) from None


class _Trace:
    def __init__(self) -> None:
        self.spans: list[tuple[int, dict[str, Any]]] = []
        self.items: list[tuple[int, dict[str, Any]]] = []
        self.decisions: list[tuple[int, dict[str, Any]]] = []
        self.workflow: str | None = None

    def add(self, kind: str, line: int, rec: dict[str, Any]) -> None:
        """File one record of this trace under its kind."""
        if kind == "trace":
            workflow = rec.get("workflow_name")
            if workflow is not None and not isinstance(workflow, str):
                raise TraceError("'workflow_name' must be a string", line=line)
            self.workflow = workflow
        elif kind == "trace.span":
            self.spans.append((line, rec))
        elif kind == "run_item":
            self.items.append((line, rec))
        else:
            self.decisions.append((line, rec))


def _lines(data: bytes) -> list[tuple[int, bytes, Any]]:
    """(line number, line, decoded value) of every line holding more than blanks."""
    lines: list[tuple[int, bytes, Any]] = []
    for line, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            lines.append((line, raw, orjson.loads(raw)))
        except orjson.JSONDecodeError as exc:
            if depth_refused(raw, exc) is not None:
                raise TraceError(too_deep(), line=line) from None
            raise TraceError(f"unparseable JSON: {exc}", line=line) from None
    if not no_duplicate_keys(data, [rec for _, _, rec in lines]):
        for line, raw, rec in lines:
            check_line(raw, rec, line, None)
    return lines


def _kind_and_trace(line: int, rec: Any) -> tuple[str, str]:
    """(record kind, trace id) of one record."""
    if not isinstance(rec, dict):
        raise TraceError(f"expected a JSON object, got {type(rec).__name__}", line=line)
    kind = rec.get("object")
    if not isinstance(kind, str) or kind not in _OBJECTS:
        raise TraceError(f"unknown record object {_short(kind)}", line=line)
    tid = rec.get("id") if kind == "trace" else rec.get("trace_id")
    if not isinstance(tid, str) or not tid:
        raise TraceError(f"{kind} record has no trace id", line=line)
    return kind, tid


def _records(data: bytes) -> dict[str, _Trace]:
    traces: dict[str, _Trace] = {}
    for line, _raw, rec in _lines(data):
        kind, tid = _kind_and_trace(line, rec)
        traces.setdefault(tid, _Trace()).add(kind, line, rec)
    if not traces:
        raise TraceError("no records")
    return traces


def _span_label(line: int, rec: dict[str, Any]) -> str:
    data = rec.get("span_data")
    kind = data.get("type") if isinstance(data, dict) else None
    name = data.get("name") if isinstance(data, dict) else None
    label = f"line {line}: {kind or 'span'} span"
    if name:
        label += f" {name!r}"
    return label + f" ({rec.get('id')})"


#: A span id -> (its line, its record).
_Spans = dict[str, tuple[int, dict[str, Any]]]
#: A tool name -> the decisions on it, (time, record), in time order.
_Decisions = dict[str, list[tuple[datetime, dict[str, Any]]]]
#: An event before it is numbered: (time, line, kind, agent, fields, line).
_Staged = tuple[datetime, int, str, str | None, dict[str, Any], int]


def _span_id(line: int, rec: dict[str, Any]) -> str:
    """The id of a span record, checked to name a span kind (and not hide a call)."""
    sid = rec.get("id")
    data = rec.get("span_data")
    if not isinstance(sid, str) or not isinstance(data, dict):
        raise _Bad(f"line {line}: a span needs an 'id' and a 'span_data' object")
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        raise _Bad(f"{_span_label(line, rec)}: 'span_data.type' must be a span kind, got "
                   f"{_short(kind)}")
    if kind not in _SPAN_TYPES and _looks_like_a_call(data):
        # skipping it would drop a call (a misspelt 'function' or 'handoff')
        raise _Bad(f"{_span_label(line, rec)}: records a call under an unknown span type "
                   f"{_short(kind)} (known: {', '.join(sorted(_SPAN_TYPES))})")
    problem = missing_key(rec, _SPAN_NEEDS, _SPAN_KEYS)
    if problem is None and kind == "agent":
        # the agent span names the agent of every call it encloses
        problem = missing_key(data, ("name",), _AGENT_KEYS)
        if problem is None and not isinstance(data["name"], str):
            problem = f"'name' must be a string, got {type(data['name']).__name__}"
    if problem is not None:
        raise _Bad(f"{_span_label(line, rec)}: {problem}")
    return sid


def _agent_of(spans: _Spans, rec: dict[str, Any]) -> str | None:
    """The name of the agent whose ``agent`` span encloses the span ``rec``."""
    parent = rec.get("parent_id")
    for _ in range(len(spans)):
        if not isinstance(parent, str) or parent not in spans:
            return None
        prec = spans[parent][1]
        if prec["span_data"].get("type") == "agent":
            name = prec["span_data"].get("name")
            return name if isinstance(name, str) else None
        parent = prec.get("parent_id")
    return None


def _check_items(items: list[tuple[int, dict[str, Any]]]) -> None:
    for line, item in items:
        try:
            problem = unknown_key(item, _RUN_ITEM_KEYS) or missing_key(item, _RUN_ITEM_NEEDS)
            if problem is not None:
                raise _Bad(problem)
            for key in ("type", "name", "agent", "call_id"):
                _text_or_none(item, key)
        except _Bad as exc:
            raise _Bad(f"line {line}: run_item record {exc}") from None


def _decision(dec: dict[str, Any]) -> tuple[datetime, str, str]:
    """(time, tool name, decision) of an approval record, checked."""
    problem = unknown_key(dec, _APPROVAL_KEYS)
    if problem is not None:
        raise _Bad(problem)
    at = _when(dec.get("at"), "at")
    tool = dec.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise _Bad("has no 'tool_name'")
    decision = dec.get("decision")
    if decision not in ("approved", "rejected"):
        raise _Bad(f"'decision' must be 'approved' or 'rejected', got {_short(decision)}")
    for key in ("checkpoint_id", "confirmed_by", "call_id", "agent"):
        _text_or_none(dec, key)
    return at, tool, decision


def _approval(at: datetime, line: int, dec: dict[str, Any], tool: str) -> _Staged:
    """The checkpoint an approved decision is."""
    fields: dict[str, Any] = {"checkpoint_id": dec.get("checkpoint_id") or f"approve_{tool}",
                              "tool_name": tool, "decision": "approved"}
    for key in ("confirmed_by", "call_id"):
        if dec.get(key) is not None:
            fields[key] = dec[key]
    return (at, line, "checkpoint", dec.get("agent"), fields, line)


def _decisions(trace: _Trace) -> tuple[_Decisions, list[_Staged]]:
    """The decisions per tool name, and the checkpoints of the approved ones."""
    decisions: _Decisions = {}
    staged: list[_Staged] = []
    for line, dec in trace.decisions:
        try:
            at, tool, decision = _decision(dec)
        except _Bad as exc:
            raise _Bad(f"line {line}: approval record {exc}") from None
        decisions.setdefault(tool, []).append((at, dec))
        if decision == "approved":
            staged.append(_approval(at, line, dec, tool))
    for items in decisions.values():
        items.sort(key=lambda d: d[0])
    return decisions, staged


def _handoff_args(items: list[tuple[int, dict[str, Any]]]) -> list[tuple[str, Any]]:
    """(agent, arguments) of each ``handoff_call_item``, in order, each call once."""
    handoff_args: list[tuple[str, Any]] = []
    seen: set[tuple[Any, Any]] = set()
    for line, item in items:
        item_key = (item.get("type"), item.get("call_id"))
        if item.get("type") == "handoff_call_item" and item_key not in seen:
            seen.add(item_key)
            try:
                args = _arguments(item.get("arguments"), "arguments")
            except _Bad as exc:
                raise _Bad(f"line {line}: run_item record {exc}") from None
            handoff_args.append((str(item.get("agent")), args))
    return handoff_args


def _action_fields(name: str, args: Any, output: Any, error: Any,
                   rec: dict[str, Any]) -> dict[str, Any]:
    """The fields of the action a function span records."""
    fields: dict[str, Any] = {"action_type": name, "args": args}
    if output is not None:
        fields["result"] = _decoded(output, "output") if isinstance(output, str) else output
    if error is not None:
        fields["error"] = error.get("message", error) if isinstance(error, dict) else error
    fields["span_id"] = rec.get("id")
    return fields


class _Functions:
    """The function spans of a trace, matched in order to the decisions on their tool."""

    def __init__(self, spans: _Spans, decisions: _Decisions, requested: set[str]) -> None:
        self.spans, self.decisions, self.requested = spans, decisions, requested
        self.used: dict[str, int] = {}  # decisions consumed, per tool name

    def waiting(self, name: str, start: datetime, ran: bool) -> bool:
        """True for the span of a call waiting for approval: it did not run there."""
        made = self.decisions.get(name, [])
        later = [d for d in made if d[0] > start]
        return not ran and bool(later or name in self.requested) and (
            len(made) - len(later) <= self.used.get(name, 0))

    def rejected(self, name: str, start: datetime, output: Any) -> bool:
        """Consume the decision made before the span; True when it rejected a call that
        has no output (the SDK answered the model, the tool never ran)."""
        earlier = [d for d in self.decisions.get(name, []) if d[0] <= start]
        n = self.used.get(name, 0)
        if n < len(earlier):
            self.used[name] = n + 1
            return earlier[n][1].get("decision") == "rejected" and output is None
        return False

    def action(self, line: int, rec: dict[str, Any], start: datetime) -> _Staged | None:
        data = rec["span_data"]
        name = data.get("name")
        if not isinstance(name, str) or not name:
            misspelt = "name" not in data and missing_key(data, ("name",), _FUNCTION_KEYS)
            raise _Bad(misspelt if misspelt and misspelt.startswith("unknown") else
                       "has no tool name")
        problem = missing_key(data, _FUNCTION_NEEDS, _FUNCTION_KEYS)
        if problem is not None:
            raise _Bad(problem)
        # decoded first: a repeated key is refused even in a call that did not run
        args = _arguments(data.get("input"), "input")
        output, error = data.get("output"), rec.get("error")
        if self.waiting(name, start, output is not None or error is not None):
            return None
        if self.rejected(name, start, output):
            return None
        # A span with output ran, whatever decision was recorded before it (a
        # decision changed on the run state directly is not in the recording).
        fields = _action_fields(name, args, output, error, rec)
        return (start, line, "action", _agent_of(self.spans, rec), fields, line)


def _handoff(line: int, rec: dict[str, Any], start: datetime,
             handoff_args: list[tuple[str, Any]]) -> _Staged:
    """The handoff a handoff span records, with the first unused arguments of its agent."""
    data = rec["span_data"]
    src, dst = data.get("from_agent"), data.get("to_agent")
    misspelt = missing_key(data, _HANDOFF_NEEDS, ("type",))
    if misspelt is not None and misspelt.startswith("unknown"):
        raise _Bad(misspelt)
    if not isinstance(src, str) or not isinstance(dst, str):
        raise _Bad("needs 'from_agent' and 'to_agent' strings")
    payload: Any = {}
    for i, (agent, _) in enumerate(handoff_args):
        if agent == src:
            payload = handoff_args.pop(i)[1]
            break
    if not isinstance(payload, dict):
        payload = {"arguments": payload}
    return (start, line, "handoff", src, {"from_agent": src, "to_agent": dst,
                                          "payload": payload, "span_id": rec.get("id")}, line)


def _span_event(line: int, rec: dict[str, Any], functions: _Functions,
                handoff_args: list[tuple[str, Any]]) -> _Staged | None:
    """The event a function or handoff span is; None for any other span."""
    kind = rec["span_data"].get("type")
    if kind not in ("function", "handoff"):
        return None
    try:
        start = _when(rec.get("started_at"), "started_at")
        if kind == "function":
            return functions.action(line, rec, start)
        return _handoff(line, rec, start, handoff_args)
    except _Bad as exc:
        raise _Bad(f"{_span_label(line, rec)}: {exc}") from None


def trace_events(trace: _Trace) -> list[Event]:
    """Map one trace's records to events. Raises :class:`_Bad` naming the record."""
    spans: _Spans = {}
    for line, rec in trace.spans:
        spans[_span_id(line, rec)] = (line, rec)
    _check_items(trace.items)
    # Approval requests and decisions, per tool name.
    requested = {str(r.get("name")) for _, r in trace.items
                 if r.get("type") == "tool_approval_item"}
    decisions, staged = _decisions(trace)
    handoff_args = _handoff_args(trace.items)
    functions = _Functions(spans, decisions, requested)
    for line, rec in trace.spans:
        event = _span_event(line, rec, functions, handoff_args)
        if event is not None:
            staged.append(event)
    staged.sort(key=lambda s: (s[0], s[1]))
    events = [Event.make(seq, kind, agent, line=line, ts=at.isoformat(), **fields)
              for seq, (at, _, kind, agent, fields, line) in enumerate(staged, 1)]
    errors = [r for _, r in trace.spans if r.get("parent_id") is None and r.get("error")]
    workflow: dict[str, Any] = {} if trace.workflow is None else {"workflow": trace.workflow}
    events.append(Event.make(len(events) + 1, "final", task_success=not errors, **workflow))
    return events


def read_openai_agents(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per trace id of an Agents SDK recording."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _traces, partial(_trajectory, path))


def _traces(path: str, data: bytes) -> Iterator[tuple[str, _Trace]]:
    return iter(_records(data).items())


def _trajectory(path: str, run: tuple[str, _Trace]) -> Trajectory:
    from roadcheck.ingest import BadRun

    tid, trace = run
    name = f"{path}#{tid}"
    try:
        events = trace_events(trace)
    except _Bad as exc:
        raise BadRun(name, f"trace {tid}: {exc}") from None
    return Trajectory(name, tuple(events), path, "openai-agents", {"trace_id": tid})
