"""Trajectories written in a test as a few records."""

from __future__ import annotations

from typing import Any

from roadcheck.events import Event

__all__ = ["events"]


def events(*records: dict[str, Any]) -> list[Event]:
    """Number records into events (agent ``bot`` unless given) and close them with a final
    that claims success."""
    out = []
    for i, rec in enumerate(records, 1):
        r = dict(rec)
        out.append(Event.make(i, r.pop("event"), r.pop("agent", "bot"), **r))
    out.append(Event.make(len(out) + 1, "final", "bot", task_success=True))
    return out
