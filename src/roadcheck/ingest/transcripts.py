"""Readers for chat transcripts: OpenAI-style messages, tau-bench and tau2-bench runs.

Real agents log conversations, not checkpoints. These readers turn each
conversation into the shared event model so that a replay spec (with ``derive``
rules and ``voided_by`` selectors) can judge it as it was recorded:

- a ``system`` / ``user`` message becomes a ``message`` event of that role;
- an ``assistant`` message with text becomes a ``message`` event whose
  ``yields_turn`` is true exactly when the message carries no tool call;
- each tool call becomes an ``action`` event (``action_type`` = tool name,
  ``args``, and the matching tool result as ``result``), of agent ``user`` when
  the user side asked for it (tau2 ``requestor: user``);
- the run ends with a ``final`` event whose ``task_success`` is ``reward >= 1``.

``Event.line`` is the index of the message in its transcript (0-based, as in
``messages[i]``), so a report can say "seq 12 (message 9)". A malformed run is
one :class:`~roadcheck.ingest.ReadFailure`; the other runs of the file are still read.
See docs/transcripts.md for the mapping table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import (
    EmbeddedDuplicate,
    check_document,
    decode_embedded,
    depth_refused,
    no_duplicate_keys,
    too_deep,
)
from roadcheck.ingest._scan import _keys_at

__all__ = [
    "detect_json_document",
    "detect_openai_chat",
    "detect_tau2",
    "detect_tau_bench",
    "read_openai_chat",
    "read_tau2",
    "read_tau_bench",
    "transcript_events",
]

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


class _Bad(Exception):
    """A malformed message; the reader turns it into a TraceError naming the run."""


# -- detection ---------------------------------------------------------------------------

# One JSON string (escapes included) or one bracket: enough to follow nesting depth.
_DOC_KEYS = frozenset({b"simulations", b"messages", b"seq"})
_ITEM_KEYS = frozenset({b"traj", b"role"})


def detect_json_document(data: bytes) -> str | None:
    """Name the transcript format of a JSON document, or None.

    Looks at the top-level keys only (of the document, or of the first list
    element), without decoding the document: ``simulations`` is tau2,
    ``messages`` is openai-chat; a list whose first element has ``traj`` is
    tau-bench and one whose first element has ``role`` is a list of messages.
    """
    head = data.lstrip()[:1]
    if head == b"{":
        key = _keys_at(data, 1, _DOC_KEYS)
        if key == b"simulations":
            return "tau2"
        if key == b"messages":
            return "openai-chat"
        return None
    if head == b"[":
        key = _keys_at(data, 2, _ITEM_KEYS)
        if key == b"traj":
            return "tau-bench"
        if key == b"role":
            return "openai-chat"
    return None



def detect_openai_chat(data: bytes) -> bool:
    """A ``messages`` document, or a list whose first element has a ``role``."""
    return detect_json_document(data) == "openai-chat"


def detect_tau_bench(data: bytes) -> bool:
    """A list whose first element has a ``traj``."""
    return detect_json_document(data) == "tau-bench"


def detect_tau2(data: bytes) -> bool:
    """A results object with ``simulations``."""
    return detect_json_document(data) == "tau2"

# -- the mapping ----------------------------------------------------------------------------

def _text(content: Any) -> str:
    """The text of a message: a string, or the ``text`` parts of a content-part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if part.get("type", "text") == "text":
                    text = part.get("text")
                    if not isinstance(text, str):
                        raise _Bad(f"content part {i} has no text string")
                    parts.append(text)
            else:
                raise _Bad(f"content part {i} is {type(part).__name__}, not an object")
        return "\n".join(parts)
    raise _Bad(f"'content' must be a string, a list of parts or null, got "
               f"{type(content).__name__}")


#: Keys that name tool calls or their results; any other key containing "call" is a
#: misspelling of one of them, and a misspelt call key would hide the call.
_CALL_KEYS = frozenset({"tool_calls", "function_call", "tool_call_id"})


def _check_keys(msg: dict[str, Any]) -> None:
    """Refuse a key that looks like a tool-call key but is not one (``tool_call``...)."""
    for key in msg:
        if key not in _CALL_KEYS and "call" in key.lower():
            raise _Bad(f"unknown key {key!r}: tool calls are read from 'tool_calls' (or the "
                       "older 'function_call'); a misspelt key would hide the call")


def _call_id(raw: Any, what: str) -> str | int | None:
    """A call id: a string or an integer, or None when absent."""
    if raw is None or isinstance(raw, str) or (isinstance(raw, int)
                                               and not isinstance(raw, bool)):
        return raw
    raise _Bad(f"{what} must be a string, got {type(raw).__name__}")


def _call(tc: Any, i: int) -> tuple[str, Any, Any, str | None]:
    """(name, args, call id, requestor) of one tool call, in either dialect."""
    if not isinstance(tc, dict):
        raise _Bad(f"tool call {i} is {type(tc).__name__}, not an object")
    call_id = _call_id(tc.get("id"), f"tool call {i}: 'id'")
    fn = tc.get("function")
    if isinstance(fn, dict):  # OpenAI: {id, type, function: {name, arguments: "json"}}
        name, args = fn.get("name"), fn.get("arguments")
    else:  # tau2: {id, name, arguments: {...}, requestor}
        name, args = tc.get("name"), tc.get("arguments")
    if not isinstance(name, str) or not name:
        raise _Bad(f"tool call {i} has no tool name")
    if isinstance(args, str):
        # A model can emit arguments that are not JSON; the call was still made, so
        # it is kept (with the raw text) rather than hiding a guarded action.
        try:
            args = decode_embedded(args, "arguments")
        except EmbeddedDuplicate as exc:
            raise _Bad(f"tool call {i}: {exc}") from None
    elif args is None:
        args = {}
    requestor = tc.get("requestor")
    if requestor is not None and not isinstance(requestor, str):
        raise _Bad(f"tool call {i}: 'requestor' must be a string, got "
                   f"{type(requestor).__name__}")
    return name, args, call_id, requestor


def _kind(role: Any) -> str:
    """The event role of a message role that is not a tool result."""
    kind = _ROLES.get(role) if isinstance(role, str) else None
    if kind is None:
        raise _Bad(f"unknown role {role!r}" if role is not None
                   else "missing required key 'role'")
    return kind


def _tool_calls(msg: dict[str, Any]) -> list[Any]:
    """The tool calls of a message: ``tool_calls``, or the older single ``function_call``."""
    calls = msg.get("tool_calls")
    if calls is None:
        fc = msg.get("function_call")
        return [] if fc is None else [{"function": fc}]
    if not isinstance(calls, list):
        raise _Bad(f"'tool_calls' must be a list, got {type(calls).__name__}")
    return calls


class _Transcript:
    """The events of a transcript so far, and the calls still waiting for a result."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.pending: dict[Any, dict[str, Any]] = {}  # tool call id -> action awaiting a result
        self.by_name: dict[str, list[dict[str, Any]]] = {}  # legacy function_call results

    def read(self, index: int, msg: Any) -> None:
        """Map message ``index``: a tool result fills in its call; any other message is a
        ``message`` event (unless it is an assistant's call with no text) and its calls."""
        if not isinstance(msg, dict):
            raise _Bad(f"is {type(msg).__name__}, not an object")
        role = msg.get("role")
        ts = msg.get("timestamp")
        if ts is not None and not isinstance(ts, str):
            raise _Bad(f"'timestamp' must be a string, got {type(ts).__name__}")
        _check_keys(msg)
        if role == "tool" or role == "function":
            _result(msg, role, self.pending, self.by_name)
            return
        kind = _kind(role)
        text = _text(msg.get("content"))
        calls = _tool_calls(msg)
        if kind != "assistant" or text or not calls:
            self.message(kind, text, ts, index, calls)
        for i, tc in enumerate(calls):
            self.action(kind, ts, index, tc, i)

    def message(self, kind: str, text: str, ts: str | None, index: int,
                calls: list[Any]) -> None:
        seq = len(self.events) + 1
        rec: dict[str, Any] = {"seq": seq, "agent": kind, "event": "message", "role": kind,
                               "text": text}
        if kind == "assistant":
            rec["yields_turn"] = not calls
        if ts is not None:
            rec["ts"] = ts
        self.events.append(Event(seq, "message", kind, ts, rec, index))

    def action(self, kind: str, ts: str | None, index: int, tc: Any, i: int) -> None:
        name, args, call_id, requestor = _call(tc, i)
        agent = requestor or kind
        seq = len(self.events) + 1
        rec: dict[str, Any] = {"seq": seq, "agent": agent, "event": "action",
                               "action_type": name, "args": args}
        if ts is not None:
            rec["ts"] = ts
        if call_id is not None:
            rec["call_id"] = call_id
            self.pending[call_id] = rec
        else:
            self.by_name.setdefault(name, []).append(rec)
        self.events.append(Event(seq, "action", agent, ts, rec, index))


def transcript_events(messages: Sequence[Any], final: Mapping[str, Any]) -> list[Event]:
    """Map a list of chat messages and the final record's fields to events.

    Raises :class:`TraceError` naming the first malformed message.
    """
    transcript = _Transcript()
    for index, msg in enumerate(messages):
        try:
            transcript.read(index, msg)
        except _Bad as exc:
            raise TraceError(f"message {index}: {exc}") from None
    events = transcript.events
    seq = len(events) + 1
    rec = {"seq": seq, "event": "final", **final}
    events.append(Event(seq, "final", None, None, rec, None))
    return events


def _result(msg: dict[str, Any], role: str, pending: dict[Any, dict[str, Any]],
            by_name: dict[str, list[dict[str, Any]]]) -> None:
    """Attach a tool result to its call.

    A result that answers no recorded call is malformed: the call it answers was
    made, and the reader lost it (a misspelt or mistyped ``tool_calls``), so
    judging the rest would judge a road with a guarded call missing.
    """
    content = msg.get("content")
    result = content if isinstance(content, str) else _text(content)
    if role == "tool":
        # OpenAI names the call in ``tool_call_id``; tau2 puts it in the message ``id``.
        key = "tool_call_id" if "tool_call_id" in msg else "id"
        call_id = _call_id(msg.get(key), f"'{key}'")
        if call_id is None:
            raise _Bad("tool result names no call (no 'tool_call_id' or 'id'); the call it "
                       "answers cannot be found")
        target = pending.pop(call_id, None)
        if target is None:
            raise _Bad(f"tool result answers call id {call_id!r}, which no earlier tool call "
                       "made (a call the reader could not read, or a result given twice)")
    else:
        name = msg.get("name")
        if not isinstance(name, str) or not name:
            raise _Bad("function result has no 'name' string")
        waiting = by_name.get(name)
        if not waiting:
            raise _Bad(f"function result {name!r} answers no earlier function_call")
        target = waiting.pop(0)
    target["result"] = result
    if msg.get("error") is True:
        target["result_error"] = True


def _reward(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(f"{where} must be a number, got {type(value).__name__}")
    return value


def _final(reward: float | None, claimed: Any = None, **extra: Any) -> dict[str, Any]:
    """The final record: ``task_success`` is the run's own claim, else ``reward >= 1``."""
    if isinstance(claimed, bool):
        success = claimed
    else:
        success = reward is not None and reward >= 1
    out: dict[str, Any] = {"task_success": success}
    if reward is not None:
        out["reward"] = reward
    out.update((k, v) for k, v in extra.items() if v is not None)
    return out


def _decode(path: str, data: bytes) -> Any:
    """Decode a whole JSON document; a repeated key is refused like broken JSON."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        deep = depth_refused(data, exc)
        if deep is not None:
            raise TraceError(too_deep(), path=path, line=deep) from None
        line = data.count(b"\n", 0, exc.pos) + 1
        raise TraceError(f"unparseable JSON: {exc.msg}", path=path, line=line) from None
    check_document(data, doc, path)
    return doc


#: From this size on, a results file is decoded one run at a time: held whole, its
#: decoded objects take several times the file's bytes.
LARGE_FILE = 32 << 20


def _one_at_a_time(data: bytes, field: str | None = None) -> list[Any] | None:
    """The undecoded runs of a large results document, each checked, or None.

    The document is a JSON list of runs (``field`` None) or an object whose
    ``field`` is that list. msgspec finds where each run starts and ends
    without decoding it; every run (and every other value of the object) is
    then decoded once with orjson and checked for repeated keys, and dropped.
    None means something did not pass: the caller decodes the whole document,
    which names the problem exactly as it always has.
    """
    import msgspec

    try:
        if field is None:
            pieces = runs = msgspec.json.decode(data, type=list[msgspec.Raw])
            keys = 0
        else:
            top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
            runs = msgspec.json.decode(top[field], type=list[msgspec.Raw])
            pieces, keys = list(top.values()), len(top)
        counted = keys
        for piece in pieces:
            raw = bytes(piece)
            if not no_duplicate_keys(raw, orjson.loads(raw), 1):  # a value of the document
                return None
            counted += raw.count(b":")
    except (msgspec.DecodeError, orjson.JSONDecodeError, KeyError, RecursionError):
        return None
    # Every key of the object has one colon after it: the counts differ when one was
    # repeated (msgspec keeps the last silently) or a key holds a colon of its own.
    if counted != data.count(b":"):
        return None
    return runs


def _decoded(runs: list[Any]) -> Iterator[Any]:
    for raw in runs:
        yield orjson.loads(bytes(raw))


# -- the readers ------------------------------------------------------------------------------

def _chat_run(path: str, data: bytes) -> list[tuple[str, list[Any], dict[str, Any]]]:
    doc = _decode(path, data)
    if isinstance(doc, dict):
        messages = doc.get("messages")
        if not isinstance(messages, list):
            raise TraceError("expected a 'messages' list", path=path)
        try:
            reward = _reward(doc.get("reward"), "'reward'")
        except _Bad as exc:
            raise TraceError(str(exc), path=path) from None
        final = _final(reward, doc.get("task_success"))
    elif isinstance(doc, list):
        messages, final = doc, _final(None)
    else:
        raise TraceError(f"expected a JSON object or list, got {type(doc).__name__}", path=path)
    if not messages:
        raise TraceError("empty transcript: no messages", path=path)
    return [(path, messages, final)]


def _chat_trajectory(run: tuple[str, list[Any], dict[str, Any]]) -> Trajectory:
    path, messages, final = run
    events = transcript_events(messages, final)
    meta = {"reward": final["reward"]} if "reward" in final else {}
    return Trajectory(path, tuple(events), path, "openai-chat", meta)


def read_openai_chat(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory: ``{"messages": [...]}`` or a bare list of messages.

    Plain chat logs carry no reward. ``task_success`` is true only when the
    document says so: a top-level boolean ``task_success``, or a numeric
    ``reward`` of at least 1. Silence is not success.
    """
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _chat_run, _chat_trajectory)


def _tau_bench_runs(path: str, data: bytes) -> Iterable[tuple[str, int, Any]]:
    runs = _one_at_a_time(data) if len(data) >= LARGE_FILE else None
    if runs is not None:
        return ((path, n, record) for n, record in enumerate(_decoded(runs)))
    doc = _decode(path, data)
    if not isinstance(doc, list):
        raise TraceError(f"expected a JSON list of run records, got {type(doc).__name__}",
                         path=path)
    return [(path, n, record) for n, record in enumerate(doc)]


def _tau_bench_trajectory(run: tuple[str, int, Any]) -> Trajectory:
    from roadcheck.ingest import BadRun

    path, n, record = run
    name = f"record{n}"
    try:
        if not isinstance(record, dict):
            raise _Bad(f"is {type(record).__name__}, not an object")
        task_id, trial = record.get("task_id"), record.get("trial")
        if task_id is not None:
            name = f"task{task_id}/trial{trial if trial is not None else 0}"
        traj = record.get("traj")
        if not isinstance(traj, list) or not traj:
            raise _Bad("'traj' must be a non-empty list of messages")
        reward = _reward(record.get("reward"), "'reward'")
        events = transcript_events(traj, _final(reward, task_id=task_id, trial=trial))
    except (_Bad, TraceError) as exc:
        msg = exc.message if isinstance(exc, TraceError) else str(exc)
        raise BadRun(f"{path}#{name}", f"record {n}: {msg}") from None
    return Trajectory(f"{path}#{name}", tuple(events), path, "tau-bench", {"reward": reward})


def read_tau_bench(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per run record of a tau-bench results list."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _tau_bench_runs, _tau_bench_trajectory)


def _tau2_runs(path: str, data: bytes) -> Iterable[tuple[str, int, Any]]:
    runs = _one_at_a_time(data, "simulations") if len(data) >= LARGE_FILE else None
    if runs is not None:
        return ((path, n, sim) for n, sim in enumerate(_decoded(runs)))
    doc = _decode(path, data)
    sims = doc.get("simulations") if isinstance(doc, dict) else None
    if not isinstance(sims, list):
        raise TraceError("expected a results object with a 'simulations' list", path=path)
    return [(path, n, sim) for n, sim in enumerate(sims)]


def _tau2_trajectory(run: tuple[str, int, Any]) -> Trajectory:
    from roadcheck.ingest import BadRun

    path, n, sim = run
    name = f"simulation{n}"
    try:
        if not isinstance(sim, dict):
            raise _Bad(f"is {type(sim).__name__}, not an object")
        sim_id = sim.get("id")
        if isinstance(sim_id, (str, int)) and not isinstance(sim_id, bool):
            name = str(sim_id)
        messages = sim.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Bad("'messages' must be a non-empty list")
        info = sim.get("reward_info")
        if info is not None and not isinstance(info, dict):
            raise _Bad("'reward_info' must be an object")
        reward = _reward(info.get("reward") if info else None, "'reward_info.reward'")
        final = _final(reward, task_id=sim.get("task_id"), trial=sim.get("trial"),
                       termination_reason=sim.get("termination_reason"))
        events = transcript_events(messages, final)
    except (_Bad, TraceError) as exc:
        msg = exc.message if isinstance(exc, TraceError) else str(exc)
        raise BadRun(f"{path}#{name}", f"simulation {n}: {msg}") from None
    # A simulation id is a UUID: the task and trial say which run it was.
    meta = {"reward": reward, "task_id": sim.get("task_id"), "trial": sim.get("trial")}
    return Trajectory(f"{path}#{name}", tuple(events), path, "tau2", meta)


def read_tau2(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per simulation of a tau2-bench results file."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _tau2_runs, _tau2_trajectory)
