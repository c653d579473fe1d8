"""The harness trajectory is typed (``documents/trajectory.py``) and writes the same bytes
as the mapping it replaced: each event's fields in the order the engine names them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from roadcheck.documents.trajectory import HarnessAction
from roadcheck.harness.trajectory import TrajectoryLog

#: Every event the engine adds, with its fields in the engine's order.
EVENTS: list[tuple[str, str, dict[str, Any]]] = [
    ("action", "writer", {"action_type": "produce:make", "phase": "make", "attempt": 1,
                          "iteration": 1, "identity": "alice", "exit_code": 0}),
    ("action", "writer", {"action_type": "produce:make", "phase": "make", "attempt": 2,
                          "iteration": 2, "identity": "alice", "exit_code": None}),
    ("action", "writer", {"action_type": "produce:draft", "phase": "draft", "attempt": 1,
                          "iteration": 3, "identity": "alice", "producer": "agent",
                          "outcome": "ok"}),
    ("action", "roadcheck", {"action_type": "effect:publish", "phase": "publish",
                             "attempt": 1, "state": "attempted", "by": "engine"}),
    ("action", "roadcheck", {"action_type": "role-guard", "phase": "review",
                             "identity": "alice", "refused": True, "evidence": "ab" * 32}),
    ("action", "roadcheck", {"action_type": "budget", "phase": "draft",
                             "reason": "budget-exhausted", "message": "spent"}),
    ("action", "roadcheck", {"action_type": "gate:make", "phase": "make", "attempt": 1,
                             "kind": "command", "verdict": "pass", "evidence": "cd" * 32}),
    ("checkpoint", "roadcheck", {"checkpoint_id": "passed:make", "confirmed_by": "alice",
                                 "evidence": "cd" * 32}),
]


def _as_mappings(events: list[tuple[str, str, dict[str, Any]]], ts: str) -> bytes:
    """What the trajectory held when its events were mappings."""
    lines = [{"seq": i, "ts": ts, "agent": agent, "event": kind, **fields}
             for i, (kind, agent, fields) in enumerate(events, 1)]
    lines.append({"seq": len(events) + 1, "ts": ts, "agent": "roadcheck", "event": "final",
                  "task_success": False, "status": "hard-stop", "exit": 1})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def test_the_same_bytes_as_the_mappings(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    log = TrajectoryLog(path)
    for kind, agent, fields in EVENTS:
        log.add(kind, agent, "2026-01-01T00:00:00Z", **fields)
    assert all(isinstance(e, HarnessAction) for e in log.events[:-1])
    log.write("2026-01-01T00:00:00Z", "hard-stop", 1)
    assert path.read_bytes() == _as_mappings(EVENTS, "2026-01-01T00:00:00Z")


def test_a_resume_keeps_earlier_lines_and_replaces_the_final(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    first = TrajectoryLog(path)
    for kind, agent, fields in EVENTS[:3]:
        first.add(kind, agent, "2026-01-01T00:00:00Z", **fields)
    first.write("2026-01-01T00:00:00Z", "hard-stop", 1)
    again = TrajectoryLog(path)
    assert again.seq == 3
    for kind, agent, fields in EVENTS[3:]:
        again.add(kind, agent, "2026-01-01T00:00:00Z", **fields)
    again.write("2026-01-01T00:00:00Z", "hard-stop", 1)
    assert path.read_bytes() == _as_mappings(EVENTS, "2026-01-01T00:00:00Z")


def test_an_unknown_field_is_refused() -> None:
    with pytest.raises(TypeError):
        HarnessAction(seq=1, ts="t", agent="a", event="action", action_type="x",
                      colour="red")  # type: ignore[call-arg]
