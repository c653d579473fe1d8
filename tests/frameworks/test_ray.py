"""Batch replay on a local Ray instance (``ray.init(num_cpus=2)``).

Ray takes seconds to start, so one instance serves the whole module.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import ray
from click.testing import CliRunner

from roadcheck._inputs import load_replay_spec
from roadcheck.cli import cli
from roadcheck.conformance import replay_files
from roadcheck.integrations.ray import replay_dataset, replay_paths
from roadcheck.report import replay_report

from ..conftest import DATA, EXAMPLES

pytestmark = [pytest.mark.ray,
              # Ray Data warns about its own deprecated settings when it reads them
              pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
              # the documented filter is a Python function; Ray suggests its own expressions
              pytest.mark.filterwarnings("ignore:Use 'expr' instead of 'fn':UserWarning")]

SPEC = EXAMPLES / "spec.json"
FIXTURES = sorted(str(p) for p in EXAMPLES.glob("fixture_*.jsonl"))


@pytest.fixture(scope="module", autouse=True)
def _ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def _events(path: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


class TestReplayPaths:
    """``roadcheck replay --ray`` is the local replay, byte for byte."""

    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_report_bytes_equal_the_local_run(self, fmt: str) -> None:
        """Same order, same report, same report-sha256, whatever the batch size."""
        spec = load_replay_spec(SPEC)
        local = replay_report(replay_files(spec, FIXTURES), spec, fmt=fmt)
        for size in (1, 3, 64):
            run = replay_paths(spec, FIXTURES, batch_size=size)
            assert replay_report(run, spec, fmt=fmt) == local

    def test_cli_output_and_exit_equal_the_local_run(self) -> None:
        """The command's stdout and exit code do not change with --ray."""
        args = ["replay", str(SPEC), *FIXTURES]
        local = CliRunner().invoke(cli, args)
        dist = CliRunner().invoke(cli, [*args, "--ray"])
        assert dist.exit_code == local.exit_code == 1
        assert dist.stdout == local.stdout

    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_output_file_equals_the_local_stdout(self, tmp_path: Path, fmt: str) -> None:
        """--ray --output FILE writes, as batches arrive, the bytes the local run prints;
        the failures-first view (-v) and its Ray twin are the same too."""
        args = ["replay", str(SPEC), *FIXTURES, "--format", fmt]
        local = CliRunner().invoke(cli, args)
        target = tmp_path / "report"
        dist = CliRunner().invoke(cli, [*args, "--output", str(target), "--ray"])
        assert dist.exit_code == local.exit_code == 1
        assert dist.stdout == ""
        assert target.read_text(encoding="utf-8") == local.stdout
        if fmt == "text":
            view = CliRunner().invoke(cli, [*args, "-v"])
            assert CliRunner().invoke(cli, [*args, "-v", "--ray"]).stdout == view.stdout

    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_streamed_to_a_sink_the_driver_keeps_nothing(self, fmt: str) -> None:
        """With a sink, the report written as batches arrive is the local one, and the run
        returned holds no result: the driver's memory does not grow with the files."""
        import io
        from functools import partial

        from roadcheck.report.replay import ReplayReportWriter, render_result

        spec = load_replay_spec(SPEC)
        paths = FIXTURES * 5
        local = replay_report(replay_files(spec, paths), spec, fmt=fmt)
        out = io.StringIO()
        with ReplayReportWriter(out, spec, spec_source=spec.source, spec_sha256=spec.sha256,
                                fmt=fmt) as report:
            run = replay_paths(spec, paths, batch_size=3, sink=report,
                               render=partial(render_result, fmt=fmt, summary_only=False,
                                              by_field=None))
            report.finish()
        assert run.results == [] and run.files == ()
        assert out.getvalue() == local

    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_a_task_returns_its_batch_folded(self, fmt: str, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
        """With a report writer, each task hands back its batch folded (one chunk: the
        counts and the rendered results as bytes), never a file's start or result one by
        one, and the report is still the local one."""
        import io
        from functools import partial

        from roadcheck.report.replay import ReplayChunk, ReplayReportWriter, render_result

        spec = load_replay_spec(SPEC)
        paths = FIXTURES * 3
        local = replay_report(replay_files(spec, paths), spec, fmt=fmt)
        got: list[object] = []
        real_get = ray.get

        def spy(ref: Any, **kwargs: Any) -> Any:
            value = real_get(ref, **kwargs)
            got.append(value)
            return value

        monkeypatch.setattr(ray, "get", spy)
        out = io.StringIO()
        with ReplayReportWriter(out, spec, spec_source=spec.source, spec_sha256=spec.sha256,
                                fmt=fmt) as report:
            replay_paths(spec, paths, batch_size=5, sink=report,
                         render=partial(render_result, fmt=fmt))
            report.finish()
        assert len(got) == -(-len(paths) // 5)
        assert all(type(chunk) is ReplayChunk for chunk in got)
        assert out.getvalue() == local

    @pytest.mark.parametrize("options", [
        ["--summary-only", "--by", "task_success"],
        ["--summary-only", "--per-file"],
        ["--format", "json", "--by", "task_success"],
        ["--format", "json", "--summary-only"],
        ["-v"],
    ])
    def test_cli_reports_equal_the_local_run(self, options: list[str], tmp_path: Path) -> None:
        """Summaries, --by groups, --per-file and JSON over a mixed batch (native files,
        Claude Code transcripts, a file that holds no run, a missing file) are the bytes
        --jobs 1 prints, as are the exit codes."""
        coding = DATA / "coding"
        paths = [*FIXTURES, str(coding / "claude-code" / "short.jsonl"),
                 str(coding / "claude-code-summary" / "summary-only.jsonl"),
                 str(coding / "claude-code" / "subagent.jsonl"),
                 str(tmp_path / "missing.jsonl"), *FIXTURES[:2]]
        args = ["replay", str(SPEC), *paths, *options]
        local = CliRunner().invoke(cli, args)
        dist = CliRunner().invoke(cli, [*args, "--ray"])
        assert local.exit_code in (1, 2)
        assert dist.exit_code == local.exit_code
        assert dist.stdout == local.stdout
        assert dist.stdout

    def test_a_local_instance_runs_its_workers_at_nice_0(self,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
        """The instance --ray starts runs its workers at the priority of --jobs workers
        (Ray's default is nice 15); a cluster's address is joined as it is."""
        import roadcheck.integrations.ray as on_ray

        calls: list[dict[str, Any]] = []
        monkeypatch.setattr(ray, "is_initialized", lambda: False)
        monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs))
        assert on_ray._init(None) is True
        assert on_ray._init("ray://head:10001") is True
        assert calls[0]["_system_config"] == {"worker_niceness": 0}
        assert "_system_config" not in calls[1]

        @ray.remote
        def niceness() -> int:
            return os.nice(0)

        monkeypatch.undo()
        ray.shutdown()  # the module's instance, started again the way --ray starts one
        try:
            assert on_ray._init(None) is True
            assert ray.get(niceness.remote()) == 0
        finally:
            ray.shutdown()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)

    def test_standard_input_is_refused(self) -> None:
        """'-' cannot be sent to a worker: exit 2 with one line."""
        result = CliRunner().invoke(cli, ["replay", str(SPEC), "-", "--ray"], input="{}")
        assert result.exit_code == 2
        assert "standard input" in result.stderr and len(result.stderr.splitlines()) == 1

    def test_a_killed_worker_loses_and_doubles_nothing(self, tmp_path: Path) -> None:
        """kill -9 of a worker mid-job: Ray runs the batch again; every result comes once."""
        spec = load_replay_spec(SPEC)
        big = _events(FIXTURES[2])
        final = big[-1]
        body = [*big[:-1]]
        seq = max(e["seq"] for e in body)
        # long trajectories, so a batch is still running when the kill lands
        for i in range(1, 20_000):
            body.append({"seq": seq + i, "ts": "2026-07-11T03:14:30Z", "agent": "reporter",
                         "event": "action", "action_type": "read_row"})
        body.append({**final, "seq": seq + 20_000})
        data = b"".join(orjson.dumps(e) + b"\n" for e in body)
        paths = []
        for n in range(16):
            path = tmp_path / f"t{n:02d}.jsonl"
            path.write_bytes(data)
            paths.append(str(path))
        paths[5] = FIXTURES[0]
        local = replay_report(replay_files(spec, paths), spec, fmt="json")
        killed: list[int] = []

        def kill_a_busy_worker() -> None:
            deadline = time.monotonic() + 60
            while not killed and time.monotonic() < deadline:
                for pid in os.listdir("/proc"):
                    try:
                        title = Path(f"/proc/{pid}/cmdline").read_bytes()
                    except OSError:
                        continue
                    if pid.isdigit() and title.startswith(b"ray::_judge_batch"):
                        os.kill(int(pid), signal.SIGKILL)
                        killed.append(int(pid))
                        return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_a_busy_worker)
        killer.start()
        run = replay_paths(spec, paths, batch_size=2)
        killer.join()
        assert killed, "no worker was busy with a batch to kill"
        assert [r.id for r in run.results] == paths
        assert replay_report(run, spec, fmt="json") == local


class TestReplayDataset:
    """Ray Data rows in, verdict rows out."""

    def test_paths_events_and_bytes(self) -> None:
        """A path, a list of events and raw bytes give the verdicts a local replay gives."""
        spec = load_replay_spec(SPEC)
        expected = {r.id: r.verdict for r in replay_files(spec, FIXTURES)}
        by_path = replay_dataset(ray.data.from_items([{"path": p} for p in FIXTURES]), SPEC)
        rows = by_path.take_all()
        assert {r["id"]: r["verdict"] for r in rows} == expected
        # the events of every fixture that is JSON at all (the bad-input one is not)
        parsed = [p for p in FIXTURES if "bad_input" not in p]
        for column, value, among in (("events", _events, parsed),
                                     ("raw", lambda p: Path(p).read_bytes(), FIXTURES)):
            items = [{"name": Path(p).name, column: value(p)} for p in among]
            ds = replay_dataset(ray.data.from_items(items), SPEC, column=column,
                                id_column="name")
            got = {r["id"]: r["verdict"] for r in ds.take_all()}
            assert got == {Path(k).name: expected[k] for k in among}, column
        assert expected[FIXTURES[0]] == "ERROR"  # the raw bytes of bad input are judged too

    def test_row_shape_filter_and_parquet(self, tmp_path: Path) -> None:
        """Rows carry id, verdict, reason codes, task_success and the --by field."""
        ds = replay_dataset(ray.data.from_items([{"path": p} for p in FIXTURES]), SPEC,
                            by=["agent", "task_success"])
        passing = ds.filter(lambda r: r["verdict"] == "PASS")
        out = tmp_path / "passing"
        passing.write_parquet(str(out))
        back = sorted(ray.data.read_parquet(str(out)).take_all(), key=lambda r: r["id"])
        assert back and all(r["verdict"] == "PASS" for r in back)
        assert set(back[0]) == {"id", "verdict", "reasons", "task_success", "agent"}
        assert back[0]["agent"] == "reporter" and back[0]["task_success"] is True
        assert list(back[0]["reasons"]) == ["trajectory-conforms"]
        shutil.rmtree(out)

    def test_a_missing_column_is_one_error(self) -> None:
        """A dataset without the named column fails with the columns it has."""
        ds = replay_dataset(ray.data.from_items([{"file": FIXTURES[0]}]), SPEC)
        with pytest.raises(Exception, match="no column 'path'"):
            ds.take_all()
