"""The Jaeger and Zipkin readers: traces exported as JSON into the shared event model.

Two exports, read with no tracing package installed:

- **Jaeger** (the query API and the UI's download): ``{"data": [trace, ...]}``, or
  one trace object; a trace is ``traceID``, ``spans`` and ``processes``; a span
  ``spanID``, ``operationName``, ``references`` (``CHILD_OF`` names the parent),
  ``startTime`` and ``duration`` in microseconds, ``tags`` (``{"key", "type",
  "value"}``), ``logs`` (``timestamp``, ``fields``) and ``processID``;
- **Zipkin v2**: a list of spans (``traceId``, ``id``, ``parentId``, ``name``,
  ``timestamp`` and ``duration`` in microseconds, ``kind``, ``localEndpoint``,
  ``tags``, a string map, ``annotations``), or a list of such lists (one per trace,
  as ``/api/v2/traces`` answers).

Each span becomes the span the OpenTelemetry reader maps (its tags are the span's
attributes, a Jaeger log or a Zipkin annotation a span event), and the OpenTelemetry
reader's own mapping turns the spans into events (docs/frameworks/otel.md): an
``execute_tool`` span (``gen_ai.operation.name``) is an ``action`` named by
``gen_ai.tool.name``, an ``invoke_agent`` span under another agent's tool call a
``handoff``, ``roadcheck.checkpoint.id`` a ``checkpoint``, OpenInference and
OpenLLMetry spans alike. Every trace id is one trajectory (id
``<path>#<trace id>``). A span is in error when its ``error`` tag says so (or
``otel.status_code`` is ``ERROR``).

Structure the reader does not understand is that trace's ERROR naming the file,
the line and the field; a document that is not an export at all is the file's.
See docs/frameworks/jaeger-zipkin.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest import otel
from roadcheck.ingest._json import EmbeddedDuplicate, decode_embedded
from roadcheck.ingest._where import ANY, object_lines

__all__ = ["detect_jaeger", "detect_zipkin", "read_jaeger", "read_zipkin"]

#: The latest microsecond the readers take (the end of year 9999).
_MAX_MICROS = 253_402_300_799_999_999
_INT = re.compile(r"-?[0-9]{1,19}")
_HEX = frozenset("0123456789abcdefABCDEF")
_JAEGER_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str, "bool": bool, "int64": int, "float64": (int, float), "binary": str}


class _Bad(Exception):
    """A malformed span or trace: the message names the field, ``line`` where it is."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


# -- detection --------------------------------------------------------------------------------

def detect_jaeger(data: bytes) -> float:
    """Certain for ``{"data": [{"traceID", "spans": [{"operationName"...`` (or one such
    trace object); else 0."""
    from roadcheck.ingest import CERTAIN
    from roadcheck.ingest._scan import _keys_at

    if data.lstrip()[:1] != b"{":
        return 0.0
    top = _keys_at(data, 1, frozenset({b"data", b"traceID"}))
    depth = 3 if top == b"data" else 1 if top == b"traceID" else 0
    if not depth or _keys_at(data, depth, frozenset({b"traceID"})) is None:
        return 0.0
    if _keys_at(data, depth, frozenset({b"spans"})) is None:
        return 0.0
    return CERTAIN if _keys_at(data, depth + 2, frozenset({b"operationName"})) else 0.0


_ZIPKIN_MARKS = frozenset({b"localEndpoint", b"remoteEndpoint", b"parentId", b"timestamp"})


def detect_zipkin(data: bytes) -> float:
    """Likely for a list of objects (or of lists of objects) with ``traceId`` and ``id``
    and a Zipkin field (``localEndpoint``, ``parentId``, ``timestamp``...); else 0."""
    from roadcheck.ingest import LIKELY
    from roadcheck.ingest._scan import _keys_at

    head = data.lstrip()[:1]
    if head != b"[":
        return 0.0
    rest = data.lstrip()[1:].lstrip()[:1]
    depth = 3 if rest == b"[" else 2
    for key in (b"traceId", b"id"):
        if _keys_at(data, depth, frozenset({key})) is None:
            return 0.0
    return LIKELY if _keys_at(data, depth, _ZIPKIN_MARKS) is not None else 0.0


# -- values -----------------------------------------------------------------------------------

def _missing(what: str) -> str:
    """``span [1]: missing required key 'traceId'`` for the field ``span [1]: 'traceId'``."""
    head, _, field = what.rpartition(": ")
    return f"{head}: missing required key {field}" if head else f"missing required key {field}"


def _hex(raw: Any, most: int, what: str, line: int | None) -> str:
    """An id: 1 to ``most`` hex digits, lower-cased."""
    if not isinstance(raw, str):
        raise _Bad(f"{what} must be a hex string, got {type(raw).__name__}"
                   if raw is not None else _missing(what), line)
    if not raw or len(raw) > most or not set(raw) <= _HEX:
        raise _Bad(f"{what} {raw[:40]!r} is not 1 to {most} hex digits", line)
    return raw.lower()


def _micros(raw: Any, what: str, line: int | None, required: bool = True) -> int | None:
    """Microseconds since the epoch (or a duration), in range, as nanoseconds."""
    if raw is None and not required:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise _Bad(f"{what} must be an integer of microseconds, got {type(raw).__name__}"
                   if raw is not None else _missing(what), line)
    if not 0 <= raw <= _MAX_MICROS:
        raise _Bad(f"{what} {raw} is out of range (1970 to 9999)", line)
    return raw * 1000


def _list(raw: Any, what: str, line: int | None) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _Bad(f"{what} must be a list, got {type(raw).__name__}", line)
    return raw


def _jaeger_tags(raw: Any, what: str, line: int | None) -> dict[str, Any]:
    """Jaeger ``[{"key", "type", "value"}]`` as attributes; the value must have its type."""
    attrs: dict[str, Any] = {}
    for i, tag in enumerate(_list(raw, what, line)):
        where = f"{what}[{i}]"
        if not isinstance(tag, dict) or not isinstance(tag.get("key"), str):
            raise _Bad(f"{where} must be an object with a string 'key'", line)
        kind = tag.get("type", "string")
        want = _JAEGER_TYPES.get(kind) if isinstance(kind, str) else None
        if want is None:
            raise _Bad(f"{where}: unknown tag type {kind!r} (known: "
                       f"{', '.join(_JAEGER_TYPES)})", line)
        value = tag.get("value")
        if kind == "int64" and isinstance(value, str) and _INT.fullmatch(value):
            value = int(value)  # past 2**53 Jaeger writes the number as a string
        if not isinstance(value, want) or (kind != "bool" and isinstance(value, bool)):
            raise _Bad(f"{where} ({tag['key']!r}): a {kind} tag holds "
                       f"{type(value).__name__}", line)
        if tag["key"] in attrs:
            raise _Bad(f"{where}: tag {tag['key']!r} is given twice", line)
        attrs[tag["key"]] = value
    return attrs


def _status(attrs: dict[str, Any]) -> tuple[str, str | None]:
    """(status, error message) from the tags OpenTelemetry exporters write."""
    code = attrs.get("otel.status_code")
    err = attrs.get("error")
    failed = code == "ERROR" or err is True or (isinstance(err, str) and err not in (
        "", "false"))
    if not failed:
        return ("OK" if code == "OK" else "UNSET"), None
    message = attrs.get("otel.status_description")
    if not isinstance(message, str) or not message:
        message = err if isinstance(err, str) and err not in ("", "true") else "error"
    return "ERROR", message


class _Out(NamedTuple):
    """Where the spans of a document go: by trace id, in file order."""

    traces: dict[str, list[otel.Span]]
    counter: list[int]

    def add(self, **fields: Any) -> None:
        span = otel.Span(index=self.counter[0], **fields)
        self.counter[0] += 1
        self.traces.setdefault(span.trace_id, []).append(span)


# -- Jaeger -----------------------------------------------------------------------------------

def _jaeger_parent(refs: list[Any], what: str, line: int | None) -> str | None:
    """The parent span: the first ``CHILD_OF`` reference's, else the first
    ``FOLLOWS_FROM``'s, else None (a root)."""
    follows: str | None = None
    for i, ref in enumerate(refs):
        if not isinstance(ref, dict):
            raise _Bad(f"{what}: references[{i}] must be an object", line)
        kind = ref.get("refType", "CHILD_OF")
        if kind not in ("CHILD_OF", "FOLLOWS_FROM"):
            raise _Bad(f"{what}: references[{i}]: unknown refType {kind!r}", line)
        span_id = _hex(ref.get("spanID"), 16, f"{what}: references[{i}].spanID", line)
        if kind == "CHILD_OF":
            return span_id
        follows = follows or span_id
    return follows


def _jaeger_logs(raw: Any, what: str, line: int | None) -> list[tuple[str, int, dict[str, Any]]]:
    events = []
    for i, log in enumerate(_list(raw, f"{what}: 'logs'", line)):
        if not isinstance(log, dict):
            raise _Bad(f"{what}: logs[{i}] must be an object", line)
        when = _micros(log.get("timestamp"), f"{what}: logs[{i}].timestamp", line)
        attrs = _jaeger_tags(log.get("fields"), f"{what}: logs[{i}].fields", line)
        name = attrs.get("event")
        events.append((name if isinstance(name, str) else "log", when or 0, attrs))
    return events


def _jaeger_span(span: Any, trace_id: str, what: str, line: int | None, out: _Out) -> None:
    if not isinstance(span, dict):
        raise _Bad(f"{what} is {type(span).__name__}, not an object", line)
    span_trace = span.get("traceID", trace_id)
    if _hex(span_trace, 32, f"{what}: 'traceID'", line).lstrip("0") != trace_id.lstrip("0"):
        raise _Bad(f"{what}: 'traceID' {span_trace!r} is not its trace's {trace_id!r}", line)
    span_id = _hex(span.get("spanID"), 16, f"{what}: 'spanID'", line)
    name = span.get("operationName")
    if not isinstance(name, str):
        raise _Bad(f"{what}: 'operationName' must be a string"
                   if name is not None else f"{what}: missing required key 'operationName'",
                   line)
    start = _micros(span.get("startTime"), f"{what}: 'startTime'", line) or 0
    duration = _micros(span.get("duration"), f"{what}: 'duration'", line, required=False)
    attrs = _jaeger_tags(span.get("tags"), f"{what}: 'tags'", line)
    status, error = _status(attrs)
    parent = _jaeger_parent(_list(span.get("references"), f"{what}: 'references'", line),
                            what, line)
    out.add(trace_id=trace_id, span_id=span_id, parent=parent, name=name, start=start,
            end=None if duration is None else start + duration, attrs=attrs, status=status,
            error=error, events=_jaeger_logs(span.get("logs"), what, line), line=line)


def _jaeger_trace(trace: Any, where: tuple[str | int, ...], lines: dict[Any, int],
                  out: _Out) -> None:
    label = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where).lstrip(".")
    line = lines.get(where) if where else 1
    what = f"trace {label}" if label else "the trace"
    if not isinstance(trace, dict):
        raise _Bad(f"{what} is {type(trace).__name__}, not an object", line)
    trace_id = _hex(trace.get("traceID"), 32, f"{what}: 'traceID'", line)
    spans = trace.get("spans")
    if not isinstance(spans, list):
        raise _Bad(f"{what}: 'spans' must be a list" if spans is not None
                   else f"{what}: missing required key 'spans'", line)
    if trace.get("processes") is not None and not isinstance(trace["processes"], dict):
        raise _Bad(f"{what}: 'processes' must be an object", line)
    for j, span in enumerate(spans):
        place = (*where, "spans", j)
        _jaeger_span(span, trace_id, f"{what}: spans[{j}]", lines.get(place, line), out)


def _jaeger_spans(doc: Any, data: bytes, out: _Out) -> None:
    if not isinstance(doc, dict):
        raise _Bad(f"expected a JSON object, got {type(doc).__name__}", 1)
    if "data" not in doc:
        _jaeger_trace(doc, (), object_lines(data, ("spans", ANY)), out)
        return
    traces = doc["data"]
    if not isinstance(traces, list):
        raise _Bad(f"'data' must be a list of traces, got {type(traces).__name__}", 1)
    lines = object_lines(data, ("data", ANY), ("data", ANY, "spans", ANY))
    for i, trace in enumerate(traces):
        _jaeger_trace(trace, ("data", i), lines, out)


# -- Zipkin -----------------------------------------------------------------------------------

def _zipkin_tags(raw: Any, what: str, line: int | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise _Bad(f"{what}: 'tags' must be an object of strings", line)
    return dict(raw)


def _zipkin_annotations(raw: Any, what: str, line: int | None
                        ) -> list[tuple[str, int, dict[str, Any]]]:
    events = []
    for i, note in enumerate(_list(raw, f"{what}: 'annotations'", line)):
        if not isinstance(note, dict) or not isinstance(note.get("value"), str):
            raise _Bad(f"{what}: annotations[{i}] must be an object with a string 'value'",
                       line)
        when = _micros(note.get("timestamp"), f"{what}: annotations[{i}].timestamp", line)
        name, attrs = _annotation(note["value"], f"{what}: annotations[{i}]", line)
        events.append((name, when or 0, attrs))
    return events


def _annotation(value: str, what: str, line: int | None) -> tuple[str, dict[str, Any]]:
    """(name, attributes) of an annotation: OpenTelemetry's Zipkin exporter writes an
    event with attributes as ``{"<name>": {<attributes>}}``, one without as its name."""
    if not value.startswith("{"):
        return value, {}
    try:
        decoded = decode_embedded(value, "value")
    except EmbeddedDuplicate as exc:
        raise _Bad(f"{what}: {exc}", line) from None
    if isinstance(decoded, dict) and len(decoded) == 1:
        ((name, attrs),) = decoded.items()
        if isinstance(attrs, dict):
            return name, attrs
    return value, {}


def _zipkin_span(span: Any, what: str, line: int | None, out: _Out) -> None:
    if not isinstance(span, dict):
        raise _Bad(f"{what} is {type(span).__name__}, not an object", line)
    trace_id = _hex(span.get("traceId"), 32, f"{what}: 'traceId'", line)
    span_id = _hex(span.get("id"), 16, f"{what}: 'id'", line)
    parent = span.get("parentId")
    parent = None if parent is None else _hex(parent, 16, f"{what}: 'parentId'", line)
    name = span.get("name", "")
    if not isinstance(name, str):
        raise _Bad(f"{what}: 'name' must be a string, got {type(name).__name__}", line)
    start = _micros(span.get("timestamp"), f"{what}: 'timestamp'", line, required=False)
    duration = _micros(span.get("duration"), f"{what}: 'duration'", line, required=False)
    for key in ("localEndpoint", "remoteEndpoint"):
        if span.get(key) is not None and not isinstance(span[key], dict):
            raise _Bad(f"{what}: '{key}' must be an object", line)
    attrs = _zipkin_tags(span.get("tags"), what, line)
    status, error = _status(attrs)
    start = start or 0
    out.add(trace_id=trace_id, span_id=span_id, parent=parent, name=name, start=start,
            end=None if duration is None else start + duration, attrs=attrs, status=status,
            error=error, events=_zipkin_annotations(span.get("annotations"), what, line),
            line=line)


def _zipkin_spans(doc: Any, data: bytes, out: _Out) -> None:
    if not isinstance(doc, list):
        raise _Bad(f"expected a JSON list of spans, got {type(doc).__name__}", 1)
    nested = bool(doc) and all(isinstance(item, list) for item in doc)
    if nested:
        lines = object_lines(data, (ANY, ANY))
        for i, trace in enumerate(doc):
            for j, span in enumerate(trace):
                _zipkin_span(span, f"trace [{i}]: span [{j}]", lines.get((i, j)), out)
        return
    lines = object_lines(data, (ANY,))
    for i, span in enumerate(doc):
        _zipkin_span(span, f"span [{i}]", lines.get((i,)), out)


# -- the readers ------------------------------------------------------------------------------

_OTEL_BAD: tuple[type[Exception], ...] = tuple(
    t for t in (getattr(otel, "_Bad", None),) if isinstance(t, type)
    and issubclass(t, Exception))


def _events(spans: list[otel.Span]) -> list[Event]:
    """The OpenTelemetry reader's mapping of one trace's spans (a thin adapter: its
    errors, whatever their class, become ours with their line)."""
    try:
        return otel.spans_to_events(spans)
    except _OTEL_BAD as exc:
        raise _Bad(str(exc), getattr(exc, "line", None)) from None


class _Run(NamedTuple):
    path: str
    fmt: str
    trace_id: str
    spans: list[otel.Span]


def _runs(fmt: str, collect: Callable[[Any, bytes, _Out], None], path: str,
          data: bytes) -> list[_Run]:
    from roadcheck.ingest.transcripts import _decode

    doc = _decode(path, data)
    out = _Out({}, [0])
    try:
        collect(doc, data, out)
    except _Bad as exc:
        raise TraceError(str(exc), path=path, line=exc.line) from None
    if not out.traces:
        raise TraceError(f"the file holds no run: no span in this {fmt} export", path=path,
                         line=1)
    return [_Run(path, fmt, trace_id, spans) for trace_id, spans in out.traces.items()]


def _trajectory(run: _Run) -> Trajectory:
    from roadcheck.ingest import BadRun

    tid = f"{run.path}#{run.trace_id}"
    try:
        events = _events(run.spans)
    except _Bad as exc:
        raise BadRun(tid, f"trace {run.trace_id}: {exc}", exc.line) from None
    meta = {"trace_id": run.trace_id, "spans": len(run.spans)}
    return Trajectory(tid, tuple(events), run.path, run.fmt, meta)


def read_jaeger(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per trace of a Jaeger JSON export."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, partial(_runs, "jaeger", _jaeger_spans), _trajectory)


def read_zipkin(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per trace id of a Zipkin v2 JSON span list."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, partial(_runs, "zipkin", _zipkin_spans), _trajectory)
