"""The fast replay path (typed decode, lean engine, chunks folded in workers) writes the
reference path's reports, byte for byte, in every format."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from roadcheck import conformance
from roadcheck.cli import cli
from roadcheck.conformance import load_spec
from roadcheck.report.replay import ChunkFolder, Rendered, ReplayReportWriter
from roadcheck.report.replay import replay_report as whole_report

from ..conftest import EXAMPLES, ROOT, load_script
from ..strategies import json_values
from .test_typed_path import EACH_CONSUME

NATIVE_FILES = sorted(str(p) for p in {*EXAMPLES.glob("*.jsonl"),
                                       *(ROOT / "tests" / "data").rglob("*.jsonl")})
SPEC = str(EXAMPLES / "spec.json")
FORMATS = ["text", "json", "junit", "sarif", "github", "html"]


def _strict_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference: the C extension and the typed decode step aside for every file, the
    strict reader judges."""
    monkeypatch.setattr(conformance, "_ACCEL", None)
    monkeypatch.setattr(conformance, "_typed", lambda: lambda data: None)


def _reports(spec: str, paths: list[str], tmp: Path) -> dict[str, Any]:
    """Every report of one replay: each format written to a file, text and JSON also as
    streamed to stdout, with one process and with two."""
    out: dict[str, Any] = {}
    for fmt in FORMATS:
        target = tmp / f"report.{fmt}"
        res = CliRunner().invoke(cli, ["replay", spec, *paths, "--format", fmt,
                                       "--output", str(target)])
        out[fmt] = (res.exit_code, target.read_bytes())
    for fmt in ("text", "json"):
        for extra in ([], ["--summary-only"], ["--jobs", "2"], ["--by", "task_success"]):
            res = CliRunner().invoke(cli, ["replay", spec, *paths, "--format", fmt, *extra])
            out[f"{fmt} {' '.join(extra)}"] = (res.exit_code, res.stdout_bytes)
    return out


@pytest.mark.parametrize("spec", ["example", "each-consume"])
def test_every_native_file_in_the_repository(spec: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """All native files of the repository at once: the same bytes in every format."""
    spec_path = SPEC
    if spec == "each-consume":
        spec_path = str(tmp_path / "spec.json")
        Path(spec_path).write_text(json.dumps(EACH_CONSUME))
    fast = _reports(spec_path, NATIVE_FILES, tmp_path)
    _strict_only(monkeypatch)
    strict = _reports(spec_path, NATIVE_FILES, tmp_path)
    assert fast.keys() == strict.keys()
    for key in fast:
        assert fast[key] == strict[key], key


def test_the_fast_path_is_taken() -> None:
    """The valid native files among them take the typed decode (the others are other
    formats, or broken on purpose), else the test above would compare little."""
    from roadcheck.ingest._native_typed import typed_records

    taken = [p for p in NATIVE_FILES if typed_records(Path(p).read_bytes()) is not None]
    assert len(taken) >= 10


_AGENTS = st.sampled_from(["a", "b", "scanner", "aggregator", "reporter"])
_FIELD = st.one_of(json_values.filter(lambda v: v is not None), st.fixed_dictionaries(
    {"value": json_values, "verified": st.booleans()}))
_EVENT = st.one_of(
    st.fixed_dictionaries({"event": st.just("action"), "agent": _AGENTS,
                           "action_type": st.sampled_from(["send", "pay", "send_report", "x"])},
                          optional={"irreversible": st.booleans()}),
    st.fixed_dictionaries({"event": st.just("checkpoint"), "agent": _AGENTS,
                           "checkpoint_id": st.sampled_from(["ok", "cp2",
                                                             "confirm_with_user"])},
                          optional={"confirmed_by": st.sampled_from(["owner", "someone"])}),
    st.fixed_dictionaries({"event": st.just("handoff"), "agent": _AGENTS,
                           "from_agent": _AGENTS, "to_agent": _AGENTS,
                           "payload": st.dictionaries(st.sampled_from(
                               ["x", "row_count", "summary", "source"]), _FIELD, max_size=3)}),
)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.lists(_EVENT, max_size=10), min_size=1, max_size=3), st.booleans())
def test_generated_trajectories(runs: list[list[dict[str, Any]]], success: bool) -> None:
    """Generated trajectory files: the same bytes in every format, on both specs."""
    import tempfile

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        paths = []
        for n, events in enumerate(runs):
            lines = [json.dumps({"seq": i + 1, **e}) for i, e in enumerate(events)]
            lines.append(json.dumps({"seq": len(events) + 1, "event": "final",
                                     "task_success": success}))
            path = tmp / f"t{n}.jsonl"
            path.write_text("\n".join(lines) + "\n")
            paths.append(str(path))
        (tmp / "spec.json").write_text(json.dumps(EACH_CONSUME))
        for spec in (SPEC, str(tmp / "spec.json")):
            fast = _reports(spec, paths, tmp)
            with pytest.MonkeyPatch.context() as mp:
                _strict_only(mp)
                strict = _reports(spec, paths, tmp)
            assert fast == strict


def _item(path: str | None, verdict: str, n: int) -> Rendered:
    return Rendered(f"id {n}", path, verdict, verdict == "PASS" and n % 3 == 0,
                    "x" if n % 2 else None, n % 4 == 0, f"body {n}\n".encode())


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("summary_only", [False, True])
@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_folded_chunks_write_what_items_write(fmt: str, summary_only: bool, size: int) -> None:
    """Chunks folded apart and merged give the writer's bytes for the items one by one,
    results before a chunk's first file and results of another path included."""
    spec = load_spec(EXAMPLES / "spec.json")
    items: list[Any] = []
    for f in range(5):
        path = f"f{f}.jsonl"
        items.append(conformance._FileStart(path, "native" if f != 3 else "otel"))
        for k in range(f % 3 + 1):
            n = len(items)
            items.append(_item(path if k != 2 else "elsewhere", ("PASS", "BLOCK", "ERROR")[n % 3],
                               n))
    items.insert(0, _item("f0.jsonl", "PASS", 99))  # before any file begins

    def write(feed: Any) -> str:
        out = io.StringIO()
        with ReplayReportWriter(out, spec, spec_source=spec.source, spec_sha256=spec.sha256,
                                fmt=fmt, summary_only=summary_only, by_field="x") as writer:
            feed(writer)
            writer.finish()
        return out.getvalue()

    def one_by_one(writer: ReplayReportWriter) -> None:
        for item in items:
            if isinstance(item, Rendered):
                writer.result(item)
            else:
                writer.file(item.path, item.fmt)

    def folded(writer: ReplayReportWriter) -> None:
        fold = writer.fold
        assert isinstance(fold, ChunkFolder)
        for i in range(0, len(items), size):
            writer.merge(fold(items[i:i + size]))

    assert write(folded) == write(one_by_one)


def test_the_writer_matches_the_whole_run_report() -> None:
    """Streamed and folded, the fixtures' report is the whole-run renderer's."""
    spec = load_spec(EXAMPLES / "spec.json")
    paths = sorted(str(p) for p in EXAMPLES.glob("fixture_*.jsonl"))
    run = conformance.replay_files(spec, paths)
    res = CliRunner().invoke(cli, ["replay", str(EXAMPLES / "spec.json"), *paths, "--jobs", "2"])
    assert res.stdout == whole_report(run, spec)


def test_a_rendered_json_result_is_its_to_dict() -> None:
    """The JSON of one result, as the report writer gets it, is ReplayResult.to_dict's,
    however often a shared tuple of findings (the reasons of every PASS) comes back."""
    import orjson

    from roadcheck.conformance.engine import error_result
    from roadcheck.report.replay import render_result

    options = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    results = list(conformance.replay(load_spec(SPEC), NATIVE_FILES).results)
    passed = [r for r in results if r.verdict == "PASS"]
    assert passed and any(r.verdict == "BLOCK" for r in results)
    assert len({id(r.reasons) for r in passed}) < len(passed)  # shared: the cache is used
    results.append(error_result("x", None, "line 2: bad", source="tau-bench",
                                meta={"reward": 1.0}))
    for r in results * 2:
        want = b"    " + orjson.dumps(r.to_dict(), option=options).replace(b"\n", b"\n    ")
        assert render_result(r, fmt="json").body == want, r.id


CLAUDE_FILES = sorted(str(p) for p in {*(ROOT / "tests" / "data" / "coding" / "claude-code")
                                       .glob("*.jsonl"),
                                       *(EXAMPLES / "frameworks" / "claude-code").glob("*.jsonl")})
#: Specs that select nothing (the replay asks the reader for no text), one binding its
#: checkpoints to the call, and one that selects (the text is read).
CLAUDE_SPECS = {
    "typed": {"mandatory_checkpoints": [
        {"checkpoint_id": "AskUserQuestion", "confirmed_by": ["user"], "must_precede": "Edit"},
        {"checkpoint_id": "ExitPlanMode", "must_precede": ["Bash", "Write"]}],
        "handoff_contracts": [{"from_agent": "claude", "to_agent": "general-purpose",
                               "required_fields": ["prompt"]}]},
    "binds": {"mandatory_checkpoints": [
        {"checkpoint_id": "AskUserQuestion", "must_precede": "Bash", "scope": "each",
         "consume": True, "binds": {"call": True}}]},
    "selects": {"mandatory_checkpoints": [
        {"checkpoint_id": "AskUserQuestion", "must_precede": "Bash",
         "voided_by": [{"event": "message", "role": "assistant", "yields_turn": True}]}]},
}


@pytest.mark.parametrize("spec", sorted(CLAUDE_SPECS))
def test_claude_code_reports_without_the_text(spec: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code transcripts (errored and refused calls, answers, side files, abandoned
    branches): a replay that asks the reader for no text writes the reports of one that
    reads every word, byte for byte; the judging asks for none exactly when the spec
    selects nothing."""
    from roadcheck.ingest import claude_code

    asked = _lean_reports_match(claude_code, "read_claude_code", CLAUDE_SPECS[spec],
                                CLAUDE_FILES, tmp_path, monkeypatch)
    assert (False in asked) == (spec != "selects")


def _lean_reports_match(module: Any, reader: str, spec: dict[str, Any], files: list[str],
                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The reports of ``files`` read as the judging asks (text or none) and read with every
    text, byte for byte the same; what the judging asked ``module.reader`` for, a text
    flag a file."""
    import roadcheck.ingest

    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    asked: list[bool] = []
    real = getattr(module, reader)

    def spy(path: str, data: bytes, *, text: bool = True) -> Any:
        asked.append(text)
        return real(path, data, text=text)

    monkeypatch.setattr(module, reader, spy)
    lean = _reports(str(spec_path), files, tmp_path)
    # (the reports that draw events or point at lines read the files again, text and all)
    load = roadcheck.ingest.load
    monkeypatch.setattr(roadcheck.ingest, "load", lambda *a, **k: load(*a, **{**k, "text": True}))
    full = _reports(str(spec_path), files, tmp_path)
    assert lean.keys() == full.keys()
    for key in lean:
        assert lean[key] == full[key], key
    return asked


#: The recorded OTLP/JSON span documents (indented, one document a file).
SPAN_DOCUMENTS = sorted(str(doc) for doc in (ROOT / "tests" / "data" / "frameworks").rglob("*.json")
                        if b'"resourceSpans"' in doc.read_bytes())


def _spans_as_lines(folder: Path) -> list[str]:
    """Each recorded span document written on one line, as the OTLP file exporter writes
    them, and a small export of the reader benchmark, in ``folder``."""
    import orjson

    files = []
    for doc in map(Path, SPAN_DOCUMENTS):
        raw = orjson.loads(doc.read_bytes())
        if isinstance(raw, dict) and "resourceSpans" in raw:
            target = folder / f"{doc.parent.name}-{doc.stem}.jsonl"
            target.write_bytes(orjson.dumps(raw) + b"\n")
            files.append(str(target))
    bench = load_script(ROOT / "benchmarks" / "reader_throughput.py")
    bench.write_otel(folder / "export.jsonl", 60_000)
    files.append(str(folder / "export.jsonl"))
    return files


@pytest.mark.parametrize("native", [True, False], ids=["c", "python"])
def test_otel_reports_without_the_text(native: bool, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Span files (each convention, errored calls, handoffs, the benchmark export): a
    replay that asks the OTel reader for no text (no tool result) writes the reports of
    one that reads every result, byte for byte, with the reading in C and in Python."""

    import roadcheck._accel as accel  # built by the install: a missing extension fails here
    from roadcheck import _ext
    from roadcheck.ingest import otel

    monkeypatch.setattr(_ext, "_NATIVE", accel if native else None)
    files = [*SPAN_DOCUMENTS, *_spans_as_lines(tmp_path)]
    asked = _lean_reports_match(otel, "read_otel", SPAN_SPEC, files, tmp_path, monkeypatch)
    assert False in asked


SPAN_FILES = sorted(str(p) for p in {*(ROOT / "tests" / "data").rglob("*.jsonl"),
                                     *EXAMPLES.rglob("*.jsonl")}
                    if b"resourceSpans" in p.read_bytes())
SPAN_SPEC = {"mandatory_checkpoints": [
    {"checkpoint_id": "approve_send_report", "must_precede": "send_report"},
    {"checkpoint_id": "approval", "must_precede": ["send_email", "send"]}]}


@pytest.mark.parametrize("kind", ["claude-code", "otel"])
def test_reports_with_and_without_check_lines(kind: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code transcripts and OTel span files: the readers' repeated-key check in C
    (``check_lines``; for transcripts, ``claude_lines``, which reads the lines in C), with
    the OTel index and mapping in C (``otel_index``), and the re-encoding checks alone write
    the same reports, byte for byte. The span files include the recorded OTLP/JSON
    documents written one a line, and a small benchmark export."""
    import roadcheck._accel as accel  # built by the install: a missing extension fails here
    from roadcheck import _ext

    spec = CLAUDE_SPECS["selects"] if kind == "claude-code" else SPAN_SPEC
    files = CLAUDE_FILES if kind == "claude-code" else list(SPAN_FILES)
    if kind == "otel":
        lines = tmp_path / "lines"
        lines.mkdir()
        files += _spans_as_lines(lines)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    calls: list[bool] = []

    def check_lines(*args: Any) -> bool:
        calls.append(accel.check_lines(*args))
        return calls[-1]

    indexed: list[bool] = []
    real_index = accel.otel_index

    def otel_index(*args: Any) -> Any:
        found = real_index(*args)
        indexed.append(found is not None)
        return found

    monkeypatch.setattr(_ext, "_CHECK_LINES", check_lines)
    monkeypatch.setattr(_ext, "_NATIVE", accel)
    monkeypatch.setattr(accel, "otel_index", otel_index)
    if kind == "claude-code":  # transcripts are read by claude_lines, which checks as it reads
        from roadcheck.ingest import claude_code

        real_reader = claude_code._line_reader

        def line_reader() -> Any:
            read = real_reader()
            if read is None:
                return None

            def spy(*args: Any) -> Any:
                out = read(*args)
                calls.append(out is not None)
                return out

            return spy

        monkeypatch.setattr(claude_code, "_line_reader", line_reader)
    with_c = _reports(str(spec_path), files, tmp_path)
    assert True in calls  # the check vouched for some files (claude_lines read some)
    assert (True in indexed) == (kind == "otel")  # the index read some span files
    monkeypatch.setattr(_ext, "_CHECK_LINES", None)
    monkeypatch.setattr(_ext, "_NATIVE", None)
    without = _reports(str(spec_path), files, tmp_path)
    assert with_c.keys() == without.keys()
    for key in with_c:
        assert with_c[key] == without[key], key
