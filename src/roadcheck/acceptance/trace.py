"""Tool-call traces: the calls an agent actually made, as evidence for its claims.

A trace is read from a native JSONL trajectory (each ``action`` event is a
call: ``action_type`` is the tool, with optional ``args`` and ``result``), from
a JSON list of ``{"tool", "args", "result"}`` objects, or from a file of any
format replay reads (a coding-agent session, an OTel export...), through the
same readers. In memory the gate
also takes a :class:`~roadcheck.events.Trajectory`, events, or such dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any, NamedTuple

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory

__all__ = ["Call", "call_errored", "calls_of", "load_session", "load_trace"]

_NO_ARGS: Mapping[str, Any] = {}

#: The keys of a call in a JSON call list: any other is refused (a misspelt ``result``
#: would hide the error that makes a call no evidence).
CALL_KEYS = ("tool", "args", "result", "error", "ok", "is_error")
#: The keys of a native action event that the gate reads. A native event may carry keys
#: of its own (ids, flags); one that reads as a misspelling of these is refused.
_ACTION_READS = ("args", "result", "error", "ok", "is_error", "action_type")
_CALL_KEY_SET = frozenset(CALL_KEYS)
_NATIVE_KEYS = frozenset({"seq", "event", "agent", "ts", "irreversible", *_ACTION_READS})


class Call(NamedTuple):
    """One recorded tool call."""

    tool: str
    args: Mapping[str, Any]
    result: Any
    #: Where the call was recorded: ``seq 4`` in a trajectory, ``call 2`` in a list.
    where: str
    #: True when the recorded outcome is an error, so the call is no evidence of an effect.
    errored: bool


def call_errored(record: Mapping[str, Any]) -> bool:
    """True when a call record or its ``result`` says the call failed.

    A failure is an ``error`` key that is not null or false, ``ok: false``, or
    ``is_error: true``, on the record itself or on its ``result`` object.
    """
    for holder in (record, record.get("result")):
        if isinstance(holder, Mapping) and (
                holder.get("error") not in (None, False)
                or holder.get("ok") is False
                or holder.get("is_error") is True):
            return True
    return False


def _call(record: Mapping[str, Any], tool: str, where: str) -> Call:
    args = record.get("args")
    return Call(tool, args if isinstance(args, Mapping) else _NO_ARGS, record.get("result"),
                where, call_errored(record))


def calls_of(trace: Any) -> list[Call]:
    """The calls of an in-memory trace; entries that are not tool calls are skipped.

    Takes a :class:`Trajectory`, a list of :class:`Event` or :class:`Call`, or a
    list of ``{"tool", "args", "result"}`` dicts (native action records work too).
    """
    if isinstance(trace, Trajectory):
        trace = trace.events
    if isinstance(trace, (str, bytes, Mapping)) or not isinstance(trace, Iterable):
        return []
    calls: list[Call] = []
    for index, item in enumerate(trace, 1):
        if isinstance(item, Call):
            calls.append(item)
        elif isinstance(item, Event):
            if item.kind == "action" and isinstance(item.action_type, str):
                calls.append(_call(item.data, item.action_type, f"seq {item.seq}"))
        elif isinstance(item, Mapping):
            tool = item.get("tool")
            if isinstance(tool, str):
                calls.append(_call(item, tool, f"call {index}"))
            elif item.get("event") == "action" and isinstance(item.get("action_type"), str):
                where = f"seq {item['seq']}" if "seq" in item else f"call {index}"
                calls.append(_call(item, item["action_type"], where))
    return calls


def load_trace(path: str | PathLike[str], input_format: str | None = None) -> list[Call]:
    """Read a trace file; anything malformed raises :class:`TraceError` naming file and line.

    A JSON list of calls and a native trajectory are read as such; a file of any other
    format replay reads (a Claude Code or Codex session, an OTel export, a tau2 run...)
    is read by that format's reader, told by content like replay does, or named by
    ``input_format``. Such a file must hold one run: a file of several is named
    ``PATH#RUN`` (the run's id as replay prints it).
    """
    source, run, data, fmt = _read(path, input_format)
    if input_format is None and run is None and _native(fmt) and data.lstrip()[:1] == b"[":
        return _read_call_list(source, data)
    return calls_of(_session(source, run, data, fmt))


def load_session(path: str | PathLike[str], input_format: str | None = None) -> Trajectory:
    """Read one run of any format replay reads (``PATH#RUN`` names one of several), with
    every event: the agent's messages as well as its calls. A JSON list of calls is no
    session (it holds no message) and is read as a native file would be: refused."""
    return _session(*_read(path, input_format))


def _read(path: str | PathLike[str], input_format: str | None) -> tuple[str, str | None,
                                                                          bytes, str]:
    """The file (and the run) ``path`` names, its bytes and its format, read once."""
    from roadcheck.ingest import detect_format
    from roadcheck.ingest.native import read_bytes

    source, run = _split_run(str(path))
    data = read_bytes(source)
    return source, run, data, input_format or detect_format(data)


def _native(fmt: str) -> bool:
    from roadcheck.ingest import UNKNOWN

    return fmt in ("native", UNKNOWN)


def _session(source: str, run: str | None, data: bytes, fmt: str) -> Trajectory:
    if _native(fmt) and run is None:
        from roadcheck.ingest.native import read_native

        trajectory = read_native(source, data)
        _check_native(source, trajectory)
        return trajectory
    return _one_run(source, data, fmt, run)


def _split_run(path: str) -> tuple[str, str | None]:
    """``PATH#RUN`` -> (PATH, RUN) when PATH names no file by itself."""
    import os

    if "#" in path and not os.path.exists(path):
        file, _, run = path.rpartition("#")
        if file and run:
            return file, run
    return path, None


def _check_native(source: str, trajectory: Trajectory) -> None:
    for event in trajectory.events:
        if event.kind != "action":
            continue
        if not isinstance(event.get("args", {}), (dict, type(None))):
            raise TraceError("'args' must be an object", path=source, line=event.line)
        misspelt = _misspelt(event.data)
        if misspelt is not None:
            raise TraceError(misspelt, path=source, line=event.line)


def _one_run(source: str, data: bytes, fmt: str, run: str | None) -> Trajectory:
    """The one run of a file in ``fmt``, or the run named ``run``; else TraceError."""
    from roadcheck.ingest import ReadFailure, load

    _, entries = load(source, fmt, data=data)
    runs: list[Trajectory] = []
    for entry in entries:
        if isinstance(entry, ReadFailure):
            raise entry.error
        runs.append(entry)
    if run is not None:
        named = [t for t in runs if t.id == f"{source}#{run}" or (len(runs) == 1 and t.id
                                                                   == source and run == "1")]
        if not named:
            raise TraceError(f"no run {run!r} in this {fmt} file; it holds "
                             + _run_names(source, runs), path=source)
        return named[0]
    if len(runs) != 1:
        raise TraceError(f"a trace is one run, and this {fmt} file holds "
                         + _run_names(source, runs) + "; name one as PATH#RUN", path=source)
    return runs[0]


def _run_names(source: str, runs: list[Trajectory]) -> str:
    if not runs:
        return "none"
    names = [t.id.removeprefix(source + "#") for t in runs[:5]]
    more = f", and {len(runs) - 5} more" if len(runs) > 5 else ""
    return f"{len(runs)} ({', '.join(names)}{more})"


def _misspelt(record: Mapping[str, Any]) -> str | None:
    """The message for a key of a native action that reads as a misspelt key the gate
    reads (``reslut``, ``results``, ``arg``), or None."""
    for key in record:
        if key not in _NATIVE_KEYS:
            from roadcheck.documents._read import suggest

            close = suggest(key, list(_ACTION_READS))
            if close is not None:
                return f"unknown key {key!r}; did you mean {close!r}?"
    return None


def _key_line(data: bytes, index: int, key: str) -> int | None:
    """The line of ``key`` in the ``index``-th object (from 1) of the JSON array ``data``."""
    import json

    from roadcheck.ingest._scan import _COLON, _TOKEN

    level = seen = 0
    for m in _TOKEN.finditer(data):
        tok = m.group()
        if tok in (b"{", b"["):
            level += 1
            if level == 2 and tok == b"{":
                seen += 1
        elif tok in (b"}", b"]"):
            level -= 1
        elif (level == 2 and seen == index and _COLON.match(data, m.end())
              and json.loads(tok) == key):
            return data.count(b"\n", 0, m.start()) + 1
    return None


def _read_call_list(path: str, data: bytes) -> list[Call]:
    import orjson

    from roadcheck.ingest._json import check_document, depth_refused, too_deep

    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        deep = depth_refused(data, exc)
        if deep is not None:
            raise TraceError(too_deep(), path=path, line=deep) from None
        line = data.count(b"\n", 0, exc.pos) + 1
        raise TraceError(f"invalid JSON: {exc.msg}", path=path, line=line) from None

    check_document(data, doc, path)
    calls: list[Call] = []
    for index, item in enumerate(doc, 1):
        if not isinstance(item, dict):
            raise TraceError(f"call {index}: expected an object, got {type(item).__name__}",
                             path=path)
        if not item.keys() <= _CALL_KEY_SET:
            from roadcheck.ingest._keys import unknown_key

            problem = unknown_key(item, CALL_KEYS)
            bad = next(k for k in item if k not in _CALL_KEY_SET)
            raise TraceError(f"call {index}: {problem}", path=path,
                             line=_key_line(data, index, bad))
        tool = item.get("tool")
        if not isinstance(tool, str) or not tool:
            raise TraceError(f"call {index}: 'tool' must be a non-empty string", path=path)
        if "args" in item and not isinstance(item["args"], (dict, type(None))):
            raise TraceError(f"call {index}: 'args' must be an object", path=path)
        calls.append(_call(item, tool, f"call {index}"))
    return calls
