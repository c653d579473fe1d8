"""The OpenTelemetry reader: GenAI spans into the shared event model.

Two encodings are read, with no OpenTelemetry package installed:

- OTLP/JSON: ``{"resourceSpans": [...]}`` documents, one per file or one per
  line, trace and span ids in hex (as the OTLP/JSON spec says) or base64 (as a
  generic protobuf-to-JSON mapping writes them);
- the Python SDK's ``ReadableSpan.to_json()``: one span object per line, or the
  indented objects a ``ConsoleSpanExporter`` prints one after the other.

Every trace id is one trajectory (id ``<path>#<trace id>``), its events ordered
by start time; traces whose spans name one and the same
``gen_ai.conversation.id`` are one trajectory (a run stopped for approval, the
approval and the resumed run), under the first trace's id. The mapping follows
the GenAI semantic conventions (``gen_ai.operation.name``):

- an ``execute_tool`` span is an ``action`` (``action_type`` =
  ``gen_ai.tool.name``, ``args`` from ``gen_ai.tool.call.arguments``,
  ``result`` from ``gen_ai.tool.call.result``, ``error`` when the span's status
  is ERROR);
- an ``invoke_agent`` span whose nearest enclosing GenAI span is another
  agent's ``execute_tool`` span is a ``handoff`` from that agent to this one,
  with the tool call's arguments as payload (the "agent as a tool" pattern);
- a span or span event carrying ``roadcheck.checkpoint.id`` is a ``checkpoint``
  when its ``roadcheck.checkpoint.decision`` is absent or ``approved``; any other
  decision (``rejected``, ``denied``...) gives no checkpoint event. OpenTelemetry
  has no convention for human approval, so the application records it;
- the end of the trace is the ``final`` event.

A trace that cannot be read is one :class:`~roadcheck.ingest.ReadFailure` naming
the span; the other traces of the file are still read. See docs/frameworks/otel.md.

How a line of OTLP/JSON is read: msgspec decodes it into the typed structs below,
which declare only what the reader reads. A line msgspec writes back to the same
bytes repeats no key (:func:`_canonical`); any other line is decoded by orjson too, for
the repeated-key check every reader makes (:mod:`roadcheck.ingest._json`). A line the
structs refuse, or whose values do not convert as they stand, is built from orjson's
decoding by the exact walk (:func:`_otlp_spans`), which names what is wrong as it
always has: the structs take a subset of what the walk takes, and build the same spans
from it. SDK span objects, and documents that are not one a line, are the walk's too.
"""

from __future__ import annotations

import base64
import binascii
import gc
import json
import marshal
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from operator import itemgetter
from sys import intern
from time import gmtime
from typing import Annotated, Any, Literal, NamedTuple

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import (
    DuplicateKey,
    EmbeddedDuplicate,
    check_line,
    decode_embedded,
    lines_of,
    no_duplicate_keys,
    pairs_hook,
)

__all__ = ["CHECKPOINT_ATTRS", "detect_otel", "read_otel", "spans_to_events"]

#: The attributes an application sets on a span or span event to record an approval.
CHECKPOINT_ATTRS = ("roadcheck.checkpoint.id", "roadcheck.checkpoint.confirmed_by",
                    "roadcheck.checkpoint.decision")
_CHECKPOINT = "roadcheck.checkpoint.id"
_APPROVED = frozenset({"approved", "approve", "accepted", "confirmed"})


class _Bad(Exception):
    """A malformed span; the reader turns it into a TraceError naming the span."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class Span(msgspec.Struct, gc=False, eq=False):
    """One span, whichever encoding it came from (ids in lower-case hex).

    A struct the cycle collector does not track (a span holds no cycle): a large
    file's spans all stay alive while its traces are mapped, and the collector
    would otherwise walk them again and again. ``kind`` and ``own`` are what the
    mapping finds of it (:meth:`_Mapping.classify`): ``tool``, ``agent`` or None, and
    the agent it names itself.
    """

    trace_id: str
    span_id: str
    parent: str | None
    name: str
    start: int
    end: int | None
    attrs: dict[str, Any]
    status: str
    error: str | None
    events: Sequence[tuple[str, int, dict[str, Any]]]
    index: int
    line: int | None
    kind: str | None = None
    own: str | None = None

    def label(self) -> str:
        return f"span {self.index} ({self.name!r}, span id {self.span_id})"


_SPAN_KEYS = frozenset({b"resourceSpans", b"context"})


def detect_otel(data: bytes) -> float:
    """Certain for an OTLP/JSON ``resourceSpans`` document; likely for SDK span objects
    (a ``context`` key with a ``span_id`` near the start)."""
    from roadcheck.ingest import CERTAIN, LIKELY
    from roadcheck.ingest._scan import _keys_at

    if data.lstrip()[:1] != b"{":
        return 0.0
    key = _keys_at(data, 1, _SPAN_KEYS)
    if key == b"resourceSpans":
        return CERTAIN
    if key == b"context" and b'"span_id"' in data[:4096]:
        return LIKELY
    return 0.0


# -- the typed documents: what the reader reads of an OTLP/JSON line ----------------------------
#
# Every field is UNSET when the line does not give it, and the fields are declared in the
# order of the OTLP protobuf messages, the order OTLP/JSON writers follow: msgspec then
# writes a decoded line back field for field (:func:`_canonical`).

#: An integer the structs take: a 64-bit one. orjson decodes a larger one as a float,
#: which the walk refuses where it wants an integer; msgspec would take any (and bounds
#: no wider than these), so one past them is left to the walk.
_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
#: Nanoseconds since the epoch, or an ``intValue``: what ``int()`` reads, as the walk does.
_IntText = _Int | str
_Code = Literal[0, 1, 2, "STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR",
                "UNSET", "OK", "ERROR"]


#: An OTLP ``AnyValue``: an object of one kind (more is refused: OTLP defines a oneof), of a
#: type the kind may hold. :func:`_any_value`, the walk's, checks the kind and its type; the
#: structs only let through what it reads as it stands: no object, so a line with an
#: ``arrayValue`` or a ``kvlistValue`` (values nested in values) is the walk's, and the
#: structs nest a dozen levels at most (see :func:`_canonical`).
_AnyValue = Annotated[dict[str, str | bool | _Int | float | None], msgspec.Meta(max_length=1)]


class _KeyValue(msgspec.Struct, gc=False, forbid_unknown_fields=True, omit_defaults=True):
    key: str
    value: _AnyValue = {}


class _CheckedKeyValue(msgspec.Struct, gc=False, forbid_unknown_fields=True,
                       omit_defaults=True):
    """An attribute of a resource, a scope or a link: only checked, and written back. Its
    value may nest values; a line where one does is checked as any other line is
    (:func:`_canonical`)."""

    key: str
    value: Annotated[dict[str, str | bool | _Int | float | dict[str, Any] | None],
                     msgspec.Meta(max_length=1)] = {}


class _Attributed(msgspec.Struct, gc=False):
    """A resource: only checked, and written back."""

    attributes: list[_CheckedKeyValue] | UnsetType | None = UNSET
    droppedAttributesCount: int | UnsetType = UNSET


class _Scope(msgspec.Struct, gc=False):
    """An instrumentation scope: only checked, and written back."""

    name: str | UnsetType = UNSET
    version: str | UnsetType = UNSET
    attributes: list[_CheckedKeyValue] | UnsetType | None = UNSET
    droppedAttributesCount: int | UnsetType = UNSET


class _Status(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    code: _Code | UnsetType = UNSET
    message: str | UnsetType | None = UNSET


class _SpanEvent(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    timeUnixNano: _IntText | UnsetType = UNSET
    name: str | UnsetType = UNSET
    attributes: list[_KeyValue] | UnsetType | None = UNSET
    droppedAttributesCount: int | UnsetType = UNSET


class _Link(msgspec.Struct, gc=False):
    """A span link: only checked, and written back."""

    traceId: str | UnsetType = UNSET
    spanId: str | UnsetType = UNSET
    traceState: str | UnsetType = UNSET
    attributes: list[_CheckedKeyValue] | UnsetType | None = UNSET
    droppedAttributesCount: int | UnsetType = UNSET
    flags: int | UnsetType = UNSET


class _OtlpSpan(msgspec.Struct, gc=False, kw_only=True, forbid_unknown_fields=True):
    traceId: str
    spanId: str
    traceState: str | UnsetType = UNSET
    parentSpanId: str | UnsetType | None = UNSET
    flags: int | UnsetType = UNSET
    name: str | UnsetType | None = UNSET
    kind: int | UnsetType = UNSET
    startTimeUnixNano: _IntText
    endTimeUnixNano: _IntText | UnsetType | None = UNSET
    attributes: list[_KeyValue] | UnsetType | None = UNSET
    droppedAttributesCount: int | UnsetType = UNSET
    events: list[_SpanEvent] | UnsetType | None = UNSET
    droppedEventsCount: int | UnsetType = UNSET
    links: list[_Link] | UnsetType | None = UNSET
    droppedLinksCount: int | UnsetType = UNSET
    status: _Status | UnsetType | None = UNSET


class _ScopeSpans(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    instrumentationLibrary: _Scope | UnsetType = UNSET  # before OTLP 0.15, for ``scope``
    scope: _Scope | UnsetType = UNSET
    spans: list[_OtlpSpan] | UnsetType = UNSET
    schemaUrl: str | UnsetType = UNSET


class _ResourceSpans(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    resource: _Attributed | UnsetType = UNSET
    scopeSpans: list[_ScopeSpans] | UnsetType | None = UNSET
    schemaUrl: str | UnsetType = UNSET
    instrumentationLibrarySpans: list[_ScopeSpans] | UnsetType | None = UNSET


class _Document(msgspec.Struct, gc=False):
    resourceSpans: list[_ResourceSpans]


_decode_document = msgspec.json.Decoder(_Document).decode
_encode = msgspec.json.Encoder().encode


def _typed_document(raw: bytes) -> _Document | None:
    """The line as the typed structs read it, or None when they refuse it: not this shape,
    or nested too deep for msgspec's recursion (orjson and the walk then say what is
    wrong)."""
    try:
        return _decode_document(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def _canonical(raw: bytes, doc: _Document) -> bool:
    """True when ``raw`` is byte for byte what msgspec writes for ``doc``, the line as it
    decoded: then no key was given twice (the structs keep one), none was left out of
    the structs, and the line is plain JSON orjson reads too. The structs take no value
    that nests values (:data:`_AnyValue`), so they nest a dozen levels at most, far inside
    the limit every reader keeps (:data:`~roadcheck.ingest._json.MAX_DEPTH`). A line written
    so, as compact OTLP/JSON exporters write it, needs no other check; any other line gets
    the repeated-key check every reader makes, as does a line where an attribute of a
    resource, a scope or a link nests values (:func:`_nests`)."""
    return _encode(doc) == raw and not _nests(doc)


def _nests(doc: _Document) -> bool:
    """True when an attribute of a resource, a scope or a link of ``doc`` nests values (an
    ``arrayValue`` or a ``kvlistValue``): only these structs take such a value."""
    for rs in doc.resourceSpans:
        resource, scopes = rs.resource, rs.scopeSpans
        if resource and resource.attributes and _nested(resource.attributes):
            return True
        if rs.instrumentationLibrarySpans:
            scopes = [*(scopes or ()), *rs.instrumentationLibrarySpans]
        for ss in scopes or ():
            for scope in (ss.scope, ss.instrumentationLibrary):
                if scope and scope.attributes and _nested(scope.attributes):
                    return True
            for span in ss.spans or ():
                if span.links and any(_nested(link.attributes) for link in span.links):
                    return True
    return False


def _nested(items: list[_CheckedKeyValue] | UnsetType | None) -> bool:
    """True when a value of the attributes ``items`` is an object."""
    if isinstance(items, list):
        for kv in items:
            for v in kv.value.values():
                if v.__class__ is dict:
                    return True
    return False


def _typed_spans(doc: _Document, line: int, spans: list[Span], base: int) -> bool:
    """Append the spans of the typed line ``doc``; False, with nothing appended, when a
    value does not convert (the exact walk then reads the line and names what is wrong)."""
    built: list[Span] = []
    try:
        for rs in doc.resourceSpans:
            scopes = rs.scopeSpans
            if scopes is None or scopes is UNSET:
                scopes = rs.instrumentationLibrarySpans
            for ss in scopes or ():
                for raw_span in ss.spans or ():
                    built.append(_typed_span(raw_span, base + len(built), line))
    except (_Bad, ValueError):
        return False
    if not _ids_as_kept(built):
        return False
    spans += built
    return True


def _ids_as_kept(spans: list[Span]) -> bool:
    """True when every id of ``spans`` is already what :func:`_hex_id` makes of it:
    lower-case hex digits, 32 for a trace and 16 for a span (each distinct id looked at
    once). Any other spelling (upper case, ``0x``, base64) or a malformed id is the walk's:
    the ids joined are lower-case hex exactly when the hex of the bytes they spell gives
    them back."""
    traces = {s.trace_id for s in spans}
    ids = {s.span_id for s in spans}
    ids.update([s.parent for s in spans if s.parent is not None])
    if not (set(map(len, traces)) <= {32} and set(map(len, ids)) <= {16}):
        return False
    digits = "".join(traces) + "".join(ids)
    try:
        return bytes.fromhex(digits).hex() == digits
    except ValueError:
        return False


def _typed_span(raw: _OtlpSpan, index: int, line: int) -> Span:
    """One span of the typed structs, its ids as given (:func:`_ids_as_kept` checks them).
    Raises :class:`_Bad` or ``ValueError`` for a value the walk refuses: a time out of
    range, an ``intValue`` that is not an integer."""
    status = raw.status
    if status:
        code = _STATUS_CODES[status.code or 0]
        error = (status.message or "error") if code == "ERROR" else None
    else:
        code, error = "UNSET", None
    start, end = int(raw.startTimeUnixNano), raw.endTimeUnixNano
    if end is not None and end is not UNSET:
        end = int(end)
        if not 0 <= end <= _MAX_NANOS:
            raise _Bad("out of range")
    else:
        end = None
    if not 0 <= start <= _MAX_NANOS:
        raise _Bad("out of range")
    attrs: dict[str, Any] = {}
    items, events = raw.attributes, raw.events
    if items:  # as _typed_attrs reads them, inline: a call less a span
        for kv in items:
            text = kv.value.get("stringValue")
            attrs[kv.key] = text if text.__class__ is str else _typed_value(kv.value)
    return Span(raw.traceId, raw.spanId, raw.parentSpanId or None, raw.name or "", start, end,
                attrs, code, error, [_typed_event(ev) for ev in events] if events else [],
                index, line)


def _typed_event(ev: _SpanEvent) -> tuple[str, int, dict[str, Any]]:
    when = int(ev.timeUnixNano or 0)
    if not 0 <= when <= _MAX_NANOS:
        raise _Bad("out of range")
    return ev.name or "", when, _typed_attrs(ev.attributes)


def _typed_attrs(items: list[_KeyValue] | UnsetType | None) -> dict[str, Any]:
    """Attributes as :func:`_kv_list` reads them (a string value, the common case, inline).
    Raises :class:`_Bad`, or ``ValueError`` for a nested value (the walk reads it)."""
    attrs: dict[str, Any] = {}
    if items:
        for kv in items:  # a loop, not a comprehension: no frame of its own
            text = kv.value.get("stringValue")
            attrs[kv.key] = text if text.__class__ is str else _typed_value(kv.value)
    return attrs


def _typed_value(v: dict[str, Any]) -> Any:
    """An ``AnyValue`` of the structs other than a string, as :func:`_any_value` reads it
    (an ``intValue`` in a string, the next most common, inline; ``int`` is what the walk
    reads it with). Raises ``ValueError`` for a value the walk is to read and name: an
    ``intValue`` that is not an integer, an ``arrayValue`` or ``kvlistValue`` that is
    null (the structs take no other)."""
    number = v.get("intValue")
    if number.__class__ is str:
        return int(number)
    if "arrayValue" in v or "kvlistValue" in v:
        raise ValueError("nested: the walk's")
    return _any_value(v)


def _int_value(raw: Any) -> int:
    """An ``intValue`` (a JSON integer, or one in a string) as an integer."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise _Bad(f"intValue {_short(raw)} is not an integer")
    try:
        return int(raw)
    except ValueError:
        raise _Bad(f"intValue {_short(raw)} is not an integer") from None


# -- the exact walk: every encoding, and the message for what is wrong ------------------------

def _line_spans(raw: bytes, typed: _Document | None, doc: Any, line: int,
                base: int) -> list[Span]:
    """The spans of one line, numbered from ``base``: from ``typed``, the typed structs'
    reading of it, or else by the exact walk of ``doc``, orjson's (decoded here when
    None). Raises :class:`_Bad`."""
    spans: list[Span] = []
    if typed is not None and _typed_spans(typed, line, spans, base):
        return spans
    _add_document(orjson.loads(raw) if doc is None else doc, line, spans, base)
    return spans


def _spans_by_line(data: bytes, spans: list[Span]) -> bool:
    """Read a file of one JSON value per line, each line's spans built as it is decoded.

    No decoded document outlives its line, so memory holds the file and its
    spans, not the file's whole JSON tree. Returns False, with ``spans`` to be
    discarded, when a line is not JSON on its own (indented or concatenated
    documents: :func:`_documents` reads those). A repeated key anywhere is
    refused before a malformed span, as when the whole file is decoded first.
    """
    bad: TraceError | None = None
    for n, raw in lines_of(data):
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return False
        if not no_duplicate_keys(raw, doc):
            check_line(raw, doc, n, None)
        if bad is None:
            try:
                spans += _line_spans(raw, _typed_document(raw), doc, n, len(spans))
            except _Bad as exc:
                bad = TraceError(str(exc), line=n)
    if bad is not None:
        raise bad
    return True


def _documents(data: bytes) -> Iterator[tuple[int, Any]]:
    """(line, decoded value) for each JSON value of a file of indented or concatenated values.

    The standard library's parser recurses: a value nested too deep for it is unparseable
    JSON at its line, not a crash."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"not UTF-8 text (byte {exc.start})",
                         line=data.count(b"\n", 0, exc.start) + 1) from None
    # The standard library's parser, with a hook that refuses a repeated key.
    decoder = json.JSONDecoder(object_pairs_hook=pairs_hook, parse_constant=_no_constant)
    pos, length = 0, len(text)
    values: list[tuple[int, Any]] = []
    while True:
        while pos < length and text[pos].isspace():
            pos += 1
        if pos >= length:
            break
        line = text.count("\n", 0, pos) + 1
        value, pos = _raw_decode(decoder, text, pos, line)
        values.append((line, value))
    try:  # what orjson would refuse (numbers out of range, lone surrogates) is refused here too
        orjson.dumps([value for _, value in values])
    except orjson.JSONEncodeError as exc:
        raise TraceError(f"unusable JSON value: {exc}") from None
    yield from values


def _raw_decode(decoder: json.JSONDecoder, text: str, pos: int, line: int) -> tuple[Any, int]:
    """The value at ``pos`` and where it ends. Raises :class:`TraceError` naming the line."""
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise TraceError(f"unparseable JSON: {exc.msg}",
                         line=text.count("\n", 0, exc.pos) + 1) from None
    except DuplicateKey as exc:
        raise TraceError(str(exc), line=line) from None
    except (ValueError, RecursionError) as exc:
        raise TraceError(f"unparseable JSON: {exc}", line=line) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _hex_id(raw: Any, size: int, what: str, required: bool = True) -> str | None:
    """A trace id (16 bytes) or span id (8 bytes) as lower-case hex, from hex or base64."""
    if raw is None or raw == "":
        if required:
            raise _Bad(f"missing {what}")
        return None
    if not isinstance(raw, str):
        raise _Bad(f"{what} must be a string, got {type(raw).__name__}")
    text = raw[2:] if raw.startswith("0x") else raw
    if len(text) == size * 2:
        try:
            int(text, 16)
        except ValueError:
            pass
        else:
            return text.lower()
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) != size:
        raise _Bad(f"{what} {raw!r} is neither {size * 2} hex digits nor base64 of {size} bytes")
    return decoded.hex()


def _short(raw: Any) -> str:
    """A value for a message: its repr, cut short."""
    text = repr(raw)
    return text if len(text) <= 60 else text[:57] + "..."


def _obj(raw: Any, what: str) -> dict[str, Any]:
    """An object that may be absent (null means absent); anything else is malformed."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _Bad(f"{what} must be an object, got {type(raw).__name__}")
    return raw


def _items(raw: Any, what: str) -> list[Any]:
    """A list that may be absent (null means absent); anything else is malformed."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _Bad(f"{what} must be a list, got {type(raw).__name__}")
    return raw


_SCALARS: dict[str, type | tuple[type, ...]] = {
    "stringValue": str, "boolValue": bool, "doubleValue": (int, float), "bytesValue": str}


def _any_value(v: Any, key: str | None = None) -> Any:
    """An OTLP ``AnyValue`` as a plain value (``key``: the attribute's, for a message)."""
    if not isinstance(v, dict):
        raise _Bad(f"attribute value must be an object, got {type(v).__name__}")
    if len(v) > 1:
        _one_kind(v, key)
    text = v.get("stringValue")
    if type(text) is str:  # the common case, first in the loop below too
        return text
    for key, kind in _SCALARS.items():
        if key in v:
            value = v[key]
            if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                raise _Bad(f"{key} {_short(value)} has the wrong type")
            return value
    if "intValue" in v:
        return _int_value(v["intValue"])
    if "arrayValue" in v:
        values = _obj(v["arrayValue"], "arrayValue").get("values")
        return [_any_value(x) for x in _items(values, "arrayValue.values")]
    if "kvlistValue" in v:
        return _kv_list(_obj(v["kvlistValue"], "kvlistValue").get("values"))
    if v:
        unknown = sorted(k for k in v if k not in _KINDS)
        raise _Bad(f"attribute value has {_a_kind(unknown)}; an AnyValue holds one of "
                   + ", ".join(sorted(_KINDS)))
    return None


def _one_kind(v: dict[str, Any], key: str | None) -> None:
    """Raise :class:`_Bad` when ``v`` sets more than one kind: OTLP defines an ``AnyValue``
    as a oneof, and which kind counts would be the reader's guess."""
    given = [k for k in v if k in _KINDS]
    if len(given) > 1:
        what = "attribute value" if key is None else f"attribute {key!r}"
        shown = ", ".join(repr(k) for k in given[:-1]) + f" and {given[-1]!r}"
        raise _Bad(f"{what} sets more than one kind, {shown}: an AnyValue holds exactly one")


#: The value kinds of an OTLP ``AnyValue``.
_KINDS = frozenset({"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
                    "kvlistValue", "bytesValue"})


def _a_kind(unknown: list[str]) -> str:
    shown = ", ".join(repr(k) for k in unknown[:3])
    return f"the unknown kind {shown}" if len(unknown) == 1 else f"the unknown kinds {shown}"


def _kv_list(items: Any) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise _Bad(f"attributes must be a list, got {type(items).__name__}")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise _Bad("an attribute has no 'key' string")
        _known(item, _KEY_VALUE_FIELDS, "an attribute")
        key = intern(item["key"])
        out[key] = _any_value(item.get("value", {}), key)
    return out


def _known(raw: dict[str, Any], fields: frozenset[str], what: str) -> None:
    """Raise :class:`_Bad` naming the first key of ``raw`` not in ``fields``: a misspelt
    field would be read as absent, and what it holds lost (a span, an approval's
    decision)."""
    if not fields.issuperset(raw):
        unknown = next(k for k in raw if k not in fields)
        raise _Bad(f"{what} has the unknown key {unknown!r} (a misspelt field would be read "
                   "as absent)")


#: The fields of the OTLP/JSON objects the reader reads (the protobuf messages', in
#: their JSON names; an ``instrumentationLibrary`` is a ``scope`` before OTLP 0.15).
_SPAN_FIELDS = frozenset({
    "traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind",
    "startTimeUnixNano", "endTimeUnixNano", "attributes", "droppedAttributesCount", "events",
    "droppedEventsCount", "links", "droppedLinksCount", "status"})
_EVENT_FIELDS = frozenset({"timeUnixNano", "name", "attributes", "droppedAttributesCount"})
_STATUS_FIELDS = frozenset({"code", "message"})
_KEY_VALUE_FIELDS = frozenset({"key", "value"})
_SCOPE_SPANS_FIELDS = frozenset({"instrumentationLibrary", "scope", "spans", "schemaUrl"})
_RESOURCE_SPANS_FIELDS = frozenset({"resource", "scopeSpans", "schemaUrl",
                                    "instrumentationLibrarySpans"})
#: The keys of the Python SDK's ``ReadableSpan.to_json()``: a span, an event, a status.
_SDK_SPAN_FIELDS = frozenset({"name", "context", "kind", "parent_id", "start_time",
                              "end_time", "status", "attributes", "events", "links",
                              "resource"})
_SDK_EVENT_FIELDS = frozenset({"name", "timestamp", "attributes"})
_SDK_STATUS_FIELDS = frozenset({"status_code", "description"})


#: Timestamps are kept between the epoch and the end of year 9999 (what ``_iso`` can print).
_MAX_NANOS = 253_402_300_799_999_999_999


def _in_range(nanos: int, what: str) -> int:
    if not 0 <= nanos <= _MAX_NANOS:
        raise _Bad(f"{what} {nanos} is out of range (1970 to 9999)")
    return nanos


def _nanos(raw: Any, what: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise _Bad(f"{what} must be nanoseconds since the epoch, got {type(raw).__name__}")
    try:
        return _in_range(int(raw), what)
    except ValueError:
        raise _Bad(f"{what} must be nanoseconds since the epoch, got {_short(raw)}") from None


def _iso_nanos(raw: Any, what: str) -> int:
    if not isinstance(raw, str):
        raise _Bad(f"{what} must be an ISO timestamp string, got {type(raw).__name__}")
    try:
        dt = datetime.fromisoformat(raw)
    except ValueError:
        raise _Bad(f"{what} {raw!r} is not an ISO timestamp") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return _in_range((delta.days * 86400 + delta.seconds) * 1_000_000_000
                     + delta.microseconds * 1000, what)


def _iso(nanos: int) -> str:
    """UTC with microseconds, as ``datetime`` prints it; the date and the minute are
    looked up (the events of a trace share a few minutes). ``%`` formats the digits: an
    f-string's format specs cost several times as much."""
    secs, rest = divmod(nanos, 1_000_000_000)
    minutes, second = divmod(secs, 60)
    head = _MINUTES.get(minutes)
    if head is None:
        head = _minute(minutes)
    return "%s%02d.%06dZ" % (head, second, rest // 1000)  # noqa: UP031


def _minute(minutes: int) -> str:
    """``YYYY-MM-DDTHH:MM:`` of a minute since the epoch, remembered."""
    if len(_MINUTES) >= 4096:
        _MINUTES.clear()
    days, clock = divmod(minutes, 1440)
    day = _DAYS.get(days)
    if day is None:
        if len(_DAYS) >= 4096:
            _DAYS.clear()
        t = gmtime(days * 86_400)  # POSIX time, as datetime counts it: no leap seconds
        day = _DAYS[days] = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
    head = _MINUTES[minutes] = f"{day}{clock // 60:02d}:{clock % 60:02d}:"
    return head


_DAYS: dict[int, str] = {}
_MINUTES: dict[int, str] = {}


def _status(raw: Any, key: str, default: Any, fields: frozenset[str]) -> tuple[str, Any]:
    """(status code name, message) of a span status object (``fields``: the keys it may
    have)."""
    status = _obj(raw, "'status'")
    _known(status, fields, "'status'")
    code = status.get(key, default)
    if isinstance(code, bool) or not isinstance(code, (int, str)) or code not in _STATUS_CODES:
        raise _Bad(f"'status.{key}' {_short(code)} is not a status code")
    return _STATUS_CODES[code], status


_STATUS_CODES = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET",
                 "STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR",
                 "UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}


def _message_of(status: dict[str, Any], key: str) -> str:
    text = status.get(key)
    return text if isinstance(text, str) and text else "error"


def _otlp_spans(doc: dict[str, Any], line: int, spans: list[Span], base: int = 0) -> None:
    rs_list = doc.get("resourceSpans")
    if not isinstance(rs_list, list):
        raise _Bad("'resourceSpans' must be a list")
    for rs in rs_list:
        if not isinstance(rs, dict):
            raise _Bad("a resourceSpans entry is not an object")
        _known(rs, _RESOURCE_SPANS_FIELDS, "a resourceSpans entry")
        scopes = rs.get("scopeSpans")
        if scopes is None:
            scopes = rs.get("instrumentationLibrarySpans")
        for ss in _items(scopes, "'scopeSpans'"):
            if not isinstance(ss, dict) or not isinstance(ss.get("spans", []), list):
                raise _Bad("a scopeSpans entry has no 'spans' list")
            _known(ss, _SCOPE_SPANS_FIELDS, "a scopeSpans entry")
            for raw in ss.get("spans", []):
                spans.append(_otlp_span(raw, base + len(spans), line))


def _otlp_span(raw: Any, index: int, line: int) -> Span:
    """One OTLP/JSON span object. Raises :class:`_Bad` naming the span."""
    name = raw.get("name") if isinstance(raw, dict) else None
    try:
        if not isinstance(raw, dict):
            raise _Bad(f"is {type(raw).__name__}, not an object")
        _known(raw, _SPAN_FIELDS, "the span")
        if name is not None and not isinstance(name, str):
            raise _Bad(f"'name' must be a string, got {type(name).__name__}")
        code, status = _status(raw.get("status"), "code", 0, _STATUS_FIELDS)
        events = [_otlp_event(ev) for ev in _items(raw.get("events"), "'events'")]
        return Span(
            str(_hex_id(raw.get("traceId"), 16, "traceId")),
            str(_hex_id(raw.get("spanId"), 8, "spanId")),
            _hex_id(raw.get("parentSpanId"), 8, "parentSpanId", required=False),
            name or "",
            _nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano"),
            _nanos(raw["endTimeUnixNano"], "endTimeUnixNano")
            if raw.get("endTimeUnixNano") is not None else None,
            _kv_list(raw.get("attributes")), code,
            _message_of(status, "message") if code == "ERROR" else None,
            events, index, line)
    except _Bad as exc:
        raise _Bad(f"span {index} ({_short(name)}): {exc}") from None


def _event_name(ev: Any) -> str:
    """A span event's name (anything but a string is none). Raises :class:`_Bad` when the
    event is no object."""
    if not isinstance(ev, dict):
        raise _Bad("a span event is not an object")
    name = ev.get("name", "")
    return name if isinstance(name, str) else ""


def _otlp_event(ev: Any) -> tuple[str, int, dict[str, Any]]:
    """(name, time, attributes) of an OTLP/JSON span event. Raises :class:`_Bad`."""
    name = _event_name(ev)
    _known(ev, _EVENT_FIELDS, "a span event")
    return (name, _nanos(ev.get("timeUnixNano", 0), "event timeUnixNano"),
            _kv_list(ev.get("attributes")))


def _sdk_event(ev: Any) -> tuple[str, int, dict[str, Any]]:
    """(name, time, attributes) of an SDK span event. Raises :class:`_Bad`."""
    name = _event_name(ev)
    _known(ev, _SDK_EVENT_FIELDS, "a span event")
    return (name, _iso_nanos(ev.get("timestamp"), "timestamp"),
            dict(_obj(ev.get("attributes"), "event 'attributes'")))


def _sdk_span(raw: dict[str, Any], line: int, spans: list[Span], base: int = 0) -> None:
    index = base + len(spans)
    name = raw.get("name")
    try:
        _known(raw, _SDK_SPAN_FIELDS, "the span")
        if name is not None and not isinstance(name, str):
            raise _Bad(f"'name' must be a string, got {type(name).__name__}")
        ctx = raw.get("context")
        if not isinstance(ctx, dict):
            raise _Bad("missing 'context' object")
        attrs = _obj(raw.get("attributes"), "'attributes'")
        code, status = _status(raw.get("status"), "status_code", "UNSET", _SDK_STATUS_FIELDS)
        events = [_sdk_event(ev) for ev in _items(raw.get("events"), "'events'")]
        spans.append(Span(
            str(_hex_id(ctx.get("trace_id"), 16, "trace_id")),
            str(_hex_id(ctx.get("span_id"), 8, "span_id")),
            _hex_id(raw.get("parent_id"), 8, "parent_id", required=False),
            name or "",
            _iso_nanos(raw.get("start_time"), "start_time"),
            _iso_nanos(raw["end_time"], "end_time") if raw.get("end_time") else None,
            attrs, code, _message_of(status, "description") if code == "ERROR" else None,
            events, index, line))
    except _Bad as exc:
        raise _Bad(f"span {index} ({_short(name)}): {exc}") from None


def _add_document(doc: Any, line: int, spans: list[Span], base: int = 0) -> None:
    """Append the spans of one decoded JSON value, numbered from ``base`` (the spans of the
    file before it) on. Raises :class:`_Bad`."""
    for item in doc if isinstance(doc, list) else [doc]:
        if isinstance(item, dict) and "resourceSpans" in item:
            _otlp_spans(item, line, spans, base)
        elif isinstance(item, dict) and "context" in item:
            _sdk_span(item, line, spans, base)
        else:
            raise _Bad("expected an OTLP/JSON 'resourceSpans' document or an SDK "
                       "span object with 'context'")


def parse_spans(data: bytes) -> list[Span]:
    """Every span of an OTLP/JSON or SDK ``to_json`` file. Raises :class:`TraceError`."""
    spans: list[Span] = []
    if not _spans_by_line(data, spans):
        spans = []
        line = None
        try:
            for line, doc in _documents(data):
                _add_document(doc, line, spans)
        except _Bad as exc:
            raise TraceError(str(exc), line=line) from None
    if not spans:
        raise TraceError("no spans")
    return spans


# -- the mapping ----------------------------------------------------------------------------

def _decoded(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            # blank is no arguments; anything else is kept as text: the call was made,
            # whatever its arguments were
            return raw if raw.strip() else {}
    return {} if raw is None else raw


def _op(span: Span) -> Any:
    return span.attrs.get("gen_ai.operation.name")


#: The span conventions read besides GenAI, by the attribute that marks their spans.
OPENINFERENCE, OPENLLMETRY = "OpenInference", "OpenLLMetry"
_OI_KIND, _TL_KIND = "openinference.span.kind", "traceloop.span.kind"


def convention(span: Span) -> str | None:
    """The non-GenAI convention a span follows (OpenInference, OpenLLMetry), or None."""
    if _OI_KIND in span.attrs:
        return OPENINFERENCE
    if _TL_KIND in span.attrs:
        return OPENLLMETRY
    return None


def _kind(span: Span) -> str | None:
    """``tool`` or ``agent`` for a span any convention marks so, else None."""
    op = _op(span)
    if op == "execute_tool":
        return "tool"
    if op == "invoke_agent":
        return "agent"
    oi = span.attrs.get(_OI_KIND)
    if isinstance(oi, str) and oi.upper() in ("TOOL", "AGENT"):
        return oi.lower()
    tl = span.attrs.get(_TL_KIND)
    if isinstance(tl, str) and tl.lower() in ("tool", "agent"):
        return tl.lower()
    return None


def _own_agent(span: Span) -> str | None:
    """The agent a span names itself: ``gen_ai.agent.name``, OpenInference ``agent.name``
    (or the name of an AGENT span), or an OpenLLMetry agent span's entity name."""
    keys = ("gen_ai.agent.name", "agent.name") if _OI_KIND in span.attrs else (
        "gen_ai.agent.name",)
    for key in keys:
        name = span.attrs.get(key)
        if isinstance(name, str) and name:
            return name
    if _op(span) is None and _kind(span) == "agent":
        if _TL_KIND in span.attrs:
            name = span.attrs.get("traceloop.entity.name")
            return name if isinstance(name, str) and name else None
        return span.name or None
    return None


def _entity_args(raw: Any) -> Any:
    """OpenLLMetry records a call's input as ``{"args": [...], "kwargs": {...}}``: keyword
    arguments alone read as the arguments object."""
    value = decode_embedded(raw, "traceloop.entity.input")
    if isinstance(value, dict) and set(value) <= {"args", "kwargs"} and not value.get("args"):
        kwargs = value.get("kwargs")
        return kwargs if isinstance(kwargs, dict) else {}
    return value


def _tool_call(span: Span, text: bool = True, agent: str | None = None) -> dict[str, Any]:
    """The action fields of a tool span of any convention (without its result when not
    ``text``), after the head of its event's record (:meth:`_Mapping.records`; ``agent``,
    the agent it runs under). Raises :class:`_Bad`."""
    try:
        return _tool_fields(span, text, agent)
    except EmbeddedDuplicate as exc:
        raise _Bad(f"{span.label()}: {exc}", span.line) from None


def _tool_fields(span: Span, text: bool, agent: str | None) -> dict[str, Any]:
    a = span.attrs
    genai = a.get("gen_ai.operation.name") == "execute_tool"
    if genai:
        tool = a.get("gen_ai.tool.name")
        if tool.__class__ is not str or not tool:
            raise _Bad(f"{span.label()}: execute_tool span has no 'gen_ai.tool.name'")
        fields: dict[str, Any] = {
            "seq": 0, "ts": "", "agent": agent, "event": "action", "action_type": tool,
            "args": decode_embedded(a.get("gen_ai.tool.call.arguments"),
                                    "gen_ai.tool.call.arguments")}
        call_id = a.get("gen_ai.tool.call.id")
        result_key = "gen_ai.tool.call.result"
    elif _OI_KIND in a:
        tool = a.get("tool.name") or span.name
        if not isinstance(tool, str) or not tool:
            raise _Bad(f"{span.label()}: TOOL span has neither 'tool.name' nor a span name")
        fields = {"seq": 0, "ts": "", "agent": agent, "event": "action", "action_type": tool,
                  "args": decode_embedded(a.get("input.value"), "input.value")}
        call_id = a.get("tool_call.id", a.get("tool.id"))
        result_key = "output.value"
    else:
        tool = a.get("traceloop.entity.name") or span.name
        if not isinstance(tool, str) or not tool:
            raise _Bad(f"{span.label()}: tool span has neither 'traceloop.entity.name' "
                       "nor a span name")
        fields = {"seq": 0, "ts": "", "agent": agent, "event": "action", "action_type": tool,
                  "args": _entity_args(a.get("traceloop.entity.input"))}
        call_id = None
        result_key = "traceloop.entity.output"
    if call_id is not None:
        fields["call_id"] = call_id
    if text and result_key in a and (span.error is None or genai):
        # an errored call's output is no result: the call failed
        fields["result"] = _decoded(a[result_key])
    if span.error is not None:
        fields["error"] = span.error
    fields["span_id"] = span.span_id
    return fields


#: Attributes only an ``execute_tool`` span carries.
_TOOL_ATTRS = frozenset({"gen_ai.tool.name", "gen_ai.tool.call.id",
                         "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"})


def _looks_like_a_call(span: Span) -> bool:
    """True when a span carries a tool call's attributes or its conventional name."""
    name = span.name
    return name == "execute_tool" or name.startswith("execute_tool ") or not \
        span.attrs.keys().isdisjoint(_TOOL_ATTRS)


#: (start, tie-breaker, kind, agent, record, line) of an event before it is numbered: the
#: record its fields after the head Event.make begins with (seq and ts still to come).
_Staged = tuple[int, int, str, "str | None", dict[str, Any], "int | None"]
_staged_order = itemgetter(0, 1)
#: An :class:`Event` from its fields, as ``Event._make`` builds it.
_event = partial(tuple.__new__, Event)


class _Mapping:
    """The spans of one run mapped to events in one pass over them.

    Each span is classified once (:meth:`classify`: its kind and the agent it names
    itself, kept on the span), then staged in file order (:meth:`stage`); the staged
    events are numbered in order of time (:meth:`events`).
    """

    __slots__ = ("by_id", "conventions", "end", "handed", "limit", "root_agent", "roots_ok",
                 "spans", "staged", "text")

    def __init__(self, spans: list[Span], text: bool) -> None:
        self.spans = spans
        self.text = text
        self.by_id: dict[str, Span] = {}
        by_id = self.by_id
        for s in spans:  # a loop, not a comprehension: no frame of its own
            by_id[s.span_id] = s
        self.limit = len(spans)
        self.staged: list[_Staged] = []
        self.handed: set[tuple[str, str]] = set()
        self.conventions: set[str] = set()
        self.end = 0
        self.root_agent: str | None = None
        self.roots_ok = True
        for s in spans:
            a = s.attrs
            if _OI_KIND in a or _TL_KIND in a:
                self.classify(s)
            else:  # GenAI only: what _kind and _own_agent find, looked up once
                op = a.get("gen_ai.operation.name")
                s.kind = ("tool" if op == "execute_tool" else "agent" if op == "invoke_agent"
                          else None)
                name = a.get("gen_ai.agent.name")
                s.own = name if name.__class__ is str and name else None
            end = s.end or s.start
            if end > self.end:
                self.end = end
            if not s.parent or s.parent not in by_id:  # a root
                self.roots_ok = self.roots_ok and s.status != "ERROR"
                if self.root_agent is None:  # a root's walk to its agent stops at itself
                    self.root_agent = s.own

    def classify(self, s: Span) -> None:
        """Note the kind and own agent of a span of another convention (and the convention);
        a GenAI span's are found where the spans are first walked (:meth:`__init__`)."""
        a = s.attrs
        self.conventions.add(OPENINFERENCE if _OI_KIND in a else OPENLLMETRY)
        s.kind, s.own = _kind(s), _own_agent(s)

    def agent_of(self, span: Span) -> str | None:
        """The agent a span runs under: its own, else its nearest ancestor's."""
        by_id, limit = self.by_id, self.limit
        cur: Span | None = span
        seen = 0
        while cur is not None and seen < limit:
            if cur.own:
                return cur.own
            cur = by_id.get(cur.parent) if cur.parent else None
            seen += 1
        return None

    def enclosing_genai(self, span: Span) -> Span | None:
        """The nearest ancestor any convention gives a kind."""
        by_id, limit = self.by_id, self.limit
        cur = by_id.get(span.parent) if span.parent else None
        seen = 0
        while cur is not None and seen < limit:
            if cur.kind is not None:
                return cur
            cur = by_id.get(cur.parent) if cur.parent else None
            seen += 1
        return None

    def stage(self, span: Span) -> None:
        """Stage what one span records: a tool call, a handoff, checkpoints. Raises
        :class:`_Bad` naming the span."""
        kind = span.kind
        if kind == "tool":
            agent = self.agent_of(span)
            try:  # what _tool_call does, inline: a call less a tool call
                fields = _tool_fields(span, self.text, agent)
            except EmbeddedDuplicate as exc:
                raise _Bad(f"{span.label()}: {exc}", span.line) from None
            self.staged.append((span.start, span.index * 1000, "action", agent, fields,
                                span.line))
        elif kind is None:
            name = span.name
            # what _looks_like_a_call says, inline: a call less a span of no kind
            if name == "execute_tool" or name.startswith("execute_tool ") or not \
                    span.attrs.keys().isdisjoint(_TOOL_ATTRS):
                # skipping it would drop the call (a misspelt or missing operation name)
                raise _Bad(f"{span.label()}: records a tool call but its "
                           f"'gen_ai.operation.name' is {_short(_op(span))}, not "
                           "'execute_tool'")
        elif kind == "agent" and span.own:
            self._handoff(span)
        if span.events or _CHECKPOINT in span.attrs:
            self._checkpoints(span)

    def _handoff(self, span: Span) -> None:
        """An agent span under another agent's tool call: the call handed over to it."""
        to_agent = span.own
        outer = self.enclosing_genai(span)
        if outer is None or outer.kind != "tool" or to_agent is None:
            return
        from_agent = self.agent_of(outer)
        if from_agent is None or from_agent == to_agent or (
                outer.span_id, to_agent) in self.handed:
            return
        self.handed.add((outer.span_id, to_agent))
        args = _tool_call(outer, False)["args"]
        payload = args if isinstance(args, dict) else {"arguments": args}
        self.staged.append((span.start, span.index * 1000, "handoff", from_agent,
                            {"seq": 0, "ts": "", "agent": from_agent, "event": "handoff",
                             "from_agent": from_agent, "to_agent": to_agent,
                             "payload": payload, "span_id": span.span_id}, span.line))

    def _checkpoints(self, span: Span) -> None:
        """The approvals a span and its span events record."""
        tie = span.index * 1000
        marks = [(span.start, span.attrs, tie + 1)] if _CHECKPOINT in span.attrs else []
        marks += [(t, a, tie + 2 + i) for i, (_, t, a) in enumerate(span.events)
                  if _CHECKPOINT in a]
        for when, attrs, order in marks:
            agent = self.agent_of(span)
            fields = _checkpoint_fields(span, attrs, agent)
            if fields is not None:
                self.staged.append((when, order, "checkpoint", agent, fields, span.line))

    def records(self) -> list[tuple[Any, ...]]:
        """Every span staged, then the events' fields (as :class:`Event` takes them) in
        order of time, the final one last."""
        stage = self.stage
        for span in self.spans:
            stage(span)
        staged = self.staged
        staged.sort(key=_staged_order)
        staged.append((self.end, 0, "final", self.root_agent,
                       {"seq": 0, "ts": "", "agent": self.root_agent, "event": "final",
                        "task_success": self.roots_ok}, None))
        records: list[tuple[Any, ...]] = []
        append = records.append
        for seq, (when, _, kind, agent, data, line) in enumerate(staged, 1):
            # the record Event.make builds: seq, ts, agent (when known), event, then the
            # fields; each was staged with that head, its number and time still to come
            ts = _iso(when)
            data["seq"] = seq
            data["ts"] = ts
            if agent is None:
                del data["agent"]
            append((seq, kind, agent, ts, data, line))
        return records

    def events(self) -> list[Event]:
        """The events of :meth:`records`."""
        return [_event(record) for record in self.records()]

    def source(self) -> str:
        """``otel``, naming the other conventions the spans follow (a report then says
        which)."""
        names = sorted(self.conventions)
        return f"otel ({' and '.join(names)} spans)" if names else "otel"


def _checkpoint_fields(span: Span, attrs: dict[str, Any],
                       agent: str | None) -> dict[str, Any] | None:
    """The fields of the checkpoint ``attrs`` record (after the head of its event's record,
    ``agent`` the agent it runs under), or None for a decision that is no approval. Raises
    :class:`_Bad` for a checkpoint with no id."""
    cid = attrs.get(_CHECKPOINT)
    if not isinstance(cid, str) or not cid:
        raise _Bad(f"{span.label()}: 'roadcheck.checkpoint.id' must be a non-empty string")
    decision = attrs.get("roadcheck.checkpoint.decision")
    if decision is not None and str(decision).lower() not in _APPROVED:
        return None  # a rejected approval is no confirmation: no checkpoint event
    fields = {"seq": 0, "ts": "", "agent": agent, "event": "checkpoint", "checkpoint_id": cid,
              "span_id": span.span_id}
    who = attrs.get("roadcheck.checkpoint.confirmed_by")
    if who is not None:
        fields["confirmed_by"] = who
    if decision is not None:
        fields["decision"] = decision
    return fields


def spans_to_events(spans: list[Span], *, text: bool = True) -> list[Event]:
    """Map the spans of one trace to events. Raises :class:`_Bad` naming the span.

    ``text=False`` leaves each tool call's result out (a replay whose spec reads none)."""
    return _Mapping(spans, text).events()


# -- the reader -------------------------------------------------------------------------------

def read_otel(path: str, data: bytes, *, text: bool = True) -> Iterator[Any]:
    """One trajectory per trace id of an OTLP/JSON or SDK ``to_json`` span file.

    ``text=False`` leaves each tool call's result out of its action (see
    :func:`roadcheck.ingest.load`); everything else, and whether the file reads, is the same.
    """
    from roadcheck.ingest import read_runs

    return read_runs(path, data, partial(_runs, text=text),
                     partial(_trajectory, path, text=text))


class _Run(NamedTuple):
    """One run of a file: its traces (the first names it), its conversation, what gives
    its spans, and what gives its events when the first reading mapped them already."""

    trace_ids: list[str]
    conversation: str | None
    members: Callable[[], list[Span]]
    mapped: Callable[[], _Mapped] | None = None


#: A run mapped by the first reading (:class:`_Lines`): its events' fields, its source and
#: its span count, as ``marshal`` bytes (a tenth of the objects' size), or what was wrong
#: with it (message, line).
_Mapped = bytes | tuple[str, int | None]


def _runs(path: str, data: bytes, *, text: bool = True) -> list[_Run]:
    """The runs of a span file: a file of OTLP/JSON lines read a run at a time
    (:class:`_Lines`), any other every span read first, then grouped by trace and
    conversation."""
    paused = gc.isenabled()
    if paused:  # see _Lines: the first reading makes no cycles for the collector to find
        gc.disable()
    try:
        lines = _Lines.read(data, text)
    finally:
        if paused:
            gc.enable()
    if lines is not None:
        return lines.runs()
    return [_Run(trace_ids, conversation, partial(list, members))
            for trace_ids, conversation, members in _group(parse_spans(data))]


class _Trace:
    """What the first reading keeps of one trace: its lines and conversations."""

    __slots__ = ("conversations", "lines")

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.conversations: set[str] = set()


class _Lines:
    """A file of one JSON value a line (OTLP/JSON lines, as the OTLP file exporter writes
    them), read once whole and each run then built on its own.

    The first reading checks every line as :func:`parse_spans` does (a repeated key
    anywhere, then the first malformed span: the file's one error, before any run is
    judged) and notes where each trace's spans are; no span outlives its line. A line
    holding one trace, the common case, is mapped to events there and then, kept as
    ``marshal`` bytes until its run's turn (:data:`_Mapped`), and dropped again when a
    later line holds more of its trace. Any other run is built from its own lines decoded
    again, so memory holds the file and one run, not every span of the file at once. A
    line holding several traces is decoded once more and its spans kept until the last
    of its traces is taken.

    The cyclic collector is paused while the file is read (:func:`_runs`): the reading
    makes no reference cycles, and each line's short-lived lists, tuples and dicts would
    otherwise set the collector walking them again and again (a fifth of the reading's
    time on a large export). It runs again as soon as the reading ends, error or not.
    """

    __slots__ = ("cache", "data", "lines", "mapped", "text", "total", "traces")

    def __init__(self, data: bytes, text: bool) -> None:
        self.data = data
        self.text = text
        #: line number, start, end, and the number of the line's first span in the file
        self.lines: list[tuple[int, int, int, int]] = []
        self.traces: dict[str, _Trace] = {}
        self.cache: dict[int, dict[str, list[Span]]] = {}
        self.mapped: dict[str, _Mapped] = {}
        self.total = 0

    @classmethod
    def read(cls, data: bytes, text: bool = True) -> _Lines | None:
        """The file read once, or None when a line is not JSON on its own (indented or
        concatenated documents: :func:`parse_spans` reads those). Raises
        :class:`TraceError`."""
        self = cls(data, text)
        bad: TraceError | None = None
        pos, n, size = 0, 0, len(data)
        while pos < size:
            end = data.find(b"\n", pos)
            if end < 0:
                end = size
            n += 1
            start, raw = pos, data[pos:end]
            pos = end + 1
            if not raw or raw.isspace():  # blank (no copy of the line to tell)
                continue
            decoded = _checked_line(raw, n)
            if decoded is None:
                return None
            if bad is not None:
                continue  # a repeated key further on is still the file's error
            try:
                spans = _line_spans(raw, *decoded, n, self.total)
            except _Bad as exc:
                bad = TraceError(str(exc), line=n)
                continue
            del decoded
            self._add(n, start, end, spans)
        if bad is not None:
            raise bad
        if not self.total:
            raise TraceError("no spans")
        return self

    def _add(self, n: int, start: int, end: int, spans: list[Span]) -> None:
        """Note line ``n``'s place and its spans' traces; map it when it holds one trace."""
        k = len(self.lines)
        self.lines.append((n, start, end, self.total))
        self.total += len(spans)
        traces = self.traces
        ids: dict[str, None] = {}
        named: list[tuple[str, str]] = []
        for span in spans:  # the traces in order of their first span, and what they name
            ids[span.trace_id] = None
            conversation = span.attrs.get(_CONVERSATION)
            if conversation.__class__ is str and conversation:
                named.append((span.trace_id, conversation))
        for trace_id in ids:
            trace = traces.get(trace_id)
            if trace is None:
                trace = traces[trace_id] = _Trace()
            elif trace_id in self.mapped:  # more of a trace mapped already: mapped again
                del self.mapped[trace_id]
            trace.lines.append(k)
        for trace_id, conversation in named:
            traces[trace_id].conversations.add(conversation)
        if len(ids) == 1:
            (trace_id,) = ids
            if len(traces[trace_id].lines) == 1:
                self.mapped[trace_id] = _premapped(spans, self.text)

    def runs(self) -> list[_Run]:
        """The runs, grouped as :func:`_group` groups them."""
        runs = []
        mapped = self.mapped
        for ids, conversation in _grouped(
                (t, trace.conversations) for t, trace in self.traces.items()):
            premapped = None
            if len(ids) == 1 and ids[0] in mapped:
                premapped = partial(mapped.pop, ids[0])
            else:
                for t in ids:  # a run of several traces is mapped whole
                    mapped.pop(t, None)
            runs.append(_Run(ids, conversation, partial(self.members, ids), premapped))
        return runs

    def _spans(self, k: int) -> list[Span]:
        """The spans of line ``k``, decoded again (it read once already)."""
        n, start, end, first = self.lines[k]
        raw = self.data[start:end]
        return _line_spans(raw, _typed_document(raw), None, n, first)

    def members(self, trace_ids: list[str]) -> list[Span]:
        """The spans of the traces ``trace_ids``, each trace's in file order."""
        if len(trace_ids) == 1:
            lines = self.traces[trace_ids[0]].lines
            if len(lines) == 1:
                spans = self._spans(lines[0])
                if all(span.trace_id == trace_ids[0] for span in spans):  # a line of its own
                    return spans
        wanted = sorted({k for t in trace_ids for k in self.traces[t].lines})
        taken: dict[str, list[Span]] = {}
        for k in wanted:
            bucket = self.cache.get(k)
            if bucket is None:
                bucket = {}
                for span in self._spans(k):
                    bucket.setdefault(span.trace_id, []).append(span)
                self.cache[k] = bucket
            for t in trace_ids:
                if t in bucket:
                    taken.setdefault(t, []).extend(bucket.pop(t))
            if not bucket:
                del self.cache[k]
        return [span for t in trace_ids for span in taken.get(t, ())]


def _checked_line(raw: bytes, n: int) -> tuple[_Document | None, Any] | None:
    """Line ``n`` decoded and checked as every reader checks a line (no key given twice,
    nested at most :data:`~roadcheck.ingest._json.MAX_DEPTH` deep): (the typed structs'
    reading, orjson's or None when the first one settles it), or None when the line is
    not JSON on its own. Raises :class:`TraceError`."""
    typed = _typed_document(raw)
    if typed is not None and _canonical(raw, typed):
        return typed, None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not no_duplicate_keys(raw, doc):
        check_line(raw, doc, n, None)
    return typed, doc


def _premapped(spans: list[Span], text: bool) -> _Mapped:
    """The spans of one trace mapped (:data:`_Mapped`)."""
    try:
        mapping = _Mapping(spans, text)
        records = mapping.records()
    except _Bad as exc:
        return str(exc), exc.line
    return marshal.dumps((records, mapping.source(), len(spans)))


def _trajectory(path: str, run: _Run, *, text: bool = True) -> Trajectory:
    from roadcheck.ingest import BadRun

    trace_id = run.trace_ids[0]
    tid = f"{path}#{trace_id}"
    try:
        events, source, count = _mapped(run, text)
    except _Bad as exc:
        raise BadRun(tid, f"trace {trace_id}: {exc}", exc.line) from None
    meta: dict[str, Any] = {"trace_id": trace_id, "spans": count}
    if run.conversation is not None:
        meta["conversation_id"] = run.conversation
        meta["traces"] = run.trace_ids
    return Trajectory(tid, events, path, source, meta)


def _mapped(run: _Run, text: bool) -> tuple[tuple[Event, ...], str, int]:
    """A run's events, source and span count. Raises :class:`_Bad`."""
    if run.mapped is None:
        members = run.members()
        mapping = _Mapping(members, text)
        return tuple(mapping.events()), mapping.source(), len(members)
    done = run.mapped()
    if isinstance(done, tuple):
        raise _Bad(*done)
    records, source, count = marshal.loads(done)
    return tuple(map(_event, records)), source, count


_CONVERSATION = "gen_ai.conversation.id"


def _group(spans: list[Span]) -> list[tuple[list[str], str | None, list[Span]]]:
    """The runs of a file: each trace, with the traces of one conversation joined.

    A run that stops for approval and is resumed (pydantic-ai's deferred tools)
    is two traces, and an approval recorded outside both a third, unless the
    application wraps them in one span. What links them is the
    ``gen_ai.conversation.id`` their spans carry: traces whose spans name exactly
    one and the same conversation are one run, in the order they appear. A trace
    naming none, or more than one, stays on its own.
    """
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    named = ((trace_id, {c for s in members
                         if isinstance(c := s.attrs.get(_CONVERSATION), str) and c})
             for trace_id, members in traces.items())
    return [(ids, conversation, [span for t in ids for span in traces[t]])
            for ids, conversation in _grouped(named)]


def _grouped(traces: Iterable[tuple[str, Collection[str]]]
             ) -> list[tuple[list[str], str | None]]:
    """Traces, each with the conversations its spans name, grouped into runs as
    :func:`_group` says: (trace ids, the conversation joining them or None), in the order
    each run's first trace comes."""
    groups: dict[str, tuple[list[str], str | None]] = {}
    for trace_id, conversations in traces:
        if len(conversations) == 1:
            (conversation,) = conversations
            groups.setdefault("conversation " + conversation, ([], conversation))[0].append(
                trace_id)
        else:
            groups["trace " + trace_id] = ([trace_id], None)
    return list(groups.values())
