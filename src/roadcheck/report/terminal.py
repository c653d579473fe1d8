"""The replay report for a person at a terminal: failures first, colour, a progress line.

The rule that picks it (see docs/ci.md, "At a terminal"): ``--show``, ``-q`` or
``-v`` ask for this view anywhere; without them it is the view when standard
output is a terminal or ``FORCE_COLOR`` is set, and the plain report, byte for
byte, otherwise (a pipe, a file, ``--output``). Colour is added when the view
goes to standard output and ``NO_COLOR`` is not set; rich, which renders it,
is imported only then.

The view prints the head (spec), then each BLOCK and ERROR block as it is
judged, then the PASS blocks when asked for, then the totals. The
``task_success`` a run recorded stays on each block; why it is printed and
not used is said once, above the summary.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from roadcheck.conformance.result import ReplayResult
from roadcheck.conformance.result import scalar_text as _scalar
from roadcheck.report._spool import Spool
from roadcheck.report._text import escape_controls, plural, text_lines
from roadcheck.report.replay import (
    HEADER,
    Rendered,
    Tally,
    _block,
    _file_line,
    _spec_text,
    _summary_line,
    reach_lines,
    render_result,
    totals_lines,
)

__all__ = ["Progress", "ProgressCollector", "ProgressSink", "TerminalReportWriter", "TerminalView",
           "paint_report", "render_terminal", "wants_colour", "wants_terminal"]

NOTE = ("note : task_success is what each run recorded: printed for contrast, ignored for "
        "every verdict")


def _set(environ: Mapping[str, str], name: str) -> bool:
    """An environment flag counts when it is present and not empty (no-color.org,
    force-color.org)."""
    return bool(environ.get(name, ""))


def wants_terminal(stdout: Any, environ: Mapping[str, str]) -> bool:
    """Whether the default text report goes to a person: a terminal, or FORCE_COLOR."""
    return _set(environ, "FORCE_COLOR") or bool(getattr(stdout, "isatty", lambda: False)())


def wants_colour(stdout: Any, environ: Mapping[str, str]) -> bool:
    """Whether a report written to ``stdout`` is coloured: a terminal or FORCE_COLOR,
    and no NO_COLOR."""
    return not _set(environ, "NO_COLOR") and wants_terminal(stdout, environ)


@dataclass(frozen=True, slots=True)
class TerminalView:
    """What the failures-first view shows, and whether in colour."""

    #: The verdicts whose blocks are printed (``BLOCK``, ``ERROR``, ``PASS``).
    show: frozenset[str]
    #: The totals only.
    quiet: bool
    colour: bool

    @classmethod
    def choose(cls, *, show: tuple[str, ...] | None, quiet: bool, verbose: bool,
               to_file: bool, stdout: Any, environ: Mapping[str, str]) -> TerminalView | None:
        """The view the options and the output ask for; None for the plain report.

        ``show``, ``quiet`` and ``verbose`` are exclusive (the caller checks).
        """
        explicit = show is not None or quiet or verbose
        if not explicit and (to_file or not wants_terminal(stdout, environ)):
            return None
        if verbose:
            shown = frozenset({"BLOCK", "ERROR", "PASS"})
        elif show is not None:
            shown = frozenset(v.upper() for v in show)
        else:
            shown = frozenset({"BLOCK", "ERROR"})
        colour = not to_file and wants_colour(stdout, environ)
        return cls(shown, quiet, colour)


def _terminal_lines(r: ReplayResult) -> list[str]:
    """A result's block as the view prints it under its ``[N] id`` line: the verdict
    first, the recorded ``task_success`` without the sentence every block repeated."""
    lines = _block(0, r)[1:]
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict : "))
    out = [lines[verdict]]
    for i, line in enumerate(lines):
        if i == verdict:
            continue
        if line.startswith("final : "):
            extra = "; ".join(f"{k}={_scalar(v)}" for k, v in sorted(r.meta.items()))
            line = f"final : task_success={_scalar(r.task_success)}"
            if extra:
                line += f" ({extra})"
        out.append(line)
    return ["  " + line for line in out]


def render_terminal(r: ReplayResult, *, summary_only: bool = False,
                    by_field: str | None = None) -> Rendered:
    """Render one result for :class:`TerminalReportWriter` (picklable, like
    :func:`~roadcheck.report.replay.render_result`)."""
    rendered = render_result(r, fmt="text", summary_only=True, by_field=by_field)
    if summary_only:
        return rendered
    return rendered._replace(body=text_lines(_terminal_lines(r)).encode("utf-8"))


# -- colour --------------------------------------------------------------------------------

_VERDICT_STYLE = {"PASS": "green", "BLOCK": "bold red", "ERROR": "bold magenta"}
_LABEL_STYLE = {"reason": "red", "warn": "yellow", "note": "dim", "final": "dim",
                "contrast": "cyan", "trajectory": "dim"}
_COUNTS = re.compile(r"\b(\d+) (PASS|BLOCK|ERROR)\b")
_LABEL = re.compile(r"\s*([a-z]+) ?: ")


def _line_style(line: str, verdict: str | None) -> str:
    m = _LABEL.match(line)
    label = m.group(1) if m else ""
    if label == "verdict" and verdict is not None:
        return _VERDICT_STYLE[verdict]
    if label == "detail":
        return "magenta" if verdict == "ERROR" else ""
    return _LABEL_STYLE.get(label, "")


class _Styles:
    """rich's styles rendered as ANSI codes (the 16 standard colours every terminal has);
    imported only when a line is coloured. One style rendering is a fraction of a
    microsecond, so a batch's worth of failures colours as fast as it prints."""

    def __init__(self) -> None:
        from rich.color import ColorSystem
        from rich.style import Style

        self.parse = Style.parse
        self.system = ColorSystem.STANDARD
        self.cache: dict[str, Any] = {}

    def __call__(self, text: str, style: str) -> str:
        if not style or not text:
            return text
        st = self.cache.get(style)
        if st is None:
            st = self.cache[style] = self.parse(style)
        return str(st.render(text, color_system=self.system))

    def spans(self, text: str, spans: Iterable[tuple[int, int, str]]) -> str:
        """``text`` with each ``(start, end, style)`` span (in order, apart) styled."""
        out, at = [], 0
        for start, end, style in spans:
            out += [text[at:start], self(text[start:end], style)]
            at = end
        out.append(text[at:])
        return "".join(out)


class _Painter:
    """Writes report lines to ``out``, in colour when asked."""

    def __init__(self, out: IO[str], colour: bool) -> None:
        self.out = out
        self.style = _Styles() if colour else None

    def lines(self, lines: Iterable[str], *, style: str = "",
              verdict: str | None = None) -> None:
        """Plain lines (escaped here); in colour, each styled by its label."""
        if self.style is None:
            self.out.write(text_lines(lines))
            return
        paint = self.style
        self.out.write("".join(paint(escape_controls(line), style or _line_style(line, verdict))
                               + "\n" for line in lines))

    def block(self, head: str, body: str, verdict: str) -> None:
        """A result's block: its ``[N] id`` line and its rendered (escaped) lines."""
        if self.style is None:
            self.out.write(escape_controls(head) + "\n" + body)
            return
        paint = self.style
        self.out.write(paint(escape_controls(head), "bold") + "\n" + "".join(
            paint(line, _line_style(line, verdict)) + "\n" for line in body.splitlines()))

    def counts(self, line: str) -> None:
        """A line of totals, each ``N VERDICT`` (but 0) in its verdict's colour."""
        text = escape_controls(line)
        if self.style is not None:
            text = self.style.spans(text, ((m.start(), m.end(), _VERDICT_STYLE[m.group(2)])
                                           for m in _COUNTS.finditer(text)
                                           if m.group(1) != "0"))
        self.out.write(text + "\n")

    def flush(self) -> None:
        self.out.flush()


#: accept's and revalidate's text reports: the words that carry their verdicts.
_MARKS = (
    (re.compile(r"^\[ACCEPTED\]"), "bold green"),
    (re.compile(r"^\[REJECTED\]"), "bold red"),
    (re.compile(r"^ +(ok)\b"), "green"),
    (re.compile(r"^ +(FAIL|STOP|HOLD)\b"), "bold red"),
    (re.compile(r"^ +(WARN)\b"), "yellow"),
    (re.compile(r"^decision: continue\b.*"), "bold green"),
    (re.compile(r"^decision: .*"), "bold red"),
)


def paint_report(text: str, out: IO[str]) -> None:
    """Write a finished text report (accept, revalidate) to ``out`` with its verdict
    words in colour; the words and lines are the plain report's."""
    style = _Styles()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        painted = style(line, "bold") if i == 0 and line.startswith("roadcheck ") else line
        for pattern, colour in _MARKS:
            m = pattern.match(line)
            if m is not None:
                start, end = m.span(1) if m.groups() else m.span()
                painted = style.spans(line, [(start, end, colour)])
                break
        lines[i] = painted
    out.write("\n".join(lines))
    out.flush()


# -- the progress line ---------------------------------------------------------------------

class Progress:
    """One line on ``stream`` (a terminal) saying how far a batch is; rewritten in place
    at most ten times a second, and cleared before anything else is written."""

    def __init__(self, stream: IO[str], total_files: int, *, interval: float = 0.1) -> None:
        self.stream = stream
        self.total = total_files
        self.interval = interval
        self.files = 0
        self.results = 0
        self.verdicts: Counter[str] = Counter()
        self.drawn = False
        self.last = 0.0

    def file(self) -> None:
        self.files += 1
        self._draw(force=not self.drawn)

    def result(self, verdict: str) -> None:
        self.results += 1
        self.verdicts[verdict] += 1
        self._draw()

    def _draw(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        text = (f"roadcheck replay: {self.files} of {self.total} files, "
                f"{plural(self.results, 'trajectory', 'trajectories')}, "
                f"{self.verdicts['BLOCK']} BLOCK, {self.verdicts['ERROR']} ERROR")
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            width = 0
        width = width or 80  # a terminal that reports no size
        self.stream.write("\r\x1b[K" + text[:max(width - 1, 1)])
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        """Remove the line, leaving the cursor where it started."""
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


class ProgressSink:
    """A report writer that tells ``progress`` of each file and result it is given, and
    clears the line before the report's end is written; the writer's other attributes
    (``carries``, ``exit_code``) are its own."""

    def __init__(self, writer: Any, progress: Progress) -> None:
        self.writer = writer
        self.progress = progress

    def file(self, path: str, fmt: str, note: str | None = None) -> None:
        self.writer.file(path, fmt, note)
        self.progress.file()

    def result(self, item: Rendered) -> None:
        self.writer.result(item)
        self.progress.result(item.verdict)

    def finish(self, *, interrupted: bool = False) -> int:
        self.progress.clear()
        return int(self.writer.finish(interrupted=interrupted))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)


class ProgressCollector:
    """Every file and result of a replay whose report is written whole (JUnit, SARIF,
    GitHub, HTML), telling ``progress`` of each as it comes."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.files: list[tuple[str, ...]] = []
        self.results: list[Any] = []

    def file(self, path: str, fmt: str, note: str | None = None) -> None:
        self.files.append((path, fmt) if note is None else (path, fmt, note))
        self.progress.file()

    def result(self, item: Any) -> None:
        self.results.append(item)
        self.progress.result(item.verdict)

    def run(self, spec: Any, *, interrupted: bool = False) -> Any:
        """The :class:`~roadcheck.conformance.result.ReplayRun` of what came; the line cleared."""
        from roadcheck.conformance.batch import split_files
        from roadcheck.conformance.result import ReplayRun

        self.progress.clear()
        files, notes = split_files(self.files)
        return ReplayRun(spec.source, self.results, files, interrupted=interrupted,
                         spec_sha256=spec.sha256, notes=notes)


# -- the writer ----------------------------------------------------------------------------

#: How many of the files with the most failures a batch's end lists at a terminal.
WORST_SHOWN = 5


class TerminalReportWriter(Tally):
    """The failures-first view, written as results arrive.

    Each BLOCK or ERROR block asked for is written the moment it is judged;
    PASS blocks (``-v``, ``--show pass``) wait in a spool (:mod:`._spool`) and follow
    the failures; with ``--summary-only`` each file's counts wait there too.
    Memory holds a bounded tail of them, however large the batch. The same sink interface
    as :class:`~roadcheck.report.replay.ReplayReportWriter`.
    """

    def __init__(self, out: IO[str], spec: Any, view: TerminalView, *,
                 spec_source: str | None, spec_sha256: str | None, summary_only: bool = False,
                 by_field: str | None = None, progress: Progress | None = None,
                 per_file: bool = False) -> None:
        self.per_file = per_file
        #: The files with the most BLOCK and ERROR results: (-count, order, path, counts).
        self.worst_files: list[tuple[int, int, str, Counter[str]]] = []
        self.paint = _Painter(out, view.colour)
        self.spec = spec
        self.view = view
        self.spec_source = spec_source
        self.spec_sha256 = spec_sha256
        self.summary_only = summary_only
        self.by_field = by_field
        self.progress = progress
        super().__init__()
        self.file_count = 0
        self.current: str | None = None
        self.current_counts: Counter[str] = Counter()
        self.headed = False
        self.shown_final = False
        # closed on leaving the writer's ``with`` block
        self.later = Spool()

    def __enter__(self) -> TerminalReportWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.later.close()

    def _head(self) -> None:
        if self.headed or self.view.quiet:
            return
        self.headed = True
        head = [HEADER, _spec_text(self.spec_source, self.spec)]
        if self.spec_sha256 is not None:
            head.append(f"spec-sha256: {self.spec_sha256}")
        self.paint.lines(head[:1], style="bold")
        self.paint.lines(head[1:])

    def file(self, path: str, fmt: str, note: str | None = None) -> None:
        """A file begins (``note``: what a file that holds no run is; listed with the
        passes)."""
        self._file_done()
        self.current = path
        self.file_count += 1
        if note is not None and not self.view.quiet:
            line = f"note: {path} holds no run: {note}"
            self.later.write(escape_controls(line).encode("utf-8") + b"\n")

    def _file_done(self) -> None:
        if (self.current is not None and self.summary_only and self.per_file
                and not self.view.quiet):
            line = _file_line(self.current, self.current_counts)
            self.later.write(escape_controls(line).encode("utf-8") + b"\n")
        if self.current is not None:
            failed = self.current_counts["BLOCK"] + self.current_counts["ERROR"]
            if failed:
                self._rank(failed, self.current, self.current_counts)
        self.current = None
        self.current_counts = Counter()

    def result(self, r: Rendered) -> None:
        """The next judged trajectory, in order."""
        verdict = self.count(r)
        self.current_counts[verdict] += 1
        if self.summary_only or self.view.quiet or verdict not in self.view.show:
            return
        head = f"[{self.total}] {r.id}"
        self.shown_final = self.shown_final or b"\n  final : " in b"\n" + r.body
        if verdict == "PASS":  # after the failures
            self.later.write(escape_controls(head).encode("utf-8") + b"\n" + r.body)
            return
        if self.progress is not None:
            self.progress.clear()
        self._head()
        self.paint.block(head, r.body.decode("utf-8"), verdict)
        self.paint.flush()

    def exit_code(self, interrupted: bool = False) -> int:
        """The folded exit: 130 interrupted, 2 nothing judged, else the worst verdict."""
        from roadcheck.errors import EXIT_BLOCK, EXIT_ERROR, EXIT_INTERRUPTED, worst_exit

        if interrupted:
            return EXIT_INTERRUPTED
        if self.worst is None:
            return EXIT_ERROR
        if self.strict and self.reach.failed:
            return worst_exit((self.worst, EXIT_BLOCK))
        return self.worst

    def _rank(self, failed: int, path: str, counts: Counter[str]) -> None:
        """Keep ``path`` among the :data:`WORST_SHOWN` files with the most failures (the
        first of equals kept)."""
        import bisect

        entry = (-failed, self.file_count, path, counts)
        if len(self.worst_files) < WORST_SHOWN or entry < self.worst_files[-1]:
            bisect.insort(self.worst_files, entry)
            del self.worst_files[WORST_SHOWN:]

    def finish(self, *, interrupted: bool = False) -> int:
        """Write what waited, the totals and the summary; returns the exit code."""
        if self.progress is not None:
            self.progress.clear()
        self._file_done()
        summary: dict[str, Any] = {**self.counts, "exit": self.exit_code(interrupted),
                                   **self.reach.summary()}
        if not self.view.quiet:
            self._head()
            self._later()
            files = f"files: {self.file_count}"
            files += f", {plural(self.total, 'trajectory', 'trajectories')}"
            self.paint.lines([files])
            if self.file_count > 1 and not (self.summary_only and self.per_file):
                self.paint.lines(totals_lines(self.reason_codes, self.warning_codes))
                self.paint.lines([escape_controls(
                    f"worst: {path}: {c['BLOCK']} BLOCK, {c['ERROR']} ERROR")
                    for _, _, path, c in self.worst_files])
        if self.by_field is not None:
            for key, g in sorted(self.groups.items()):
                self.paint.counts(f"by {self.by_field}={key}: {g['pass']} PASS, "
                                  f"{g['block']} BLOCK, {g['error']} ERROR")
        if self.shown_final and not self.view.quiet:
            self.paint.lines([NOTE])
        reached = reach_lines(self.spec, summary)
        if reached:
            self.paint.lines(reached)
        self.paint.counts(_summary_line(summary))
        self.paint.flush()
        return int(summary["exit"])

    def _later(self) -> None:
        """The PASS blocks (or the per-file lines) that waited, in order."""
        head: str | None = None
        body: list[str] = []
        for raw in self.later.lines():
            line = raw.decode("utf-8")
            if line.startswith("  "):
                body.append(line)
                continue
            if head is not None:
                self.paint.block(head, "".join(body), "PASS")
            head, body = None, []
            if line.startswith("["):
                head = line.rstrip("\n")
            else:  # a file line (--summary-only), escaped already
                self.paint.lines([line.rstrip("\n")])
        if head is not None:
            self.paint.block(head, "".join(body), "PASS")
