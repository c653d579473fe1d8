"""The ATIF reader: Agent Trajectory Interchange Format v1.x files into events.

An ATIF document is one root trajectory: ``schema_version`` (``ATIF-v1.<n>``),
``session_id``, ``agent`` (``name``...), ``steps`` and, from v1.7,
``subagent_trajectories`` embedded whole. The mapping follows the transcript
readers (docs/transcripts.md), so the same ``derive`` rules work on it:

- a ``system`` / ``user`` step is a ``message`` of that role;
- an ``agent`` step with a message is a ``message`` of role ``assistant``
  (``yields_turn`` when it makes no tool call), of agent ``agent.name``;
- each tool call is an ``action`` (``action_type`` = ``function_name``,
  ``args`` = ``arguments``, ``call_id``, ``result`` = the observation result
  whose ``source_call_id`` names the call);
- a result with ``subagent_trajectory_ref`` is a ``handoff`` from this agent to
  the subagent, with the tool call's arguments as payload; when the subagent's
  trajectory is embedded in ``subagent_trajectories`` (or kept in its own file,
  named by ``trajectory_path`` relative to the document's directory) its events
  follow the handoff, as that agent's;
- ATIF has no approval field: a step's ``extra.checkpoint``
  (``{"id", "confirmed_by", "decision"}``) is a ``checkpoint`` when the
  decision is absent or ``approved``; a rejection gives no checkpoint event;
- the end of the root trajectory is the ``final`` event.

A malformed document is one :class:`~roadcheck.ingest.ReadFailure` naming the step.
See docs/frameworks/atif.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, cast

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._json import check_document
from roadcheck.ingest.transcripts import _Bad as _BadText
from roadcheck.ingest.transcripts import _decode, _text

__all__ = ["is_atif", "read_atif"]

_VERSION = re.compile(r"ATIF-v1\.\d+")
_DETECT = re.compile(rb'"schema_version"\s*:\s*"ATIF-')
_SOURCES = {"system": "system", "user": "user", "agent": "assistant"}
_APPROVED = frozenset({"approved", "approve", "accepted", "confirmed"})


class _Bad(Exception):
    """A malformed step; the reader turns it into a TraceError naming it."""


def is_atif(data: bytes) -> bool:
    """True when the document declares an ATIF ``schema_version`` near its start."""
    return _DETECT.search(data, 0, 65536) is not None


class _At(NamedTuple):
    """Where a step's events come from: the agent (or role), the time and the step id."""

    agent: str
    ts: str | None
    step_id: Any


class _Step(NamedTuple):
    """What one step records, checked."""

    role: str
    ts: str | None
    step_id: Any
    text: str
    calls: list[Any]
    results: list[Any]
    checkpoint: Any


def _role(step: dict[str, Any]) -> str:
    source = step.get("source")
    role = _SOURCES.get(source) if isinstance(source, str) else None
    if role is None:
        raise _Bad(f"unknown source {source!r}" if source is not None
                   else "missing required key 'source'")
    return role


def _check_call_keys(step: dict[str, Any]) -> None:
    """Refuse a key that looks like a tool-call key but is not ``tool_calls``."""
    for key in step:
        if key != "tool_calls" and "call" in key.lower():
            raise _Bad(f"unknown key {key!r}: tool calls are read from 'tool_calls'; a "
                       "misspelt key would hide the call")


def _message_text(message: Any) -> str:
    try:
        return _text(message)
    except _BadText as exc:
        raise _Bad(f"'message': {exc}") from None


def _tool_calls(calls: Any) -> list[Any]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise _Bad(f"'tool_calls' must be a list, got {type(calls).__name__}")
    return calls


def _results(obs: Any) -> list[Any]:
    """The ``observation.results`` of a step ([] without an observation)."""
    if obs is None:
        return []
    raw = obs.get("results") if isinstance(obs, dict) else None
    if not isinstance(raw, list):
        raise _Bad("'observation.results' must be a list")
    return raw


def _read_step(step: Any) -> _Step:
    """The fields of one step, each checked, in the order they are checked."""
    if not isinstance(step, dict):
        raise _Bad(f"is {type(step).__name__}, not an object")
    role = _role(step)
    ts = step.get("timestamp")
    if ts is not None and not isinstance(ts, str):
        raise _Bad(f"'timestamp' must be a string, got {type(ts).__name__}")
    _check_call_keys(step)
    step_id = step.get("step_id")
    if step_id is not None and not isinstance(step_id, (str, int)):
        raise _Bad(f"'step_id' must be an integer or a string, got {type(step_id).__name__}")
    text = _message_text(step.get("message"))
    calls = _tool_calls(step.get("tool_calls"))
    results = _results(step.get("observation"))
    extra = step.get("extra")
    if extra is not None and not isinstance(extra, dict):
        raise _Bad(f"'extra' must be an object, got {type(extra).__name__}")
    checkpoint = extra.get("checkpoint") if extra is not None else None
    return _Step(role, ts, step_id, text, calls, results, checkpoint)


def _action(tc: Any, i: int, step_id: Any) -> tuple[str | int | None, dict[str, Any]]:
    """(call id, action fields) of tool call ``i`` of a step."""
    if not isinstance(tc, dict):
        raise _Bad(f"tool call {i} is {type(tc).__name__}, not an object")
    fn = tc.get("function_name")
    if not isinstance(fn, str) or not fn:
        raise _Bad(f"tool call {i} has no 'function_name'")
    args = tc.get("arguments", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _Bad(f"tool call {i}: 'arguments' must be an object, got "
                   f"{type(args).__name__}")
    fields = {"action_type": fn, "args": args, "step_id": step_id}
    call_id = _call_id(tc.get("tool_call_id"), f"tool call {i}: 'tool_call_id'")
    if call_id is not None:
        fields["call_id"] = call_id
    return call_id, fields


def _answered(res: dict[str, Any], i: int,
              by_call: dict[Any, dict[str, Any]]) -> dict[str, Any] | None:
    """The call of this step an observation result answers, or None when it names none."""
    source = _call_id(res.get("source_call_id"), f"observation result {i}: 'source_call_id'")
    if source is None:
        return None
    call = by_call.get(source)
    if call is None:
        # The call it answers was made, and was lost (a misspelt or mistyped
        # tool call): judging the rest would judge a road with a call missing.
        raise _Bad(f"observation result {i}: 'source_call_id' {source!r} names "
                   "no tool call of this step")
    return call


_REF_KEYS = ("trajectory_id", "session_id", "trajectory_path")


def _ref_keys(ref: Any, i: int) -> dict[str, str]:
    """The keys a ``subagent_trajectory_ref`` gives (at least one of them)."""
    if not isinstance(ref, dict):
        raise _Bad(f"observation result {i}: a subagent_trajectory_ref must be an object")
    keys: dict[str, str] = {}
    for key in _REF_KEYS:
        value = ref.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise _Bad(f"observation result {i}: subagent_trajectory_ref '{key}' must be "
                       "a non-empty string")
        if value is not None:
            keys[key] = value
    if not keys:
        raise _Bad(f"observation result {i}: a subagent_trajectory_ref has no "
                   "'trajectory_id', 'trajectory_path' or 'session_id'")
    return keys


def _label(keys: dict[str, str]) -> str | None:
    """What names a referenced subagent: its trajectory id, else session id, else path."""
    return keys.get("trajectory_id") or keys.get("session_id") or keys.get("trajectory_path")


def _to_agent(sub: dict[str, Any], keys: dict[str, str]) -> str:
    """The agent a handoff goes to: the subagent's name, else what the reference names."""
    sub_agent = sub.get("agent")
    if isinstance(sub_agent, dict) and isinstance(sub_agent.get("name"), str):
        return cast(str, sub_agent["name"])
    return _label(keys) or ""


class _Builder:
    def __init__(self, subagents: dict[str, dict[str, Any]],
                 base_dir: Path | None = None) -> None:
        self.events: list[Event] = []
        self.subagents = subagents
        self.base_dir = base_dir
        #: Session-id keys that several embedded subagents share (no reference by them).
        self.shared: set[str] = set()
        self.active: set[int] = set()
        #: The subagent trajectories (by object id) mapped so far.
        self.visited: set[int] = set()

    def add(self, kind: str, agent: str | None, ts: str | None, **fields: Any) -> dict[str, Any]:
        """Append the next event; returns its record, which a later result fills in."""
        event = Event.make(len(self.events) + 1, kind, agent, ts=ts, **fields)
        self.events.append(event)
        return cast(dict[str, Any], event.data)  # make() builds a plain dict

    def trajectory(self, doc: Any, where: str) -> str:
        """Map one (root or subagent) trajectory; returns its agent name."""
        if not isinstance(doc, dict):
            raise _Bad(f"{where}is {type(doc).__name__}, not an object")
        version = doc.get("schema_version")
        if version is not None and (not isinstance(version, str) or not _VERSION.fullmatch(
                version)):
            raise _Bad(f"{where}unsupported schema_version {version!r} (expected ATIF-v1.x)")
        agent_doc = doc.get("agent")
        name = agent_doc.get("name") if isinstance(agent_doc, dict) else None
        if not isinstance(name, str) or not name:
            raise _Bad(f"{where}missing required key 'agent.name'")
        steps = doc.get("steps")
        if not isinstance(steps, list) or not steps:
            raise _Bad(f"{where}'steps' must be a non-empty list")
        for index, step in enumerate(steps):
            try:
                self.step(step, name)
            except _Bad as exc:
                sid = step.get("step_id") if isinstance(step, dict) else None
                label = f"step {index}" + (f" (step_id {sid})" if sid is not None else "")
                raise _Bad(f"{where}{label}: {exc}") from None
        return name

    def step(self, step: Any, agent_name: str) -> None:
        s = _read_step(step)
        at = _At(agent_name if s.role == "assistant" else s.role, s.ts, s.step_id)
        if s.role != "assistant" or s.text or not s.calls:
            fields: dict[str, Any] = {"role": s.role, "text": s.text, "step_id": s.step_id}
            if s.role == "assistant":
                fields["yields_turn"] = not s.calls
            self.add("message", at.agent, at.ts, **fields)
        if s.checkpoint is not None:
            self.checkpoint(s.checkpoint, at)
        by_call: dict[Any, dict[str, Any]] = {}
        for i, tc in enumerate(s.calls):
            call_id, fields = _action(tc, i, s.step_id)
            by_call[call_id] = {"args": fields["args"],
                                "rec": self.add("action", at.agent, at.ts, **fields)}
        for i, res in enumerate(s.results):
            self.result(res, i, by_call, at)

    def result(self, res: Any, i: int, by_call: dict[Any, dict[str, Any]], at: _At) -> None:
        """Observation result ``i``: its call's result (or a tool message), then the
        subagents it hands over to."""
        if not isinstance(res, dict):
            raise _Bad(f"observation result {i} is {type(res).__name__}, not an object")
        call = _answered(res, i, by_call)
        content = res.get("content")
        if content is not None and call is not None:
            try:
                call["rec"]["result"] = content if isinstance(content, str) else _text(content)
            except _BadText as exc:
                raise _Bad(f"observation result {i}: {exc}") from None
        elif content is not None:
            self.add("message", "tool", at.ts, role="tool",
                     text=content if isinstance(content, str) else str(content),
                     step_id=at.step_id)
        refs = res.get("subagent_trajectory_ref")
        if refs is None:
            return
        if not isinstance(refs, list):
            raise _Bad(f"observation result {i}: 'subagent_trajectory_ref' must be a list")
        for ref in refs:
            self.subagent(ref, i, at, call["args"] if call else {})

    def resolve(self, keys: dict[str, str], i: int) -> dict[str, Any]:
        """The subagent trajectory a reference names: embedded, or read from its file."""
        tid, sid, rel = (keys.get(key) for key in _REF_KEYS)
        # v1.7+ resolves by trajectory_id (session_id is informational and may be shared
        # by siblings); v1.6 and earlier by session_id.
        sub: dict[str, Any] | None = None
        if tid is not None:
            sub = self.subagents.get("t:" + tid)
        elif sid is not None:
            if "s:" + sid in self.shared:
                raise _Bad(f"observation result {i}: subagent_trajectory_ref names session "
                           f"{sid!r}, which several embedded subagent trajectories share; name "
                           "its 'trajectory_id'")
            sub = self.subagents.get("s:" + sid)
        if sub is None and rel is not None:
            sub = self.load_subagent(tid, sid, rel, i)
        if sub is None:
            # A subagent's road that the file neither holds nor points to cannot be judged.
            name = f"trajectory {tid!r}" if tid is not None else f"session {sid!r}"
            raise _Bad(f"observation result {i}: subagent_trajectory_ref names {name}, "
                       "but no embedded subagent trajectory has that id and no "
                       "'trajectory_path' names its file")
        return sub

    def subagent(self, ref: Any, i: int, at: _At, payload: dict[str, Any]) -> None:
        """A handoff to the subagent ``ref`` names, then that subagent's events."""
        keys = _ref_keys(ref, i)
        sub = self.resolve(keys, i)
        fields: dict[str, Any] = {"from_agent": at.agent, "to_agent": _to_agent(sub, keys),
                                  "payload": dict(payload)}
        fields.update(keys)
        fields["step_id"] = at.step_id
        self.add("handoff", at.agent, at.ts, **fields)
        if id(sub) not in self.active:
            self.active.add(id(sub))
            self.visited.add(id(sub))
            self.trajectory(sub, f"subagent trajectory {_label(keys)!r}: ")
            self.active.discard(id(sub))

    def unreferenced(self) -> None:
        """Map the embedded subagent trajectories no reference led to, after the root's steps.

        A subagent whose reference is missing still ran: its road is judged (with
        no handoff before it, since none was recorded), never dropped.
        """
        while True:
            left = [(key, sub) for key, sub in self.subagents.items()
                    if id(sub) not in self.visited]
            if not left:
                return
            _, sub = left[0]
            label = sub.get("trajectory_id") or sub.get("session_id")
            self.visited.add(id(sub))
            self.active.add(id(sub))
            self.trajectory(sub, f"unreferenced subagent trajectory {label!r}: ")
            self.active.discard(id(sub))

    def load_subagent(self, tid: str | None, sid: str | None, rel: str,
                      i: int) -> dict[str, Any] | None:
        """Read a subagent trajectory kept in its own file, next to the root document.

        A reference that cannot be followed fails the whole trajectory: a
        subagent's road that cannot be read cannot be judged.
        """
        if self.base_dir is None:
            return None
        where = f"observation result {i}: subagent {tid or sid or rel!r} at {rel!r}"
        try:
            data = (self.base_dir / rel).read_bytes()
        except OSError as exc:
            raise _Bad(f"{where}: cannot read: {exc.strerror or exc}") from None
        try:
            doc = orjson.loads(data)
            check_document(data, doc)
        except orjson.JSONDecodeError as exc:
            raise _Bad(f"{where}: invalid JSON: {exc.msg}") from None
        except TraceError as exc:
            raise _Bad(f"{where}: {exc.location_message()}") from None
        if not isinstance(doc, dict):
            raise _Bad(f"{where}: the file is not a trajectory object")
        if tid is not None and doc.get("trajectory_id") != tid:
            raise _Bad(f"{where}: the file is not that subagent's trajectory "
                       "(its trajectory_id differs)")
        if tid is None and sid is not None and doc.get("session_id") != sid:
            raise _Bad(f"{where}: the file is not that subagent's trajectory "
                       "(its session_id differs)")
        _subagents(doc, self.subagents, self.shared)
        self.subagents["p:" + rel] = doc
        return doc

    def checkpoint(self, cp: Any, at: _At) -> None:
        if not isinstance(cp, dict):
            raise _Bad("'extra.checkpoint' must be an object")
        cid = cp.get("id")
        if not isinstance(cid, str) or not cid:
            raise _Bad("'extra.checkpoint.id' must be a non-empty string")
        decision = cp.get("decision")
        if decision is not None and str(decision).lower() not in _APPROVED:
            return  # a rejection is no confirmation: no checkpoint event
        fields: dict[str, Any] = {"checkpoint_id": cid, "step_id": at.step_id}
        if cp.get("confirmed_by") is not None:
            fields["confirmed_by"] = cp["confirmed_by"]
        if decision is not None:
            fields["decision"] = decision
        self.add("checkpoint", at.agent, at.ts, **fields)


def _call_id(raw: Any, what: str) -> str | int | None:
    """A tool call id: a string or an integer, or None when absent."""
    if raw is None or isinstance(raw, str) or (isinstance(raw, int)
                                               and not isinstance(raw, bool)):
        return raw
    raise _Bad(f"{what} must be a string, got {type(raw).__name__}")


def _subagents(doc: dict[str, Any], out: dict[str, dict[str, Any]],
               shared: set[str]) -> None:
    """Index embedded subagent trajectories by ``t:<trajectory_id>`` and ``s:<session_id>``.

    From v1.7 ``trajectory_id`` is the key and sibling subagents may share a
    ``session_id``: a shared session id is kept in ``shared`` (a reference by it
    alone is ambiguous), never an error.
    """
    subs = doc.get("subagent_trajectories")
    if subs is None:
        return
    if not isinstance(subs, list):
        raise _Bad("'subagent_trajectories' must be a list")
    for n, sub in enumerate(subs):
        _index_subagent(n, sub, out, shared)
        _subagents(sub, out, shared)


def _index_subagent(n: int, sub: Any, out: dict[str, dict[str, Any]],
                    shared: set[str]) -> None:
    """Index subagent trajectory ``n`` by its trajectory id and its session id."""
    if not isinstance(sub, dict):
        raise _Bad(f"subagent trajectory {n} is not an object")
    tid, sid = sub.get("trajectory_id"), sub.get("session_id")
    has_tid = isinstance(tid, str) and bool(tid)
    if not has_tid and not (isinstance(sid, str) and sid):
        raise _Bad(f"subagent trajectory {n} has no 'trajectory_id' or 'session_id'")
    if tid is not None and not has_tid:
        raise _Bad(f"subagent trajectory {n}: 'trajectory_id' must be a non-empty string")
    if has_tid:
        key = "t:" + cast(str, tid)
        if key in out:
            raise _Bad(f"subagent trajectory {n}: trajectory_id {tid!r} is used by "
                       "another subagent trajectory; a reference could not tell them apart")
        out[key] = sub
    if isinstance(sid, str) and sid:
        _index_session(n, sub, out, shared)


def _index_session(n: int, sub: dict[str, Any], out: dict[str, dict[str, Any]],
                   shared: set[str]) -> None:
    """Index a subagent trajectory (checked) by its session id, or mark that id shared."""
    sid: str = sub["session_id"]
    tid = sub.get("trajectory_id")
    has_tid = isinstance(tid, str) and bool(tid)
    if "s:" + sid not in out:
        out["s:" + sid] = sub
        return
    if not has_tid:
        other = out["s:" + sid]
        if not isinstance(other.get("trajectory_id"), str):
            raise _Bad(f"subagent trajectory {n}: session_id {sid!r} is used by "
                       "another subagent trajectory and neither has a "
                       "'trajectory_id'; a reference could not tell them apart")
        out["u:" + str(len(out))] = sub  # still judged, reached by no reference
    shared.add("s:" + sid)


def _final(doc: dict[str, Any]) -> dict[str, Any]:
    """``task_success`` only when the document says so (``extra.task_success`` or a reward)."""
    raw = doc.get("extra")
    extra: dict[str, Any] = raw if isinstance(raw, dict) else {}
    claimed = extra.get("task_success")
    reward = extra.get("reward")
    if isinstance(claimed, bool):
        out: dict[str, Any] = {"task_success": claimed}
    else:
        out = {"task_success": isinstance(reward, (int, float)) and not isinstance(
            reward, bool) and reward >= 1}
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        out["reward"] = reward
    return out


def atif_events(doc: Any, base_dir: Path | None = None) -> list[Event]:
    """Map one ATIF document to events. Raises :class:`TraceError` naming the step.

    ``base_dir`` is where subagent trajectories referenced by ``trajectory_path``
    are read from (the directory of the file being read); without it such a
    reference is a handoff only.
    """
    try:
        if not isinstance(doc, dict):
            raise _Bad(f"expected a JSON object, got {type(doc).__name__}")
        if not isinstance(doc.get("schema_version"), str):
            raise _Bad("missing required key 'schema_version'")
        subs: dict[str, dict[str, Any]] = {}
        shared: set[str] = set()
        _subagents(doc, subs, shared)
        builder = _Builder(subs, base_dir)
        builder.shared = shared
        root = builder.trajectory(doc, "")
        builder.unreferenced()
    except _Bad as exc:
        raise TraceError(str(exc)) from None
    builder.add("final", root, None, **_final(doc))
    return builder.events


def read_atif(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per ATIF document (a document, or a JSON list of documents)."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _documents, partial(_trajectory, path))


def _documents(path: str, data: bytes) -> list[tuple[int, Any, bool]]:
    """(index, document, whether the file is a list of documents) for each document."""
    doc = _decode(path, data)
    docs = doc if isinstance(doc, list) else [doc]
    return [(n, item, isinstance(doc, list)) for n, item in enumerate(docs)]


def _trajectory(path: str, run: tuple[int, Any, bool]) -> Trajectory:
    from roadcheck.ingest import BadRun

    n, item, listed = run
    sid = item.get("session_id") if isinstance(item, dict) else None
    tid = path if not listed else (
        f"{path}#{sid}" if isinstance(sid, str) else f"{path}#trajectory{n}")
    try:
        events = atif_events(item, Path(path).parent)
    except TraceError as exc:
        raise BadRun(tid, exc.message if not listed else f"trajectory {n}: {exc.message}"
                     ) from None
    meta = {"session_id": sid} if isinstance(sid, str) else {}
    final = events[-1].data
    if "reward" in final:
        meta["reward"] = final["reward"]
    return Trajectory(tid, tuple(events), path, "atif", meta)
