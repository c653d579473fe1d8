"""The format registry and :func:`load`, behind :mod:`roadcheck.ingest` (which loads this
module on first use of one of its names): see the package for the reader protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import TypeVar

from roadcheck.errors import InputError, TraceError
from roadcheck.events import Trajectory
from roadcheck.ingest import CERTAIN, FALLBACK, FORMATS, LIKELY, UNKNOWN

__all__ = ["CERTAIN", "FALLBACK", "FORMATS", "LIKELY", "REGISTRY", "UNKNOWN", "BadRun",
           "Format", "ReadFailure", "detect_format", "detection_scores", "load", "no_run_check",
           "read_runs", "reader"]


@dataclass(frozen=True)
class ReadFailure:
    """A trajectory that could not be read; replay reports it as ERROR bad-input."""

    id: str
    path: str
    error: TraceError


Entry = Trajectory | ReadFailure
Reader = Callable[[str, bytes], Iterator[Entry]]
Detector = Callable[[bytes], "float | bool"]



_DETECTORS: dict[str, Detector] = {}


@dataclass(frozen=True)
class Format:
    """One input format: its name and where its reader lives (imported only when used)."""

    name: str
    module: str
    detect: str
    read: str
    #: Its read function takes ``text=False`` (see :func:`load`).
    drops_text: bool = False
    #: The name of its function telling a file of the format that holds no run (one line
    #: saying what it is, else None): replay notes such a file instead of judging it.
    no_run: str | None = None

    def detector(self) -> Detector:
        fn = _DETECTORS.get(self.name)
        if fn is None:
            fn = _DETECTORS[self.name] = getattr(import_module(self.module), self.detect)
        return fn

    def reader(self) -> Reader:
        fn: Reader = getattr(import_module(self.module), self.read)
        return fn


#: Every input format: a new format is one reader module and one line here.
REGISTRY: tuple[Format, ...] = (
    Format("native", "roadcheck.ingest.native", "detect_native", "read_entries"),
    Format("openai-chat", "roadcheck.ingest.transcripts", "detect_openai_chat", "read_openai_chat"),
    Format("tau-bench", "roadcheck.ingest.transcripts", "detect_tau_bench", "read_tau_bench"),
    Format("tau2", "roadcheck.ingest.transcripts", "detect_tau2", "read_tau2"),
    Format("otel", "roadcheck.ingest.otel", "detect_otel", "read_otel", drops_text=True),
    Format("atif", "roadcheck.ingest.atif", "is_atif", "read_atif"),
    Format("openai-agents", "roadcheck.ingest.openai_agents", "detect_openai_agents",
           "read_openai_agents"),
    Format("claude-code", "roadcheck.ingest.claude_code", "detect_claude_code", "read_claude_code",
           drops_text=True, no_run="no_run"),
    Format("codex", "roadcheck.ingest.codex", "detect_codex", "read_codex"),
    Format("inspect", "roadcheck.ingest.inspect_ai", "detect_inspect", "read_inspect"),
    Format("swe-agent", "roadcheck.ingest.swe_agent", "detect_swe_agent", "read_swe_agent"),
    Format("jaeger", "roadcheck.ingest.trace_json", "detect_jaeger", "read_jaeger"),
    Format("zipkin", "roadcheck.ingest.trace_json", "detect_zipkin", "read_zipkin"),
    Format("openhands", "roadcheck.ingest.openhands", "detect_openhands", "read_openhands"),
    Format("claude-code-otel", "roadcheck.ingest.claude_code_otel", "detect_claude_code_otel",
           "read_claude_code_otel"),
    Format("agentdojo", "roadcheck.ingest.agentdojo", "detect_agentdojo", "read_agentdojo"),
    Format("openai-agents-state", "roadcheck.ingest.openai_agents_state",
           "detect_openai_agents_state", "read_openai_agents_state"),
    Format("guard-state", "roadcheck.ingest.guard_state", "detect_guard_state",
           "read_guard_state"),
)

_BY_NAME = {f.name: f for f in REGISTRY}
if tuple(_BY_NAME) != FORMATS:  # pragma: no cover - a format added to one list only
    raise ImportError("roadcheck.ingest.FORMATS must name the registry's formats, in its order")


def no_run_check(name: str) -> Callable[[bytes], str | None] | None:
    """The function of the format ``name`` that tells a file holding no run (a Claude Code
    summary file: it returns what the file is, in one line, else None), imported now; None
    for a format without one."""
    fmt = _BY_NAME.get(name)
    if fmt is None or fmt.no_run is None:
        return None
    tell: Callable[[bytes], str | None] = getattr(import_module(fmt.module), fmt.no_run)
    return tell


def reader(name: str) -> Reader:
    """The read function of the format ``name`` (imported now). Raises :class:`KeyError`."""
    return _BY_NAME[name].reader()


def _score(raw: float | bool) -> float:
    if raw is True:
        return LIKELY
    return float(raw or 0.0)


def detection_scores(data: bytes) -> dict[str, float]:
    """What the registered readers say about ``data`` (format name -> confidence).

    They are asked in registry order; a :data:`CERTAIN` answer ends the asking (a
    certain marker is one only that format writes), so a native file, the common
    case, costs one look at its first line and imports no other reader.
    """
    from roadcheck.ingest._scan import scanning

    scores: dict[str, float] = {}
    with scanning(data):  # the detectors share one scan of a large document
        for f in REGISTRY:
            scores[f.name] = score = _score(f.detector()(data))
            if score >= CERTAIN:
                break
    return scores


def _decide(scores: dict[str, float]) -> tuple[str, list[str]]:
    """(the chosen format or UNKNOWN, the formats tied at the top when ambiguous)."""
    best = max(scores.values(), default=0.0)
    if best <= 0.0:
        return UNKNOWN, []
    top = [name for name, score in scores.items() if score == best]
    return (top[0], []) if len(top) == 1 else (UNKNOWN, top)


def detect_format(data: bytes) -> str:
    """Name the format of a document from its content, or :data:`UNKNOWN`.

    Every registered reader is asked; the one most sure wins. Nobody sure, or
    two equally sure, is :data:`UNKNOWN`.
    """
    return _decide(detection_scores(data))[0]


def _undetected(path: str, data: bytes) -> ReadFailure:
    tied = _decide(detection_scores(data))[1]
    why = (f"it reads as {' and as '.join(tied)}" if tied
           else "no reader recognises its content")
    return ReadFailure(path, path, TraceError(
        f"could not tell the format of {path} ({why}); pass --input-format "
        f"(one of {', '.join(FORMATS)})"))


class BadRun(Exception):
    """One run of a multi-run file is malformed: :func:`read_runs` reports it and goes on."""

    def __init__(self, run_id: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.run_id, self.message, self.line = run_id, message, line


R = TypeVar("R")


def read_runs(path: str, data: bytes, runs: Callable[[str, bytes], Iterable[R]],
              build: Callable[[R], Trajectory]) -> Iterator[Entry]:
    """The shared shape of a reader: decode once or fail once; isolate each run.

    ``runs(path, data)`` decodes the file and lists its runs (or, for a large
    file, checks all of it and returns an iterator decoding one run at a time);
    a :class:`TraceError` there is one :class:`ReadFailure` for the whole file.
    ``build(run)`` makes one trajectory; a :class:`BadRun` (or :class:`TraceError`) there
    fails that run only.
    """
    try:
        # a list, or the runs decoded one at a time (a large file checked whole beforehand)
        items = runs(path, data)
    except TraceError as exc:
        exc.path = path
        yield ReadFailure(path, path, exc)
        return
    for item in items:
        try:
            yield build(item)
        except BadRun as exc:
            yield ReadFailure(exc.run_id, path, TraceError(exc.message, path=path, line=exc.line))
        except TraceError as exc:
            exc.path = path
            yield ReadFailure(path, path, exc)


def load(path: str, input_format: str | None = None, *,
         data: bytes | None = None, text: bool = True) -> tuple[str, Iterator[Entry]]:
    """Read ``path`` and return ``(format name, entries)``.

    An unreadable file gives one :class:`ReadFailure`; it never raises for the
    file's content. An unknown ``input_format`` raises :class:`InputError`.
    ``data``, when given, is the file's content already read (standard input),
    and ``path`` only names it. A file whose format cannot be told is one
    :class:`ReadFailure` under the format name :data:`UNKNOWN`.

    ``text=False`` is for a caller that reads none of the events' free text (a
    replay whose spec selects nothing, :attr:`~roadcheck.conformance.CompiledSpec.typed`):
    a reader that can (``drops_text``) leaves out what only such text would hold, a
    tool's output, and keeps a long file's events smaller. Every other field, and
    whether the file reads at all, is the same.
    """
    from roadcheck.ingest.native import read_bytes

    if input_format is not None and input_format not in _BY_NAME:
        raise InputError(f"unknown input format {input_format!r}; choose one of "
                         + ", ".join(FORMATS))
    try:
        if data is None:
            data = read_bytes(path)
    except TraceError as exc:
        return input_format or "native", iter([ReadFailure(path, path, exc)])
    fmt = input_format or detect_format(data)
    if fmt == UNKNOWN:
        return fmt, iter([_undetected(path, data)])
    if not text and _BY_NAME[fmt].drops_text:
        return fmt, _BY_NAME[fmt].reader()(path, data, text=False)  # type: ignore[call-arg]
    return fmt, reader(fmt)(path, data)
