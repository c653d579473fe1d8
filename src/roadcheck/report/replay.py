"""Replay reports: the text layout people read and the JSON document scripts read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import IO, Any, NamedTuple, cast

import orjson

from roadcheck._digest import Sha256
from roadcheck.conformance.result import VERDICT_EXIT, Reach, ReplayResult, ReplayRun
from roadcheck.conformance.result import scalar_text as _json_scalar
from roadcheck.errors import EXIT_BLOCK, EXIT_ERROR, EXIT_INTERRUPTED, worst_exit
from roadcheck.report._spool import Spool, copy_range
from roadcheck.report._text import (
    dump_json,
    dumps_json,
    escape_controls,
    escape_surrogates,
    plural,
    sha256_footer,
    text_lines,
)

__all__ = ["ChunkFolder", "Rendered", "ReplayChunk", "ReplayReportWriter", "ResultRenderer",
           "Tally", "render_result", "replay_report"]

HEADER = "roadcheck replay: the final metric says the run arrived; the recorded road decides"
_TRANSCRIPTS = frozenset({"openai-chat", "tau-bench", "tau2"})


def _spec_line(run: ReplayRun, spec: Any) -> str:
    return _spec_text(run.spec_source, spec)


def _spec_text(source: str | None, spec: Any) -> str:
    parts = [plural(len(spec.mandatory_checkpoints), "mandatory checkpoint"),
             plural(len(spec.handoff_contracts), "handoff contract")]
    if spec.derive:
        parts.append(plural(len(spec.derive), "derive rule"))
    doc = getattr(spec, "doc", None)
    for kind, name in (("forbidden", "forbidden rule"), ("limits", "limit"),
                       ("obligations", "obligation"), ("flows", "flow")):
        rules = getattr(doc, kind, None)
        if rules:
            parts.append(plural(len(rules), name))
    return f"spec : {source or '<in memory>'} ({', '.join(parts)})"


def _sha_line(run: ReplayRun) -> list[str]:
    return [] if run.spec_sha256 is None else [f"spec-sha256: {run.spec_sha256}"]


def _files_lines(run: ReplayRun) -> list[str]:
    per_file = Counter(r.path for r in run.results)
    lines = [f"files: {len(run.files) or len(per_file)}"]
    if any(fmt != "native" for _, fmt in run.files) or len(run.results) != len(run.files):
        lines[0] += f", {plural(len(run.results), 'trajectory', 'trajectories')}"
        noted = dict(run.notes)
        for path, fmt in run.files:
            lines.append(input_line(path, fmt, per_file.get(path, 0), noted.get(path)))
    return lines


def _block(index: int, r: ReplayResult) -> list[str]:
    stats = None
    if r.stats is not None:
        s = r.stats
        cps = plural(s.checkpoints, "checkpoint")
        if s.derived_checkpoints:
            cps += f" ({s.derived_checkpoints} derived)"
        if r.source in _TRANSCRIPTS:  # a chat log marks nothing irreversible; count tool calls
            acts = plural(s.actions, "tool call")
        else:
            acts = plural(s.irreversible, "irreversible action")
        stats = (s.events, s.agents, s.handoffs, cps, acts)
    return [f"[{index}] {r.id}",
            *_block_lines(stats, r.meta, r.task_success, r.verdict, r.headline,
                          [(f.code, f.message) for f in r.reasons],
                          [(f.code, f.message) for f in r.warnings],
                          [n.message for n in r.notes])]


def _block_lines(stats: tuple[int, Sequence[str], int, str, str] | None,
                 meta: Mapping[str, Any], task_success: Any, verdict: str, headline: str,
                 reasons: list[tuple[str, str]], warnings: list[tuple[str, str]],
                 notes: list[str]) -> list[str]:
    """A result's block after its ``[N] id`` line. ``stats``: its events, agents and
    handoffs and the phrases counting its checkpoints and actions (no ``trajectory`` and
    ``final`` lines without them); reasons and warnings as (code, message)."""
    out = []
    if stats is not None:
        events, agents, handoffs, cps, acts = stats
        out.append(f"trajectory: {plural(events, 'event')}, agents: "
                   f"{', '.join(agents) or '-'}; {plural(handoffs, 'handoff')}, {cps}, {acts}")
        extra = "".join(f"{k}={_json_scalar(v)}; " for k, v in sorted(meta.items()))
        out.append(f"final : task_success={_json_scalar(task_success)} ({extra}recorded, "
                   "printed for contrast, ignored for the verdict)")
    out.append(f"verdict : {verdict} ({headline}) exit {VERDICT_EXIT[verdict]}")
    if verdict == "BLOCK":
        out.extend(f"reason : {code}: {message}" for code, message in reasons)
    else:
        out.extend(f"detail : {message}" for _code, message in reasons)
    out.extend(f"warn : {code}: {message}" for code, message in warnings)
    out.extend(f"note : {message}" for message in notes)
    if verdict == "BLOCK":
        out.append(f"contrast : final metric says task_success={_json_scalar(task_success)} / "
                   f"trajectory says {headline}")
    return out


def reach_lines(spec: Any, summary: Mapping[str, Any]) -> list[str]:
    """The lines above the summary naming each rule no trajectory reached and each
    irreversible action no rule guarded; none when there is nothing to name."""
    out = [f"unreached: {_rule_label(spec, key)} was reached by no trajectory"
           for key in summary.get("unreached", ())]
    for action, n in summary.get("unguarded_irreversible", {}).items():
        times = "once" if n == 1 else f"{n} times"
        out.append(f"unguarded: irreversible action {escape_controls(repr(action))} ran "
                   f"{times} and no rule guards it")
    return out


def _rule_label(spec: Any, key: str) -> str:
    """``mandatory_checkpoints.0 (checkpoint 'c' before 'send')``, from the spec's rules."""
    doc = getattr(spec, "doc", None)
    section, _, index = key.rpartition(".")
    rules = getattr(doc, section, None) if doc is not None else None
    if not rules or not index.isdigit() or int(index) >= len(rules):
        return key
    rule = rules[int(index)]
    if section == "handoff_contracts":
        what = f"handoff {rule.from_agent}->{rule.to_agent}"
    elif section in ("forbidden", "limits", "obligations", "flows"):
        what = f"{section} '{rule.id}'"
    else:
        from roadcheck.conformance.spec import guarded_actions

        shown = [g if isinstance(g, str) else _show_json(g) for g in guarded_actions(rule)]
        what = f"checkpoint '{rule.checkpoint_id}' before " + ", ".join(
            f"'{g}'" for g in shown)
    return escape_controls(f"{key} ({what})")


def _show_json(value: Any) -> str:
    import msgspec

    return orjson.dumps(msgspec.to_builtins(value), option=orjson.OPT_SORT_KEYS).decode()


def _summary_line(c: Mapping[str, Any]) -> str:
    warn = f" ({c['warn']} with warnings)" if c["warn"] else ""
    return (f"summary: {c['pass']} PASS{warn}, {c['block']} BLOCK, {c['error']} ERROR "
            f"-> overall exit {c['exit']}")


def _per_file(run: ReplayRun) -> list[str]:
    verdicts: dict[str | None, Counter[str]] = {}
    for r in run.results:  # one pass: a rescan per file is quadratic in a large batch
        verdicts.setdefault(r.path, Counter())[r.verdict] += 1
    return [_file_line(path, verdicts.get(path, Counter())) for path, _fmt in run.files]


def _file_line(path: str, c: Mapping[str, int]) -> str:
    return f"file : {path}: {c['PASS']} PASS, {c['BLOCK']} BLOCK, {c['ERROR']} ERROR"


def replay_report(run: ReplayRun, spec: Any, *, fmt: str = "text", summary_only: bool = False,
                  by_field: str | None = None, per_file: bool = False) -> str:
    """Render a replay run as the text report or the JSON document.

    The ``--summary-only`` text report ends with the totals of each reason and warning
    code, or with a line per file when ``per_file`` asks for them.
    """
    if fmt == "json":
        return dump_json(run.to_dict(summary_only=summary_only, by_field=by_field))
    counts = run.counts()
    lines = [HEADER, _spec_line(run, spec), *_sha_line(run), *_files_lines(run)]
    if summary_only and per_file:
        lines.extend(_per_file(run))
    elif summary_only:
        reasons: Counter[str] = Counter()
        warnings: Counter[str] = Counter()
        for r in run.results:
            codes, warned = _codes(r)
            reasons.update(codes)
            warnings.update(warned)
        lines.extend(totals_lines(reasons, warnings))
    else:
        for i, r in enumerate(run.results, 1):
            lines.extend(_block(i, r))
    if by_field is not None:
        for key, g in run.by(by_field).items():
            lines.append(f"by {by_field}={key}: {g['pass']} PASS, {g['block']} BLOCK, "
                         f"{g['error']} ERROR")
    lines.extend(reach_lines(spec, counts))
    lines.append(_summary_line(counts))
    return sha256_footer(text_lines(lines))


# -- the report written as it is judged ----------------------------------------------------

_MISSING = object()
#: Files listed per write at the end of a report (memory holds one batch of lines).
_BATCH = 4096
_JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
#: Where the results go in the JSON document's skeleton: a string no result can be.
_SLOT = "\x00results\x00"
_SLOT_LINE = '    "\\u0000results\\u0000"\n'


class Rendered(NamedTuple):
    """One judged trajectory as the report needs it, rendered where it was judged.

    Small and picklable, so that a worker process can judge and render and the
    report writer only puts the pieces in order. A named tuple: cheap to build once
    a result, and to define (a dataclass would cost every replay's start-up more).
    """

    id: str
    path: str | None
    verdict: str
    #: A PASS with warnings (the summary's ``warn``).
    warned: bool
    #: The ``--by`` group of the trajectory, or None when no field is asked for.
    by: str | None
    #: The trajectory's final event or reader facts carry the ``--by`` field.
    carries: bool
    #: The JSON result, indented for its place in the document, or the text block
    #: without its ``[N] id`` line; empty for ``--summary-only``.
    body: bytes
    #: The codes of its reasons (none for a PASS) and of its warnings, for the totals of
    #: a summary (empty when the result is rendered whole).
    codes: tuple[str, ...] = ()
    warning_codes: tuple[str, ...] = ()
    #: The rules the trajectory did not reach and the irreversible actions no rule
    #: guarded (:attr:`ReplayResult.reach`), for the summary; None: it was not judged.
    reach: tuple[tuple[str, ...], tuple[str, ...]] | None = None


def render_result(r: ReplayResult, *, fmt: str = "text", summary_only: bool = False,
                  by_field: str | None = None) -> Rendered:
    """Render one result for :class:`ReplayReportWriter`, as the options ask."""
    by, carries = _by_group(by_field, r.final, r.meta)
    if summary_only:
        body = b""
    elif fmt == "json":
        body = _json_body(_result_json(r))
    else:
        body = text_lines(_block(0, r)[1:]).encode("utf-8")
    # the codes feed the totals, which only a summary (and the terminal view, which
    # renders every result as one) prints
    codes, warned = _codes(r) if summary_only else ((), ())
    verdict = r.verdict
    # every field given: built as a tuple is, without the named tuple's Python __new__
    return _new_tuple(Rendered, (r.id, r.path, verdict, verdict == "PASS" and bool(r.warnings),
                                 by, carries, body, codes, warned,
                                 None if verdict == "ERROR" else r.reach))


_new_tuple = tuple.__new__


def _codes(r: ReplayResult) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The codes a result adds to the totals: its reasons unless it passed, its warnings."""
    reasons = () if r.verdict == "PASS" else tuple(str(f.code) for f in r.reasons)
    return reasons, tuple(str(f.code) for f in r.warnings)


def totals_lines(reasons: Mapping[str, int], warnings: Mapping[str, int]) -> list[str]:
    """The ``reasons:`` and ``warnings:`` lines of a ``--summary-only`` report: each code
    with how many times it fired, the most frequent first (then by code)."""
    def line(name: str, counts: Mapping[str, int]) -> str:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return f"{name}: {', '.join(f'{code} {n}' for code, n in ranked) or 'none'}"

    return [line("reasons", reasons), line("warnings", warnings)]


def _by_group(by_field: str | None, final: Mapping[str, Any], meta: Mapping[str, Any]
              ) -> tuple[str | None, bool]:
    """The ``--by`` group of a result whose final event is ``final`` and whose reader facts
    are ``meta``, and whether either carries the field."""
    if by_field is None:
        return None, False
    value = final.get(by_field, _MISSING)
    if value is _MISSING:
        value = meta.get(by_field, _MISSING)
    if value is _MISSING:
        return "(absent)", False
    return _json_scalar(value), True


def _json_body(result: dict[str, Any]) -> bytes:
    """A result's JSON, indented for its place in the report's ``results`` list: written
    two lists deep, as it sits in the report, and cut out of them."""
    return dumps_json([[result]], _JSON_OPTIONS)[_AROUND:-_AROUND]


#: What the two lists of :func:`_json_body` write before a result (``[\n  [\n``), and after
#: it (``\n  ]\n]``).
_AROUND = 6


def _in_result(value: Any) -> bytes:
    """``value`` as a field of a result holds it in the JSON report, indented in its place."""
    body = _json_body({"k": value})
    return body[body.index(b'"k": ') + 5:-len(b"\n    }")]


def _item_in_result(item: Any) -> bytes:
    """``item`` as an entry of a list a result holds (its reasons, warnings or notes), in
    its place in the JSON report."""
    return _in_result([item])[len(b"[\n"):-len(b"\n      ]")]


class ResultRenderer:
    """:func:`render_result` with its options bound (picklable, for ``--jobs`` workers)."""

    __slots__ = ("by_field", "fmt", "summary_only")

    def __init__(self, *, fmt: str = "text", summary_only: bool = False,
                 by_field: str | None = None) -> None:
        self.fmt = fmt
        self.summary_only = summary_only
        self.by_field = by_field

    def __getstate__(self) -> tuple[str, bool, str | None]:
        return self.fmt, self.summary_only, self.by_field

    def __setstate__(self, state: tuple[str, bool, str | None]) -> None:
        self.fmt, self.summary_only, self.by_field = state

    def __call__(self, r: ReplayResult) -> Rendered:
        return render_result(r, fmt=self.fmt, summary_only=self.summary_only,
                             by_field=self.by_field)

#: Findings tuples that results share (the reasons of every PASS the engine gives are one
#: tuple), each with its JSON as a result prints it: rendered once, not once per result.
#: Keyed by identity; the tuple is kept, so its id is not reused while it is here.
_SHARED: dict[int, tuple[tuple[Any, ...], orjson.Fragment]] = {}
_SHARED_MAX = 8


def _findings_json(findings: tuple[Any, ...], shared: bool) -> Any:
    """The JSON of ``findings`` (a result's reasons, warnings or notes) for :func:`_result_json`;
    ``shared`` asks to keep it for the next result holding the same tuple."""
    hit = _SHARED.get(id(findings))
    if hit is not None and hit[0] is findings:
        return hit[1]
    listed = [f.to_dict() for f in findings]
    if shared and findings and len(_SHARED) < _SHARED_MAX:
        # indented for its place in a result in the report (as :func:`_json_body` writes
        # it): '{\n      "k": ' before it, '\n    }' after it
        text = _json_body({"k": listed})[len(b'    {\n      "k": '):-len(b"\n    }")]
        _SHARED[id(findings)] = (findings, orjson.Fragment(text))
    return listed


def _result_json(r: ReplayResult) -> dict[str, Any]:
    """:meth:`ReplayResult.to_dict`, the reasons of a PASS rendered once for all
    (``tests/test_replay_stream.py`` holds the two to the same bytes)."""
    warnings, notes = r.warnings, r.notes
    return _result_dict(r.id, r.path, r.verdict, _findings_json(r.reasons, r.verdict == "PASS"),
                        [w.to_dict() for w in warnings] if warnings else [],
                        [n.to_dict() for n in notes] if notes else [],
                        r.task_success, r.source, r.meta)


def _result_dict(id_: str, path: str | None, verdict: str, reasons: Any,
                 warnings: list[dict[str, Any]], notes: list[dict[str, Any]],
                 task_success: Any, source: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of the JSON report's ``results``, its findings already as JSON."""
    out: dict[str, Any] = {
        "id": id_,
        "path": path,
        "verdict": verdict,
        "exit": VERDICT_EXIT[verdict],
        "reasons": reasons,
        "warnings": warnings,
        "notes": notes,
        "task_success": task_success,
        "source": source,
    }
    if meta:
        out["meta"] = dict(meta)
    return out


class ReplayChunk:
    """A chunk of files judged, rendered and counted where it was judged (``--jobs``), so
    that the writer only adds counts and copies bytes: :meth:`ReplayReportWriter.merge`
    leaves it where :meth:`~ReplayReportWriter.file` and
    :meth:`~ReplayReportWriter.result` of every item, in order, would have."""

    __slots__ = ("all_native", "carries", "counts", "current", "current_counts", "elsewhere",
                 "file_count", "files", "groups", "heads", "lead", "parts", "reach",
                 "reason_codes", "spooled", "total", "warning_codes", "worst")

    def __init__(self) -> None:
        #: (path, verdict) of results that came before the chunk's first file.
        self.lead: list[tuple[str | None, str]] = []
        #: The chunk's files finished before its last one, each as the writer spools it
        #: (:func:`file_entry`, encoded where it was judged).
        self.files: list[bytes] = []
        self.current: tuple[str, ...] | None = None
        self.current_counts: Counter[str] = Counter()
        self.elsewhere: dict[str | None, Counter[str]] = {}
        self.counts = {"pass": 0, "block": 0, "error": 0, "warn": 0}
        self.reach = Reach()
        #: How many times each reason and warning code fired in the chunk.
        self.reason_codes: Counter[str] = Counter()
        self.warning_codes: Counter[str] = Counter()
        self.groups: dict[str, dict[str, int]] = {}
        self.carries = False
        self.worst: int | None = None
        self.total = 0
        self.file_count = 0
        self.all_native = True
        #: The text report's ``[N] id`` lines without their number (escaped, UTF-8).
        self.heads: list[bytes] = []
        #: The rendered results: the JSON results joined, or each text block.
        self.parts: list[bytes] = []
        #: Where a JSON chunk's bytes wait instead (a folder given to the folder): the
        #: worker's process id, the offset in its file, the length of the files' entries
        #: and of the results (the latter after a ",\n").
        self.spooled: tuple[int, int, int, int] | None = None


def file_entry(json: bool, path: str, fmt: str, counts: Mapping[str, int],
               note: str | None = None) -> bytes:
    """A finished file as the writer spools it. The JSON report's entry is its final bytes
    (``{"path": ..., "format": ...}`` as orjson indents it in the list, after a ``,\\n``
    the list drops from the first, with ``"note"`` for a file that holds no run); the
    text report's is the JSON line ``[path, format, PASS, BLOCK, ERROR]`` (and the note),
    its counts read back at the end."""
    if json:
        noted = b"" if note is None else b',\n      "note": ' + dumps_json(note)
        return (b',\n    {\n      "path": ' + dumps_json(path) + b',\n      "format": '
                + dumps_json(fmt) + noted + b"\n    }")
    row: list[Any] = [path, fmt, counts.get("PASS", 0), counts.get("BLOCK", 0),
                      counts.get("ERROR", 0)]
    if note is not None:
        row.append(note)
    return dumps_json(row) + b"\n"


def started_entry(json: bool, started: tuple[str, ...], counts: Mapping[str, int]) -> bytes:
    """:func:`file_entry` of a file as it began: ``(path, format)``, or ``(path, format,
    note)`` for a file that holds no run."""
    return file_entry(json, started[0], started[1], counts,
                      started[2] if len(started) > 2 else None)


def input_line(path: str, fmt: str, trajectories: int, note: str | None = None) -> str:
    """The header line of one input file: ``input: PATH (FORMAT, N trajectories)``, and
    for a file that holds no run what it is."""
    count = plural(trajectories, "trajectory", "trajectories")
    if note is not None:
        return f"input: {path} ({fmt}, {count}; holds no run: {note})"
    return f"input: {path} ({fmt}, {count})"


class ChunkFolder:
    """Folds the items of one chunk (file starts and :class:`Rendered` results) into a
    :class:`ReplayChunk`; picklable, so that a worker process runs it.

    With ``folder`` (JSON reports), each worker process appends its chunks' bytes to a
    file of its own there and the chunk says where they are: the writer copies them
    into its spools from that file, and they never travel through the pool's pipes.
    """

    def __init__(self, fmt: str, summary_only: bool, folder: str | None = None) -> None:
        self.json = fmt == "json"
        self.summary_only = summary_only
        self.folder = folder if self.json else None
        self._fd = -1
        self._pid = 0
        self._size = 0

    def __getstate__(self) -> tuple[bool, bool, str | None]:
        return self.json, self.summary_only, self.folder

    def __setstate__(self, state: tuple[bool, bool, str | None]) -> None:
        self.json, self.summary_only, self.folder = state
        self._fd, self._pid, self._size = -1, 0, 0

    def _spool(self, data: bytes) -> tuple[int, int]:
        """Append ``data`` to this process's file in the folder: (process id, offset)."""
        import os

        assert self.folder is not None
        if self._pid != os.getpid():  # first use in this process (a fork starts afresh)
            self._pid = os.getpid()
            self._fd = os.open(os.path.join(self.folder, str(self._pid)),
                               os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            self._size = 0
        at = self._size
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        self._size += len(data)
        return self._pid, at

    def __call__(self, items: Iterable[Any]) -> ReplayChunk:
        chunk = ReplayChunk()
        counts = chunk.counts
        bodies: list[bytes] = []
        for item in items:
            if not isinstance(item, Rendered):  # a file begins
                if chunk.current is not None:
                    chunk.files.append(started_entry(self.json, chunk.current,
                                                     chunk.current_counts))
                    chunk.current_counts = Counter()
                chunk.current = ((item.path, item.fmt) if item.note is None
                                 else (item.path, item.fmt, item.note))
                chunk.file_count += 1
                chunk.all_native = chunk.all_native and item.fmt == "native"
                continue
            chunk.total += 1
            verdict = item.verdict
            counts[verdict.lower()] += 1
            if item.warned:
                counts["warn"] += 1
            if item.codes:
                chunk.reason_codes.update(item.codes)
            if item.warning_codes:
                chunk.warning_codes.update(item.warning_codes)
            chunk.reach.take(item.reach)
            code = VERDICT_EXIT[verdict]
            chunk.worst = code if chunk.worst is None else worst_exit((chunk.worst, code))
            if chunk.current is None:
                chunk.lead.append((item.path, verdict))
            elif item.path == chunk.current[0]:
                chunk.current_counts[verdict] += 1
            else:
                chunk.elsewhere.setdefault(item.path, Counter())[verdict] += 1
            if item.by is not None:
                g = chunk.groups.setdefault(item.by, {"pass": 0, "block": 0, "error": 0})
                g[verdict.lower()] += 1
                chunk.carries = chunk.carries or item.carries
            if self.summary_only:
                continue
            bodies.append(item.body)
            if not self.json:
                chunk.heads.append(escape_controls(f" {item.id}").encode("utf-8") + b"\n")
        if not self.json:
            chunk.parts = bodies
        elif self.folder is not None and (bodies or chunk.files):
            files = b"".join(chunk.files)
            parts = b",\n" + b",\n".join(bodies) if bodies else b""
            pid, at = self._spool(files + parts)
            chunk.spooled = (pid, at, len(files), len(parts))
            chunk.files = []
        elif bodies:
            chunk.parts = [b",\n".join(bodies)]
        return chunk


class Tally:
    """What every replay report counts: verdicts, warnings, ``--by`` groups, the worst exit.

    The plain and the terminal report writers both count with it, so their
    summaries cannot disagree.
    """

    def __init__(self) -> None:
        self.counts = {"pass": 0, "block": 0, "error": 0, "warn": 0}
        #: How many times each reason and warning code fired.
        self.reason_codes: Counter[str] = Counter()
        self.warning_codes: Counter[str] = Counter()
        self.groups: dict[str, dict[str, int]] = {}
        self.carries = False
        self.worst: int | None = None
        self.total = 0
        #: What the batch reached; ``strict``: a rule never reached, or an irreversible
        #: action unguarded, fails the report.
        self.reach = Reach()
        self.strict = False

    def count(self, r: Rendered) -> str:
        """Count ``r``; returns its verdict."""
        self.total += 1
        verdict = r.verdict
        self.counts[verdict.lower()] += 1
        if r.warned:
            self.counts["warn"] += 1
        if r.codes:
            self.reason_codes.update(r.codes)
        if r.warning_codes:
            self.warning_codes.update(r.warning_codes)
        reach = r.reach
        if reach is not None:
            held = self.reach.unreached
            if held is None or held or reach[1]:  # once every rule was reached, only an
                self.reach.add(*reach)            # unguarded action is left to fold
        code = VERDICT_EXIT[verdict]
        if code != self.worst:  # the same verdict again leaves the worst where it is
            self.worst = code if self.worst is None else worst_exit((self.worst, code))
        if r.by is not None:
            g = self.groups.setdefault(r.by, {"pass": 0, "block": 0, "error": 0})
            g[verdict.lower()] += 1
            self.carries = self.carries or r.carries
        return verdict

class ReplayReportWriter(Tally):
    """Writes the replay report to ``out`` as results arrive, byte for byte :func:`replay_report`.

    The head of either report names every file and how many trajectories each
    held, which is known only at the end; the judged results, and each file's
    counts once it is done, wait in spools meanwhile (:class:`~roadcheck.report._spool.Spool`:
    a megabyte in memory, the rest in a temporary file), so memory holds the file
    being judged and a bounded tail of results, however large the batch.
    """

    def __init__(self, out: IO[str], spec: Any, *, spec_source: str | None,
                 spec_sha256: str | None, fmt: str = "text", summary_only: bool = False,
                 by_field: str | None = None, per_file: bool = False) -> None:
        self.out = out
        self.per_file = per_file
        self.spec = spec
        self.spec_source = spec_source
        self.spec_sha256 = spec_sha256
        self.fmt = fmt
        self.summary_only = summary_only
        self.by_field = by_field
        super().__init__()
        self.file_count = 0
        self.all_native = True
        #: The file being judged, and its verdict counts so far.
        self.current: tuple[str, ...] | None = None
        self.current_counts: Counter[str] = Counter()
        #: Results whose path is not the file being judged (none from the readers).
        self.elsewhere: dict[str | None, Counter[str]] = {}
        # closed on leaving the writer's ``with`` block
        self.spool = Spool()
        self.file_spool = Spool()
        #: Under --jobs with a JSON report: the folder the workers' chunk files are in,
        #: and the descriptors of those opened here.
        self._chunks: str | None = None
        self._chunk_fds: dict[int, int] = {}
        #: The JSON results in order once a worker's chunk is among them: (descriptor,
        #: offset, length) of a worker's chunk file, or of the spool (descriptor -1), up to
        #: ``_spool_mark``; copied straight to ``out`` at the end, never into the spool.
        self._pieces: list[tuple[int, int, int]] = []
        self._spool_mark = 0

    def __enter__(self) -> ReplayReportWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.spool.close()
        self.file_spool.close()
        if self._chunks is not None:
            import os
            import shutil

            for fd in self._chunk_fds.values():
                os.close(fd)
            self._chunk_fds.clear()
            shutil.rmtree(self._chunks, ignore_errors=True)  # chunk files not opened here
            self._chunks = None

    def file(self, path: str, fmt: str, note: str | None = None) -> None:
        """A file begins, read as ``fmt`` (``note``: what a file that holds no run is)."""
        self._file_done()
        self.current = (path, fmt) if note is None else (path, fmt, note)
        self.file_count += 1
        self.all_native = self.all_native and fmt == "native"

    def _file_done(self) -> None:
        if self.current is not None:
            self.file_spool.write(started_entry(self.fmt == "json", self.current,
                                                self.current_counts))
            self.current = None
            # the next file's counts (a chunk merged in gave its own, now done)
            self.current_counts.clear()

    def _files(self) -> Iterator[tuple[str, str, Mapping[str, int], str | None]]:
        """Every file in order, with the verdict counts of its results (each verdict
        present: a Counter is built only for a file with results from elsewhere) and the
        note of a file that holds no run."""
        elsewhere = self.elsewhere
        if elsewhere:  # (rare) the spool names a file as file_entry wrote it: keys alike
            elsewhere = {k if k is None else escape_surrogates(k): v
                         for k, v in elsewhere.items()}
        for path, fmt, passed, blocked, errors, *note in self._file_rows():
            counts: Mapping[str, int] = {"PASS": passed, "BLOCK": blocked, "ERROR": errors}
            if path in elsewhere:
                counts = Counter(counts)
                counts.update(elsewhere[path])
            yield path, fmt, counts, note[0] if note else None

    def _file_rows(self) -> Iterator[list[Any]]:
        """Every file in order: its path, format and the counts of its own results."""
        self._file_done()
        return map(orjson.loads, self.file_spool.lines())

    def result(self, r: Rendered) -> None:
        """The next judged trajectory, in order."""
        verdict = self.count(r)
        if self.current is not None and r.path == self.current[0]:
            counts = self.current_counts
            counts[verdict] = counts.get(verdict, 0) + 1
        else:
            self.elsewhere.setdefault(r.path, Counter())[verdict] += 1
        if self.summary_only:
            return
        if self.fmt == "json":
            self.spool.write(r.body if self.total == 1 else b",\n" + r.body)
        else:
            head = escape_controls(f"[{self.total}] {r.id}") + "\n"
            self.spool.write(head.encode("utf-8") + r.body)

    @property
    def fold(self) -> ChunkFolder:
        """What folds a chunk of items where it was judged, for :meth:`merge`."""
        if self.fmt == "json" and not self.summary_only and self._chunks is None:
            import tempfile

            self._chunks = tempfile.mkdtemp(prefix="roadcheck-chunks-")
        return ChunkFolder(self.fmt, self.summary_only, self._chunks)

    @property
    def inline_fold(self) -> ChunkFolder:
        """What folds a chunk where it was judged, its bytes carried in the chunk itself:
        for workers that share no disk with this process (Ray's, on other machines)."""
        return ChunkFolder(self.fmt, self.summary_only)

    def _chunk_fd(self, pid: int) -> int:
        """The descriptor of worker ``pid``'s chunk file, opened (and unlinked: the worker
        holds it open too) on first use."""
        import os

        fd = self._chunk_fds.get(pid)
        if fd is None:
            assert self._chunks is not None
            name = os.path.join(self._chunks, str(pid))
            fd = self._chunk_fds[pid] = os.open(name, os.O_RDONLY | os.O_CLOEXEC)
            os.unlink(name)  # open here and in the worker: gone from the folder already
        return fd

    def _copy_in(self, pid: int, offset: int, length: int, spool: Spool) -> None:
        """Append ``length`` bytes at ``offset`` of worker ``pid``'s chunk file to ``spool``
        ."""
        if length:
            copy_range(self._chunk_fd(pid), offset, length, spool.write)

    def _piece(self, fd: int, offset: int, length: int) -> None:
        """Results at ``offset`` of descriptor ``fd`` (a worker's chunk file), after those
        spooled so far: left there until the report is written
        (:attr:`_pieces`)."""
        if not length:
            return
        end = self.spool.size()
        if end > self._spool_mark:
            self._pieces.append((-1, self._spool_mark, end - self._spool_mark))
            self._spool_mark = end
        self._pieces.append((fd, offset, length))

    def merge(self, chunk: ReplayChunk) -> None:
        """A chunk of items folded by :attr:`fold`, taken as its items one by one would be."""
        for path, verdict in chunk.lead:
            if self.current is not None and path == self.current[0]:
                self.current_counts[verdict] += 1
            else:
                self.elsewhere.setdefault(path, Counter())[verdict] += 1
        spooled = chunk.spooled
        # files began in the chunk: the last one may still be open
        if chunk.current is not None or chunk.files or (spooled is not None and spooled[2]):
            self._file_done()
            if spooled is not None:
                self._copy_in(spooled[0], spooled[1], spooled[2], self.file_spool)
            else:
                self.file_spool.write(b"".join(chunk.files))
            self.current = chunk.current
            self.current_counts = chunk.current_counts
        for path, c in chunk.elsewhere.items():
            self.elsewhere.setdefault(path, Counter()).update(c)
        for key, n in chunk.counts.items():
            self.counts[key] += n
        self.reason_codes.update(chunk.reason_codes)
        self.warning_codes.update(chunk.warning_codes)
        self.reach.merge(chunk.reach)
        for key, g in chunk.groups.items():
            mine = self.groups.setdefault(key, {"pass": 0, "block": 0, "error": 0})
            for verdict, n in g.items():
                mine[verdict] += n
        self.carries = self.carries or chunk.carries
        if chunk.worst is not None:
            self.worst = (chunk.worst if self.worst is None
                          else worst_exit((self.worst, chunk.worst)))
        self.file_count += chunk.file_count
        self.all_native = self.all_native and chunk.all_native
        before = self.total
        self.total += chunk.total
        if spooled is not None and spooled[3]:
            pid, at, files, parts = spooled
            skip = 0 if before else 2  # the first result of the report has no ",\n"
            self._piece(self._chunk_fd(pid), at + files + skip, parts - skip)
            return
        if self.summary_only or not chunk.parts:
            return
        if self.fmt == "json":
            self.spool.write(chunk.parts[0] if not before else b",\n" + chunk.parts[0])
        else:
            self.spool.write(b"".join(
                b"[%d]%s%s" % (n, head, body)
                for n, head, body in zip(range(before + 1, self.total + 1), chunk.heads,
                                         chunk.parts, strict=True)))

    def exit_code(self, interrupted: bool = False) -> int:
        """The folded exit: 130 interrupted, 2 nothing judged, else the worst verdict."""
        if interrupted:
            return EXIT_INTERRUPTED
        if self.worst is None:
            return EXIT_ERROR
        if self.strict and self.reach.failed:
            return worst_exit((self.worst, EXIT_BLOCK))
        return self.worst

    def finish(self, *, interrupted: bool = False) -> int:
        """Write the whole report to ``out``; returns its exit code."""
        summary: dict[str, Any] = {**self.counts, "exit": self.exit_code(interrupted),
                                   **self.reach.summary()}
        by = dict(sorted(self.groups.items()))
        if self.fmt == "json":
            self._finish_json(summary, by)
        else:
            self._finish_text(summary, by)
        self.out.flush()
        return int(summary["exit"])

    def _copy_spool(self, digest: Any = None) -> None:
        """Write the spooled results to ``out`` (UTF-8 bytes, as ``out`` would encode them),
        the pieces left in workers' chunk files among them."""
        if not self._pieces:
            self._copy(self.spool, digest=digest)
            return
        end = self.spool.size()
        if end > self._spool_mark:
            self._pieces.append((-1, self._spool_mark, end - self._spool_mark))
            self._spool_mark = end
        write = self._sink()
        for fd, offset, length in self._pieces:
            if fd < 0:
                self.spool.copy(offset, length, write, digest)
            else:
                copy_range(fd, offset, length, write, digest)
        self._flush_buffer()

    def _sink(self) -> Callable[[bytes], Any]:
        """How bytes reach ``out``: its buffer's write, or a decoding write where ``out``
        encodes what it is given otherwise than UTF-8."""
        import codecs

        buffer = getattr(self.out, "buffer", None)
        encoding = getattr(self.out, "encoding", None) or ""
        try:
            utf8 = codecs.lookup(encoding).name == "utf-8"
        except LookupError:
            utf8 = False
        if buffer is not None and utf8 and getattr(self.out, "errors", "strict") == "strict":
            self.out.flush()
            return cast("Callable[[bytes], Any]", buffer.write)
        decode = codecs.getincrementaldecoder("utf-8")().decode
        return lambda chunk: self.out.write(decode(chunk))

    def _flush_buffer(self) -> None:
        """Flush the byte buffer under ``out`` (what :meth:`_sink` wrote to)."""
        buffer = getattr(self.out, "buffer", None)
        if buffer is not None:
            buffer.flush()

    def _copy(self, spool: Spool, *, skip: int = 0, digest: Any = None) -> None:
        """Write ``spool`` from byte ``skip`` on to ``out``, as :meth:`_copy_spool`."""
        spool.copy(skip, spool.size() - skip, self._sink(), digest)
        self._flush_buffer()

    def _finish_json(self, summary: dict[str, int], by: dict[str, dict[str, int]]) -> None:
        doc: dict[str, Any] = {
            "spec": self.spec_source,
            "spec_sha256": self.spec_sha256,
            "files": [_SLOT] if self.file_count else [],
            "results": [] if self.summary_only or not self.total else [_SLOT],
            "summary": summary,
        }
        if self.by_field is not None:
            doc["by"] = {"field": self.by_field, "groups": by}
        parts = dump_json(doc).split(_SLOT_LINE)
        self.out.write(parts[0])
        if self.file_count:
            self._file_done()
            self._copy(self.file_spool, skip=2)  # the first entry's ",\n"
            self.out.write("\n" + parts[1])
        if doc["results"]:
            self._copy_spool()
            self.out.write("\n" + parts[-1])

    def _finish_text(self, summary: dict[str, int], by: dict[str, dict[str, int]]) -> None:
        digest = Sha256()

        def emit(lines: Iterable[str]) -> None:
            text = text_lines(lines)
            self.out.write(text)
            digest.update(text.encode("utf-8"))

        head = [HEADER, _spec_text(self.spec_source, self.spec)]
        if self.spec_sha256 is not None:
            head.append(f"spec-sha256: {self.spec_sha256}")
        files = f"files: {self.file_count or len(self.elsewhere)}"
        listed = not self.all_native or self.total != self.file_count
        if listed:
            files += f", {plural(self.total, 'trajectory', 'trajectories')}"
        emit([*head, files])
        if listed:
            files_ = self._files()
            while batch := list(islice(files_, _BATCH)):
                emit([input_line(path, fmt, sum(c.values()), note)
                      for path, fmt, c, note in batch])
        if self.summary_only and self.per_file:
            files_ = self._files()
            while batch := list(islice(files_, _BATCH)):
                emit([_file_line(path, c) for path, _fmt, c, _note in batch])
        elif self.summary_only:
            emit(totals_lines(self.reason_codes, self.warning_codes))
        self._copy_spool(digest)
        tail: list[str] = []
        if self.by_field is not None:
            tail.extend(f"by {self.by_field}={key}: {g['pass']} PASS, {g['block']} BLOCK, "
                        f"{g['error']} ERROR" for key, g in by.items())
        tail.extend(reach_lines(self.spec, summary))
        tail.append(_summary_line(summary))
        emit(tail)
        self.out.write(f"report-sha256: {digest.hexdigest()}\n")
