"""The Codex reader: rollout files into the shared event model.

Codex writes one JSON object per line to
``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``: ``{"timestamp", "type",
"payload"}`` with ``type`` ``session_meta``, ``turn_context``,
``response_item``, ``event_msg``, ``compacted``, and since Codex 0.15x
``world_state`` and ``token_usage_record``. The format is not specified;
this reader follows the files Codex writes:

- a ``response_item`` ``message`` is a ``message`` event (role ``user`` /
  ``assistant``; ``developer`` / ``system`` and the context Codex injects,
  ``<environment_context>`` and the like, are role ``system``);
- a ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` is an
  ``action`` (``action_type`` = the tool name, ``local_shell`` for a
  ``local_shell_call``; ``args``; ``call_id``), answered by its
  ``*_output`` (``result``; ``error`` when the output says the command failed:
  a non-zero ``exit_code`` or ``success: false``, the sentence Codex writes
  when its sandbox stopped the command, a non-zero exit code in the header
  ``exec_command`` writes before ``Output:``). A shell call (``shell``,
  ``container.exec``, ``shell_command``, ``exec_command``, ``local_shell``)
  carries its command line as ``command``;
- a ``web_search_call`` (a search the model ran) is an ``action``
  ``web_search`` (``args`` = its ``action``, ``result`` = its ``status``);
- a shell call that asked for escalated permissions
  (``sandbox_permissions: require_escalated``) and then ran, under an
  ``approval_policy`` that asks the user (``on-request``, ``untrusted``), was
  approved by the user: a ``checkpoint`` ``codex-approval`` (``confirmed_by:
  user``) just before the action. The policy is the last ``turn_context``'s, or,
  in a rollout without one (Codex 0.34 and earlier), the one the injected
  ``<environment_context>`` states. An escalated call the user declined never
  ran and is no action. Codex writes no other approval record;
- the end of the file is the ``final`` event (``task_success`` false: a
  rollout records no outcome).

A rollout of the earlier shape (before about September 2025: the meta object as
the first line, ``record_type`` state lines, the response items bare) is read the
same way, item by item.

Structure the reader does not understand is the file's ERROR, one line naming
the file and line. See docs/frameworks/codex.md.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._codex_output import decoded_failed, plain_failed
from roadcheck.ingest._json import (
    MAX_DEPTH,
    EmbeddedDuplicate,
    decode_embedded,
    fits,
    object_line,
    repeated_key,
    too_deep,
)
from roadcheck.shellcmd import command_text

__all__ = ["detect_codex", "read_codex"]

AGENT = "codex"
_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted",
                    # Codex 0.15x: the model settings a turn ran with, and its token usage.
                    "world_state", "token_usage_record"})
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output",
                      "local_shell_call_output"})
_SHELL_TOOLS = frozenset({"shell", "container.exec", "shell_command", "exec_command",
                          "local_shell"})
_ASKING = frozenset({"on-request", "untrusted", "unless-trusted"})
_INJECTED = ("<environment_context>", "<user_instructions>", "<permissions instructions>",
             "# AGENTS.md instructions", "<user_shell_command>")
_DECLINED = ("rejected by user", "declined by user", "denied by user")


#: The ``item_completed`` items that record work done: in code mode (a ``custom_tool_call``
#: ``exec`` running a script) the commands, patches and MCP calls the script makes are
#: written only as these.
_ITEMS = frozenset({"CommandExecution", "FileChange", "McpToolCall"})
_CODE_MODE = "exec"


class _Bad(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


#: A line that may be a rollout line: an object with a top-level ``"type"`` Codex writes. The
#: same words inside a string of another document are escaped (``\\"type\\"``), so they
#: do not match; a match is confirmed by decoding its line.
_ROLLOUT_LINE = re.compile(
    rb'^[ \t]*\{.*?"type"\s*:\s*"(?:' + b"|".join(re.escape(t.encode()) for t in sorted(_TYPES))
    + rb')"', re.MULTILINE)
#: The approval policy stated in the ``<environment_context>`` Codex injects (before
#: ``turn_context`` lines carried it): as a tag, or earlier as a line of its own.
_CONTEXT_POLICY = re.compile(r"<approval_policy>\s*([\w-]+)\s*</approval_policy>"
                             r"|^\s*Approval policy:\s*([\w-]+)\s*$", re.MULTILINE)
_LOOK = 65536  # how far into the file detection looks
_TRIES = 32  # candidate lines decoded at most


def _legacy_meta(obj: Any) -> bool:
    """True for the first line of a rollout of the earlier shape (before about September
    2025): the session's meta object itself, no ``type`` envelope, or a state line."""
    if not isinstance(obj, dict) or "type" in obj or "payload" in obj:
        return False
    if "record_type" in obj:
        return True
    return (isinstance(obj.get("id"), str) and isinstance(obj.get("timestamp"), str)
            and ("instructions" in obj or "originator" in obj or "git" in obj))


def _first_line(data: bytes) -> tuple[int, Any]:
    """The number and the decoded object of the first line that is not blank (None when
    it is no JSON)."""
    pos, n, size = 0, 1, len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        if end < 0:
            end = size
        if data[pos:end].strip():
            try:
                return n, orjson.loads(data[pos:end])
            except orjson.JSONDecodeError:
                return n, None
        pos, n = end + 1, n + 1
    return 1, None


def detect_codex(data: bytes) -> bool:
    """True when a line near the start is a Codex rollout line, or the file opens as a
    rollout of the earlier shape does.

    Any line will do, not only the first: a rollout whose first line is cut
    off is still read as one, and the reader names that line.
    """
    if _legacy_meta(_first_line(data)[1]):
        return True
    end = min(len(data), _LOOK)
    at = 0
    for _ in range(_TRIES):
        found = _ROLLOUT_LINE.search(data, at, end)
        if found is None:
            return False
        stop = data.find(b"\n", found.start())
        line = data[found.start():len(data) if stop < 0 else stop]
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            kind = obj.get("type")
            if type(kind) is str and kind in _TYPES and isinstance(obj.get("payload"), dict):
                return True
            if repeated_key(line, obj) is not None:
                # a Codex line type given, and a key given twice: the reader refuses it,
                # naming the key (the value orjson kept may be anything)
                return True
        if stop < 0:
            return False
        at = stop + 1
    return False


def _text(content: Any, line: int) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _Bad(line, f"'content' must be a list, got {type(content).__name__}")
    parts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            raise _Bad(line, f"content part {i} is {type(part).__name__}, not an object")
        if part.get("type") in ("input_text", "output_text", "text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise _Bad(line, f"content part {i} has no 'text' string")
            parts.append(text)
    return "\n".join(parts)


def _output(raw: Any, line: int) -> tuple[Any, bool]:
    """The output of a call and whether it says the call failed."""
    if isinstance(raw, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            decoded = orjson.loads(raw)
            if isinstance(decoded, dict) and "output" in decoded:
                if raw.count("[") + raw.count("{") > MAX_DEPTH and not fits(decoded):
                    raise _Bad(line, f"'output' holds JSON {too_deep()}")
                raw = decoded
        if isinstance(raw, str):
            return raw, plain_failed(raw)
    if isinstance(raw, dict):
        return raw.get("output", raw.get("content", raw)), decoded_failed(raw)
    return raw, False


def _item_id(item: dict[str, Any], itype: str, line: int) -> str:
    iid = item.get("id")
    if not isinstance(iid, str) or not iid:
        raise _Bad(line, f"a {itype} item has no 'id'")
    return iid


def _item_text(item: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str):
            return value
    return None


def _item_status(item: dict[str, Any], itype: str, line: int) -> str | None:
    status = item.get("status")
    if status is not None and not isinstance(status, str):
        raise _Bad(line, f"a {itype} item's 'status' must be a string, got "
                         f"{type(status).__name__}")
    return status


#: What an item mapper gives: the action's fields, its output (None when it records
#: none), whether it failed, and whether the item itself shows the work ran.
_ItemAction = tuple[dict[str, Any], Any, bool, bool]


def _command_item(item: dict[str, Any], iid: str, line: int, failed: bool) -> _ItemAction:
    """A ``CommandExecution`` item: an ``exec_command`` action."""
    raw_cmd = item.get("command")
    command = command_text(raw_cmd)
    if command is None:
        raise _Bad(line, "a CommandExecution item has no command (a string or a list of "
                         "strings)")
    args: dict[str, Any] = {"command": raw_cmd}
    if isinstance(item.get("cwd"), str):
        args["cwd"] = item["cwd"]
    fields: dict[str, Any] = {"action_type": "exec_command", "args": args, "call_id": iid,
                              "command": command}
    code = item.get("exit_code", item.get("exitCode"))
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        raise _Bad(line, f"a CommandExecution item's exit code must be an integer, got "
                         f"{type(code).__name__}")
    failed = failed or bool(code)
    out = _item_text(item, "aggregated_output", "aggregatedOutput", "formatted_output",
                     "stdout")
    if failed and not out:
        out = _item_text(item, "stderr") or (
            f"exit code {code}" if code is not None else "failed")
    return fields, out, failed, code is not None


def _file_item(item: dict[str, Any], iid: str, line: int, failed: bool) -> _ItemAction:
    """A ``FileChange`` item: an ``apply_patch`` action."""
    changes = item.get("changes")
    if not isinstance(changes, dict):
        raise _Bad(line, "a FileChange item has no 'changes' object")
    fields: dict[str, Any] = {"action_type": "apply_patch", "args": {"changes": changes},
                              "call_id": iid}
    out = _item_text(item, "stderr" if failed else "stdout")
    if failed and not out:
        out = _item_text(item, "stdout") or "failed"
    return fields, out, failed, False


def _mcp_item(item: dict[str, Any], iid: str, line: int, failed: bool) -> _ItemAction:
    """A ``McpToolCall`` item: an ``mcp__<server>__<tool>`` action."""
    server, tool = item.get("server"), item.get("tool")
    if not isinstance(server, str) or not server or not isinstance(tool, str) or not tool:
        raise _Bad(line, "a McpToolCall item needs 'server' and 'tool' strings")
    mcp_args = item.get("arguments")
    if isinstance(mcp_args, str):
        try:
            mcp_args = decode_embedded(mcp_args, "arguments")
        except EmbeddedDuplicate as exc:
            raise _Bad(line, f"a McpToolCall item: {exc}") from None
    fields: dict[str, Any] = {"action_type": f"mcp__{server}__{tool}",
                              "args": {} if mcp_args is None else mcp_args, "call_id": iid}
    error, result = item.get("error"), item.get("result")
    if isinstance(error, dict):
        error = error.get("message", error)
    out: Any = None
    if error is not None:
        failed, out = True, error
    elif result is not None:
        failed = failed or (isinstance(result, dict) and result.get("isError") is True)
        out = result.get("content", result) if isinstance(result, dict) else result
    elif failed:
        out = "failed"
    return fields, out, failed, False


_ITEM_ACTIONS: dict[str, Callable[[dict[str, Any], str, int, bool], _ItemAction]] = {
    "CommandExecution": _command_item, "FileChange": _file_item, "McpToolCall": _mcp_item}


def _item_action(item: dict[str, Any], itype: str, line: int) -> dict[str, Any] | None:
    """The action fields an ``item_completed`` item records; None for one the user declined."""
    iid = _item_id(item, itype, line)
    status = _item_status(item, itype, line)
    if status == "declined":
        return None  # the user said no: it never ran
    fields, out, failed, ran = _ITEM_ACTIONS[itype](item, iid, line, status == "failed")
    if status in ("completed", "failed") or ran or out is not None:
        fields["error" if failed else "result"] = "" if out is None else out
    return fields


def _line(n: int, raw: bytes) -> tuple[str, dict[str, Any], str | None]:
    """The ``type``, ``payload`` and ``timestamp`` of one rollout line, checked."""
    try:
        obj = object_line(raw, "a line")
    except ValueError as exc:
        raise _Bad(n, str(exc)) from None
    kind, payload, ts = obj.get("type"), obj.get("payload"), obj.get("timestamp")
    if not isinstance(kind, str) or kind not in _TYPES:
        raise _Bad(n, f"unknown line type {kind!r}; expected one of "
                      + ", ".join(sorted(_TYPES)))
    if not isinstance(payload, dict):
        raise _Bad(n, "missing required key 'payload' (an object)")
    if ts is not None and not isinstance(ts, str):
        raise _Bad(n, f"'timestamp' must be a string, got {type(ts).__name__}")
    return kind, payload, ts


def _message(payload: dict[str, Any], ts: str | None, n: int) -> tuple[str, dict[str, Any]]:
    """(speaker, fields) of a ``message`` response item."""
    role = payload.get("role")
    if role not in ("user", "assistant", "developer", "system"):
        raise _Bad(n, f"unknown message role {role!r}")
    text = _text(payload.get("content"), n)
    if role == "user" and text.lstrip().startswith(_INJECTED):
        role = "system"
    if role in ("developer", "system"):
        return "system", {"ts": ts, "role": "system", "text": text}
    if role == "user":
        return "user", {"ts": ts, "role": "user", "text": text}
    return AGENT, {"ts": ts, "role": "assistant", "text": text, "yields_turn": False}


def _call_name_args(payload: dict[str, Any], ptype: str, n: int) -> tuple[str, Any]:
    """(tool name, arguments) of a call response item; JSON text arguments decoded."""
    if ptype == "local_shell_call":
        action = payload.get("action")
        if not isinstance(action, dict):
            raise _Bad(n, "a local_shell_call has no 'action' object")
        return "local_shell", action
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        raise _Bad(n, f"a {ptype} has no 'name'")
    field = "arguments" if "arguments" in payload else "input"
    args = payload.get(field)
    if isinstance(args, str):
        try:
            args = decode_embedded(args, field)
        except EmbeddedDuplicate as exc:
            raise _Bad(n, f"a {ptype}: {exc}") from None
    return name, args


def _shell_command(name: str, args: Any, n: int) -> str:
    """The command line a shell call runs."""
    raw_cmd = args.get("command", args.get("cmd")) if isinstance(args, dict) else args
    command = command_text(raw_cmd)
    if command is None:
        raise _Bad(n, f"a {name} call has no command (a string or a list of strings)")
    return command


def _escalated(args: Any) -> bool:
    """True when a call asked to run outside the sandbox."""
    return isinstance(args, dict) and (
        args.get("sandbox_permissions") == "require_escalated"
        or args.get("with_escalated_permissions") is True)


def _call(payload: dict[str, Any], ptype: str, call_id: str, ts: str | None,
          n: int) -> dict[str, Any]:
    """The action fields of a call response item."""
    name, args = _call_name_args(payload, ptype, n)
    fields: dict[str, Any] = {"ts": ts, "action_type": name, "args": args, "call_id": call_id}
    if name in _SHELL_TOOLS:
        fields["command"] = _shell_command(name, args, n)
    return fields


def _web_search(payload: dict[str, Any], ts: str | None) -> dict[str, Any]:
    """The action fields of a ``web_search_call``: run by the model's host, never answered."""
    action = payload.get("action")
    search: dict[str, Any] = {"ts": ts, "action_type": "web_search",
                              "args": action if isinstance(action, dict) else {},
                              "result": payload.get("status")}
    if isinstance(payload.get("id"), str):
        search["call_id"] = payload["id"]
    return search


def _answered(fields: dict[str, Any]) -> bool:
    """True when a call already has its outcome (or was declined)."""
    return "result" in fields or "error" in fields or bool(fields.get("_declined"))


def _session_id(payload: dict[str, Any]) -> Any:
    return payload.get("id", (payload.get("meta") or {}).get("id")
                       if isinstance(payload.get("meta"), dict) else None)


#: One staged event: (kind, agent, fields, line).
_Staged = tuple[str, str | None, dict[str, Any], int]


class _Rollout:
    """What a rollout's lines add up to while they are read, one line type per method."""

    def __init__(self) -> None:
        self.staged: list[_Staged] = []
        self.calls: dict[str, tuple[dict[str, Any], int]] = {}
        self.items: dict[str, int] = {}  # the item_completed ids, and their lines
        self.script: str | None = None  # the call id of the last code-mode exec call
        self.policy: str | None = None
        self.meta: dict[str, Any] = {}

    def session_meta(self, payload: dict[str, Any], ts: str | None, n: int) -> None:
        sid = _session_id(payload)
        if isinstance(sid, str):
            self.meta["session_id"] = sid

    def turn_context(self, payload: dict[str, Any], ts: str | None, n: int) -> None:
        ap = payload.get("approval_policy")
        self.policy = ap if isinstance(ap, str) else None

    def event_msg(self, payload: dict[str, Any], ts: str | None, n: int) -> None:
        if payload.get("type") != "item_completed":
            return
        item = payload.get("item")
        if not isinstance(item, dict):
            raise _Bad(n, "an item_completed has no 'item' object")
        itype = item.get("type")
        if not isinstance(itype, str):
            raise _Bad(n, f"an item_completed item's 'type' must be a string, got "
                          f"{type(itype).__name__}")
        if itype not in _ITEMS:
            return  # messages, reasoning, plans: the response items say them
        done = _item_action(item, itype, n)
        iid = _item_id(item, itype, n)
        if iid in self.items:
            raise _Bad(n, f"item id {iid!r} is completed twice (first at line {self.items[iid]})")
        self.items[iid] = n
        if done is not None:
            done["ts"], done["_item"] = ts, True
            if self.script is not None:
                done["parent_call_id"] = self.script
            self.staged.append(("action", AGENT, done, n))

    def response_item(self, payload: dict[str, Any], ts: str | None, n: int) -> None:
        ptype = payload.get("type")
        if not isinstance(ptype, str):
            raise _Bad(n, "a response_item payload has no 'type' string")
        read = _RESPONSE_ITEMS.get(ptype)
        if read is not None:
            read(self, payload, ptype, ts, n)

    def chat_message(self, payload: dict[str, Any], ptype: str, ts: str | None, n: int) -> None:
        who, fields = _message(payload, ts, n)
        if who == "system" and fields["text"].lstrip().startswith("<environment_context>"):
            found = _CONTEXT_POLICY.search(fields["text"])
            if found is not None:  # Codex 0.34 and earlier: no turn_context says it
                self.policy = found.group(1) or found.group(2)
        staged = self.staged
        if who == "user" and staged and staged[-1][0] == "message" \
                and staged[-1][2]["role"] == "assistant":
            staged[-1][2]["yields_turn"] = True
        staged.append(("message", who, fields, n))

    def call(self, payload: dict[str, Any], ptype: str, ts: str | None, n: int) -> None:
        call_id = payload.get("call_id", payload.get("id"))
        if not isinstance(call_id, str) or not call_id:
            raise _Bad(n, f"a {ptype} has no 'call_id'")
        if call_id in self.calls:
            raise _Bad(n, f"call id {call_id!r} is used twice (first at line "
                          f"{self.calls[call_id][1]})")
        fields = _call(payload, ptype, call_id, ts, n)
        # approved by the user when it asked to leave the sandbox under a policy that asks
        fields["_approved"] = _escalated(fields["args"]) and self.policy in _ASKING
        if ptype == "custom_tool_call" and fields["action_type"] == _CODE_MODE:
            self.script = call_id  # the items completed until its output are its work
        self.calls[call_id] = (fields, n)
        self.staged.append(("action", AGENT, fields, n))

    def web_search(self, payload: dict[str, Any], ptype: str, ts: str | None, n: int) -> None:
        self.staged.append(("action", AGENT, _web_search(payload, ts), n))

    def output(self, payload: dict[str, Any], ptype: str, ts: str | None, n: int) -> None:
        call_id = payload.get("call_id")
        if not isinstance(call_id, str) or call_id not in self.calls:
            raise _Bad(n, f"a {ptype} answers call id {call_id!r}, which no earlier call "
                          "made")
        if call_id == self.script:
            self.script = None
        target = self.calls[call_id][0]
        if _answered(target):
            raise _Bad(n, f"call {call_id!r} is answered twice")
        out, failed = _output(payload.get("output"), n)
        text = out if isinstance(out, str) else ""
        if any(d in text.lower() for d in _DECLINED):
            target["_declined"] = True
            return
        target["error" if failed else "result"] = out

    def kept(self) -> list[_Staged]:
        """The staged events, an item that repeats a recorded call folded into that call."""
        kept = []
        for entry in self.staged:
            fields = entry[2]
            if fields.pop("_item", False) and fields["call_id"] in self.calls:
                # The item repeats a call the response items record (a command run directly,
                # not from a script): one action, given the item's outcome when it has none.
                call = self.calls[fields["call_id"]][0]
                if not _answered(call):
                    for key in ("result", "error"):
                        if key in fields:
                            call[key] = fields[key]
                continue
            kept.append(entry)
        return kept


_LineReader = Callable[[_Rollout, dict[str, Any], str | None, int], None]
_ItemReader = Callable[[_Rollout, dict[str, Any], str, str | None, int], None]

#: The line types that add to the trajectory; the others (compacted, world_state,
#: token_usage_record) record nothing it needs.
_LINE_TYPES: dict[str, _LineReader] = {
    "session_meta": _Rollout.session_meta, "turn_context": _Rollout.turn_context,
    "event_msg": _Rollout.event_msg, "response_item": _Rollout.response_item}
#: The response item types read; the others (reasoning...) record no event.
_RESPONSE_ITEMS: dict[str, _ItemReader] = {
    "message": _Rollout.chat_message, "web_search_call": _Rollout.web_search,
    **dict.fromkeys(_CALLS, _Rollout.call), **dict.fromkeys(_OUTPUTS, _Rollout.output)}


def _numbered(staged: list[_Staged]) -> list[Event]:
    """The events, numbered: an approved escalated call that ran is preceded by its
    checkpoint, a declined call dropped, and the end of the file is ``final``."""
    events: list[Event] = []
    seq = 0
    for kind, who, fields, n in staged:
        ts = fields.pop("ts", None)
        if kind == "action":
            if fields.pop("_declined", False):
                continue
            approved = fields.pop("_approved", False)
            if approved and ("result" in fields or "error" in fields):
                seq += 1
                events.append(Event.make(seq, "checkpoint", "user", line=n, ts=ts,
                                         checkpoint_id="codex-approval", confirmed_by="user",
                                         decision="approved", call_id=fields["call_id"]))
        seq += 1
        events.append(Event.make(seq, kind, who, line=n, ts=ts, **fields))
    seq += 1
    events.append(Event.make(seq, "final", None, task_success=False))
    return events


def _legacy_events(data: bytes, first: int) -> tuple[list[Event], dict[str, Any]]:
    """A rollout of the earlier shape: the meta object on line ``first``, then state lines
    (``record_type``) and the response items themselves, without timestamps."""
    rollout = _Rollout()
    for n, raw in enumerate(data.split(b"\n"), 1):
        if n < first or not raw.strip():
            continue
        try:
            obj = object_line(raw, "a line")
        except ValueError as exc:
            raise _Bad(n, str(exc)) from None
        if n == first:
            if "record_type" not in obj:
                rollout.session_meta(obj, None, n)
            continue
        if "record_type" in obj:
            continue
        kind = obj.get("type")
        if not isinstance(kind, str):
            raise _Bad(n, "a line of a rollout of the earlier shape (no 'type' envelope) has "
                          "no 'type' or 'record_type'")
        if kind in _TYPES:
            raise _Bad(n, f"a {kind!r} line in a rollout of the earlier shape (no 'type' "
                          f"envelope; line {first} is the session's meta object)")
        rollout.response_item(obj, None, n)
    return _numbered(rollout.kept()), rollout.meta


def _events(data: bytes) -> tuple[list[Event], dict[str, Any]]:
    first, obj = _first_line(data)
    if _legacy_meta(obj):
        return _legacy_events(data, first)
    rollout = _Rollout()
    seen = False
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        kind, payload, ts = _line(n, raw)
        seen = True
        read = _LINE_TYPES.get(kind)
        if read is not None:
            read(rollout, payload, ts, n)
    if not seen:
        raise _Bad(1, "empty rollout: no lines")
    return _numbered(rollout.kept()), rollout.meta


def read_codex(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per rollout file."""
    from roadcheck.ingest import ReadFailure

    try:
        events, meta = _events(data)
    except _Bad as exc:
        yield ReadFailure(path, path, TraceError(str(exc), path=path, line=exc.line))
        return
    yield Trajectory(path, tuple(events), path, "codex", meta)
