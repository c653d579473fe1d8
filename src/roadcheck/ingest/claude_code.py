"""The Claude Code reader: session transcripts into the shared event model.

Claude Code writes one JSON object per line to
``~/.claude/projects/<project>/<session>.jsonl`` (and a subagent's run to
``<session>/subagents/agent-<id>.jsonl``, every entry ``isSidechain: true``).
Entries are linked by ``uuid`` / ``parentUuid`` (``logicalParentUuid`` across a
compaction). The format is not specified; this reader follows the files
Claude Code writes:

- the live chain is followed from the last entry back by ``parentUuid``; a
  ``user`` entry holding only tool results that answers a call on the chain
  belongs to it (parallel calls answer off the chain). Messages, questions and
  answers on other branches (a prompt edited and re-sent) are not the road
  taken and are not read;
- a user prompt is a ``message`` (role ``user``; ``system`` for entries Claude
  Code injected, ``isMeta``); assistant text is a ``message`` (role
  ``assistant``, ``yields_turn`` on the last text before the next prompt);
- a ``tool_use`` block is an ``action``: ``action_type`` = tool name, ``args``
  = its input, ``call_id``, ``result`` = the tool result's text, ``error`` =
  that text when the result is an error, and ``command`` = the shell command of
  a ``Bash`` call. A call the user refused at the permission prompt never ran
  and is no action. A call on an abandoned branch that was answered (not
  refused) ran and is read: a tool that ran outranks the branch it is on;
- an answered ``AskUserQuestion`` is a ``checkpoint`` ``AskUserQuestion``
  (``confirmed_by: user``, ``text`` = the answer, ``answers``), an approved
  ``ExitPlanMode`` a checkpoint ``ExitPlanMode``;
- a ``Task`` (or ``Agent``) call is also a ``handoff`` to the subagent
  (``to_agent`` = its ``subagent_type``), with the call's input as payload.

Structure the reader does not understand is the file's ERROR, one line naming
the file and line. See docs/frameworks/claude-code.md.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from sys import intern
from typing import Any, cast

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._fast import (
    Slow,
    as_long_lived,
    chunk_end,
    kept_lines,
    lines_decoder,
    native,
    no_cycle_collection,
)
from roadcheck.ingest._json import lines_of, message, repeated_key
from roadcheck.shellcmd import command_text

__all__ = ["detect_claude_code", "read_claude_code"]

MAIN_AGENT = "claude"
_REFUSED = "The user doesn't want to proceed with this tool use"
_HANDOFF_TOOLS = frozenset({"Task", "Agent"})
_CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_MESSAGE_TYPES = frozenset({"user", "assistant"})


class _Bad(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def detect_claude_code(data: bytes) -> float:
    """Certain when one of the first lines is a Claude Code transcript entry: an object
    with ``parentUuid``, ``sessionId``, ``uuid`` and a ``type`` string, a shape only
    Claude Code writes."""
    from roadcheck.ingest import CERTAIN

    head = data[:65536]
    if b'"sessionId"' not in head or b'"parentUuid"' not in head:
        return 0.0
    for raw in head.split(b"\n")[:50]:
        raw = raw.strip()
        if not raw.startswith(b"{"):
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if (isinstance(obj, dict) and "parentUuid" in obj and "sessionId" in obj
                and "uuid" in obj and isinstance(obj.get("type"), str)):
            return CERTAIN
    return 0.0


def _text_of(content: Any, line: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                raise _Bad(line, f"content part {i} is {type(part).__name__}, not an object")
            if part.get("type") == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise _Bad(line, f"content part {i} has no 'text' string")
                parts.append(text)
        return "\n".join(parts)
    raise _Bad(line, f"'content' must be a string or a list, got {type(content).__name__}")


def _entries(path: str, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, raw in lines_of(data):
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _Bad(n, f"unparseable JSON: {exc.msg}") from None
        key = repeated_key(raw, obj)
        if key is not None:
            raise _Bad(n, message(key))
        if not isinstance(obj, dict):
            raise _Bad(n, f"an entry is a JSON object, got {type(obj).__name__}")
        kind = obj.get("type")
        if not isinstance(kind, str):
            raise _Bad(n, "missing required key 'type'")
        for key in ("uuid", "parentUuid", "logicalParentUuid"):
            val = obj.get(key)
            if val is not None and not isinstance(val, str):
                raise _Bad(n, f"'{key}' must be a string, got {type(val).__name__}")
        side = obj.get("isSidechain")
        if side is not None and not isinstance(side, bool):
            raise _Bad(n, f"'isSidechain' must be true or false, got {type(side).__name__}")
        out.append((n, _slim(obj)))
    return out


#: The keys of an entry the reader reads; the rest (usage, cwd, version, a tool's
#: full output again in ``toolUseResult``...) is dropped as each line is decoded,
#: so a long transcript is not held twice.
_READ = ("type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "agentId",
         "sessionId", "timestamp", "isMeta")


def _slim(obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an entry the reader reads (an entry given twice is compared on it)."""
    out = {key: obj[key] for key in _READ if key in obj}
    out["type"] = intern(out["type"])
    session = out.get("sessionId")
    if isinstance(session, str):
        out["sessionId"] = intern(session)
    if "message" in obj:
        msg = obj["message"]
        out["message"] = ({"content": msg["content"]} if "content" in msg else {}) if isinstance(
            msg, dict) else msg
    extra = obj.get("toolUseResult")
    if isinstance(extra, str):
        out["toolUseResult"] = extra
    elif isinstance(extra, dict) and "answers" in extra:
        out["toolUseResult"] = {"answers": extra["answers"]}
    return out


def _live(entries: list[tuple[int, dict[str, Any]]]) -> set[str]:
    """The uuids on the chain from the last entry back to the first."""
    by_uuid: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, obj in entries:
        uid = obj.get("uuid")
        if isinstance(uid, str):
            if uid in by_uuid and by_uuid[uid][1] != obj:
                raise _Bad(n, f"uuid {uid!r} is given twice (first at line {by_uuid[uid][0]})")
            by_uuid.setdefault(uid, (n, obj))
    leaf = next((obj["uuid"] for _, obj in reversed(entries)
                 if isinstance(obj.get("uuid"), str) and obj.get("type") in
                 ("user", "assistant", "system", "progress", "attachment")), None)
    live: set[str] = set()
    cur = leaf
    while cur is not None and cur in by_uuid:
        if cur in live:
            raise _Bad(by_uuid[cur][0], f"the parentUuid chain loops at {cur!r}")
        live.add(cur)
        obj = by_uuid[cur][1]
        cur = obj.get("parentUuid") or obj.get("logicalParentUuid")
    return live


def _events(path: str, data: bytes, keep_text: bool = True) -> tuple[list[Event], dict[str, Any]]:
    entries = _entries(path, data)
    if not entries:
        raise _Bad(1, "empty transcript: no entries")
    sides = {bool(obj.get("isSidechain")) for _, obj in entries if obj.get("type") in
             _MESSAGE_TYPES}
    if sides == {True, False}:
        line = next(n for n, o in entries if o.get("isSidechain") is True)
        raise _Bad(line, "a sidechain entry inside a main transcript: subagent runs are read "
                         "from their own files (<session>/subagents/agent-<id>.jsonl)")
    live = _live(entries)
    agent_id = next((o.get("agentId") for _, o in entries
                     if isinstance(o.get("agentId"), str)), None)
    agent = f"agent-{agent_id}" if sides == {True} and agent_id else (
        "subagent" if sides == {True} else MAIN_AGENT)
    # Every call, on any branch, by id: (action fields, on the live chain, line).
    calls: dict[str, tuple[dict[str, Any], bool, int]] = {}
    staged: list[tuple[str, str | None, dict[str, Any], int]] = []  # kind, agent, fields, line
    session = None
    for n, obj in entries:
        kind = obj["type"]
        if kind not in _MESSAGE_TYPES:
            continue
        session = session or obj.get("sessionId")
        uid = obj.get("uuid")
        msg = obj.get("message")
        if not isinstance(msg, dict):
            raise _Bad(n, f"a {kind} entry has no 'message' object")
        ts = obj.get("timestamp")
        if ts is not None and not isinstance(ts, str):
            raise _Bad(n, f"'timestamp' must be a string, got {type(ts).__name__}")
        content = msg.get("content")
        blocks = content if isinstance(content, list) else None
        if content is not None and not isinstance(content, (str, list)):
            raise _Bad(n, f"'message.content' must be a string or a list, got "
                          f"{type(content).__name__}")
        results = [b for b in blocks or () if isinstance(b, dict)
                   and isinstance(b.get("type"), str) and b["type"].endswith("tool_result")]
        on_chain = uid in live
        if not on_chain and kind == "user" and results and len(results) == len(blocks or ()):
            parent = obj.get("parentUuid")
            on_chain = parent in live  # a parallel call's answer hangs off its call
        for i, block in enumerate(blocks or ()):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise _Bad(n, f"content block {i} is not an object with a 'type'")
            btype = block["type"]
            if btype in _CALL_BLOCKS:
                name, call_id, args = block.get("name"), block.get("id"), block.get("input")
                if not isinstance(name, str) or not name:
                    raise _Bad(n, f"content block {i}: a {btype} has no 'name'")
                if not isinstance(call_id, str) or not call_id:
                    raise _Bad(n, f"content block {i}: a {btype} has no 'id'")
                if args is not None and not isinstance(args, dict):
                    raise _Bad(n, f"content block {i}: 'input' must be an object")
                if call_id in calls:
                    raise _Bad(n, f"tool call id {call_id!r} is used twice (first at line "
                                  f"{calls[call_id][2]})")
                fields: dict[str, Any] = {"ts": ts, "action_type": name, "args": args or {},
                                          "call_id": call_id}
                command = command_text((args or {}).get("command")) if name == "Bash" else None
                if command is not None:
                    fields["command"] = command
                calls[call_id] = (fields, on_chain, n)
                staged.append(("action", agent, fields, n))
                if name in _HANDOFF_TOOLS and on_chain:
                    to = (args or {}).get("subagent_type")
                    staged.append(("handoff", agent, {
                        "ts": ts, "from_agent": agent,
                        "to_agent": to if isinstance(to, str) and to else "subagent",
                        "payload": args or {}, "call_id": call_id}, n))
            elif btype.endswith("tool_result"):
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str) or call_id not in calls:
                    raise _Bad(n, f"content block {i}: a tool result answers call id "
                                  f"{call_id!r}, which no earlier tool call made")
                target = calls[call_id][0]
                if "result" in target or "error" in target or target.get("_refused"):
                    raise _Bad(n, f"content block {i}: call {call_id!r} is answered twice")
                text = _text_of(block.get("content"), n)
                is_error = block.get("is_error")
                if is_error is not None and not isinstance(is_error, bool):
                    raise _Bad(n, f"content block {i}: 'is_error' must be true or false")
                if is_error and (text.startswith(_REFUSED)
                                 or obj.get("toolUseResult") == "User rejected tool use"):
                    target["_refused"] = True  # refused at the permission prompt: never ran
                    continue
                if is_error:
                    target["error"] = text
                else:
                    target["result"] = text
                    tool = target["action_type"]
                    if on_chain and tool in ("AskUserQuestion", "ExitPlanMode"):
                        cp: dict[str, Any] = {"ts": obj.get("timestamp"), "checkpoint_id": tool,
                                              "confirmed_by": "user", "text": text,
                                              "call_id": call_id}
                        extra = obj.get("toolUseResult")
                        if tool == "AskUserQuestion" and isinstance(extra, dict) and isinstance(
                                extra.get("answers"), dict):
                            cp["answers"] = extra["answers"]
                        staged.append(("checkpoint", "user", cp, n))
            elif "tool" in btype:
                raise _Bad(n, f"content block {i}: unknown tool block type {btype!r}; a "
                              "misread call would hide a guarded action")
        if not on_chain:
            continue
        if kind == "user" and not results:
            text = _text_of(content, n)
            role = "system" if obj.get("isMeta") is True else "user"
            if role == "user":
                _yield_turn(staged)
            staged.append(("message", role, {"ts": ts, "role": role, "text": text}, n))
        elif kind == "assistant":
            text = _text_of(content, n)
            if text:
                staged.append(("message", agent, {"ts": ts, "role": "assistant",
                                                  "text": text, "yields_turn": False}, n))
    _yield_turn(staged)
    off_chain = {call_id for call_id, (_, on_chain, _) in calls.items() if not on_chain}
    del calls
    return _built(staged, off_chain, keep_text), {"session_id": session} if isinstance(
        session, str) else {}


def _yield_turn(staged: list[tuple[str, str | None, dict[str, Any], int]]) -> None:
    """Mark the assistant message that ended the agent's turn."""
    if staged and staged[-1][0] == "message" and staged[-1][2].get("role") == "assistant":
        staged[-1][2]["yields_turn"] = True


# -- the fast path ----------------------------------------------------------------------------
#
# Where the C extension is built, ``claude_lines`` reads the lines a chunk at a time, checks
# them as ``check_lines`` does and builds only the fields the reader reads (_c_lines). Without
# it, or where it gives way, the lines are decoded a chunk at a time into structs that declare
# the fields Claude Code writes, straight from the file's bytes, and every key is checked
# (ingest._fast.kept_lines): by ``check_lines`` where the extension is built and the chunk's
# closed structs skipped nothing, else by the length of the chunk's re-encoding; a line with a
# field the structs do not declare, or a key given twice, is read again by orjson and checked
# exactly.
# Both give the loop the same tuple per entry (_EntryFields). The events are built as the
# lines are read, numbered as if every entry were on the live chain; once the last line has
# named the chain, a transcript where that is so (the common case) is done, and any other is
# renumbered without what the strict reading above never stages. Anything that reading would
# refuse or read differently (a type it does not expect, a uuid given twice, a call answered
# twice...) makes the file give way to it (``Slow``), which says what is wrong.

class _Block(msgspec.Struct, gc=False, omit_defaults=True):
    type: str
    text: Any = UNSET
    id: Any = UNSET
    name: Any = UNSET
    input: Any = UNSET
    tool_use_id: Any = UNSET
    content: Any = UNSET
    is_error: Any = UNSET
    caller: Any = UNSET
    thinking: Any = UNSET
    signature: Any = UNSET
    source: Any = UNSET
    citations: Any = UNSET
    cache_control: Any = UNSET
    data: Any = UNSET


class _Message(msgspec.Struct, gc=False, omit_defaults=True):
    content: str | list[_Block] | UnsetType | None = UNSET
    role: Any = UNSET
    id: Any = UNSET
    type: Any = UNSET
    model: Any = UNSET
    stop_reason: Any = UNSET
    stop_sequence: Any = UNSET
    usage: Any = UNSET
    container: Any = UNSET
    context_management: Any = UNSET


class _Entry(msgspec.Struct, gc=False, omit_defaults=True):
    type: str
    uuid: str | UnsetType | None = UNSET
    parentUuid: str | UnsetType | None = UNSET
    logicalParentUuid: str | UnsetType | None = UNSET
    isSidechain: bool | UnsetType | None = UNSET
    agentId: Any = UNSET
    sessionId: Any = UNSET
    timestamp: Any = UNSET
    isMeta: Any = UNSET
    message: _Message | UnsetType = UNSET
    toolUseResult: Any = UNSET
    # written by Claude Code, never read here: declared so the re-encoding holds them
    userType: Any = UNSET
    cwd: Any = UNSET
    version: Any = UNSET
    gitBranch: Any = UNSET
    slug: Any = UNSET
    requestId: Any = UNSET
    subtype: Any = UNSET
    content: Any = UNSET
    level: Any = UNSET
    compactMetadata: Any = UNSET
    isCompactSummary: Any = UNSET
    isVisibleInTranscriptOnly: Any = UNSET
    messageId: Any = UNSET
    snapshot: Any = UNSET
    isSnapshotUpdate: Any = UNSET
    data: Any = UNSET
    parentToolUseID: Any = UNSET
    toolUseID: Any = UNSET
    sourceToolAssistantUUID: Any = UNSET
    thinkingMetadata: Any = UNSET
    todos: Any = UNSET
    permissionMode: Any = UNSET
    operation: Any = UNSET
    hookCount: Any = UNSET
    hookInfos: Any = UNSET
    hookErrors: Any = UNSET
    preventedContinuation: Any = UNSET
    stopReason: Any = UNSET
    hasOutput: Any = UNSET
    summary: Any = UNSET
    leafUuid: Any = UNSET
    error: Any = UNSET
    isApiErrorMessage: Any = UNSET
    apiError: Any = UNSET
    cause: Any = UNSET
    retryInMs: Any = UNSET
    retryAttempt: Any = UNSET
    maxRetries: Any = UNSET
    durationMs: Any = UNSET
    sourceToolUseID: Any = UNSET
    imagePasteIds: Any = UNSET
    mcpMeta: Any = UNSET
    planContent: Any = UNSET


# The same structs, closed: an undeclared field fails the decoding, so a chunk they decode
# skipped nothing, and ``check_lines`` alone vouches that no key was given twice
# (ingest._fast.kept_lines). A closed list field holds the closed struct, which
# the reader reads as its base (mypy holds lists invariant, hence the ignores).

class _ClosedBlock(_Block, forbid_unknown_fields=True):
    pass


class _ClosedMessage(_Message, forbid_unknown_fields=True):
    content: str | list[_ClosedBlock] | UnsetType | None = UNSET  # type: ignore[assignment]


class _ClosedEntry(_Entry, forbid_unknown_fields=True):
    message: _ClosedMessage | UnsetType = UNSET


_ENTRY = lines_decoder(_Entry)
_CLOSED_ENTRY = lines_decoder(_ClosedEntry)
_ENCODE = msgspec.json.Encoder().encode
_REJECTED = "User rejected tool use"
_LEAF_TYPES = frozenset({"user", "assistant", "system", "progress", "attachment"})
#: The integers orjson, the strict path's reader, reads as integers (it makes larger ones floats).
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
_new = tuple.__new__


def _as_orjson(value: Any) -> Any:
    """``value`` (decoded by msgspec) as orjson, the strict path's reader, reads its JSON.

    The two differ on floats (kept as their text, :class:`msgspec.Raw`) and integers beyond
    64 bits (orjson reads them as floats); written back and read again, a value is what the
    strict path holds, number for number.
    """
    try:
        return orjson.loads(_ENCODE(value))
    except (orjson.JSONDecodeError, msgspec.EncodeError):
        raise Slow from None


def _args(value: Any) -> Any:
    """A call's input as the strict path holds it: a flat object of strings, booleans, nulls
    and integers orjson reads alike is taken as it is, anything else through
    :func:`_as_orjson`."""
    if type(value) is dict:
        for item in value.values():
            kind = type(item)
            if kind is str or kind is bool or item is None or (
                    kind is int and _INT_MIN <= item <= _INT_MAX):
                continue
            return _as_orjson(value)
        return value
    return _as_orjson(value)


def _fast_text(content: Any) -> str:
    """:func:`_text_of` for a decoded message content (its blocks as :data:`_BlockFields`).
    Raises :class:`Slow`."""
    if type(content) is str:
        return content
    if content is None or content is UNSET:
        return ""
    parts = []
    for block in content:
        if block[0] == "text":
            if type(block[1]) is not str:
                raise Slow
            parts.append(block[1])
    return "\n".join(parts)


def _tool_use_result(value: Any) -> Any:
    """The ``toolUseResult`` the strict path keeps: a string, or only its ``answers``."""
    if type(value) is str:
        return value
    if type(value) is dict and "answers" in value:
        return {"answers": _as_orjson(value["answers"])}
    return None


#: Who stands for the transcript's agent until the whole file has said who that is.
_AGENT = "\x00agent"
#: What a uuid on the live chain maps to once the chain is known.
_LIVE = object()


# The records of the events are the ``__dict__`` of instances of these classes, one per kind
# of record: plain dicts whose keys their class shares (PEP 412), half the memory of a dict
# literal holding the same record, which matters for the hundreds of thousands of events of a
# long session. Each class is used for one kind of record only, so its keys stay shared.

class _Action:
    seq: int
    ts: str
    agent: str | None
    event: str
    action_type: str
    args: dict[str, Any]
    call_id: str
    command: str


class _Handoff:
    seq: int
    ts: str
    agent: str | None
    event: str
    from_agent: str | None
    to_agent: str
    payload: dict[str, Any]
    call_id: str


class _Checkpoint:
    seq: int
    ts: str
    agent: str
    event: str
    checkpoint_id: str
    confirmed_by: str
    text: str
    call_id: str
    answers: dict[str, Any]


class _Prompt:
    seq: int
    ts: str
    agent: str
    event: str
    role: str
    text: str


class _Reply:
    seq: int
    ts: str
    agent: str | None
    event: str
    role: str
    text: str
    yields_turn: bool


def _record(event: Event) -> dict[str, Any]:
    """The record of an event this reader built (a dict, still being completed)."""
    return cast(dict[str, Any], event.data)


#: One entry as the fast path reads it: (line, type, uuid, parentUuid, logicalParentUuid,
#: isSidechain, agentId, sessionId, timestamp, isMeta, content, toolUseResult, words), each
#: absent field ``UNSET``; content is :data:`_NO_MESSAGE` when the entry has no message,
#: else the message's content: a string, None, ``UNSET``, or a list of blocks, each (type,
#: text, id, name, input, tool_use_id, content, is_error); words is the message's text as
#: :func:`_fast_text` joins it, or :data:`_LATER` for the loop to work out.
_EntryFields = tuple[Any, ...]
_BlockFields = tuple[Any, ...]
#: The content of an entry that has no message.
_NO_MESSAGE: Any = object()
#: The text of an entry the loop works out itself (:func:`_fast_text`).
_LATER: Any = object()


class _GaveWay(Exception):
    """The C reading of the lines gave way: the typed decode reads the file."""


def _line_reader() -> Any:
    """:func:`roadcheck._accel.claude_lines`, where the extension is there
    (:func:`roadcheck._ext.native`: not with ``ROADCHECK_PURE_PYTHON``); else None."""
    return getattr(native(), "claude_lines", None)


def _c_lines(data: bytes, read: Any, text: bool = True) -> Iterator[list[_EntryFields]]:
    """The entries of a transcript a chunk of about 64 kB at a time, read in C
    (``claude_lines``: the lines checked as ``check_lines`` checks them, only the fields the
    reader reads built). Raises :class:`_GaveWay` where it gives way.

    ``text=False``: a tool result's text is built only where the result is an error (the
    loop then reads only whether it says the call was refused); any other is ``""``."""
    size = len(data)
    pos, n = 0, 1
    while pos < size:
        end = chunk_end(data, pos)
        got = read(data, pos, end, n, UNSET, _NO_MESSAGE, _LATER, text)
        if got is None:
            raise _GaveWay
        entries, n = got
        yield entries
        pos = end


def _struct_lines(data: bytes) -> Iterator[list[_EntryFields]]:
    """The entries of a transcript decoded into the structs above, a chunk at a time
    (ingest._fast.kept_lines), as :data:`_EntryFields`."""
    for numbers, values in kept_lines(data, _ENTRY, _CLOSED_ENTRY):
        out = []
        for n, obj in zip(numbers, values):  # noqa: B905 (as many numbers as values)
            msg = obj.message
            if msg is UNSET:
                content: Any = _NO_MESSAGE
            else:
                content = msg.content
                if type(content) is list:
                    content = [(b.type, b.text, b.id, b.name, b.input, b.tool_use_id, b.content,
                                b.is_error) for b in content]
            out.append((n, obj.type, obj.uuid, obj.parentUuid, obj.logicalParentUuid,
                        obj.isSidechain, obj.agentId, obj.sessionId, obj.timestamp, obj.isMeta,
                        content, obj.toolUseResult, _LATER))
        yield out


def _fast_events(data: bytes, text: bool = True) -> tuple[list[Event], dict[str, Any]]:
    """:func:`_events` for a transcript of well-formed entries, in one pass. Raises :class:`Slow`.

    The lines are read in C where the extension is built (:func:`_c_lines`), else, or where
    it gives way, by the typed decode (:func:`_struct_lines`); both give the same fields.
    """
    read = _line_reader()
    if read is not None:
        try:
            return _events_of(_c_lines(data, read, text), text, exact=True)
        except _GaveWay:
            pass
    return _events_of(_struct_lines(data), text)


def _events_of(chunks: Iterator[list[_EntryFields]], text: bool,
               exact: bool = False) -> tuple[list[Event], dict[str, Any]]:
    """The events of the entries of ``chunks`` (:func:`_fast_events`). Raises :class:`Slow`.

    ``exact``: the entries' values are what orjson reads already (:func:`_c_lines`), so a
    call's input is taken as it is.

    Each event is built as its line is read, numbered as if every entry were on the live
    chain, and nothing of a line is kept but what the events keep. Once the last line has
    named the live chain, a transcript whose every message entry is on it, with no call
    refused, is done; any other is renumbered by :func:`_renumbered`.
    """
    links: dict[str, Any] = {}  # uuid -> the entry before it on its chain
    leaf = last = None
    side = main = False
    agent_id = session = None
    agent: str | None = None
    # call id -> its action's record until the call is answered, then None
    calls: dict[str, dict[str, Any] | None] = {}
    refused: set[str] = set()
    events: list[Event] = []
    add = events.append
    # per message entry: its uuid, its first event, the uuid its answers hang off (for
    # parallel calls, answered off the chain)
    uids: list[Any] = []
    starts = array("q")
    alts: list[Any] = []
    whole = True  # every message entry has a uuid and the agent was known in time
    read = 0
    for entries in chunks:
        read += len(entries)
        for (n, kind, uid, parent, logical, sidechain, agent_field, sid, ts, meta, content,
             extra_field, words) in entries:
            if type(uid) is str:
                known = len(links)
                if parent:
                    links[uid] = last if parent == last else parent
                else:
                    links[uid] = None if logical is UNSET else logical
                if len(links) == known:
                    raise Slow  # given twice: the strict path compares the two
                last = uid
                if kind in _LEAF_TYPES:
                    leaf = uid
            else:
                uid = None
            if agent_id is None and type(agent_field) is str:
                agent_id = agent_field
            if kind != "user" and kind != "assistant":
                continue
            if sidechain is True:
                side = True
            else:
                main = True
            if agent is None:
                if not side:
                    agent = MAIN_AGENT
                elif agent_id is not None:
                    agent = f"agent-{agent_id}" if agent_id else "subagent"
                else:
                    agent, whole = _AGENT, False  # its agentId may come later
            if not session and sid is not UNSET:
                if type(sid) is msgspec.Raw:
                    raise Slow
                session = sid
            if content is _NO_MESSAGE:
                raise Slow
            if ts is UNSET:
                ts = None
            elif ts is not None and type(ts) is not str:
                raise Slow
            if uid is None:
                whole = False
            uids.append(uid)
            starts.append(len(events))
            results = 0
            if type(content) is list:
                for btype, _, call_id, name, args, answered, body, is_error in content:
                    if btype in _CALL_BLOCKS:
                        if type(name) is not str or not name or type(call_id) is not str \
                                or not call_id:
                            raise Slow
                        name = intern(name)
                        if args is UNSET or args is None:
                            args = {}
                        elif type(args) is not dict:
                            raise Slow
                        elif not exact:
                            args = _args(args)
                        seq = len(events) + 1
                        act = _Action()
                        act.seq = seq
                        if ts is not None:
                            act.ts = ts
                        act.agent, act.event, act.action_type = agent, "action", name
                        act.args, act.call_id = args, call_id
                        if name == "Bash":
                            command = command_text(args.get("command"))
                            if command is not None:
                                act.command = command
                        rec = act.__dict__
                        known = len(calls)
                        calls[call_id] = rec
                        if len(calls) == known:
                            raise Slow  # the call id is used twice
                        add(_new(Event, (seq, "action", agent, ts, rec, n)))
                        if name in _HANDOFF_TOOLS:
                            to = args.get("subagent_type")
                            hand = _Handoff()
                            hand.seq = seq + 1
                            if ts is not None:
                                hand.ts = ts
                            hand.agent, hand.event, hand.from_agent = agent, "handoff", agent
                            hand.to_agent = to if isinstance(to, str) and to else "subagent"
                            hand.payload, hand.call_id = args, call_id
                            add(_new(Event, (seq + 1, "handoff", agent, ts, hand.__dict__, n)))
                    elif btype.endswith("tool_result"):
                        results += 1
                        call_id = answered
                        target = calls.get(call_id) if type(call_id) is str else None
                        if target is None:
                            raise Slow  # no such call, or answered already
                        calls[call_id] = None
                        if type(body) is str:
                            answer = body
                        else:
                            try:
                                answer = _text_of(None if body is UNSET else body, n)
                            except _Bad:
                                raise Slow from None
                        if is_error is not UNSET and is_error is not None \
                                and type(is_error) is not bool:
                            raise Slow
                        if is_error is True:
                            if answer.startswith(_REFUSED) or _tool_use_result(
                                    extra_field) == _REJECTED:
                                refused.add(call_id)  # refused at the prompt: never ran
                                whole = False
                                continue
                            if text:
                                target["error"] = answer
                            continue
                        if text:
                            target["result"] = answer
                        tool = target["action_type"]
                        if tool == "AskUserQuestion" or tool == "ExitPlanMode":
                            seq = len(events) + 1
                            check = _Checkpoint()
                            check.seq = seq
                            if ts is not None:
                                check.ts = ts
                            check.agent, check.event, check.checkpoint_id = (
                                "user", "checkpoint", tool)
                            check.confirmed_by = "user"
                            if text:
                                check.text = answer
                            check.call_id = call_id
                            if tool == "AskUserQuestion":
                                extra = _tool_use_result(extra_field)
                                if isinstance(extra, dict) and isinstance(extra.get("answers"),
                                                                          dict):
                                    check.answers = extra["answers"]
                            add(_new(Event, (seq, "checkpoint", "user", ts, check.__dict__, n)))
                    elif "tool" in btype:
                        raise Slow
            if kind == "user":
                if results:
                    alts.append(parent if results == len(content)
                                and type(parent) is str else None)
                    continue
                alts.append(None)
                if words is _LATER:
                    words = _fast_text(content)
                role = "system" if meta is True else "user"
                if role == "user" and events:
                    prior = events[-1]
                    if prior.kind == "message" and prior.data["role"] == "assistant":
                        _record(prior)["yields_turn"] = True
                seq = len(events) + 1
                said = _Prompt()
                said.seq = seq
                if ts is not None:
                    said.ts = ts
                said.agent, said.event, said.role = role, "message", role
                if text:
                    said.text = words
                add(_new(Event, (seq, "message", role, ts, said.__dict__, n)))
            else:
                alts.append(None)
                if words is _LATER:
                    words = _fast_text(content)
                if words:
                    seq = len(events) + 1
                    reply = _Reply()
                    reply.seq = seq
                    if ts is not None:
                        reply.ts = ts
                    reply.agent, reply.event, reply.role = agent, "message", "assistant"
                    if text:
                        reply.text = words
                    reply.yields_turn = False
                    add(_new(Event, (seq, "message", agent, ts, reply.__dict__, n)))
    if not read or (side and main):
        raise Slow  # no entry, or a sidechain in a main transcript: the strict path says so
    # the live chain, marked in place: each uuid on it now maps to _LIVE
    cur, on_chain = leaf, 0
    while cur is not None and cur in links:
        after = links[cur]
        if after is _LIVE:
            raise Slow  # the chain loops: the strict path says where
        links[cur] = _LIVE
        on_chain += 1
        cur = after
    if events:
        last_event = events[-1]
        if last_event.kind == "message" and last_event.data["role"] == "assistant":
            _record(last_event)["yields_turn"] = True
    get = links.get
    if not whole or (on_chain < len(links) and not all(get(uid) is _LIVE for uid in uids)):
        starts.append(len(events))
        events = _renumbered(events, uids, starts, alts, links, calls, refused,
                             agent if agent is not _AGENT else
                             (f"agent-{agent_id}" if agent_id else "subagent"))
    del calls, links
    events.append(Event.make(len(events) + 1, "final", None, task_success=False))
    return events, {"session_id": session} if isinstance(session, str) else {}


def _renumbered(events: list[Event], uids: list[Any], starts: array[int], alts: list[Any],
                links: dict[str, Any], calls: dict[str, Any], refused: set[str],
                agent: str | None) -> list[Event]:
    """The events of a transcript with entries off the live chain, refused calls or an agent
    named late, as the strict reading stages them: an entry off the chain keeps only its
    calls (a call that was answered ran), a refused call and an unanswered call off the
    chain are left out, and the rest is numbered again. ``links`` maps each uuid on the
    live chain to ``_LIVE``."""
    staged: list[tuple[Event, bool]] = []  # each event, and whether its entry is on the chain
    get = links.get
    for i, uid in enumerate(uids):
        on = get(uid) is _LIVE
        on_entry = on or (alts[i] is not None and get(alts[i]) is _LIVE)
        for event in events[starts[i]:starts[i + 1]]:
            if event.kind == "action" or on_entry:
                staged.append((event, on))
            if event.kind == "message" and event.data["role"] == "assistant":
                _record(event)["yields_turn"] = False
    for i, (event, _) in enumerate(staged):  # the turns, as the strict reading marks them
        if event.kind == "message" and event.data["role"] == "assistant" and (
                i + 1 == len(staged) or (staged[i + 1][0].kind == "message"
                                         and staged[i + 1][0].data["role"] == "user")):
            _record(event)["yields_turn"] = True
    out: list[Event] = []
    for event, on in staged:
        kind, who, rec = event.kind, event.agent, _record(event)
        if kind == "action":
            call_id = rec["call_id"]
            if call_id in refused or (not on and calls.get(call_id) is not None):
                continue  # refused, or an abandoned branch's call that never answered
        if who is _AGENT:
            who = rec["agent"] = agent
            if kind == "handoff":
                rec["from_agent"] = agent
        rec["seq"] = seq = len(out) + 1
        out.append(_new(Event, (seq, kind, who, event.ts, rec, event.line)))
    return out


def _built(staged: list[tuple[str, str | None, dict[str, Any], int]],
           off_chain: set[str], text: bool = True) -> list[Event]:
    """The events of the staged records, numbered; a call that never ran is left out.

    ``off_chain`` holds the ids of the calls made on an abandoned branch. The staged
    list is emptied as it is read, so each record's fields are freed once its event
    holds them. ``text=False`` leaves the free text out (:func:`read_claude_code`).
    """
    events: list[Event] = []
    append = events.append
    seq = 0
    staged.reverse()
    pop = staged.pop
    while staged:
        kind, who, fields, n = pop()
        if kind == "action":
            if fields.pop("_refused", False):
                continue
            if (fields["call_id"] in off_chain and "result" not in fields
                    and "error" not in fields):
                continue  # an abandoned branch's call that never answered: it did not run
            if not text:
                fields.pop("result", None)
                fields.pop("error", None)
        elif not text:
            fields.pop("text", None)
        seq += 1
        ts = fields.pop("ts", None)
        # the record Event.make builds: seq, ts, agent, event, then the fields
        rec: dict[str, Any] = {"seq": seq}
        if ts is not None:
            rec["ts"] = ts
        if who is not None:
            rec["agent"] = who
        rec["event"] = kind
        rec.update(fields)
        append(Event(seq, kind, who, ts, rec, n))
    seq += 1
    append(Event.make(seq, "final", None, task_success=False))
    return events


def read_claude_code(path: str, data: bytes, *, text: bool = True) -> Iterator[Any]:
    """One trajectory per transcript file (a subagent's side file is its own).

    ``text=False`` leaves the free text out of the events: an action's tool result
    (``result``, ``error``), a message's and a checkpoint's ``text``. It is for a reader
    of the events that reads none of it (a replay whose spec selects nothing, see
    :attr:`roadcheck.conformance.CompiledSpec.typed`): a long session holds most of its bytes
    there. The file is refused, and every other field read, exactly as with the text.
    """
    from roadcheck.ingest import ReadFailure

    try:
        try:
            with no_cycle_collection():
                events, meta = _fast_events(data, text)
                as_long_lived()  # the events live on: the collector need not walk them now
        except Slow:
            events, meta = _events(path, data, keep_text=text)
    except _Bad as exc:
        yield ReadFailure(path, path, TraceError(str(exc), path=path, line=exc.line))
        return
    yield Trajectory(path, tuple(events), path, "claude-code", meta)
