"""The replay report written as it is judged, and with --jobs, is the report of the whole run."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.conformance import load_spec, replay_files
from roadcheck.report import replay_report
from roadcheck.report.replay import ReplayReportWriter, render_result

from .conftest import EXAMPLES, ROOT

FIXTURES = sorted(str(p) for p in EXAMPLES.glob("fixture_*.jsonl"))
MIXED = [
    *FIXTURES,
    str(EXAMPLES / "frameworks" / "otel" / "spans.jsonl"),
    str(EXAMPLES / "frameworks" / "atif" / "trajectory.json"),
    str(ROOT / "tests" / "data" / "tau" / "taubench" / "gpt-4o-airline.json.gz"),
]
OPTIONS = [
    pytest.param("text", False, None, id="text"),
    pytest.param("text", True, None, id="text-summary"),
    pytest.param("text", False, "task_success", id="text-by"),
    pytest.param("json", False, None, id="json"),
    pytest.param("json", True, "reward", id="json-summary-by"),
]


def _whole_run(spec_path: Path, paths: list[str], fmt: str, summary_only: bool,
               by_field: str | None) -> str:
    """The report rendered from a run holding every result (the reference)."""
    spec = load_spec(spec_path)
    run = replay_files(spec, paths)
    return replay_report(run, spec, fmt=fmt, summary_only=summary_only, by_field=by_field)


def _streamed(spec_path: Path, paths: list[str], fmt: str, summary_only: bool,
              by_field: str | None, jobs: int = 1) -> str:
    spec = load_spec(spec_path)
    out = io.StringIO()
    with ReplayReportWriter(out, spec, spec_source=spec.source, spec_sha256=spec.sha256,
                            fmt=fmt, summary_only=summary_only, by_field=by_field) as writer:
        replay_files(spec, paths, jobs=jobs, sink=writer,
                     render=lambda r: render_result(r, fmt=fmt, summary_only=summary_only,
                                                    by_field=by_field))
        writer.finish()
    return out.getvalue()


class TestStreamedReport:
    @pytest.mark.parametrize(("fmt", "summary_only", "by_field"), OPTIONS)
    @pytest.mark.parametrize("paths", [FIXTURES, MIXED, FIXTURES[:1]],
                             ids=["fixtures", "mixed", "one"])
    def test_same_bytes_as_the_whole_run(self, paths: list[str], fmt: str, summary_only: bool,
                                         by_field: str | None) -> None:
        """Written as judged, the report is byte for byte the one rendered at the end."""
        spec = EXAMPLES / "spec.json"
        assert (_streamed(spec, paths, fmt, summary_only, by_field)
                == _whole_run(spec, paths, fmt, summary_only, by_field))

    def test_nothing_judged(self) -> None:
        """An empty batch gives the same document and exits 2."""
        spec = load_spec(EXAMPLES / "spec.json")
        for fmt in ("text", "json"):
            out = io.StringIO()
            with ReplayReportWriter(out, spec, spec_source=spec.source,
                                    spec_sha256=spec.sha256, fmt=fmt) as writer:
                assert writer.finish() == 2
            assert out.getvalue() == replay_report(replay_files(spec, []), spec, fmt=fmt)


class TestJobs:
    @pytest.fixture(autouse=True)
    def two_processes(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Two worker processes however few the files (a small batch is otherwise judged
        in one process, where a second one would not pay for its start)."""
        from roadcheck.conformance import batch as conformance

        monkeypatch.setattr(conformance, "_FILES_PER_WORKER", 1)

    def test_the_worker_count_follows_the_batch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """One process for a batch too small for more to pay, or one read from standard
        input; up to --jobs for a large one."""
        from roadcheck.conformance import batch as conformance

        monkeypatch.setattr(conformance, "_FILES_PER_WORKER", 2_000)
        workers = conformance._workers
        assert workers(2, ["a"] * 1_000) == 1
        assert workers(2, ["a"] * 3_999) == 1
        assert workers(2, ["a"] * 4_000) == 2
        assert workers(8, ["a"] * 10_000) == 5
        assert workers(2, ["a"] * 10_000 + ["-"]) == 1
        assert workers(1, ["a"] * 10_000) == 1

    @pytest.mark.parametrize(("fmt", "summary_only", "by_field"), OPTIONS)
    def test_two_processes_write_the_same_report(self, fmt: str, summary_only: bool,
                                                 by_field: str | None) -> None:
        """--jobs 2 gives the bytes and the exit code of --jobs 1."""
        args = ["replay", str(EXAMPLES / "spec.json"), *MIXED, *FIXTURES[::-1][:3],
                "--format", fmt]
        if summary_only:
            args.append("--summary-only")
        if by_field:
            args += ["--by", by_field]
        one = CliRunner().invoke(cli, [*args, "--jobs", "1"])
        two = CliRunner().invoke(cli, [*args, "--jobs", "2"])
        assert one.exit_code == two.exit_code == 1
        assert two.stdout == one.stdout

    def test_json_chunks_pass_through_files_and_leave_nothing(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A JSON report's chunks go from the workers to the report through files of their
        own (never the pool's pipes), in order, and the folder is gone afterwards."""
        import tempfile

        runs = tmp_path / "runs"
        runs.mkdir()
        for i in range(120):  # some dozens of chunks
            src = Path(FIXTURES[i % len(FIXTURES)])
            (runs / f"{i:03d}-{src.name}").write_bytes(src.read_bytes())
        spool = tmp_path / "tmp"
        spool.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(spool))
        args = ["replay", str(EXAMPLES / "spec.json"), str(runs), "--format", "json"]
        for by in ([], ["--by", "task_success"]):
            one = CliRunner().invoke(cli, [*args, *by, "--jobs", "1"])
            two = CliRunner().invoke(cli, [*args, *by, "--jobs", "2"])
            assert one.exit_code == two.exit_code == 1
            assert two.stdout == one.stdout
            assert list(spool.iterdir()) == []

    def test_jobs_must_be_positive(self) -> None:
        """--jobs 0 is a usage error."""
        res = CliRunner().invoke(cli, ["replay", str(EXAMPLES / "spec.json"), FIXTURES[0],
                                       "--jobs", "0"])
        assert res.exit_code == 2


class TestInterrupted:
    @pytest.mark.parametrize("stop", [1, 3], ids=["before-its-first-run", "after-two-runs"])
    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_cut_off_inside_a_multi_run_file(self, monkeypatch: pytest.MonkeyPatch, fmt: str,
                                             stop: int) -> None:
        """Ctrl-C inside a file of many runs: the file and its judged runs are reported
        exactly as the whole-run renderer reports the partial run."""
        from roadcheck.conformance import ReplayInterrupted
        from roadcheck.conformance import batch as conformance

        real = conformance._judge
        seen = [0]

        def stop_there(compiled, entry):  # type: ignore[no-untyped-def]
            seen[0] += 1
            if seen[0] == stop:
                raise KeyboardInterrupt
            return real(compiled, entry)

        monkeypatch.setattr(conformance, "_judge", stop_there)
        spec = load_spec(EXAMPLES / "tau" / "airline.yaml")
        paths = [FIXTURES[0], MIXED[-1]]
        with pytest.raises(ReplayInterrupted) as info:
            replay_files(spec, paths)
        expected = replay_report(info.value.run, spec, fmt=fmt)
        seen[0] = 0
        out = io.StringIO()
        with ReplayReportWriter(out, spec, spec_source=spec.source, spec_sha256=spec.sha256,
                                fmt=fmt) as writer:
            with pytest.raises(ReplayInterrupted):
                replay_files(spec, paths, sink=writer,
                             render=lambda r: render_result(r, fmt=fmt))
            writer.finish(interrupted=True)
        assert out.getvalue() == expected
        assert "gpt-4o-airline.json.gz" in expected
