"""The run as a native trajectory, so ``roadcheck replay`` can audit harness runs.

Each attempt adds an ``action`` for the producer (``produce:<phase>``, agent =
the phase's role) and one for the gate (``gate:<phase>``, agent ``roadcheck``); a
pass adds the checkpoint ``passed:<phase>``. The last line is the ``final``
event with the run's outcome. A resumed run continues the same file: the old
``final`` is replaced and ``seq`` keeps increasing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

__all__ = ["HARNESS_AGENT", "TrajectoryLog"]

HARNESS_AGENT = "roadcheck"


class TrajectoryLog:
    """Collects a run's events and writes ``trajectory.jsonl`` atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []
        if path.exists():
            for raw in path.read_bytes().splitlines():
                if raw.strip():
                    rec = orjson.loads(raw)
                    if isinstance(rec, dict) and rec.get("event") != "final":
                        self.events.append(rec)
        self.seq = max((int(e.get("seq", 0)) for e in self.events), default=0)

    def add(self, kind: str, agent: str, ts: str, /, **fields: Any) -> None:
        """Append one event with the next ``seq``."""
        self.seq += 1
        self.events.append({"seq": self.seq, "ts": ts, "agent": agent, "event": kind, **fields})

    def write(self, ts: str, status: str, exit_code: int) -> None:
        """Write every event and the ``final`` line; the old file is replaced at once."""
        final = {"seq": self.seq + 1, "ts": ts, "agent": HARNESS_AGENT, "event": "final",
                 "task_success": status == "completed", "status": status, "exit": exit_code}
        body = b"".join(orjson.dumps(e) + b"\n" for e in [*self.events, final])
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, self.path)
