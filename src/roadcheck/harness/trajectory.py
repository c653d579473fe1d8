"""The run as a native trajectory, so ``roadcheck replay`` can audit harness runs.

Each attempt adds an ``action`` for the producer (``produce:<phase>``, agent =
the phase's role) and one for the gate (``gate:<phase>``, agent ``roadcheck``); a
pass adds the checkpoint ``passed:<phase>``. The last line is the ``final``
event with the run's outcome. A resumed run continues the same file: the old
``final`` is replaced, the lines before it are kept as written, and ``seq``
keeps increasing. The events are the structs of :mod:`roadcheck.documents.trajectory`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import orjson

from roadcheck.documents.trajectory import HarnessAction, HarnessCheckpoint, HarnessFinal

__all__ = ["HARNESS_AGENT", "TrajectoryLog"]

HARNESS_AGENT = "roadcheck"


class _Line(msgspec.Struct, gc=False):
    """What resuming needs of a line written before: its ``seq`` and ``event``."""

    seq: int = 0
    event: Any = None


_LINE = msgspec.json.Decoder(_Line)
_ENCODE = msgspec.json.Encoder()


def _earlier(raw: bytes) -> tuple[int, bool] | None:
    """``(seq, is final)`` of a line written before; None for a line that is no event."""
    try:
        line = _LINE.decode(raw)
    except msgspec.ValidationError:
        rec = orjson.loads(raw)  # an object with an odd seq: judged as it always was
        if not isinstance(rec, dict):
            return None
        return int(rec.get("seq", 0)), rec.get("event") == "final"
    except msgspec.DecodeError:
        orjson.loads(raw)  # not JSON: the error it always was
        return None
    return line.seq, line.event == "final"


class TrajectoryLog:
    """Collects a run's events and writes ``trajectory.jsonl`` atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: Earlier lines as written, then this invocation's events.
        self.events: list[bytes | HarnessAction | HarnessCheckpoint] = []
        self.seq = 0
        if path.exists():
            for raw in path.read_bytes().splitlines():
                if not raw.strip():
                    continue
                found = _earlier(raw)
                if found is not None and not found[1]:
                    self.events.append(raw)
                    self.seq = max(self.seq, found[0])

    def add(self, kind: str, agent: str, ts: str, /, **fields: Any) -> None:
        """Append one event (``action`` or ``checkpoint``) with the next ``seq``."""
        self.seq += 1
        event = HarnessCheckpoint if kind == "checkpoint" else HarnessAction
        self.events.append(event(seq=self.seq, ts=ts, agent=agent, event=kind,  # type: ignore[arg-type]
                                 **fields))

    def write(self, ts: str, status: str, exit_code: int) -> None:
        """Write every event and the ``final`` line; the old file is replaced at once."""
        final = HarnessFinal(seq=self.seq + 1, ts=ts, agent=HARNESS_AGENT, event="final",
                             task_success=status == "completed", status=status, exit=exit_code)
        body = b"".join((e if isinstance(e, bytes) else _ENCODE.encode(e)) + b"\n"
                        for e in [*self.events, final])
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, self.path)
