"""The one event model every capability shares: :class:`Event` and :class:`Trajectory`.

An event is one recorded step of an agent run: an ``action`` (a tool call), a
``checkpoint`` (a confirmation or approval), a ``handoff`` between agents, a
``message`` of a transcript, or the ``final`` line. Every reader turns its input
into these; replay, accept, the harness and revalidation all consume them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

__all__ = [
    "DEFAULT_ID",
    "EVENT_KINDS",
    "Event",
    "Trajectory",
    "args_digest",
    "field_value",
    "field_verified",
]

#: The event types of the native format, in the order the docs list them.
EVENT_KINDS = ("action", "checkpoint", "handoff", "final", "message")


class Event(NamedTuple):
    """One recorded step.

    ``data`` is the whole record as read (including ``seq``, ``event``, ``agent``
    and ``ts``), so a reader loses nothing and :meth:`to_dict` round-trips.
    ``line`` is where the event came from: the line of a JSONL file or the index
    of a message in a transcript; ``None`` for events built in code.

    A named tuple rather than a frozen dataclass: it is immutable and cheap to
    build, and the replay hot path builds one per recorded line.
    """

    seq: int
    kind: str
    agent: str | None
    ts: str | None
    data: Mapping[str, Any]
    line: int | None = None

    def get(self, key: str, default: Any = None) -> Any:
        """Return a field of the record."""
        return self.data.get(key, default)

    @property
    def action_type(self) -> str | None:
        """The tool or action name of an ``action`` event."""
        return self.data.get("action_type")

    @property
    def irreversible(self) -> bool:
        """True when the record marks the action irreversible."""
        return self.data.get("irreversible") is True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], line: int | None = None) -> Event:
        """Build an event from a native record without validating it.

        Readers validate; use :func:`roadcheck.ingest.native.parse_record` for untrusted input.
        """
        return cls(data["seq"], data["event"], data.get("agent"), data.get("ts"), data, line)

    @classmethod
    def make(cls, seq: int, kind: str, agent: str | None = None, *, line: int | None = None,
             **fields: Any) -> Event:
        """Build an event and its record: ``Event.make(3, "action", "bot", action_type="x")``.

        Readers of other formats build their events here too, so every record
        has the same shape: ``seq``, ``ts`` (when not None), ``agent`` (when not
        None), ``event``, then the fields. ``line`` is where the event came from.
        """
        data: dict[str, Any] = {"seq": seq}
        if fields.get("ts") is not None:
            data["ts"] = fields["ts"]
        if agent is not None:
            data["agent"] = agent
        data["event"] = kind
        data.update((k, v) for k, v in fields.items() if k != "ts")
        return cls(seq, kind, agent, data.get("ts"), data, line)

    def to_dict(self) -> dict[str, Any]:
        """Return the native record of this event (a copy)."""
        return dict(self.data)


def field_value(raw: Any) -> Any:
    """Return the value of a payload field: ``v`` for ``{"value": v, "verified": b}``."""
    if isinstance(raw, dict) and "value" in raw and "verified" in raw:
        return raw["value"]
    return raw


def field_verified(raw: Any) -> bool:
    """True only for ``{"value": v, "verified": true}``; silence is not verification."""
    return isinstance(raw, dict) and raw.get("verified") is True and "value" in raw


def args_digest(args: Any) -> str:
    """The canonical digest of a call's arguments: ``sha256:`` + hex.

    The sha256 of the arguments as canonical JSON: UTF-8, object keys sorted by
    code point, no whitespace, strings unescaped except where JSON requires it,
    integers as digits, floats in their shortest round-trip form. Absent
    arguments are ``null``. A checkpoint that approves one call carries this
    digest as ``args_sha256``; any other arguments digest differently.
    """
    # imported here, not at the top: ``import roadcheck`` stays cheap, and replay hashes
    # arguments only when a rule binds them
    import hashlib

    import orjson

    try:
        text = orjson.dumps(args, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:  # a value JSON cannot hold (NaN is written as null by orjson)
        raise ValueError(f"the arguments are not JSON: {exc}") from None
    return "sha256:" + hashlib.sha256(text).hexdigest()


#: The id of a trajectory built in code without one.
DEFAULT_ID = "<events>"

_FIELDS = ("id", "events", "path", "source", "meta")


def _as_events(events: Iterable[Event | Mapping[str, Any]]) -> Sequence[Event]:
    """The events as given when they are all :class:`Event`; native dicts validated."""
    if isinstance(events, Sequence) and all(type(e) is Event for e in events):
        return events
    out: list[Event] = []
    for i, item in enumerate(events, 1):
        if isinstance(item, Event):
            out.append(item)
            continue
        from roadcheck.errors import TraceError
        from roadcheck.ingest.native import parse_record

        rec = dict(item) if isinstance(item, Mapping) else item
        try:
            out.append(parse_record(rec, i)._replace(line=None))
        except TraceError as exc:
            raise TraceError(f"event {i}: {exc.message}") from None
    return tuple(out)


@dataclass(frozen=True, init=False)
class Trajectory:
    """One recorded run: its events in order, where it came from, and reader facts.

    ``id`` is the path for a one-run file and ``<path>#<run id>`` for a file that
    holds many runs. ``meta`` carries reader facts printed for contrast (for
    example a benchmark's reward); the verdict never reads it.

    Built in code, the events come first and the rest by keyword::

        Trajectory(events)                       # id "<events>"
        Trajectory(events, id="run-7", path="run-7.jsonl")
        Trajectory.from_events(events, id="run-7")

    and the readers' spelling, ``Trajectory(id, events, path, source, meta)``
    (positional or by keyword), still holds. Events are :class:`Event` objects
    or native event dicts; a dict is checked like a line of a native file and a
    malformed one raises :class:`~roadcheck.errors.TraceError` naming its position
    (``event 3: ...``). The whole-run rules (``seq`` increasing, one ``final``,
    last) are checked when the trajectory is replayed, where a breach is an
    ERROR verdict.
    """

    id: str
    events: Sequence[Event]
    path: str | None = None
    source: str = "native"
    meta: Mapping[str, Any] = field(default_factory=dict)

    @overload
    def __init__(self, id: str, events: Iterable[Event | Mapping[str, Any]],
                 path: str | None = None, source: str = "native",
                 meta: Mapping[str, Any] | None = None) -> None: ...

    @overload
    def __init__(self, events: Iterable[Event | Mapping[str, Any]], *, id: str = DEFAULT_ID,
                 path: str | None = None, source: str = "native",
                 meta: Mapping[str, Any] | None = None) -> None: ...

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        first = args[0] if args else None
        if isinstance(first, Iterable) and not isinstance(first, (str, bytes)) \
                and "events" not in kwargs:  # Trajectory(events, id=...)
            if len(args) > 1:
                raise TypeError("Trajectory(events, ...) takes its other fields by keyword: "
                                "id=, path=, source=, meta=")
            kwargs["events"] = args[0]
            args = ()
        if len(args) > len(_FIELDS):
            raise TypeError(f"Trajectory takes at most {len(_FIELDS)} positional arguments")
        values = dict(zip(_FIELDS, args, strict=False))
        for key, value in kwargs.items():
            if key not in _FIELDS:
                raise TypeError(f"Trajectory got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"Trajectory got multiple values for argument {key!r}")
            values[key] = value
        if "events" not in values:
            raise TypeError("Trajectory needs its events")
        tid = values.get("id", DEFAULT_ID)
        if not isinstance(tid, str):
            raise TypeError(f"Trajectory 'id' must be a string, got {type(tid).__name__}")
        meta = values.get("meta")
        object.__setattr__(self, "id", tid)
        object.__setattr__(self, "events", _as_events(values["events"]))
        object.__setattr__(self, "path", values.get("path"))
        object.__setattr__(self, "source", values.get("source", "native"))
        object.__setattr__(self, "meta", {} if meta is None else meta)

    @classmethod
    def from_events(cls, events: Iterable[Event | Mapping[str, Any]], *, id: str = DEFAULT_ID,
                    path: str | None = None, source: str = "native",
                    meta: Mapping[str, Any] | None = None) -> Trajectory:
        """Build a trajectory from events or native event dicts (validated, see the class)."""
        return cls(events, id=id, path=path, source=source, meta=meta)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    @property
    def final(self) -> Event | None:
        """The ``final`` event, when the run has one."""
        if self.events and self.events[-1].kind == "final":
            return self.events[-1]
        return None

    @property
    def task_success(self) -> bool | None:
        """What the run claimed about itself; printed for contrast, never judged on."""
        final = self.final
        return None if final is None else final.data.get("task_success")

    def to_jsonl(self) -> str:
        """Serialise the events in the native JSONL format."""
        import json

        return "".join(json.dumps(e.to_dict(), sort_keys=False) + "\n" for e in self.events)
