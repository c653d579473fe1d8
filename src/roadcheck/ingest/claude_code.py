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

from collections.abc import Iterator
from sys import intern
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import lines_of, object_line
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
            obj = object_line(raw, "an entry")
        except ValueError as exc:
            raise _Bad(n, str(exc)) from None
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
        events, meta = _events(path, data, keep_text=text)
    except _Bad as exc:
        yield ReadFailure(path, path, TraceError(str(exc), path=path, line=exc.line))
        return
    yield Trajectory(path, tuple(events), path, "claude-code", meta)
