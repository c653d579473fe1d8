"""The guard session reader: a session's ``guard.json`` into the shared event model.

The guard (``roadcheck guard claude-code``, ``serve``, ``mcp``) keeps each session's
events in ``<state dir>/<session>/guard.json``: one seal line
(``roadcheck-seal/1 kind=state name=<session> ...``, see docs/guard.md), then one
JSON object, ``{"format": "roadcheck-guard-state/3", "session", "decisions",
"events": [...]}``, whose events are native records (docs/formats.md). Replaying
the file judges the session exactly as the guard saw it; for an MCP proxy session
that is every call it let through, the approvals it recorded and what each call
returned.

Reading does not verify the seal (replay has no guard key): ``roadcheck audit
SESSION --runs-dir STATE_DIR`` verifies the session and its decision log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from roadcheck.errors import TraceError
from roadcheck.events import Trajectory

__all__ = ["detect_guard_state", "read_guard_state"]

_HEADER = re.compile(rb"roadcheck-seal/1 kind=state name=([A-Za-z0-9._-]+) ")
_FORMAT = "roadcheck-guard-state/3"


def detect_guard_state(data: bytes) -> float:
    """Certain for a file that starts with a guard state seal; else 0."""
    from roadcheck.ingest import CERTAIN

    return CERTAIN if _HEADER.match(data) else 0.0


def read_guard_state(path: str, data: bytes) -> Iterator[Any]:
    """The session as one trajectory (id: the session), or its failure."""
    from roadcheck.ingest import ReadFailure

    try:
        yield _read(path, data)
    except TraceError as exc:
        yield ReadFailure(path, path, exc)


def _read(path: str, data: bytes) -> Trajectory:
    from roadcheck.ingest.native import parse_record

    found = _HEADER.match(data)
    end = data.find(b"\n")
    if found is None or end < 0:
        raise TraceError("not a guard session state file: its first line is not a guard "
                         "state seal", path=path, line=1)
    try:
        doc = orjson.loads(data[end + 1:])
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"the session state is not JSON: {exc}", path=path, line=2) from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise TraceError(f"the session state is not {_FORMAT}: 'format' is "
                         f"{doc.get('format') if isinstance(doc, dict) else doc!r}",
                         path=path, line=2)
    records = doc.get("events")
    if not isinstance(records, list):
        raise TraceError("'events' must be a list", path=path, line=2)
    events = []
    for index, rec in enumerate(records):
        try:
            events.append(parse_record(rec, 2, path))
        except TraceError as exc:
            raise TraceError(f"events[{index}]: {exc.message}", path=path, line=2) from None
    last = 0
    for index, ev in enumerate(events):
        if ev.seq <= last:
            raise TraceError(f"events[{index}]: seq {ev.seq} does not follow seq {last}",
                             path=path, line=2)
        last = ev.seq
    session = found.group(1).decode()
    return Trajectory(id=path, events=tuple(events), path=path, source="guard-state",
                      meta={"session": session})
