"""One trajectory judged: its events fed to the one judge (:class:`Replayer`), and an
exception nobody expected turned into that trajectory's ERROR, never a pass."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from roadcheck.conformance.engine import CompiledSpec, Replayer, error_result
from roadcheck.conformance.result import (
    ReplayResult,
)
from roadcheck.conformance.spec import (
    Spec,
)
from roadcheck.errors import TraceError
from roadcheck.events import Event, Trajectory

__all__ = ["replay_events", "replay_trajectory"]


# Readers whose ``Event.line`` is a message index rather than a file line.
_TRANSCRIPT_SOURCES = frozenset({"openai-chat", "tau-bench", "tau2"})

def _compiled(spec: Spec | CompiledSpec) -> CompiledSpec:
    return spec if isinstance(spec, CompiledSpec) else CompiledSpec(spec)

def replay_events(spec: Spec | CompiledSpec, events: Iterable[Event], traj_id: str = "<events>",
                  path: str | None = None, *, source: str = "native",
                  meta: dict[str, Any] | None = None) -> ReplayResult:
    """Judge a stream of events; a :class:`TraceError` from the stream becomes ERROR."""
    compiled = _compiled(spec)
    locate = source in _TRANSCRIPT_SOURCES
    # A plain spec builds its Replayer here; a spec that feeds others too builds its own.
    r = (Replayer(compiled, locate_messages=locate) if type(compiled) is CompiledSpec
         else compiled.replayer(locate_messages=locate))
    try:
        r.feed_all(events)
    except TraceError as exc:
        return error_result(traj_id, path, exc.location_message() if path is None
                            else _strip_path(exc), source=source, meta=meta)
    return r.finish(traj_id, path, source=source, meta=meta)

def _strip_path(exc: TraceError) -> str:
    """The error without the file name (the report already names the file)."""
    if exc.line is not None:
        return f"line {exc.line}: {exc.message}"
    return exc.message

def replay_trajectory(spec: Spec | CompiledSpec, trajectory: Trajectory) -> ReplayResult:
    """Judge one in-memory trajectory (its events are validated first)."""
    from roadcheck.ingest.native import validate_events

    events = list(trajectory.events)
    try:
        validate_events(events, trajectory.path)
    except TraceError as exc:
        return error_result(trajectory.id, trajectory.path, _strip_path(exc),
                            source=trajectory.source, meta=dict(trajectory.meta))
    return replay_events(spec, events, trajectory.id, trajectory.path, source=trajectory.source,
                         meta=dict(trajectory.meta))

def _crash(where: str, exc: BaseException) -> str:
    """One line for an exception nobody expected: the file (or trajectory) and its type."""
    lines = str(exc).splitlines()
    detail = lines[0] if lines else ""
    if len(detail) > 200:
        detail = detail[:197] + "..."
    return (f"{where}: could not be judged: unexpected {type(exc).__name__}"
            f"{': ' + detail if detail else ''} (an internal error of roadcheck; the file "
            "is not judged, never passed)")

def _judge(compiled: CompiledSpec, entry: Trajectory) -> ReplayResult:
    """Judge one trajectory read from a file; an engine bug is its ERROR, not the batch's."""
    try:
        return replay_events(compiled, entry.events, entry.id, entry.path,
                             source=entry.source, meta=dict(entry.meta))
    except Exception as exc:  # an internal bug: fail closed for this trajectory only
        return error_result(entry.id, entry.path, _crash(entry.id, exc), source=entry.source,
                            meta=dict(entry.meta))
