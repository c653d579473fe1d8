"""The one event model every capability shares: :class:`Event` and :class:`Trajectory`.

An event is one recorded step of an agent run: an ``action`` (a tool call), a
``checkpoint`` (a confirmation or approval), a ``handoff`` between agents, a
``message`` of a transcript, or the ``final`` line. Every reader turns its input
into these; replay, accept, the harness and revalidation all consume them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "EVENT_KINDS",
    "Event",
    "Trajectory",
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

        Readers validate; use :func:`assay.ingest.native.parse_record` for untrusted input.
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


@dataclass(frozen=True)
class Trajectory:
    """One recorded run: its events in order, where it came from, and reader facts.

    ``id`` is the path for a one-run file and ``<path>#<run id>`` for a file that
    holds many runs. ``meta`` carries reader facts printed for contrast (for
    example a benchmark's reward); the verdict never reads it.
    """

    id: str
    events: Sequence[Event]
    path: str | None = None
    source: str = "native"
    meta: Mapping[str, Any] = field(default_factory=dict)

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
