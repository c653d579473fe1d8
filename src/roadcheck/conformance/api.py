"""The library call: :func:`replay` of a spec (a :class:`Spec`, a dict or a path)
over trajectories, returning a :class:`ReplayRun`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike
from typing import Any, cast

from roadcheck.conformance.batch import (
    TrajectoryItem,
    _is_events,
    _replay_event_list,
    iter_replay,
    split_files,
)
from roadcheck.conformance.engine import CompiledSpec
from roadcheck.conformance.result import (
    ReplayRun,
)
from roadcheck.conformance.spec import (
    Spec,
    parse_spec,
)
from roadcheck.events import DEFAULT_ID, Trajectory

__all__ = ["replay"]


def _spec_of(spec: Spec | Mapping[str, Any] | str | PathLike[str]) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, Mapping):
        return parse_spec(dict(spec))
    if isinstance(spec, (str, PathLike)):
        from roadcheck._inputs import load_replay_spec

        return load_replay_spec(spec)
    raise TypeError(f"spec must be a Spec, a dict or a path, got {type(spec).__name__}")

def replay(spec: Spec | Mapping[str, Any] | str | PathLike[str],
           items: Iterable[TrajectoryItem] | TrajectoryItem, *,
           input_format: str | None = None) -> ReplayRun:
    """Replay trajectories against a spec; returns a :class:`ReplayRun` (``exit``: the CI code).

    ``spec`` is a :class:`Spec`, a spec document as a dict (checked like a
    file, see :func:`parse_spec`) or the path of a JSON/YAML spec. ``items`` is
    one trajectory or a list of them, each a path (``"-"`` reads standard
    input), a :class:`Trajectory`, or the events of one run as a list of
    :class:`Event` objects or native event dicts::

        roadcheck.replay({"mandatory_checkpoints": [...]}, [{"seq": 1, ...}, ...])

    A malformed trajectory is an ERROR result, never an exception; an
    unusable spec raises :class:`~roadcheck.errors.SpecError`.
    """
    loaded = _spec_of(spec)
    if _is_events(items):
        result = _replay_event_list(CompiledSpec(loaded), items, DEFAULT_ID)
        return ReplayRun(loaded.source, [result])
    if isinstance(items, (str, PathLike, Trajectory)):
        items = [items]
    formats: list[tuple[str, ...]] = []
    # not a list of events (above): a list of items, each judged on its own
    many = cast(Iterable[TrajectoryItem], items)
    results = list(iter_replay(loaded, many, input_format=input_format, formats=formats))
    files, notes = split_files(formats)
    return ReplayRun(loaded.source, results, files, spec_sha256=loaded.sha256, notes=notes)
