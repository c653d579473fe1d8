"""The Claude Code reader: session transcripts into the shared event model.

Claude Code writes one JSON object per line to
``~/.claude/projects/<project>/<session>.jsonl`` (and a subagent's run to
``<session>/subagents/agent-<id>.jsonl``, every entry ``isSidechain: true``; Claude
Code 1.0 wrote it into the main transcript instead, a run of its own there, see
:func:`_runs`).
Entries are linked by ``uuid`` / ``parentUuid`` (``logicalParentUuid`` across a
compaction). The format is not specified; this reader follows the files
Claude Code writes:

- the live chain is followed from the last entry back by ``parentUuid``; a
  ``user`` entry holding only tool results that answers a call on the chain
  belongs to it (parallel calls answer off the chain). Messages, questions and
  answers on other branches (a prompt edited and re-sent) are not the road
  taken and are not read;
- a user prompt is a ``message`` (role ``user``; ``system`` for what Claude Code
  wrote itself: ``isMeta`` and ``isCompactSummary`` entries, command output,
  notifications and interrupt markers, see ``_WRITTEN_BY_CLAUDE_CODE``); an entry
  written again with the same uuid and contents is read once; assistant text is a ``message`` (role
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

The file is read in one pass, a line at a time, and nothing of a line is kept
but what an event will hold and the entry's place in the chain (its offset in
the file, the key it hangs from, its uuid): which entries are on the chain is
known only at the end, so every event is staged with the entry whose place
decides it, and the chain then picks the events. An error that only the chain
can confirm (a message that cannot be read, off the chain it is not read) waits
for it. The one error a file gets is the first of, in this order:
a line that is no entry, an empty file, a subagent run in a main transcript that
does not hang together, a uuid given twice with different contents, a looping
chain, then the first entry whose content cannot be read (in a file of several
runs: the main thread's, then each subagent run's in turn).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from sys import intern
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import object_line
from roadcheck.shellcmd import command_text

__all__ = ["detect_claude_code", "no_run", "read_claude_code"]

MAIN_AGENT = "claude"
_REFUSED = "The user doesn't want to proceed with this tool use"
_REJECTED = "User rejected tool use"
_HANDOFF_TOOLS = frozenset({"Task", "Agent"})
_CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_MESSAGE_TYPES = frozenset({"user", "assistant"})
#: The entries the chain is followed back from: the last of them is its leaf.
_CHAIN_TYPES = frozenset({"user", "assistant", "system", "progress", "attachment"})
_CHECKPOINT_TOOLS = frozenset({"AskUserQuestion", "ExitPlanMode"})
_STR_OR_NONE = (str, type(None))
_BOOL_OR_NONE = (bool, type(None))
#: A call's outcome without its text (``text=False``), and a call refused at the prompt.
_RESULT = ("result", None)
_ERROR = ("error", None)
_REFUSED_CALL = ("refused", None)
_ANSWERING = ("answering", None)  # while a result is read (an error there ends the mapping)
#: Not an error: the file is read again by run (see :func:`_runs`).
_SIDECHAIN = "entries of the main thread and of subagent runs (isSidechain) in one file"
#: The names of the runs of a file that holds subagent runs beside the main thread: the
#: main thread's, and each subagent run's prefix (the line its first entry is on follows).
MAIN_RUN = "main"
SIDECHAIN_RUN = "sidechain-"

#: A staged event: its kind, its place (the line of the entry whose place on the chain
#: decides it: the first to give the entry's uuid; -1 for none), its line, its
#: timestamp, then per kind:
#: ``action``: tool name, args, call id, command; ``handoff``: to_agent, payload, call id;
#: ``checkpoint``: tool, text, call id, answers; ``message``: role, text.
Staged = tuple[Any, ...]


class _Bad(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


class _Mixed(_Bad):
    """The file mixes entries of the main thread with sidechain ones: read it by run."""


#: The entries of a file Claude Code writes beside its sessions that holds no session:
#: the summaries of other sessions' conversations, and snapshots of the files it edited.
_NO_RUN_TYPES = frozenset({"summary", "file-history-snapshot"})


def _no_run_entry(obj: Any) -> bool:
    """True for a summary (``{"type": "summary", "summary", "leafUuid"}``) or a file
    history snapshot (``{"type": "file-history-snapshot", "snapshot": {...}}``)."""
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    if kind == "summary":
        return isinstance(obj.get("leafUuid"), str)
    return kind == "file-history-snapshot" and isinstance(obj.get("snapshot"), dict)


def no_run(data: bytes) -> str | None:
    """What a file that holds no session is (one line for the report), or None.

    Claude Code writes files of summaries and file snapshots only beside the sessions
    of a project (``~/.claude/projects/<project>/``): there is no run to judge in them.
    Any other line, or any session entry (``parentUuid``), and the file is read as a
    transcript.

    >>> no_run(b'{"type":"summary","summary":"Fix login","leafUuid":"a1"}\\n')
    'a Claude Code summary file, 1 summary and no session entries'
    >>> no_run(b'{"type":"user","parentUuid":null}\\n') is None
    True
    """
    if b'"parentUuid"' in data:
        return None
    summaries = snapshots = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = object_line(raw, "an entry")
        except ValueError:
            return None  # the reader names it
        if not _no_run_entry(obj):
            return None
        if obj["type"] == "summary":
            summaries += 1
        else:
            snapshots += 1
    if not summaries + snapshots:
        return None
    what = [f"{summaries} {'summary' if summaries == 1 else 'summaries'}"] if summaries else []
    if snapshots:
        what.append(f"{snapshots} file snapshot{'' if snapshots == 1 else 's'}")
    kind = "summary" if summaries else "file snapshot"
    return f"a Claude Code {kind} file, {' and '.join(what)} and no session entries"


def detect_claude_code(data: bytes) -> float:
    """Certain when one of the first lines is a Claude Code transcript entry: an object
    with ``parentUuid``, ``sessionId``, ``uuid`` and a ``type`` string, a shape only
    Claude Code writes; certain too for a file of summaries or file snapshots, which
    it writes beside its sessions."""
    from roadcheck.ingest import CERTAIN

    head = data[:65536]
    if b'"sessionId"' not in head or b'"parentUuid"' not in head:
        if b'"leafUuid"' not in head and b'"file-history-snapshot"' not in head:
            return 0.0
        first = head.lstrip().split(b"\n", 1)[0]
        try:
            return CERTAIN if _no_run_entry(orjson.loads(first)) else 0.0
        except orjson.JSONDecodeError:
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


#: How the text of a ``user`` entry that Claude Code wrote itself begins: a local
#: command's output, a background task's or shell's notice, the output of a shell
#: command the user ran with ``!``, a reminder, an interrupt marker, the summary that
#: opens a compacted session. What the user typed (a prompt, a slash command and its
#: arguments, a ``!`` command line, a ``#`` memory) stays the user's.
_WRITTEN_BY_CLAUDE_CODE = (
    "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
    "<bash-stdout>", "<bash-stderr>", "<bash-notification>", "<task-notification>",
    "<system-reminder>", "[Request interrupted by user",
    "This session is being continued from a previous conversation",
)


def _user_role(obj: dict[str, Any], text: str) -> str:
    """``system`` for a ``user`` entry Claude Code wrote (``isMeta``, a compaction
    summary, or text it writes itself: see ``_WRITTEN_BY_CLAUDE_CODE``), else ``user``.

    >>> _user_role({}, "[Request interrupted by user for tool use]")
    'system'
    >>> _user_role({}, "<command-name>/deploy</command-name>")
    'user'
    >>> _user_role({"isCompactSummary": True}, "Summary: ...")
    'system'
    """
    if obj.get("isMeta") is True or obj.get("isCompactSummary") is True:
        return "system"
    return "system" if text.lstrip().startswith(_WRITTEN_BY_CLAUDE_CODE) else "user"


def _at(blocks: list[Any], block: Any) -> int:
    """Where ``block`` is in ``blocks`` (for an error's message)."""
    return next(i for i, each in enumerate(blocks) if each is block)


def _misshapen(n: int, obj: dict[str, Any]) -> None:
    """Raise for the first key of an entry whose type is wrong (the caller saw one is)."""
    if not isinstance(obj.get("type"), str):
        raise _Bad(n, "missing required key 'type'")
    for key in ("uuid", "parentUuid", "logicalParentUuid"):
        val = obj.get(key)
        if val is not None and not isinstance(val, str):
            raise _Bad(n, f"'{key}' must be a string, got {type(val).__name__}")
    side = obj.get("isSidechain")
    raise _Bad(n, f"'isSidechain' must be true or false, got {type(side).__name__}")


#: The keys of an entry the reader reads: two entries with one uuid must agree on them.
_READ = ("type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "agentId",
         "sessionId", "timestamp", "isMeta", "isCompactSummary")


def _slim(obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an entry the reader reads (an entry given twice is compared on it)."""
    out = {key: obj[key] for key in _READ if key in obj}
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


class _Reader:
    """One pass over the lines of a transcript, then the chain, then the events."""

    __slots__ = ("agent_id", "calls", "data", "entries", "failed", "first_side", "keys", "leaf",
                 "logical", "main", "mapping", "nodes", "outcome", "parented", "prev", "session",
                 "side", "staged", "starts", "text", "twice", "unread")

    def __init__(self, data: bytes, text: bool) -> None:
        self.data = data
        self.text = text
        # the chain, by line number: each line's offset in the file and the uuid its
        # entry hangs from (parentUuid, else logicalParentUuid); per uuid the line
        # that gave it first. An entry's place on the chain is that line.
        self.starts = array("q", [0])
        self.keys: list[str | None] = [None]
        self.nodes: dict[str, int] = {}
        # the lines whose entry hangs by logicalParentUuid (a compaction's boundary): the
        # entry it names may be one Claude Code never wrote
        self.logical: set[int] = set()
        self.entries = 0
        self.leaf: str | None = None
        self.prev: str | None = None
        self.main = self.side = False
        self.first_side = 0
        self.agent_id: str | None = None
        self.session: Any = None
        self.staged: list[Staged] = []
        self.calls: dict[str, Staged] = {}  # call id -> its staged action
        self.outcome: dict[str, tuple[str, str | None]] = {}  # call id -> result, error
        # (its staged records from, to, entry, parentUuid): an entry of tool results
        # only, whose checkpoints are on the chain when the entry or its parent is
        self.parented: list[tuple[int, int, int, Any]] = []
        # the errors the end decides on: a uuid given twice, the unreadable messages
        # (with their entries), the first content that cannot be read at all
        self.twice: _Bad | None = None
        self.unread: list[tuple[int, _Bad]] = []
        self.failed: _Bad | None = None
        self.mapping = True  # False once an error is certain: what follows maps nothing

    def read(self) -> None:
        """Every line, in order; a line that is no entry raises at once."""
        data, entry = self.data, self._entry
        find, size = data.find, len(data)
        add_start, add_key = self.starts.append, self.keys.append
        pos = n = entries = 0
        while pos < size:
            end = find(b"\n", pos)
            if end < 0:
                end = size
            n += 1
            raw = data[pos:end]
            add_start(pos)
            pos = end + 1
            try:
                obj = object_line(raw, "an entry")
            except ValueError as exc:
                if raw.strip():
                    raise _Bad(n, str(exc)) from None
                add_key(None)  # a blank line
                continue
            add_key(entry(n, obj))
            entries += 1
        self.entries = entries

    def _hang(self, n: int, parent: str | None, logical: str | None) -> str | None:
        """The uuid the entry of line ``n`` hangs from: its parentUuid, else its
        logicalParentUuid (a compaction's boundary, whose line is then noted)."""
        if not parent and logical is not None:
            self.logical.add(n)
            return logical
        return parent or None

    def _entry(self, n: int, obj: dict[str, Any]) -> str | None:
        """Check the entry's links and place it; map a message. The uuid it hangs from."""
        kind, uid = obj.get("type"), obj.get("uuid")
        parent, logical = obj.get("parentUuid"), obj.get("logicalParentUuid")
        side = obj.get("isSidechain")
        if (kind.__class__ is not str or uid.__class__ not in _STR_OR_NONE
                or parent.__class__ not in _STR_OR_NONE
                or logical.__class__ not in _STR_OR_NONE
                or side.__class__ not in _BOOL_OR_NONE):
            _misshapen(n, obj)
        key = self._hang(n, parent, logical)
        if key is not None and key == self.prev:
            key = self.prev  # most entries hang from the one before: one string for both
        place = -1
        if uid is not None:
            place = self.nodes.setdefault(uid, n)
            if kind in _CHAIN_TYPES:
                self.leaf = uid
            self.prev = uid
            if place != n:  # written again: compared with the first, and read once
                if self.twice is None:
                    self._again(n, obj, uid, place)
                return key
        if kind in _MESSAGE_TYPES:
            if not side:
                self.main = True
            elif not self.side:
                self.side = True
                self.first_side = self.first_side or n
            if self.mapping:
                try:
                    self._message(n, obj, kind, place)
                except _Bad as exc:
                    self.failed, self.mapping = exc, False
        elif side is True and not self.first_side:
            self.first_side = n
        if self.agent_id is None and not self.main:  # a subagent's file names its agent
            agent_id = obj.get("agentId")
            if agent_id.__class__ is str:
                self.agent_id = agent_id
        return key

    def _again(self, n: int, obj: dict[str, Any], uid: str, first: int) -> None:
        """A uuid given again (first on line ``first``): the entry must read as it did."""
        data, start = self.data, self.starts[first]
        end = data.find(b"\n", start)
        before = object_line(data[start:end if end >= 0 else len(data)], "an entry")
        if _slim(before) != _slim(obj):
            self.twice = _Bad(n, f"uuid {uid!r} is given twice (first at line {first})")
            self.mapping = False

    def _message(self, n: int, obj: dict[str, Any], kind: str, place: int) -> None:
        if not self.session:
            self.session = obj.get("sessionId")
        msg = obj.get("message")
        if msg.__class__ is not dict:
            raise _Bad(n, f"a {kind} entry has no 'message' object")
        ts = obj.get("timestamp")
        if ts is not None and ts.__class__ is not str:
            raise _Bad(n, f"'timestamp' must be a string, got {type(ts).__name__}")
        content = msg.get("content")
        if content.__class__ is list:
            self._blocks(n, obj, kind, content, ts, place)
            return
        if content is None:
            content = ""
        elif content.__class__ is not str:
            raise _Bad(n, "'message.content' must be a string or a list, got "
                          f"{type(content).__name__}")
        if kind == "user":
            role = _user_role(obj, content)
        elif content:
            role = "assistant"
        else:
            return
        self.staged.append(("message", place, n, ts, role, content if self.text else None))

    def _blocks(self, n: int, obj: dict[str, Any], kind: str, blocks: list[Any],
                ts: str | None, place: int) -> None:
        """Stage the calls and answers of a message given in blocks, then its text (an
        entry of tool results has none)."""
        staged = self.staged
        mark = len(staged)
        results = 0
        texts: list[str] = []
        unread = -1  # the first text block without a text string
        for block in blocks:
            btype = block.get("type") if block.__class__ is dict else None
            if btype.__class__ is not str:
                raise _Bad(n, f"content block {_at(blocks, block)} is not an object with a "
                              "'type'")
            if btype in _CALL_BLOCKS:
                self._call(n, blocks, block, ts, place)
            elif btype == "text":
                text = block.get("text")
                if text.__class__ is str:
                    texts.append(text)
                elif unread < 0:
                    unread = _at(blocks, block)
            elif btype.endswith("tool_result"):
                results += 1
                self._result(n, blocks, block, obj, place)
            elif "tool" in btype:
                raise _Bad(n, f"content block {_at(blocks, block)}: unknown tool block type "
                              f"{btype!r}; a misread call would hide a guarded action")
        if results and kind == "user":  # tool results, no prompt; answers hang off their calls
            if results == len(blocks) and len(staged) > mark:
                self.parented.append((mark, len(staged), place, obj.get("parentUuid")))
        elif texts or unread >= 0 or kind == "user":
            self._text_message(n, obj, ts, place, texts, unread)

    def _text_message(self, n: int, obj: dict[str, Any], ts: str | None, place: int,
                      texts: list[str], unread: int) -> None:
        """Stage the text of a message given in blocks (``unread``: a text block without
        a text string, an error only if the entry is on the chain)."""
        if unread >= 0:
            self.unread.append((place, _Bad(n, f"content part {unread} has no 'text' string")))
            return
        text = "\n".join(texts)
        if obj["type"] == "user":
            role = _user_role(obj, text)
        elif text:
            role = "assistant"
        else:
            return
        self.staged.append(("message", place, n, ts, role, text if self.text else None))

    def _call(self, n: int, blocks: list[Any], block: dict[str, Any], ts: str | None,
              place: int) -> None:
        name, call_id, args = block.get("name"), block.get("id"), block.get("input")
        if name.__class__ is not str or not name:
            raise _Bad(n, f"content block {_at(blocks, block)}: a {block['type']} has no 'name'")
        if call_id.__class__ is not str or not call_id:
            raise _Bad(n, f"content block {_at(blocks, block)}: a {block['type']} has no 'id'")
        if args is None:
            args = {}
        elif args.__class__ is not dict:
            raise _Bad(n, f"content block {_at(blocks, block)}: 'input' must be an object")
        name = intern(name)
        command = None
        if name == "Bash":
            command = args.get("command")
            if command.__class__ is not str:
                command = command_text(command)
                if command is None:  # read with no command, a rule on it would never match
                    raise _Bad(n, f"content block {_at(blocks, block)}: a Bash call's "
                                  "'input.command' must be a string (or an argv of strings), "
                                  f"got {type(args.get('command')).__name__}")
        call = ("action", place, n, ts, name, args, call_id, command)
        first = self.calls.setdefault(call_id, call)
        if first is not call:
            raise _Bad(n, f"tool call id {call_id!r} is used twice (first at line {first[2]})")
        self.staged.append(call)
        if name in _HANDOFF_TOOLS:
            to = args.get("subagent_type")
            self.staged.append(("handoff", place, n, ts, to if isinstance(to, str) and to
                                else "subagent", args, call_id))

    def _result(self, n: int, blocks: list[Any], block: dict[str, Any], obj: dict[str, Any],
                place: int) -> None:
        call_id: Any = block.get("tool_use_id")
        call = self.calls.get(call_id) if call_id.__class__ is str else None
        if call is None:
            raise _Bad(n, f"content block {_at(blocks, block)}: a tool result answers call id "
                          f"{call_id!r}, which no earlier tool call made")
        outcome = self.outcome
        if outcome.setdefault(call_id, _ANSWERING) is not _ANSWERING:
            raise _Bad(n, f"content block {_at(blocks, block)}: call {call_id!r} is answered "
                          "twice")
        content = block.get("content")
        text = content if content.__class__ is str else _text_of(content, n)
        is_error = block.get("is_error")
        if is_error is not None and is_error.__class__ is not bool:
            raise _Bad(n, f"content block {_at(blocks, block)}: 'is_error' must be true or false")
        if is_error:
            refused = text.startswith(_REFUSED) or obj.get("toolUseResult") == _REJECTED
            outcome[call_id] = _REFUSED_CALL if refused else (
                ("error", text) if self.text else _ERROR)
            return
        outcome[call_id] = ("result", text) if self.text else _RESULT
        tool = call[4]
        if tool in _CHECKPOINT_TOOLS:
            extra = obj.get("toolUseResult")
            answers = extra.get("answers") if tool == "AskUserQuestion" and isinstance(
                extra, dict) else None
            self.staged.append(("checkpoint", place, n, obj.get("timestamp"), tool,
                                text if self.text else None, call_id,
                                answers if isinstance(answers, dict) else None))

    # -- the end: the errors in their order, the chain, the events it picks --------------

    def finish(self) -> tuple[list[Event], dict[str, Any]]:
        """The events and the reader facts, or the first error in the order the module
        names; the chain's tables are freed before the events are built."""
        if not self.entries:
            raise _Bad(1, "empty transcript: no entries")
        if self.main and self.side:
            raise _Mixed(self.first_side, _SIDECHAIN)
        if self.twice is not None:
            raise self.twice
        live = self._chain()
        for place, exc in self.unread:
            if place >= 0 and live[place]:
                raise exc
        if self.failed is not None:
            raise self.failed
        self._parented(live)
        self.nodes, self.keys, self.starts, self.calls = {}, [], array("q"), {}
        if self.side:
            agent = f"agent-{self.agent_id}" if self.agent_id else "subagent"
        else:
            agent = MAIN_AGENT
        session = self.session
        return self._built(live, agent), {"session_id": session} if isinstance(
            session, str) else {}

    def _chain(self) -> bytearray:
        """The lines of the entries on the chain, from the last entry back (1 = on it)."""
        nodes, keys = self.nodes, self.keys
        live = bytearray(len(keys))
        cur = self.leaf
        below = 0  # the line of the entry the walk came from
        while cur is not None:
            entry = nodes.get(cur)
            if entry is None:
                if (not self.side and below > min(nodes.values())
                        and below not in self.logical):
                    raise _Bad(below, f"its parentUuid {cur!r} names no entry of the file: "
                                      "a line before it is missing, and the chain would "
                                      "start after the gap")
                break  # the first entry hangs from one of an earlier file
            if live[entry]:
                raise _Bad(entry, f"the parentUuid chain loops at {cur!r}")
            live[entry] = 1
            below = entry
            cur = keys[entry]
        return live

    def _parented(self, live: bytearray) -> None:
        """The checkpoints of an entry of tool results only are read when the entry or
        its parent is on the chain: each takes as its place a line on the chain, or -1."""
        staged = self.staged
        for first, end, place, parent in self.parented:
            if place >= 0 and live[place]:
                continue
            up = self.nodes.get(parent) if isinstance(parent, str) else None
            on = up if up is not None and live[up] else -1
            for j in range(first, end):
                staged[j] = (staged[j][0], on, *staged[j][2:])

    def _built(self, live: bytearray, agent: str) -> list[Event]:
        """The events the chain picks, numbered; a call that never ran is left out.

        The staged list is emptied as it is read, so each record is freed once its
        event is built. The last message of the agent before a prompt (or the end)
        yields its turn.
        """
        events: list[Event] = []
        append = events.append
        staged, outcome, text = self.staged, self.outcome, self.text
        staged.reverse()
        pop = staged.pop
        seq = 0
        turn: dict[str, Any] | None = None  # the agent's message, when it was staged last
        while staged:
            item = pop()
            kind, place = item[0], item[1]
            if kind == "action":
                out = outcome.pop(item[6], None)
                if out is _REFUSED_CALL or (out is None and (place < 0 or not live[place])):
                    turn = None
                    continue  # refused, or on an abandoned branch and never answered
                seq += 1
                who, rec = agent, _action_record(seq, agent, item, out if text else None)
            elif place < 0 or not live[place]:
                continue  # off the chain: not read
            elif kind == "message":
                if turn is not None and item[4] == "user":
                    turn["yields_turn"] = True
                seq += 1
                who = agent if item[4] == "assistant" else item[4]
                rec = _message_record(seq, who, item, text)
                append(_event(Event, (seq, kind, who, item[3], rec, item[2])))
                turn = rec if item[4] == "assistant" else None
                continue
            elif kind == "checkpoint":
                seq += 1
                who, rec = "user", _checkpoint_record(seq, item, text)
            else:
                seq += 1
                who, rec = agent, _handoff_record(seq, agent, item)
            turn = None
            append(_event(Event, (seq, kind, who, item[3], rec, item[2])))
        if turn is not None:
            turn["yields_turn"] = True
        seq += 1
        append(Event.make(seq, "final", None, task_success=False))
        return events


#: Builds an :class:`Event` from the tuple of its fields, as its own constructor does.
_event = tuple.__new__


def _action_record(seq: int, agent: str, item: Staged,
                   out: tuple[str, Any] | None) -> dict[str, Any]:
    # each record begins as Event.make begins it: seq, ts (when given), agent, event
    if item[3] is None:
        rec = {"seq": seq, "agent": agent, "event": "action", "action_type": item[4],
               "args": item[5], "call_id": item[6]}
    else:
        rec = {"seq": seq, "ts": item[3], "agent": agent, "event": "action",
               "action_type": item[4], "args": item[5], "call_id": item[6]}
    if item[7] is not None:
        rec["command"] = item[7]
    if out is not None:
        rec[out[0]] = out[1]
    return rec


def _message_record(seq: int, who: str, item: Staged, text: bool) -> dict[str, Any]:
    if item[3] is None:
        rec = {"seq": seq, "agent": who, "event": "message", "role": item[4]}
    else:
        rec = {"seq": seq, "ts": item[3], "agent": who, "event": "message", "role": item[4]}
    if text:
        rec["text"] = item[5]
    if item[4] == "assistant":
        rec["yields_turn"] = False
    return rec


def _checkpoint_record(seq: int, item: Staged, text: bool) -> dict[str, Any]:
    if item[3] is None:
        rec = {"seq": seq, "agent": "user", "event": "checkpoint", "checkpoint_id": item[4],
               "confirmed_by": "user"}
    else:
        rec = {"seq": seq, "ts": item[3], "agent": "user", "event": "checkpoint",
               "checkpoint_id": item[4], "confirmed_by": "user"}
    if text:
        rec["text"] = item[5]
    rec["call_id"] = item[6]
    if item[7] is not None:
        rec["answers"] = item[7]
    return rec


def _handoff_record(seq: int, agent: str, item: Staged) -> dict[str, Any]:
    if item[3] is None:
        return {"seq": seq, "agent": agent, "event": "handoff", "from_agent": agent,
                "to_agent": item[4], "payload": item[5], "call_id": item[6]}
    return {"seq": seq, "ts": item[3], "agent": agent, "event": "handoff", "from_agent": agent,
            "to_agent": item[4], "payload": item[5], "call_id": item[6]}


def read_claude_code(path: str, data: bytes, *, text: bool = True) -> Iterator[Any]:
    """One trajectory per transcript file (a subagent's side file is its own).

    ``text=False`` leaves the free text out of the events: an action's tool result
    (``result``, ``error``), a message's and a checkpoint's ``text``. It is for a reader
    of the events that reads none of it (a replay whose spec selects nothing, see
    :attr:`roadcheck.conformance.CompiledSpec.typed`): a long session holds most of its bytes
    there. The file is refused, and every other field read, exactly as with the text.
    """
    from roadcheck.ingest import ReadFailure

    empty = no_run(data)
    if empty is not None:  # replay notes it before reading; read directly, it fails
        yield ReadFailure(path, path, TraceError(f"holds no run: {empty}", path=path))
        return
    reader = _Reader(data, text)
    try:
        reader.read()
        events, meta = reader.finish()
    except _Mixed:
        yield from _read_runs(path, data, text)
        return
    except _Bad as exc:
        yield ReadFailure(path, path, TraceError(str(exc), path=path, line=exc.line))
        return
    yield Trajectory(path, tuple(events), path, "claude-code", meta)


def _read_runs(path: str, data: bytes, text: bool) -> Iterator[Any]:
    """The runs of a transcript that holds subagent runs beside the main thread, each
    read as a file of its own would be: ``PATH#main``, then ``PATH#sidechain-<line>``
    in the order they begin. One error in any of them and the file is that error."""
    from roadcheck.ingest import ReadFailure

    read: list[Trajectory] = []
    try:
        for name, part in _runs(data):
            reader = _Reader(part, text)
            reader.read()
            events, meta = reader.finish()
            read.append(Trajectory(f"{path}#{name}", tuple(events), path, "claude-code", meta))
    except _Bad as exc:
        yield ReadFailure(path, path, TraceError(str(exc), path=path, line=exc.line))
        return
    yield from read


def _runs(data: bytes) -> list[tuple[str, bytes]]:
    """The runs of a transcript that mixes the main thread with sidechain entries, each
    with the file's lines of that run kept and every other line left blank (so each
    line keeps its number): the main thread's first, then each subagent run's.

    Older Claude Code wrote a subagent's run into the main transcript: every entry of it
    ``isSidechain: true``, the first (the prompt) hanging from no entry. The main run is
    every entry not marked so; a sidechain entry hanging from no entry begins a run, and
    every other one belongs to the run its ``parentUuid`` (or ``logicalParentUuid``)
    leads back to; an entry written again with its uuid belongs where it was first
    written. Raises :class:`_Bad`, at the first line in the file that breaks it, for a
    sidechain entry hanging from an entry of the main thread, or from a uuid no entry
    gives, or from nothing while it gives no uuid itself; an entry of the main thread
    hanging from a sidechain entry; a uuid given to a sidechain entry and to an entry of
    the main thread; and a chain of sidechain entries that loops.
    """
    lines = data.split(b"\n")
    size = len(lines) + 1
    side = bytearray(size)  # 1: a sidechain entry
    kept = bytearray(size)  # 1: an entry (not a blank line)
    up: list[Any] = [None] * size  # the uuid each entry hangs from
    uids: list[Any] = [None] * size
    first: dict[str, int] = {}  # uuid -> the line that gives it first
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        obj = object_line(raw, "an entry")  # the first reading refused any line that is not
        kept[n] = 1
        side[n] = obj.get("isSidechain") is True
        up[n] = obj.get("parentUuid") or obj.get("logicalParentUuid")
        uid = uids[n] = obj.get("uuid")
        if uid is not None:
            at = first.setdefault(uid, n)
            if side[at] != side[n]:
                raise _Bad(n, f"uuid {uid!r} is given to a sidechain entry and to an entry of "
                              f"the main thread (first at line {at})")
    for n in range(1, size):
        if kept[n]:
            _link(n, side, up[n], uids[n], first)
    root: dict[int, int] = {}
    runs: dict[int, bytearray] = {}
    for n in range(1, size):
        if side[n]:
            begins = _root(n, up, uids, first, root)
            runs.setdefault(begins, bytearray(size))[n] = 1
    for n in range(1, size):
        if side[n]:
            kept[n] = 0
    out = [(MAIN_RUN, kept)] + [(f"{SIDECHAIN_RUN}{line}", mask)
                                for line, mask in sorted(runs.items())]
    return [(name, b"\n".join(raw if mask[n] else b"" for n, raw in enumerate(lines, 1)))
            for name, mask in out]


def _link(n: int, side: bytearray, key: Any, uid: Any, first: dict[str, int]) -> None:
    """Raise for an entry at line ``n`` whose link crosses between the main thread and a
    subagent run, or leads a sidechain entry nowhere."""
    at = first.get(key) if key is not None else None
    if not side[n]:
        if at is not None and side[at]:
            raise _Bad(n, f"an entry of the main thread hangs from {key!r}, a sidechain "
                          f"entry (line {at})")
        return
    if key is None:
        if uid is None:
            raise _Bad(n, "a sidechain entry with neither 'uuid' nor 'parentUuid' belongs "
                          "to no subagent run")
    elif at is None:
        raise _Bad(n, f"a sidechain entry hangs from {key!r}, which no entry of the file "
                      "gives")
    elif not side[at]:
        raise _Bad(n, f"a sidechain entry hangs from {key!r}, an entry of the main thread "
                      f"(line {at})")


def _root(n: int, up: list[Any], uids: list[Any], first: dict[str, int],
          root: dict[int, int]) -> int:
    """The line of the first entry of the subagent run the sidechain entry at ``n`` is in
    (the links are checked: each leads to a sidechain entry or to nothing)."""
    walked: list[int] = []
    seen: set[int] = set()
    cur = n
    while cur not in root:
        uid = uids[cur]
        at = first[uid] if uid is not None else cur
        if at != cur:  # written again: where it was first written
            nxt = at
        elif up[cur] is None:
            root[cur] = cur
            break
        else:
            nxt = first[up[cur]]
        if cur in seen:
            raise _Bad(cur, f"the parentUuid chain loops at {uids[cur] or up[cur]!r}")
        seen.add(cur)
        walked.append(cur)
        cur = nxt
    found = root[cur]
    for line in walked:
        root[line] = found
    return found
