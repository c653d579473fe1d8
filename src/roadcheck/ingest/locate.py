"""Where a judged trajectory came from: its events again, read after the verdict.

The reports that point into files (SARIF, GitHub annotations) and the HTML page
that draws each trajectory's timeline need the events a result names. A result
carries the seq of the event each reason is about; this module reads the files
once more, through the same readers, and hands back each trajectory keyed by
``(path, id)``, so a renderer can turn a seq into a file line or an event. It
never judges: a file that cannot be read again is simply absent.
"""

from __future__ import annotations

from collections.abc import Iterable

from roadcheck.events import Trajectory

__all__ = ["Located", "locate", "native_line"]

#: Each trajectory read again, keyed by ``(path, id)``.
Located = dict[tuple[str, str], Trajectory]


def locate(paths: Iterable[str], input_format: str | None = None) -> Located:
    """Read ``paths`` again and key every trajectory in them by ``(path, id)``.

    Standard input (``-``) cannot be read twice and is left out, as is any
    file that no longer reads.
    """
    from roadcheck.errors import RoadcheckError
    from roadcheck.ingest import load

    out: Located = {}
    for path in paths:
        if path == "-":
            continue
        try:
            _fmt, entries = load(path, input_format)
            for entry in entries:
                if isinstance(entry, Trajectory):
                    out[(path, entry.id)] = entry
        except (RoadcheckError, OSError):
            continue
    return out


def native_line(trajectory: Trajectory | None, seq: int | None) -> int | None:
    """The file line of event ``seq`` of a native trajectory; None when it cannot be told.

    Only a native JSONL file has one event per line; a transcript's ``line`` is
    the index of a message, not a line of the file.
    """
    if trajectory is None or seq is None or trajectory.source != "native":
        return None
    for event in trajectory.events:
        if event.seq == seq:
            return event.line
    return None
