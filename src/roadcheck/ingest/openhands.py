"""The OpenHands reader: event streams (a JSON list of events) into the shared event model.

OpenHands records a conversation as a stream of events, each ``id``,
``timestamp``, ``source`` (``agent``, ``user``, ``environment``) and either an
``action`` (``message``, ``run``, ``read``, ``edit``, ``finish``...; its
``args``, and, when the model called a tool for it, ``tool_call_metadata``) or
an ``observation`` answering the action whose id its ``cause`` names
(``content``, ``extras``). A trajectory OpenHands saves (and replays) is that list.
The mapping:

- a ``message`` action is a ``message`` event (role ``user`` or ``assistant`` by
  its source, ``text`` = ``args.content``; an agent's ``yields_turn`` =
  ``args.wait_for_response``); the ``system`` action is a ``system`` message;
- every other action that does something (``run``, ``run_ipython``, ``read``,
  ``write``, ``edit``, ``browse``, ``browse_interactive``, ``mcp``, ``think``,
  ``finish``, ``delegate``...) is an ``action``: ``action_type`` = the OpenHands
  action name, ``args`` = its ``args`` (without the ``thought``), ``command`` for
  ``run``, ``tool`` / ``call_id`` from ``tool_call_metadata``; the observation
  whose ``cause`` names it gives ``result`` (its ``content``) and ``error`` (an
  ``error`` observation, or a command's non-zero exit code). Its ``thought`` is an
  assistant ``message`` before it;
- an action the user rejected (``confirmation_state: rejected``, or answered by a
  ``user_rejected`` observation) never ran: it is no action. One held for the
  user's confirmation (``awaiting_confirmation``) ran when its observation came,
  and is placed there; never answered, it never ran;
- the user's confirmation in confirmation mode (``change_agent_state`` to
  ``user_confirmed``, or the ``agent_state_changed`` observation saying so) is a
  ``checkpoint`` ``openhands-confirmation`` (``confirmed_by: user``);
- a ``delegate`` action is also a ``handoff`` to ``args.agent`` with ``args.inputs``
  as its payload;
- the end of the stream is the ``final`` event (``task_success`` true when the
  agent ran ``finish``).

Structure the reader does not understand is the file's ERROR naming the file, the line
and the field. See docs/frameworks/openhands.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory
from roadcheck.ingest._where import ANY, object_lines

__all__ = ["detect_openhands", "openhands_events", "read_openhands"]

AGENT = "openhands"
_SOURCES = {"agent": AGENT, "user": "user", "environment": "environment"}
#: Actions that record the conversation or the controller, not something done.
_BOOKKEEPING = frozenset({"message", "system", "recall", "null", "change_agent_state",
                          "condensation", "condensation_request", "pause", "resume", "stop",
                          "start", "reject", "loop_recovery"})
CHECKPOINT = "openhands-confirmation"


def detect_openhands(data: bytes) -> float:
    """Likely for a list whose first element has ``id``, ``source`` and ``action`` or
    ``observation``; else 0."""
    from roadcheck.ingest import LIKELY
    from roadcheck.ingest._scan import _keys_at

    if data.lstrip()[:1] != b"[":
        return 0.0
    for wanted in (b"id", b"source"):
        if _keys_at(data, 2, frozenset({wanted})) is None:
            return 0.0
    if _keys_at(data, 2, frozenset({b"action", b"observation"})) is None:
        return 0.0
    return LIKELY


class _Bad(Exception):
    """A malformed event: the message names the field, ``line`` where it is."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _obj(raw: Any, what: str, line: int | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _Bad(f"{what} must be an object, got {type(raw).__name__}", line)
    return raw


def _str(raw: Any, what: str, line: int | None) -> str | None:
    if raw is not None and not isinstance(raw, str):
        raise _Bad(f"{what} must be a string, got {type(raw).__name__}", line)
    return raw


def _head(ev: Any, i: int, line: int | None) -> tuple[int, str, str | None]:
    """(id, agent, timestamp) of event ``i``, checked."""
    what = f"event {i}"
    if not isinstance(ev, dict):
        raise _Bad(f"{what} is {type(ev).__name__}, not an object", line)
    eid = ev.get("id")
    if isinstance(eid, bool) or not isinstance(eid, int):
        raise _Bad(f"{what}: 'id' must be an integer" if eid is not None
                   else f"{what}: missing required key 'id'", line)
    source = ev.get("source")
    agent = _SOURCES.get(source) if isinstance(source, str) else None
    if agent is None:
        raise _Bad(f"{what} (id {eid}): unknown 'source' {source!r} (known: agent, user, "
                   "environment)", line)
    if ("action" in ev) == ("observation" in ev):
        raise _Bad(f"{what} (id {eid}): an event has either 'action' or 'observation'",
                   line)
    return eid, agent, _str(ev.get("timestamp"), f"{what} (id {eid}): 'timestamp'", line)


class _Staged:
    """One event to be, which a later observation may fill in or cancel."""

    __slots__ = ("agent", "dropped", "fields", "kind", "line", "pending", "ts")

    def __init__(self, kind: str, agent: str, line: int | None, ts: str | None,
                 fields: dict[str, Any]) -> None:
        self.kind, self.agent, self.line, self.ts, self.fields = kind, agent, line, ts, fields
        self.dropped = False
        #: Held for the user's confirmation: it runs when (and if) its observation comes.
        self.pending = False


class _Stream:
    def __init__(self, lines: dict[Any, int]) -> None:
        self.lines = lines
        self.staged: list[_Staged] = []
        self.ids: set[int] = set()
        self.actions: dict[int, _Staged] = {}
        self.confirmed = False  # a user confirmation recorded since the last action
        self.finished = False

    def add(self, kind: str, agent: str, line: int | None, ts: str | None,
            **fields: Any) -> _Staged:
        staged = _Staged(kind, agent, line, ts, fields)
        self.staged.append(staged)
        return staged

    def read(self, i: int, ev: Any) -> None:
        line = self.lines.get((i,))
        eid, agent, ts = _head(ev, i, line)
        if eid in self.ids:
            raise _Bad(f"event {i}: id {eid} is used by an earlier event", line)
        self.ids.add(eid)
        what = f"event {i} (id {eid})"
        if "action" in ev:
            self.action(ev, eid, agent, ts, what, line)
        else:
            self.observation(ev, eid, ts, what, line)

    def action(self, ev: dict[str, Any], eid: int, agent: str, ts: str | None, what: str,
               line: int | None) -> None:
        name = _str(ev["action"], f"{what}: 'action'", line)
        if not name:
            raise _Bad(f"{what}: 'action' must be a non-empty string", line)
        args = _obj(ev.get("args"), f"{what}: 'args'", line)
        if name == "change_agent_state":
            if args.get("agent_state") == "user_confirmed":
                self.confirm(ts, line, eid)
            return
        if name == "message" or name == "system":
            self.message(ev, args, name, agent, ts, what, line)
            return
        if name in _BOOKKEEPING:
            return
        self.tool(ev, args, name, (eid, agent), ts, what, line)

    def message(self, ev: dict[str, Any], args: dict[str, Any], name: str, agent: str,
                ts: str | None, what: str, line: int | None) -> None:
        text = args.get("content", ev.get("message"))
        if name == "system":
            text = args.get("content")
        text = _str(text, f"{what}: 'args.content'", line) or ""
        role = "system" if name == "system" else "assistant" if agent == AGENT else agent
        fields: dict[str, Any] = {"role": role, "text": text}
        if role == "assistant":
            fields["yields_turn"] = args.get("wait_for_response") is True
        self.add("message", "system" if name == "system" else agent, line, ts, **fields)

    def tool(self, ev: dict[str, Any], args: dict[str, Any], name: str,
             by: tuple[int, str], ts: str | None, what: str, line: int | None) -> None:
        eid, agent = by
        thought = _str(args.get("thought"), f"{what}: 'args.thought'", line)
        if thought:
            self.add("message", agent, line, ts, role="assistant", text=thought,
                     yields_turn=False, event_id=eid)
        fields: dict[str, Any] = {"action_type": name,
                                  "args": {k: v for k, v in args.items() if k != "thought"}}
        if name == "run":
            command = _str(args.get("command"), f"{what}: 'args.command'", line)
            if command is None:
                raise _Bad(f"{what}: a run action has no 'args.command'", line)
            fields["command"] = command
        meta = _obj(ev.get("tool_call_metadata"), f"{what}: 'tool_call_metadata'", line)
        tool = _str(meta.get("function_name"), f"{what}: 'tool_call_metadata.function_name'",
                    line)
        call_id = _str(meta.get("tool_call_id"), f"{what}: 'tool_call_metadata.tool_call_id'",
                       line)
        if tool:
            fields["tool"] = tool
        if call_id:
            fields["call_id"] = call_id
        fields["event_id"] = eid
        staged = self.add("action", agent, line, ts, **fields)
        state = ev.get("confirmation_state", args.get("confirmation_state"))
        staged.dropped = state == "rejected"
        staged.pending = state == "awaiting_confirmation"
        self.actions[eid] = staged
        self.confirmed = False
        if name == "finish" and agent == AGENT and not staged.dropped:
            self.finished = True
        if name == "delegate":
            self.delegate(args, eid, ts, what, line)

    def delegate(self, args: dict[str, Any], eid: int, ts: str | None, what: str,
                 line: int | None) -> None:
        to_agent = _str(args.get("agent"), f"{what}: 'args.agent'", line)
        if not to_agent:
            raise _Bad(f"{what}: a delegate action has no 'args.agent'", line)
        inputs = _obj(args.get("inputs"), f"{what}: 'args.inputs'", line)
        self.add("handoff", AGENT, line, ts, from_agent=AGENT, to_agent=to_agent,
                 payload=dict(inputs), event_id=eid)

    def confirm(self, ts: str | None, line: int | None, eid: int) -> None:
        if not self.confirmed:
            self.confirmed = True
            self.add("checkpoint", "user", line, ts, checkpoint_id=CHECKPOINT,
                     confirmed_by="user", event_id=eid)

    def observation(self, ev: dict[str, Any], eid: int, ts: str | None, what: str,
                    line: int | None) -> None:
        name = _str(ev["observation"], f"{what}: 'observation'", line)
        extras = _obj(ev.get("extras"), f"{what}: 'extras'", line)
        if name == "agent_state_changed":
            if extras.get("agent_state") == "user_confirmed":
                self.confirm(ts, line, eid)
            return
        cause = ev.get("cause")
        if cause is None:
            return
        if isinstance(cause, bool) or not isinstance(cause, int):
            raise _Bad(f"{what}: 'cause' must be an integer, got {type(cause).__name__}", line)
        if cause not in self.ids:
            raise _Bad(f"{what}: 'cause' {cause} names no earlier event: the action it "
                       "answers is not in the stream", line)
        staged = self.actions.get(cause)
        if staged is None:
            return  # it answers a message (a recall) or the controller
        if name == "user_rejected":
            staged.dropped = True
            return
        if staged.pending:  # confirmed (or run) since: it ran now, after the confirmation
            staged.pending = False
            self.staged.remove(staged)
            self.staged.append(staged)
        self.answer(staged, ev, name, extras, what, line)

    def answer(self, staged: _Staged, ev: dict[str, Any], name: str | None,
               extras: dict[str, Any], what: str, line: int | None) -> None:
        content = _str(ev.get("content"), f"{what}: 'content'", line)
        if content is not None:
            staged.fields["result"] = content
        if name == "error":
            staged.fields["error"] = content or "error"
            return
        meta = _obj(extras.get("metadata"), f"{what}: 'extras.metadata'", line)
        code = meta.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool) and code not in (0, -1):
            staged.fields["error"] = f"exit code {code}"


def openhands_events(doc: Any, data: bytes = b"") -> list[Event]:
    """Map one decoded event stream to events. Raises :class:`TraceError` naming the line
    and the field (the lines are found in ``data``, the document's bytes)."""
    try:
        return _events(doc, data)
    except _Bad as exc:
        raise TraceError(str(exc), line=exc.line) from None


def _events(doc: Any, data: bytes) -> list[Event]:
    if not isinstance(doc, list):
        raise _Bad(f"expected a JSON list of events, got {type(doc).__name__}", 1)
    if not doc:
        raise _Bad("the file holds no run: the event stream is empty", 1)
    stream = _Stream(object_lines(data, (ANY,)) if data else {})
    for i, ev in enumerate(doc):
        stream.read(i, ev)
    events: list[Event] = []
    for s in stream.staged:
        if not s.dropped and not s.pending:
            events.append(Event.make(len(events) + 1, s.kind, s.agent, line=s.line, ts=s.ts,
                                     **s.fields))
    events.append(Event.make(len(events) + 1, "final", AGENT, task_success=stream.finished))
    return events


def read_openhands(path: str, data: bytes) -> Iterator[Any]:
    """One trajectory per event stream (id = the path)."""
    from roadcheck.ingest import read_runs

    return read_runs(path, data, _runs, _trajectory)


def _runs(path: str, data: bytes) -> list[tuple[str, bytes, Any]]:
    from roadcheck.ingest.transcripts import _decode

    return [(path, data, _decode(path, data))]


def _trajectory(run: tuple[str, bytes, Any]) -> Trajectory:
    from roadcheck.ingest import BadRun

    path, data, doc = run
    try:
        events = openhands_events(doc, data)
    except TraceError as exc:
        raise BadRun(path, exc.message, exc.line) from None
    return Trajectory(path, tuple(events), path, "openhands", {})
