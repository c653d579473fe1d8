"""Readers that turn recorded runs into the shared event model.

:func:`load` reads one file and yields one entry per trajectory it holds: a
:class:`~assay.events.Trajectory`, or a :class:`ReadFailure` when that
trajectory (or the whole file) cannot be read. A file with many runs keeps
going past a malformed one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from assay.errors import InputError, TraceError
from assay.events import Trajectory

__all__ = ["FORMATS", "ReadFailure", "detect_format", "load"]


@dataclass(frozen=True)
class ReadFailure:
    """A trajectory that could not be read; replay reports it as ERROR bad-input."""

    id: str
    path: str
    error: TraceError


Entry = Trajectory | ReadFailure
Reader = Callable[[str, bytes], Iterator[Entry]]


def _native(path: str, data: bytes) -> Iterator[Entry]:
    from assay.ingest.native import read_native

    try:
        yield read_native(path, data)
    except TraceError as exc:
        yield ReadFailure(path, path, exc)


def _readers() -> dict[str, Reader]:
    from assay.ingest import transcripts

    return {
        "native": _native,
        "openai-chat": transcripts.read_openai_chat,
        "tau-bench": transcripts.read_tau_bench,
        "tau2": transcripts.read_tau2,
        "otel": _otel,
        "atif": _atif,
        "openai-agents": _openai_agents,
        "claude-code": _claude_code,
        "codex": _codex,
    }


def _otel(path: str, data: bytes) -> Iterator[Entry]:
    from assay.ingest.otel import read_otel

    return read_otel(path, data)


def _atif(path: str, data: bytes) -> Iterator[Entry]:
    from assay.ingest.atif import read_atif

    return read_atif(path, data)


def _openai_agents(path: str, data: bytes) -> Iterator[Entry]:
    from assay.ingest.openai_agents import read_openai_agents

    return read_openai_agents(path, data)


def _claude_code(path: str, data: bytes) -> Iterator[Entry]:
    from assay.ingest.claude_code import read_claude_code

    return read_claude_code(path, data)


def _codex(path: str, data: bytes) -> Iterator[Entry]:
    from assay.ingest.codex import read_codex

    return read_codex(path, data)


#: Input formats ``--input-format`` accepts, in the order detection tries them.
FORMATS = ("native", "openai-chat", "tau-bench", "tau2", "otel", "atif", "openai-agents",
           "claude-code", "codex")

_SPAN_KEYS = frozenset({b"resourceSpans", b"context"})


def detect_format(data: bytes) -> str:
    """Name the format of a document from its content (cheap: looks at the start)."""
    head = data.lstrip()[:1]
    if head == b"[":
        from assay.ingest.atif import is_atif
        from assay.ingest.transcripts import detect_json_document

        if is_atif(data):
            return "atif"
        return detect_json_document(data) or "native"
    if head == b"{":
        first = data.lstrip().split(b"\n", 1)[0]
        if b'"event"' in first and b'"seq"' in first:
            return "native"
        from assay.ingest.claude_code import detect_claude_code
        from assay.ingest.codex import detect_codex

        if detect_claude_code(data):
            return "claude-code"
        if detect_codex(data):
            return "codex"
        if b'"object"' in first:
            from assay.ingest.openai_agents import detect_openai_agents

            if detect_openai_agents(data):
                return "openai-agents"
        from assay.ingest.transcripts import _keys_at, detect_json_document

        key = _keys_at(data, 1, _SPAN_KEYS)
        if key == b"resourceSpans" or (key == b"context" and b'"span_id"' in data[:4096]):
            return "otel"
        from assay.ingest.atif import is_atif

        if is_atif(data):
            return "atif"
        return detect_json_document(data) or "native"
    return "native"


def load(path: str, input_format: str | None = None, *,
         data: bytes | None = None) -> tuple[str, Iterator[Entry]]:
    """Read ``path`` and return ``(format name, entries)``.

    An unreadable file gives one :class:`ReadFailure`; it never raises for the
    file's content. An unknown ``input_format`` raises :class:`InputError`.
    ``data``, when given, is the file's content already read (standard input),
    and ``path`` only names it.
    """
    from assay.ingest.native import read_bytes

    if input_format is not None and input_format not in FORMATS:
        raise InputError(f"unknown input format {input_format!r}; choose one of "
                         + ", ".join(FORMATS))
    try:
        if data is None:
            data = read_bytes(path)
    except TraceError as exc:
        return input_format or "native", iter([ReadFailure(path, path, exc)])
    fmt = input_format or detect_format(data)
    if fmt == "native":
        return fmt, _native(path, data)
    return fmt, _readers()[fmt](path, data)
