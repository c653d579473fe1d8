"""Readers that turn recorded runs into the shared event model.

:func:`load` reads one file and yields one entry per trajectory it holds: a
:class:`~roadcheck.events.Trajectory`, or a :class:`ReadFailure` when that
trajectory (or the whole file) cannot be read. A file with many runs keeps
going past a malformed one.

Every format is one reader module and one line of :data:`REGISTRY`. The module
offers two functions, named by its :class:`Format` line:

- ``detect(data: bytes) -> float | bool``: how sure it is, from the content
  alone and cheaply, that the bytes are its format: :data:`CERTAIN` (a marker
  only this format writes), :data:`LIKELY` (its shape), :data:`FALLBACK` (it
  will at least say clearly what is wrong), ``0``/``False`` (not its format).
  ``True`` counts as :data:`LIKELY`;
- ``read(path: str, data: bytes) -> Iterator[Trajectory | ReadFailure]``: every
  run of the file. :func:`read_runs` does the part every multi-run reader
  shares: decode once or fail once, then build each run on its own. A reader
  whose :class:`Format` line says ``drops_text`` also takes ``text=False``: the
  events may then leave out the free text no rule of a spec that selects nothing
  reads (a tool's output), for a replay that judges them and throws them away.

Detection asks every registered reader in turn (:func:`detect_format`), until
one is certain; the single most confident one reads the file. When none claims it, or two claim it
equally, the file is not guessed at: it is one :class:`ReadFailure` that asks
for ``--input-format``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roadcheck._lazy import lazy_dir, lazy_getattr

if TYPE_CHECKING:
    from roadcheck.ingest._registry import (
        REGISTRY,
        BadRun,
        Format,
        ReadFailure,
        detect_format,
        detection_scores,
        load,
        read_runs,
        reader,
    )

__all__ = ["CERTAIN", "FALLBACK", "FORMATS", "LIKELY", "REGISTRY", "UNKNOWN", "BadRun",
           "Format", "ReadFailure", "detect_format", "detection_scores", "load", "read_runs",
           "reader"]

#: Detection confidences: a marker only that format writes; its shape; "not mine, but I
#: can say clearly what is wrong" (the native reader for text that is no JSON at all).
CERTAIN, LIKELY, FALLBACK = 1.0, 0.5, 0.1

#: The format name :func:`detect_format` gives when it cannot tell.
UNKNOWN = "unknown"

#: Input formats ``--input-format`` accepts: the names of :data:`REGISTRY`, in its order
#: (here, so that naming them loads no reader and no registry).
FORMATS = ("native", "openai-chat", "tau-bench", "tau2", "otel", "atif", "openai-agents",
           "claude-code", "codex", "inspect", "swe-agent",
           "jaeger", "zipkin", "openhands", "claude-code-otel", "agentdojo",
           "openai-agents-state", "guard-state")

# The registry and the functions load with the first of their names used: a replay of
# native files reads them without it.
_LAZY = {name: "roadcheck.ingest._registry" for name in __all__ if name not in globals()}

__getattr__ = lazy_getattr("roadcheck.ingest", globals(), _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)
