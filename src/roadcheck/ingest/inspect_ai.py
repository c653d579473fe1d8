"""The Inspect AI reader: eval logs (``.eval`` archives and ``.json``) into the shared event model.

Inspect writes one log per task run: a ``.json`` document (``version``,
``eval``, ``samples``...) or a ``.eval`` zip archive holding ``header.json`` and
one ``samples/<id>_epoch_<n>.json`` per sample. This reader opens both without
Inspect itself. Each sample (each epoch) is one trajectory, id
``<path>#<sample id>/epoch<N>``; its ``events`` are read in order:

- a ``tool`` event is an ``action``: ``action_type`` = ``function``, ``args`` =
  ``arguments`` (what ran: after an approver's modification), ``call_id`` =
  ``id``, ``result`` = the result's text, ``error`` = the error's message. A
  call whose error is of type ``approval`` was refused by an approver and never
  ran: it is no action;
- a tool call in a ``model`` event's output that no ``tool`` event answers is
  an action too (nothing says it did not run), unless an approver refused it;
- an ``approval`` event that approves or modifies is a ``checkpoint``
  ``approve_<function>`` (``confirmed_by`` = the approver, ``decision``,
  ``call_id``, ``tool_name``); ``reject``, ``escalate`` and ``terminate`` are
  never checkpoints;
- a tool event naming an ``agent`` (Inspect's ``handoff()``/``as_tool()``) is
  also a ``handoff`` to that agent, its arguments as the payload;
- every event belongs to the agent whose ``agent`` span holds it (Inspect
  writes each event's ``span_id``; ``span_begin`` names the span, its type and
  parent): the caller of a tool, the speaker of a message, the agent that
  handed over; ``inspect`` when no agent span holds it;
- the sample's input is a user ``message``, the model's text a ``message``
  (``yields_turn`` when the output calls no tool); the run ends with ``final``.

Without an ``events`` list the sample's ``messages`` are read instead
(assistant ``tool_calls`` and ``tool`` messages). Structure the reader does not
understand is that sample's ERROR, naming the file, line and field; a log that
is not one (broken zip, broken JSON, a repeated key) is the file's ERROR. See
docs/frameworks/inspect.md.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import check_document, depth_refused, too_deep

__all__ = ["MAX_MEMBER_BYTES", "detect_inspect", "read_inspect"]

AGENT = "inspect"
#: The largest archive member read (uncompressed); a larger one is refused, not read.
MAX_MEMBER_BYTES = 256 * 1024 * 1024
#: The largest compression ratio accepted for one member (a zip bomb has far more).
_MAX_RATIO = 200
_ZIP_MAGIC = b"PK\x03\x04"
_ZIP_ZSTD = 93
_CHECKPOINT_DECISIONS = frozenset({"approve", "modify"})
_DECISIONS = frozenset({"approve", "modify", "reject", "escalate", "terminate"})


def detect_inspect(data: bytes) -> float:
    """CERTAIN for an Inspect ``.eval`` archive or a ``.json`` eval log; else 0."""
    from roadcheck.ingest import CERTAIN

    if data.startswith(_ZIP_MAGIC):
        return CERTAIN if b"header.json" in data or b"_journal/start.json" in data else 0.0
    head = data[:8192].lstrip()
    if (head.startswith(b"{") and b'"eval"' in head and b'"task_id"' in head
            and b'"version"' in head):
        return CERTAIN
    return 0.0


class _Bad(Exception):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _decode(raw: bytes, path: str, where: str) -> Any:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        deep = depth_refused(raw, exc)
        if deep is not None:
            raise TraceError(f"{where}{too_deep()}", path=path, line=deep) from None
        line = raw.count(b"\n", 0, exc.pos) + 1
        raise TraceError(f"{where}unparseable JSON: {exc.msg}", path=path, line=line) from None
    try:
        check_document(raw, doc, path)
    except TraceError as exc:
        raise TraceError(f"{where}{exc.message}", path=path, line=exc.line) from None
    return doc


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: str) -> bytes:
    if info.file_size > MAX_MEMBER_BYTES or (
            info.compress_size and info.file_size > _MAX_RATIO * max(info.compress_size, 1024)):
        raise TraceError(f"archive member {info.filename} declares {info.file_size} bytes "
                         f"({info.compress_size} compressed); refused as too large", path=path)
    if info.compress_type == _ZIP_ZSTD:  # what Inspect writes; zipfile reads it from 3.14 on
        return _zstd_member(zf, info, path)
    try:
        with zf.open(info) as fh:
            raw = fh.read(MAX_MEMBER_BYTES + 1)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise TraceError(f"archive member {info.filename} cannot be read: {exc}",
                         path=path) from None
    if len(raw) > MAX_MEMBER_BYTES:
        raise TraceError(f"archive member {info.filename} is larger than "
                         f"{MAX_MEMBER_BYTES} bytes; refused", path=path)
    return raw


def _zstd_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: str) -> bytes:
    """A zstd-compressed member, read from its local header and decompressed, bounded."""
    fp = zf.fp
    if fp is None:
        raise TraceError("the archive is closed", path=path)
    fp.seek(info.header_offset)
    head = fp.read(30)
    if len(head) < 30 or not head.startswith(_ZIP_MAGIC):
        raise TraceError(f"archive member {info.filename}: bad local header", path=path)
    start = info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(
        head[28:30], "little")
    fp.seek(start)
    comp = fp.read(info.compress_size)
    if len(comp) != info.compress_size:
        raise TraceError(f"archive member {info.filename} is truncated", path=path)
    try:
        import zstandard
    except ImportError:
        raise TraceError("cannot read a zstd-compressed .eval archive without the zstandard "
                         "module: pip install 'roadcheck[zstd]'", path=path) from None
    try:
        obj = zstandard.ZstdDecompressor().decompressobj()
        raw = obj.decompress(comp)
    except zstandard.ZstdError as exc:
        raise TraceError(f"archive member {info.filename} cannot be decompressed: {exc}",
                         path=path) from None
    if len(raw) > MAX_MEMBER_BYTES or len(raw) != info.file_size:
        raise TraceError(f"archive member {info.filename} decompresses to {len(raw)} bytes, "
                         f"not the {info.file_size} it declares; refused", path=path)
    if (zlib.crc32(raw) & 0xFFFFFFFF) != info.CRC:
        raise TraceError(f"archive member {info.filename} fails its CRC check", path=path)
    return raw


# One run: (trajectory id, sample object, raw bytes it was decoded from, where-prefix).
_Run = tuple[str, dict[str, Any], bytes, str]


def _runs(path: str, data: bytes) -> list[_Run]:
    if data.startswith(_ZIP_MAGIC):
        return _archive_runs(path, data)
    doc = _decode(data, path, "")
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise TraceError("not an Inspect eval log: no 'eval' object", path=path, line=1)
    samples = doc.get("samples", [])
    if samples is None:
        samples = []
    if not isinstance(samples, list):
        raise TraceError(f"'samples' must be a list, got {type(samples).__name__}",
                         path=path, line=1)
    if not samples:
        raise TraceError("the log holds no samples (written with --no-log-samples?): "
                         "nothing to judge", path=path, line=1)
    runs = []
    for i, sample in enumerate(samples):
        if not isinstance(sample, dict):
            raise TraceError(f"samples[{i}] is {type(sample).__name__}, not an object",
                             path=path, line=1)
        runs.append((_run_id(path, sample, f"samples[{i}]"), sample, data, ""))
    return runs


def _archive_runs(path: str, data: bytes) -> list[_Run]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise TraceError(f"not a readable .eval archive: {exc}", path=path) from None
    with zf:
        infos = [i for i in zf.infolist()
                 if i.filename.startswith("samples/") and i.filename.endswith(".json")]
        names = {i.filename for i in zf.infolist()}
        if "header.json" not in names and "_journal/start.json" not in names:
            raise TraceError("not an Inspect .eval archive: no header.json", path=path)
        if not infos:
            raise TraceError("the archive holds no samples/*.json: nothing to judge", path=path)
        runs = []
        for info in infos:
            raw = _member(zf, info, path)
            where = f"{info.filename}: "
            sample = _decode(raw, path, where)
            if not isinstance(sample, dict):
                raise TraceError(f"{where}a sample is a JSON object, got "
                                 f"{type(sample).__name__}", path=path, line=1)
            runs.append((_run_id(path, sample, info.filename), sample, raw, where))
    return runs


def _run_id(path: str, sample: dict[str, Any], where: str) -> str:
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    if not isinstance(sid, (str, int)) or isinstance(sid, bool):
        raise TraceError(f"{where}: sample 'id' must be a string or an integer", path=path,
                         line=1)
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        raise TraceError(f"{where}: sample 'epoch' must be an integer", path=path, line=1)
    return f"{path}#{sid}/epoch{epoch}"


class _Lines:
    """Line numbers of events, found by their unique ``uuid`` (cheap, in order)."""

    def __init__(self, raw: bytes) -> None:
        self.raw, self.pos = raw, 0

    def of(self, obj: dict[str, Any]) -> int | None:
        uid = obj.get("uuid")
        if not isinstance(uid, str) or not uid:
            return None
        needle = orjson.dumps(uid)
        at = self.raw.find(needle, self.pos)
        if at < 0:
            at = self.raw.find(needle)
            if at < 0:
                return None
        else:
            self.pos = at
        return self.raw.count(b"\n", 0, at) + 1


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    """Replace Inspect's ``attachment://<hash>`` strings by what they stand for."""
    if isinstance(value, str) and value.startswith("attachment://"):
        key = value[len("attachment://"):]
        if key not in attachments:
            raise _Bad(f"{value!r} names no entry of the sample's 'attachments'")
        return attachments[key]
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _text(content: Any, what: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (int, float, bool)):
        return orjson.dumps(content).decode()
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                raise _Bad(f"{what}[{i}] is {type(part).__name__}, not an object")
            if part.get("type") == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise _Bad(f"{what}[{i}] has no 'text' string")
                parts.append(text)
        return "\n".join(parts)
    if isinstance(content, dict):
        return orjson.dumps(content, option=orjson.OPT_SORT_KEYS).decode()
    raise _Bad(f"{what} must be text or a list of content parts")


def _call(tc: Any, what: str) -> tuple[str, str, dict[str, Any]]:
    """(id, function, arguments) of a ToolCall object."""
    if not isinstance(tc, dict):
        raise _Bad(f"{what} is {type(tc).__name__}, not a tool call object")
    cid, fn, args = tc.get("id"), tc.get("function"), tc.get("arguments", {})
    if not isinstance(cid, str) or not cid:
        raise _Bad(f"{what} has no 'id' string")
    if not isinstance(fn, str) or not fn:
        raise _Bad(f"{what} has no 'function' name")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _Bad(f"{what}: 'arguments' must be an object, got {type(args).__name__}")
    return cid, fn, args


def _error(err: Any, what: str) -> tuple[str, str] | None:
    """(type, message) of a ToolCallError, or None."""
    if err is None:
        return None
    if not isinstance(err, dict) or not isinstance(err.get("type"), str):
        raise _Bad(f"{what}: 'error' must be an object with a 'type'")
    msg = err.get("message", "")
    if not isinstance(msg, str):
        raise _Bad(f"{what}: 'error.message' must be a string")
    return err["type"], msg or err["type"]


def _events(sample: dict[str, Any], raw: bytes) -> list[Event]:
    attachments = sample.get("attachments") or {}
    if not isinstance(attachments, dict):
        raise _Bad("'attachments' must be an object")
    events = sample.get("events")
    if events is not None and not isinstance(events, list):
        raise _Bad(f"'events' must be a list, got {type(events).__name__}")
    staged: list[tuple[str, str | None, dict[str, Any], int | None]] = []
    _input(sample, attachments, staged)
    if events:
        _from_events(events, attachments, staged, _Lines(raw))
    else:
        _from_messages(sample, attachments, staged)
    out: list[Event] = []
    for seq, (kind, who, fields, line) in enumerate(staged, 1):
        ts = fields.pop("ts", None)
        out.append(Event.make(seq, kind, who, line=line, ts=ts, **fields))
    out.append(Event.make(len(out) + 1, "final", None, task_success=False))
    return out


Staged = list[tuple[str, str | None, dict[str, Any], int | None]]


def _input(sample: dict[str, Any], attachments: dict[str, Any], staged: Staged) -> None:
    inp = _resolve(sample.get("input"), attachments)
    if isinstance(inp, str):
        staged.append(("message", "user", {"role": "user", "text": inp}, None))
    elif isinstance(inp, list):
        for i, msg in enumerate(inp):
            if not isinstance(msg, dict):
                raise _Bad(f"input[{i}] is not a message object")
            role = msg.get("role")
            if role in ("user", "system"):
                staged.append(("message", role, {"role": role, "text": _text(
                    msg.get("content"), f"input[{i}].content")}, None))
    elif inp is not None:
        raise _Bad("sample 'input' must be a string or a list of messages")


def _ts(obj: dict[str, Any], what: str) -> str | None:
    ts = obj.get("timestamp")
    if ts is not None and not isinstance(ts, str):
        raise _Bad(f"{what}: 'timestamp' must be a string")
    return ts


def _walk(events: list[Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every event with its position, nested ``events`` of tool and subtask events included."""
    for i, ev in enumerate(events):
        what = f"{path}[{i}]"
        if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
            raise _Bad(f"{what} is not an object with an 'event' type")
        yield what, ev
        inner = ev.get("events")
        if inner and ev["event"] in ("tool", "subtask"):
            if not isinstance(inner, list):
                raise _Bad(f"{what}: nested 'events' must be a list")
            yield from _walk(inner, f"{what}.events")


def _choices(ev: dict[str, Any], what: str, line: int | None) -> list[Any]:
    """The ``output.choices`` of a model event."""
    out = ev.get("output")
    if not isinstance(out, dict):
        raise _Bad(f"{what}: a model event has no 'output' object", line)
    choices = out.get("choices") or []
    if not isinstance(choices, list):
        raise _Bad(f"{what}: 'output.choices' must be a list", line)
    return choices


def _choice_message(choice: Any, c: int, what: str, line: int | None) -> dict[str, Any]:
    msg = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(msg, dict):
        raise _Bad(f"{what}: output.choices[{c}] has no 'message' object", line)
    return msg


def _approval(ev: dict[str, Any], what: str, line: int | None) -> tuple[str, str]:
    """(decision, approver) of an approval event."""
    decision, who = ev.get("decision"), ev.get("approver")
    if not isinstance(decision, str) or decision not in _DECISIONS:
        raise _Bad(f"{what}: unknown approval decision {decision!r}", line)
    if not isinstance(who, str) or not who:
        raise _Bad(f"{what}: an approval has no 'approver'", line)
    return decision, who


def _checkpoint(ev: dict[str, Any], what: str, fn: str, cid: str) -> dict[str, Any]:
    """The checkpoint fields of an approval (checked) that approves or modifies a call."""
    cp: dict[str, Any] = {"ts": _ts(ev, what), "checkpoint_id": f"approve_{fn}",
                          "confirmed_by": ev["approver"], "decision": ev["decision"],
                          "tool_name": fn, "call_id": cid}
    expl = ev.get("explanation")
    if isinstance(expl, str) and expl:
        cp["text"] = expl
    return cp


def _tool_event(ev: dict[str, Any], what: str, line: int | None, attachments: dict[str, Any]
                ) -> tuple[str, str, Any, tuple[str, str] | None, str]:
    """(call id, function, arguments, error, result text) of a tool event."""
    try:
        cid, fn, args = _call(ev, what)
        err = _error(ev.get("error"), what)
        args = _resolve(args, attachments)
        result = _text(_resolve(ev.get("result"), attachments), f"{what}: 'result'")
    except _Bad as exc:
        raise _Bad(str(exc), line) from None
    return cid, fn, args, err, result


def _unran(entry: tuple[str, str | None, dict[str, Any], int | None], refused: set[str]) -> bool:
    """True for an action staged where it was asked for that a tool event placed where it
    ran, and for one an approver refused that no tool event says ran."""
    kind, _, fields, _ = entry
    return kind == "action" and bool(fields.get("_ran") or (
        fields["call_id"] in refused and "result" not in fields and "error" not in fields))


class _SampleEvents:
    """What a sample's events add up to while they are read, one event type per method."""

    def __init__(self, attachments: dict[str, Any], staged: Staged, lines: _Lines) -> None:
        self.attachments, self.staged, self.lines = attachments, staged, lines
        self.calls: dict[str, dict[str, Any]] = {}    # call id -> its action fields (staged)
        self.refused: set[str] = set()
        self.ran: set[str] = set()
        # span id -> (the agent an ``agent`` span names, else None; the parent span id)
        self.spans: dict[str, tuple[str | None, str | None]] = {}

    def agent_of(self, ev: dict[str, Any]) -> str:
        """The agent whose span holds ``ev`` (Inspect writes each event's ``span_id``)."""
        spans = self.spans
        sid, hops = ev.get("span_id"), 0
        while isinstance(sid, str) and sid in spans and hops <= len(spans):
            name, sid = spans[sid]
            if name is not None:
                return name
            hops += 1
        return AGENT

    def span_begin(self, what: str, ev: dict[str, Any]) -> None:
        sid, parent, name = ev.get("id"), ev.get("parent_id"), ev.get("name")
        if not isinstance(sid, str) or not sid:
            raise _Bad(f"{what}: a span_begin event has no 'id'", self.lines.of(ev))
        if ev.get("type") == "agent" and (not isinstance(name, str) or not name):
            raise _Bad(f"{what}: an agent span has no 'name'", self.lines.of(ev))
        self.spans[sid] = (name if ev.get("type") == "agent" else None,
                           parent if isinstance(parent, str) else None)

    def model(self, what: str, ev: dict[str, Any]) -> None:
        line = self.lines.of(ev)
        for c, choice in enumerate(_choices(ev, what, line)[:1]):
            self.choice(what, ev, line, _choice_message(choice, c, what, line))

    def choice(self, what: str, ev: dict[str, Any], line: int | None,
               msg: dict[str, Any]) -> None:
        """The model's text, and the tool calls it asks for."""
        tcs = _resolve(msg.get("tool_calls"), self.attachments) or []
        if not isinstance(tcs, list):
            raise _Bad(f"{what}: 'tool_calls' must be a list", line)
        try:
            text = _text(_resolve(msg.get("content"), self.attachments),
                         f"{what}: message.content")
        except _Bad as exc:
            raise _Bad(str(exc), line) from None
        if text:
            self.staged.append(("message", self.agent_of(ev), {
                "ts": _ts(ev, what), "role": "assistant", "text": text,
                "yields_turn": not tcs}, line))
        for t, tc in enumerate(tcs):
            self.asked(what, ev, line, f"{what}: tool_calls[{t}]", tc)

    def asked(self, what: str, ev: dict[str, Any], line: int | None, where: str,
              tc: Any) -> None:
        """A tool call the model asks for: an action until a tool event says where it ran."""
        try:
            cid, fn, args = _call(tc, where)
        except _Bad as exc:
            raise _Bad(str(exc), line) from None
        if cid in self.calls:
            return  # the same call seen again (a retried generate)
        fields = {"ts": _ts(ev, what), "action_type": fn, "args": args, "call_id": cid}
        self.calls[cid] = fields
        self.staged.append(("action", self.agent_of(ev), fields, line))

    def approval(self, what: str, ev: dict[str, Any]) -> None:
        line = self.lines.of(ev)
        try:
            cid, fn, _ = _call(ev.get("call"), f"{what}: 'call'")
        except _Bad as exc:
            raise _Bad(str(exc), line) from None
        decision, who = _approval(ev, what, line)
        if decision in _CHECKPOINT_DECISIONS:
            self.staged.append(("checkpoint", who, _checkpoint(ev, what, fn, cid), line))
        elif decision in ("reject", "terminate"):
            self.refused.add(cid)

    def tool(self, what: str, ev: dict[str, Any]) -> None:
        line = self.lines.of(ev)
        cid, fn, args, err, result = _tool_event(ev, what, line, self.attachments)
        if cid in self.ran:
            raise _Bad(f"{what}: tool call {cid!r} has two tool events", line)
        self.ran.add(cid)
        if err is not None and err[0] == "approval":
            self.refused.add(cid)  # refused by an approver: it never ran
            return
        pending = self.calls.get(cid)
        if pending is not None:
            pending["_ran"] = True  # the call is placed where it ran, not where it was asked
        # what ran (after an approver's modification), where it ran
        fields = self.calls[cid] = {"ts": _ts(ev, what), "action_type": fn, "args": args,
                                    "call_id": cid}
        by = self.agent_of(ev)
        self.staged.append(("action", by, fields, line))
        if err is not None:
            fields["error"] = err[1]
        else:
            fields["result"] = result
        agent = ev.get("agent")
        if isinstance(agent, str) and agent:
            # from the agent whose span the transfer ran in (``inspect`` when none)
            self.staged.append(("handoff", by, {"ts": _ts(ev, what), "from_agent": by,
                                                "to_agent": agent, "payload": args,
                                                "call_id": cid}, line))


#: The event types read; the others (sample_init, state, score...) record no event.
_EVENT_TYPES: dict[str, Callable[[_SampleEvents, str, dict[str, Any]], None]] = {
    "span_begin": _SampleEvents.span_begin, "model": _SampleEvents.model,
    "approval": _SampleEvents.approval, "tool": _SampleEvents.tool}


def _from_events(events: list[Any], attachments: dict[str, Any], staged: Staged,
                 lines: _Lines) -> None:
    sample = _SampleEvents(attachments, staged, lines)
    for what, ev in _walk(events, "events"):
        read = _EVENT_TYPES.get(ev["event"])
        if read is not None:
            read(sample, what, ev)
    # A call an approver refused did not run, unless a tool event says it did.
    staged[:] = [s for s in staged if not _unran(s, sample.refused)]


def _assistant_message(msg: dict[str, Any], what: str, attachments: dict[str, Any],
                       calls: dict[str, dict[str, Any]], staged: Staged) -> None:
    tcs = _resolve(msg.get("tool_calls"), attachments) or []
    if not isinstance(tcs, list):
        raise _Bad(f"{what}: 'tool_calls' must be a list")
    text = _text(_resolve(msg.get("content"), attachments), f"{what}.content")
    if text:
        staged.append(("message", AGENT, {"role": "assistant", "text": text,
                                          "yields_turn": not tcs}, None))
    for t, tc in enumerate(tcs):
        cid, fn, args = _call(tc, f"{what}: tool_calls[{t}]")
        if cid in calls:
            raise _Bad(f"{what}: tool call id {cid!r} is used twice")
        calls[cid] = {"action_type": fn, "args": args, "call_id": cid}
        staged.append(("action", AGENT, calls[cid], None))


def _tool_message(msg: dict[str, Any], what: str, attachments: dict[str, Any],
                  calls: dict[str, dict[str, Any]], refused: set[str]) -> None:
    cid = msg.get("tool_call_id")
    if not isinstance(cid, str) or cid not in calls:
        raise _Bad(f"{what}: a tool message answers call id {cid!r}, which no "
                   "earlier tool call made")
    target = calls[cid]
    if "result" in target or "error" in target or cid in refused:
        raise _Bad(f"{what}: call {cid!r} is answered twice")
    err = _error(msg.get("error"), what)
    if err is not None and err[0] == "approval":
        refused.add(cid)
    elif err is not None:
        target["error"] = err[1]
    else:
        target["result"] = _text(_resolve(msg.get("content"), attachments), f"{what}.content")


def _from_messages(sample: dict[str, Any], attachments: dict[str, Any],
                   staged: Staged) -> None:
    messages = sample.get("messages")
    if not isinstance(messages, list):
        raise _Bad("a sample has neither 'events' nor a 'messages' list")
    calls: dict[str, dict[str, Any]] = {}
    refused: set[str] = set()
    for i, msg in enumerate(messages):
        what = f"messages[{i}]"
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise _Bad(f"{what} is not a message object with a 'role'")
        if msg["role"] == "assistant":
            _assistant_message(msg, what, attachments, calls, staged)
        elif msg["role"] == "tool":
            _tool_message(msg, what, attachments, calls, refused)
    staged[:] = [s for s in staged if not (s[0] == "action" and s[2]["call_id"] in refused)]


def _build(run: _Run) -> Trajectory:
    run_id, sample, raw, where = run
    try:
        events = _events(sample, raw)
    except _Bad as exc:
        raise TraceError(f"{where}sample {run_id.split('#', 1)[1]}: {exc}",
                         line=exc.line) from None
    path = run_id.split("#", 1)[0]
    meta: dict[str, Any] = {k: sample[k] for k in ("id", "epoch") if k in sample}
    return Trajectory(run_id, tuple(events), path, "inspect", meta)


def read_inspect(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per sample and epoch of an Inspect eval log.

    A broken log is one failure for the file; a malformed sample fails alone.
    """
    from roadcheck.ingest import ReadFailure

    try:
        runs = _runs(path, data)
    except TraceError as exc:
        exc.path = path
        yield ReadFailure(path, path, exc)
        return
    for run in runs:
        try:
            yield _build(run)
        except TraceError as exc:
            exc.path = path
            yield ReadFailure(run[0], path, exc)
