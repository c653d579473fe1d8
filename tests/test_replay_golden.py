"""Replay's reports over every kind of trajectory file in the repository, frozen.

Each case is a spec and the files replay takes with it (native files, tau-bench and
tau2 results, chat transcripts, Claude Code and Codex sessions, Inspect logs, ATIF,
LangGraph, OpenAI Agents, Pydantic AI, OpenTelemetry spans in each convention, a
directory listing, a recursive one). Every report format, and the text and JSON
``--summary-only``, is held to a golden file under ``tests/golden/replay/``, with one
process and with ``--jobs 2`` alike, and the report written with ``--output`` is the
one streamed to standard output. ``pytest --update-golden`` rewrites the files, only
when a report change is intended.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli

from .conftest import ROOT


def _files(*patterns: str) -> list[str]:
    """The repository files matching ``patterns``, relative to its root, sorted."""
    found = {str(p.relative_to(ROOT)) for pattern in patterns for p in ROOT.glob(pattern)
             if p.is_file() and not p.name.startswith(("LICENSE", "README"))}
    assert found, patterns
    return sorted(found)


#: name: (spec, the trajectory arguments)
CASES: dict[str, tuple[str, list[str]]] = {
    "fixtures": ("examples/spec.json", _files("examples/fixture_*.jsonl",
                                              "tests/data/html/*.jsonl",
                                              "tests/data/fuzz_regressions/native/*")),
    "native_edges": ("tests/data/golden/each_consume.json", _files("tests/data/golden/*.jsonl")),
    "native_edges_example_spec": ("examples/spec.json", _files("tests/data/golden/*.jsonl")),
    "directory": ("examples/spec.json", ["examples/", "tests/data/golden"]),
    "tau": ("examples/tau/airline.yaml", _files("tests/data/tau/*/*.json.gz",
                                                "tests/data/transcripts/*.json")),
    "frameworks": ("examples/frameworks/spec.yaml", _files(
        "examples/frameworks/atif/*", "examples/frameworks/openinference/*",
        "examples/frameworks/openllmetry/*", "examples/frameworks/otel/*",
        "examples/frameworks/langgraph/*", "examples/frameworks/openai-agents/*",
        "tests/data/frameworks/**/*.json", "tests/data/frameworks/**/*.jsonl",
        "tests/data/atif/**/*.json")),
    "frameworks_recursive": ("tests/data/frameworks/spec_consume_derive.yaml",
                             ["-r", "tests/data/frameworks"]),
    "frameworks_any_approver": ("tests/data/frameworks/spec_any_approver.yaml",
                                _files("tests/data/frameworks/*.json*",
                                       "tests/data/fuzz/seeds/*.json*")),
    "spans": ("tests/data/golden/spans.json", _files(
        "examples/frameworks/otel/*", "examples/frameworks/openinference/*",
        "examples/frameworks/openllmetry/*", "tests/data/frameworks/openinference/*",
        "tests/data/frameworks/openllmetry/**/*.json", "tests/data/frameworks/otel_*",
        "tests/data/frameworks/openai_agents_*")),
    "claude_code": ("examples/frameworks/claude-code/spec.yaml", _files(
        "examples/frameworks/claude-code/*.jsonl", "tests/data/coding/claude-code/*.jsonl")),
    "claude_code_typed": ("tests/data/golden/claude_typed.json", _files(
        "examples/frameworks/claude-code/*.jsonl", "tests/data/coding/claude-code/*.jsonl")),
    "claude_code_binds": ("tests/data/golden/claude_binds.json", _files(
        "examples/frameworks/claude-code/*.jsonl", "tests/data/coding/claude-code/*.jsonl")),
    "claude_code_selects": ("tests/data/golden/claude_selects.json", _files(
        "examples/frameworks/claude-code/*.jsonl", "tests/data/coding/claude-code/*.jsonl")),
    "codex": ("examples/frameworks/codex/spec.yaml", _files(
        "examples/frameworks/codex/*.jsonl", "tests/data/coding/codex/*.jsonl",
        "tests/data/coding/built/*.jsonl")),
    "inspect": ("examples/frameworks/inspect/spec.yaml", _files(
        "examples/frameworks/inspect/*.json", "examples/frameworks/inspect/*.eval",
        "tests/data/inspect/**/*.json", "tests/data/inspect/**/*.eval")),
    "swe_agent": ("tests/data/swe-agent/spec.yaml", _files("tests/data/swe-agent/*.traj")),
    "trace_exports": ("examples/frameworks/spec.yaml", _files(
        "tests/data/jaeger/*.json", "tests/data/jaeger/built/*.json",
        "tests/data/zipkin/*.json", "tests/data/zipkin/built/*.json")),
    "openhands": ("tests/data/openhands/spec.yaml", _files("tests/data/openhands/*.json")),
    "claude_code_otel": ("examples/frameworks/claude-code-otel/spec.yaml", _files(
        "tests/data/claude-code-otel/built/*.json*")),
    "agentdojo": ("tests/data/agentdojo/spec.yaml", _files("tests/data/agentdojo/*.json")),
    "openai_agents_state": ("tests/data/openai-agents-state/spec.yaml", _files(
        "tests/data/openai-agents-state/*.json", "tests/data/openai-agents-state/built/*.json")),
    "guard_state": ("tests/data/guard-state/spec.yaml", _files("tests/data/guard-state/*.json")),
}

#: name: the options of one report (its golden file is ``<case>.<name>``)
REPORTS: dict[str, list[str]] = {
    "txt": ["--format", "text"],
    "json": ["--format", "json"],
    "junit.xml": ["--format", "junit"],
    "sarif": ["--format", "sarif"],
    "github": ["--format", "github"],
    "html": ["--format", "html"],
    "summary.txt": ["--format", "text", "--summary-only"],
    "summary.json": ["--format", "json", "--summary-only"],
}


#: The cases of many or large files, and the reports folded in the workers: with
#: ``--jobs 2`` the large cases are held to those, the others to every format.
_LARGE = frozenset({"tau", "codex", "frameworks", "frameworks_recursive",
                    "inspect"})
_STREAMED = frozenset({"txt", "json", "summary.txt", "summary.json"})


def _replay(spec: str, args: list[str], options: list[str], tmp: Path) -> tuple[int, str]:
    """The exit status and the report (an HTML report is written to a file, as it must be)."""
    target = tmp / "report.html"
    if "html" in options:
        options = [*options, "--output", str(target)]
    res = CliRunner().invoke(cli, ["replay", spec, *args, *options])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert res.exit_code != 2 or "Usage" not in res.stderr, res.stderr
    if "html" in options:
        assert res.stdout == ""
        return res.exit_code, target.read_text(encoding="utf-8")
    return res.exit_code, res.stdout


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository root, so the paths in the reports are relative and stable."""
    monkeypatch.chdir(ROOT)


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("case", sorted(CASES))
def test_reports(case: str, golden, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every report format of the case: its golden bytes and exit status, one process."""
    spec, args = CASES[case]
    for name, options in REPORTS.items():
        code, out = _replay(spec, args, options, tmp_path)
        golden(f"replay/{case}.{name}", f"exit {code}\n{out}")


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("case", ["fixtures", "spans", "claude_code"])
@pytest.mark.parametrize("name", ["txt", "json", "summary.txt"])
def test_a_report_written_to_a_file(case: str, name: str, golden,  # type: ignore[no-untyped-def]
                                    tmp_path: Path) -> None:
    """The report written with --output is the one streamed to standard output."""
    spec, args = CASES[case]
    target = tmp_path / "report"
    code, out = _replay(spec, args, [*REPORTS[name], "--output", str(target)], tmp_path)
    assert out == ""
    golden(f"replay/{case}.{name}", f"exit {code}\n{target.read_text(encoding='utf-8')}")


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("case", sorted(CASES))
def test_reports_with_two_jobs(case: str, golden,  # type: ignore[no-untyped-def]
                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--jobs 2`` writes the same bytes as one process, in every format, with two worker
    processes however few the files (a batch this small is otherwise judged in one)."""
    from roadcheck.conformance import batch as conformance

    monkeypatch.setattr(conformance, "_FILES_PER_WORKER", 1)
    spec, args = CASES[case]
    for name, options in REPORTS.items():
        if case in _LARGE and name not in _STREAMED:
            continue  # every format of the small cases is enough for the collected reports
        code, out = _replay(spec, args, [*options, "--jobs", "2"], tmp_path)
        golden(f"replay/{case}.{name}", f"exit {code}\n{out}")


def test_the_cases_cover_every_reader() -> None:
    """Between them the cases read every trajectory format replay knows."""
    import orjson

    from roadcheck.ingest import FORMATS

    root = str(ROOT)
    seen: set[str] = set()
    for spec, args in CASES.values():
        res = CliRunner().invoke(cli, ["replay", f"{root}/{spec}", *[
            a if a.startswith("-") else f"{root}/{a}" for a in args], "--format", "json"])
        seen |= {f["format"] for f in orjson.loads(res.stdout)["files"]}
    missing = set(FORMATS) - seen
    assert not missing, missing
