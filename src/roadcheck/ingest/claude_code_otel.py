"""The Claude Code OpenTelemetry events reader: OTLP/JSON log exports into the event model.

With ``CLAUDE_CODE_ENABLE_TELEMETRY=1`` and ``OTEL_LOGS_EXPORTER=otlp`` Claude Code
exports its events as OpenTelemetry log records (``claude_code.user_prompt``,
``claude_code.tool_decision``, ``claude_code.tool_result``, ``claude_code.api_request``
...). An OTLP/JSON logs export request is ``{"resourceLogs": [{"resource":
{"attributes"}, "scopeLogs": [{"scope", "logRecords": [...]}]}]}``; a file holds one
request per line (what the OpenTelemetry Collector's file exporter writes) or one
document, indented or not. See docs/frameworks/claude-code-otel.md.

- one trajectory per ``session.id`` (id ``<path>#<session id>``), its events in
  ``event.sequence`` order, then by time, then as written;
- a ``user_prompt`` is a ``message`` (role ``user``; ``text`` = ``prompt`` when
  ``OTEL_LOG_USER_PROMPTS=1`` logged it);
- a ``tool_result`` is an ``action``: ``action_type`` = ``tool_name``, ``args`` = the
  decoded ``tool_parameters``, ``command`` = the Bash command they hold, ``call_id`` =
  ``tool_use_id``, ``error`` when ``success`` is false;
- a ``tool_decision`` that accepts is a ``checkpoint`` ``claude-code-approval`` just
  before the action it approves, ``confirmed_by`` = who decided (``user`` for
  ``user_temporary`` and ``user_permanent``, ``config``, ``hook``); one that rejects is
  no event, and a result for the call it rejected is the file's error;
- the other events record no step of the run and are not read.

Structure the reader does not understand is the file's ERROR, one line naming the file,
the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import (
    EmbeddedDuplicate,
    check_document,
    decode_embedded,
    lines_of,
    object_line,
)
from roadcheck.ingest._where import ANY, object_lines
from roadcheck.ingest.otel import _iso
from roadcheck.shellcmd import command_text

__all__ = ["CHECKPOINT_ID", "detect_claude_code_otel", "read_claude_code_otel"]

#: The checkpoint an accepted tool decision becomes.
CHECKPOINT_ID = "claude-code-approval"
MAIN_AGENT = "claude"
_PREFIX = "claude_code."
#: The instrumentation scope Claude Code's events are written under.
_SCOPE = "com.anthropic.claude_code.events"
#: Who an accepting ``source`` says decided (``confirmed_by``).
_CONFIRMERS = {"user_temporary": "user", "user_permanent": "user", "config": "config",
               "hook": "hook"}
#: The sources a rejection comes from.
_REJECTERS = frozenset({"user_reject", "user_abort", "config", "hook"})
_MAX_NANOS = 253_402_300_799_999_999_999  # the end of year 9999
#: The top-level keys of OTLP/JSON export requests: logs, metrics, spans.
_SIGNALS = frozenset({b"resourceLogs", b"resourceMetrics", b"resourceSpans"})


class _Bad(Exception):
    """Malformed structure: the message names the field; the reader adds the line."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        #: Where in its document the record it is about sits, for an indented document.
        self.keys: tuple[str | int, ...] = ()


# -- detection ---------------------------------------------------------------------------------

def detect_claude_code_otel(data: bytes) -> float:
    """Certain for an OTLP/JSON logs export (its first object's key ``resourceLogs``) that
    holds a Claude Code event (a ``"claude_code.`` string, or Claude Code's scope name) in
    its first 64 KB: no other format starts so, and another program's logs name no
    ``claude_code.*`` event."""
    from roadcheck.ingest import CERTAIN
    from roadcheck.ingest._scan import _keys_at

    head = data[:65536]
    if head.lstrip()[:1] != b"{" or (b'"claude_code.' not in head
                                     and b'"com.anthropic.claude_code.events"' not in head):
        return 0.0
    if b'"resourceLogs"' not in head:
        return 0.0
    key = _keys_at(data, 1, _SIGNALS)
    if key == b"resourceLogs":
        return CERTAIN
    if key != b"resourceMetrics":
        return 0.0
    # a file exporter writing metrics and logs to one file: a logs request on a later line
    for raw in head.split(b"\n")[1:50]:
        if b'"resourceLogs"' in raw and _keys_at(raw, 1, _SIGNALS) == b"resourceLogs":
            return CERTAIN
    return 0.0


# -- OTLP values -------------------------------------------------------------------------------

def _any_value(v: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as a plain value; ``where`` names it in an error."""
    if type(v) is dict and len(v) == 1:  # the common case: one string
        text = v.get("stringValue")
        if type(text) is str:
            return text
    return _any_other(v, where)


def _any_other(v: Any, where: str) -> Any:
    """:func:`_any_value` for every value but a plain string."""
    if not isinstance(v, dict):
        raise _Bad(f"{where} must be an AnyValue object, got {type(v).__name__}")
    if len(v) > 1:
        raise _Bad(f"{where} holds {len(v)} values ({', '.join(sorted(v))}), an AnyValue holds one")
    if not v:
        return None
    ((kind, raw),) = v.items()
    if kind == "stringValue" or kind == "bytesValue":
        if not isinstance(raw, str):
            raise _Bad(f"{where}.{kind} must be a string, got {type(raw).__name__}")
        return raw
    if kind == "boolValue":
        if not isinstance(raw, bool):
            raise _Bad(f"{where}.boolValue must be true or false, got {type(raw).__name__}")
        return raw
    if kind == "intValue":
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise _Bad(f"{where}.intValue must be an integer, got {type(raw).__name__}")
        try:
            return int(raw)
        except ValueError:
            raise _Bad(f"{where}.intValue {raw!r} is not an integer") from None
    if kind == "doubleValue":
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise _Bad(f"{where}.doubleValue must be a number, got {type(raw).__name__}")
        return raw
    if kind == "arrayValue":
        values = _obj(raw, f"{where}.arrayValue").get("values")
        return [_any_value(x, f"{where}.arrayValue.values[{i}]")
                for i, x in enumerate(_items(values, f"{where}.arrayValue.values"))]
    if kind == "kvlistValue":
        return _attributes(_obj(raw, f"{where}.kvlistValue").get("values"),
                           f"{where}.kvlistValue.values")
    raise _Bad(f"{where} has an unknown value kind {kind!r}")


def _obj(raw: Any, where: str) -> dict[str, Any]:
    """An object that may be absent (null is absent); anything else is malformed."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _Bad(f"{where} must be an object, got {type(raw).__name__}")
    return raw


def _items(raw: Any, where: str) -> list[Any]:
    """A list that may be absent (null is absent); anything else is malformed."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _Bad(f"{where} must be a list, got {type(raw).__name__}")
    return raw


def _attributes(raw: Any, where: str) -> dict[str, Any]:
    """An OTLP key/value list as a dict; a key given twice is refused."""
    out: dict[str, Any] = {}
    for i, item in enumerate(_items(raw, where)):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise _Bad(f"{where}[{i}] has no 'key' string")
        key = item["key"]
        if key in out:
            raise _Bad(f"{where} gives the attribute {key!r} twice: readers disagree on which "
                       "value counts, so the record is refused")
        out[key] = _any_value(item.get("value", {}), f"{where}[{i}] ({key}).value")
    return out


def _nanos(raw: Any, where: str) -> int | None:
    """Nanoseconds since the epoch (a string or an integer); 0 or absent is None."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise _Bad(f"{where} must be nanoseconds since the epoch, got {type(raw).__name__}")
    try:
        nanos = int(raw)
    except ValueError:
        raise _Bad(f"{where} {raw!r} is not nanoseconds since the epoch") from None
    if not 0 <= nanos <= _MAX_NANOS:
        raise _Bad(f"{where} {nanos} is out of range (1970 to 9999)")
    return nanos or None


# -- records -----------------------------------------------------------------------------------

class _Record:
    """One Claude Code event as read: its name (without ``claude_code.``), where it was."""

    __slots__ = ("attrs", "keys", "line", "name", "nanos", "order", "sequence", "session", "ts",
                 "where")

    def __init__(self, name: str, attrs: dict[str, Any], line: int | None, where: str,
                 order: int, nanos: int | None, keys: tuple[str | int, ...] = ()) -> None:
        self.name, self.attrs, self.line, self.where, self.order = name, attrs, line, where, order
        self.nanos, self.keys = nanos, keys
        session = attrs.get("session.id")
        if not isinstance(session, str) or not session:
            raise _Bad(f"{where}: a claude_code.{name} event without a 'session.id' string "
                       "attribute: its session cannot be told")
        self.session = session
        seq = attrs.get("event.sequence")
        if isinstance(seq, str) and seq.strip().isdigit():
            seq = int(seq)
        if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or seq < 0):
            raise _Bad(f"{where}: 'event.sequence' must be a whole number, got {seq!r}")
        self.sequence: int | None = seq
        ts = attrs.get("event.timestamp")
        if ts is not None and not isinstance(ts, str):
            raise _Bad(f"{where}: 'event.timestamp' must be a string, got {type(ts).__name__}")
        self.ts: str | None = ts or (_iso(nanos) if nanos is not None else None)

    def text(self, key: str) -> str | None:
        value = self.attrs.get(key)
        if value is not None and not isinstance(value, str):
            raise _Bad(f"{self.where}: {key!r} must be a string, got {type(value).__name__}")
        return value or None

    def flag(self, key: str) -> bool | None:
        value = self.attrs.get(key)
        if value is None:
            return None
        if value is True or value is False:
            return bool(value)
        if value in ("true", "false"):
            return bool(value == "true")
        raise _Bad(f"{self.where}: {key!r} must be true or false, got {value!r}")


def _event_name(rec: dict[str, Any], attrs: dict[str, Any], where: str,
                ours: bool = False) -> str | None:
    """The Claude Code event a log record is (``tool_result``...), or None for another
    program's record. The body and ``event.name`` must agree when both name one. A record
    of Claude Code's own scope (``ours``) is its event: it must name one."""
    body = _any_value(rec["body"], f"{where}.body") if rec.get("body") is not None else None
    named = attrs.get("event.name")
    if named is not None and not isinstance(named, str):
        raise _Bad(f"{where}: 'event.name' must be a string, got {type(named).__name__}")
    from_body = body[len(_PREFIX):] if isinstance(body, str) and body.startswith(_PREFIX) else None
    from_attr = None
    if named:
        from_attr = named[len(_PREFIX):] if named.startswith(_PREFIX) else named
    if from_body is None:
        if ours:
            if not from_attr:
                raise _Bad(f"{where}: a record of Claude Code's scope {_SCOPE!r} names no "
                           "event: no claude_code.* body and no 'event.name'")
            return from_attr
        if named is None or not named.startswith(_PREFIX):
            # no claude_code.* name: another program's record (or an event.name alone,
            # which Claude Code never writes without its body)
            return None
        return from_attr
    if from_attr is not None and from_attr != from_body:
        raise _Bad(f"{where}: the body names claude_code.{from_body} but 'event.name' is "
                   f"{named!r}")
    return from_body or None


def _add_request(doc: Any, line: int | None, base: str, out: list[_Record]) -> None:
    """Every Claude Code event of one export request, appended to ``out``."""
    if not isinstance(doc, dict):
        raise _Bad(f"{base or 'the document'} must be an export request object, got "
                   f"{type(doc).__name__}")
    if "resourceLogs" not in doc and ("resourceMetrics" in doc or "resourceSpans" in doc):
        return  # another signal's request in the same file (Claude Code's metrics, spans)
    if "resourceLogs" not in doc:
        raise _Bad(f"{base or 'the document'} has no 'resourceLogs': not an OTLP logs export "
                   "request")
    for i, rl in enumerate(_items(doc["resourceLogs"], f"{base}resourceLogs")):
        where_r = f"{base}resourceLogs[{i}]"
        rl = _obj(rl, where_r)
        resource = _attributes(_obj(rl.get("resource"), f"{where_r}.resource").get("attributes"),
                               f"{where_r}.resource.attributes")
        for j, sl in enumerate(_items(rl.get("scopeLogs"), f"{where_r}.scopeLogs")):
            where_s = f"{where_r}.scopeLogs[{j}]"
            sl = _obj(sl, where_s)
            scope = _obj(sl.get("scope"), f"{where_s}.scope").get("name")
            ours = scope == _SCOPE  # every record of Claude Code's own scope is its event
            for k, rec in enumerate(_items(sl.get("logRecords"), f"{where_s}.logRecords")):
                keys = ("resourceLogs", i, "scopeLogs", j, "logRecords", k)
                try:
                    _add_record(rec, resource, line, keys, out, ours)
                except _Bad as exc:
                    exc.keys = exc.keys or keys
                    raise


def _add_record(rec: Any, resource: dict[str, Any], line: int | None,
                keys: tuple[str | int, ...], out: list[_Record], ours: bool = False) -> None:
    where = "resourceLogs[{}].scopeLogs[{}].logRecords[{}]".format(*keys[1::2])
    if not isinstance(rec, dict):
        raise _Bad(f"{where} must be a log record object, got {type(rec).__name__}")
    own = _attributes(rec.get("attributes"), f"{where}.attributes")
    name = _event_name(rec, own, where, ours)
    if name is None:
        return
    attrs = {**resource, **own}
    nanos = (_nanos(rec.get("timeUnixNano"), f"{where}.timeUnixNano")
             or _nanos(rec.get("observedTimeUnixNano"), f"{where}.observedTimeUnixNano"))
    out.append(_Record(name, attrs, line, where, len(out), nanos, keys))


def _requests(data: bytes) -> list[_Record]:
    """The Claude Code events of a file: one export request per line, or one document."""
    records: list[_Record] = []
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
        whole = False
    else:
        whole = True
    if whole:
        check_document(data, doc)
        line = 1 if data.count(b"\n", 0, len(data.rstrip())) == 0 else None
        try:
            _add_request(doc, line, "", records)
        except _Bad as exc:
            raise TraceError(str(exc), line=line or _record_lines(data).get(exc.keys)) from None
        if line is None:
            lines = _record_lines(data)
            for rec in records:
                rec.line = lines.get(rec.keys)
        return records
    for n, raw in lines_of(data):
        try:
            obj = object_line(raw, "an export request")
            _add_request(obj, n, "", records)
        except _Bad as exc:
            raise TraceError(str(exc), line=n) from None
        except ValueError as exc:
            raise TraceError(str(exc), line=n) from None
    return records


#: Where a log record sits in an OTLP logs export, for :func:`object_lines`.
_RECORD_PLACE = ("resourceLogs", ANY, "scopeLogs", ANY, "logRecords", ANY)


def _record_lines(data: bytes) -> dict[tuple[str | int, ...], int]:
    """The line where each log record opens in the indented JSON document ``data``, by its
    keys (``("resourceLogs", 0, "scopeLogs", 0, "logRecords", 3)``)."""
    return object_lines(data, _RECORD_PLACE)


# -- trajectories ------------------------------------------------------------------------------

def _params(rec: _Record) -> Any:
    """The decoded ``tool_parameters`` of a tool event (``{}`` when not logged)."""
    raw = rec.attrs.get("tool_parameters")
    if raw is None:
        return {}
    if not isinstance(raw, str):
        raise _Bad(f"{rec.where}: 'tool_parameters' must be a JSON string, got "
                   f"{type(raw).__name__}")
    try:
        value = decode_embedded(raw, "tool_parameters")
    except EmbeddedDuplicate as exc:
        raise _Bad(f"{rec.where}: {exc}") from None
    if not isinstance(value, dict):
        raise _Bad(f"{rec.where}: 'tool_parameters' must hold a JSON object, got "
                   f"{type(value).__name__}")
    return value


def _tool_input(rec: _Record) -> dict[str, Any] | None:
    raw = rec.attrs.get("tool_input")
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise _Bad(f"{rec.where}: 'tool_input' must be a JSON string, got {type(raw).__name__}")
    try:
        value = decode_embedded(raw, "tool_input")
    except EmbeddedDuplicate as exc:
        raise _Bad(f"{rec.where}: {exc}") from None
    return value if isinstance(value, dict) else None


def _command(params: dict[str, Any], tool_input: dict[str, Any] | None) -> str | None:
    """The command line of a Bash call: ``full_command``, else the logged input's
    ``command``, else ``bash_command``."""
    for raw in (params.get("full_command"),
                tool_input.get("command") if tool_input is not None else None,
                params.get("bash_command")):
        text = command_text(raw)
        if text:
            return text
    return None


def _source(rec: _Record, *keys: str) -> str | None:
    for key in keys:
        value = rec.text(key)
        if value is not None:
            return value
    return None


def _action(rec: _Record) -> dict[str, Any]:
    name = rec.text("tool_name")
    if name is None:
        raise _Bad(f"{rec.where}: a tool_result without a 'tool_name' string")
    params = _params(rec)
    tool_input = _tool_input(rec)
    fields: dict[str, Any] = {"action_type": name, "args": params}
    call_id = rec.text("tool_use_id")
    if call_id is not None:
        fields["call_id"] = call_id
    command = _command(params, tool_input) if name == "Bash" else None
    if command is not None:
        fields["command"] = command
    success = rec.flag("success")
    if success is False:
        fields["error"] = (rec.text("error") or rec.text("error_type")
                           or "the tool reported success: false")
    duration = rec.attrs.get("duration_ms")
    if isinstance(duration, str) and duration.strip().isdigit():
        duration = int(duration)
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        fields["duration_ms"] = duration
    source = _source(rec, "decision_source", "source")
    if source is not None:
        fields["decision_source"] = source
    decision = _source(rec, "decision_type", "decision")
    if decision is not None and decision != "accept":
        raise _Bad(f"{rec.where}: a tool_result whose decision is {decision!r}: only an "
                   "accepted call runs and has a result")
    return fields


def _checkpoint(rec: _Record, source: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"checkpoint_id": CHECKPOINT_ID, "confirmed_by": _CONFIRMERS[source],
                              "decision": "accept", "source": source}
    tool = rec.text("tool_name")
    if tool is not None:
        fields["tool_name"] = tool
    call_id = rec.text("tool_use_id")
    if call_id is not None:
        fields["call_id"] = call_id
    return fields


def _ordered(records: list[_Record]) -> list[_Record]:
    """A session's events in ``event.sequence`` order (all of them carry one), else by
    time; then as written."""
    if all(r.sequence is not None for r in records):
        return sorted(records, key=lambda r: (r.sequence, r.nanos or 0, r.order))
    return sorted(records, key=lambda r: (r.nanos or 0, r.order))


def _where(rec: _Record) -> str:
    return rec.where + (f" (line {rec.line})" if rec.line else "")


def _agent(checkpoint: dict[str, Any]) -> str:
    return "user" if checkpoint["confirmed_by"] == "user" else MAIN_AGENT


class _Session:
    """The events of one session, built from its records in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.pending: list[tuple[_Record, dict[str, Any]]] = []  # accepted, not yet run
        self.rejected: dict[str, _Record] = {}
        self.results: dict[str, _Record] = {}
        self.seen: dict[int, _Record] = {}

    def add(self, kind: str, agent: str | None, rec: _Record, fields: dict[str, Any]) -> None:
        self.events.append(Event.make(len(self.events) + 1, kind, agent, line=rec.line,
                                      ts=rec.ts, **fields))

    def record(self, rec: _Record) -> None:
        if rec.sequence is not None:
            first = self.seen.setdefault(rec.sequence, rec)
            if first is not rec:
                if first.attrs == rec.attrs and first.name == rec.name:
                    return  # the same event exported twice (a retried request)
                raise _Bad(f"{rec.where}: 'event.sequence' {rec.sequence} of session "
                           f"{rec.session!r} is also {_where(first)}")
        if rec.name == "user_prompt":
            self.add("message", "user", rec, {"role": "user", "text": rec.text("prompt") or ""})
        elif rec.name == "tool_decision":
            self.decision(rec)
        elif rec.name == "tool_result":
            self.result(rec)

    def decision(self, rec: _Record) -> None:
        decision, source = rec.text("decision"), rec.text("source")
        if decision == "accept":
            if source not in _CONFIRMERS:
                raise _Bad(f"{rec.where}: an accepted tool_decision whose 'source' is "
                           f"{source!r}, not one of {', '.join(sorted(_CONFIRMERS))}")
            self.pending.append((rec, _checkpoint(rec, source)))
        elif decision == "reject":
            if source is not None and source not in _REJECTERS:
                raise _Bad(f"{rec.where}: a rejected tool_decision whose 'source' is "
                           f"{source!r}, not one of {', '.join(sorted(_REJECTERS))}")
            call_id = rec.text("tool_use_id")
            if call_id is not None:
                self.rejected[call_id] = rec
        else:
            raise _Bad(f"{rec.where}: a tool_decision whose 'decision' is {decision!r}, "
                       "not 'accept' or 'reject'")

    def result(self, rec: _Record) -> None:
        fields = _action(rec)
        call_id = fields.get("call_id")
        if call_id is not None:
            if call_id in self.rejected:
                raise _Bad(f"{rec.where}: a tool_result for call {call_id!r}, which the "
                           f"tool_decision {_where(self.rejected[call_id])} rejected: a "
                           "rejected call never runs")
            first = self.results.setdefault(call_id, rec)
            if first is not rec:
                raise _Bad(f"{rec.where}: call {call_id!r} has a second tool_result (the "
                           f"first is {_where(first)})")
        approval = _approval_for(self.pending, fields)
        if approval is not None:
            decided, checkpoint = approval
            said = fields.get("decision_source")
            if said is not None and said != checkpoint["source"]:
                raise _Bad(f"{rec.where}: the tool_result says the call was decided by "
                           f"{said!r}, its tool_decision {_where(decided)} by "
                           f"{checkpoint['source']!r}")
            self.add("checkpoint", _agent(checkpoint), decided, checkpoint)
        self.add("action", MAIN_AGENT, rec, fields)

    def finish(self) -> list[Event]:
        # accepted calls that recorded no result (still running when the export was made):
        # their approvals come after every action, where they license none
        for decided, checkpoint in self.pending:
            self.add("checkpoint", _agent(checkpoint), decided, checkpoint)
        self.events.append(Event.make(len(self.events) + 1, "final", None, task_success=False))
        return self.events


def _session_events(records: list[_Record]) -> list[Event]:
    """The events of one session (its records in order)."""
    session = _Session()
    for rec in records:
        try:
            session.record(rec)
        except _Bad as exc:
            exc.line = rec.line
            raise
    return session.finish()


def _approval_for(pending: list[tuple[_Record, dict[str, Any]]],
                  fields: dict[str, Any]) -> tuple[_Record, dict[str, Any]] | None:
    """The accepted decision a call answers, taken off ``pending``: the one with its
    ``tool_use_id``; without ids, the earliest for the same tool."""
    call_id = fields.get("call_id")
    for i, (_, checkpoint) in enumerate(pending):
        theirs = checkpoint.get("call_id")
        if call_id is not None and theirs is not None:
            if theirs == call_id:
                return pending.pop(i)
        elif checkpoint.get("tool_name") == fields["action_type"]:
            return pending.pop(i)
    return None


def read_claude_code_otel(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per session of the export, in the order the sessions first appear."""
    from roadcheck.ingest import ReadFailure

    try:
        records = _requests(data)
        if not records:
            raise TraceError("no Claude Code events (log records named claude_code.*) in the "
                             "export", line=None)
    except TraceError as exc:
        exc.path = path
        yield ReadFailure(path, path, exc)
        return
    sessions: dict[str, list[_Record]] = {}
    for rec in records:
        sessions.setdefault(rec.session, []).append(rec)
    built = []
    for session, recs in sessions.items():
        try:
            built.append((session, _session_events(_ordered(recs))))
        except _Bad as exc:  # a call run though rejected...: the file is not read
            yield ReadFailure(path, path, TraceError(str(exc), path=path, line=exc.line))
            return
    for session, events in built:
        yield Trajectory(f"{path}#{session}", tuple(events), path, "claude-code-otel",
                         {"session_id": session})
