"""Artifacts are regular files inside the run directory (or an allowed root), never a hang.

The runs that could hang on a broken engine go through the CLI in a subprocess
with a time limit, so a hang fails the test instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.evidence_layout import records

from roadcheck._files import OutsideRoots, open_regular
from roadcheck.errors import InputError
from roadcheck.harness import Workflow, load_workflow_spec
from roadcheck.harness.engine import execute

from ..processes import gone

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]
LIMIT = 20

MAKES_FIFO = "import os, sys\nos.mkfifo(sys.argv[1])\n"
#: bound by its name from its directory: a socket's path is limited to about 100 bytes
MAKES_SOCKET = ("import os, socket, sys\n"
                "os.chdir(os.path.dirname(os.path.abspath(sys.argv[1])))\n"
                "with socket.socket(socket.AF_UNIX) as s:\n"
                "    s.bind(os.path.basename(sys.argv[1]))\n")


def _cli(tmp_path: Path, workflow: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roadcheck", "run", str(workflow),
                           "--as", "writer",
                           "--identity", "alice", "--runs-dir", str(tmp_path / "runs"),
                           "--format", "json", *extra], capture_output=True, text=True,
                          timeout=LIMIT, check=False, cwd=tmp_path)


def _records(tmp_path: Path, run_id: str) -> list[dict[str, Any]]:
    return records(tmp_path / "runs" / run_id / "evidence.jsonl")


class TestNotRegular:
    """A FIFO, a device or a link to one is a failed attempt, never a hang."""

    @pytest.mark.parametrize(("producer", "kind"), [
        (MAKES_FIFO, "named pipe (FIFO)"),
        (MAKES_SOCKET, "socket"),
    ])
    def test_refused_with_a_reason(self, tmp_path: Path, phase: Build,
                                   workflow_file: WriteWorkflow, producer: str, kind: str) -> None:
        """The run hard-stops (exit 1) and the record names what the artifact is."""
        path = workflow_file(phase("make", producer=producer, max_attempts=1))
        proc = _cli(tmp_path, path, "--run-id", "r")
        assert proc.returncode == 1, proc.stderr
        doc = json.loads(proc.stdout)
        assert kind in doc["message"] and "not a regular file" in doc["message"]
        rec = _records(tmp_path, "r")[0]
        assert rec["verdict"] == "fail" and rec["gate"]["kind"] == "artifact"
        assert rec["artifact"]["sha256"] is None

    def test_schema_gate_never_reads_a_fifo(self, tmp_path: Path, phase: Build,
                                            workflow_file: WriteWorkflow) -> None:
        """A gate that reads the artifact itself is not reached for a FIFO."""
        (tmp_path / "s.json").write_text('{"type": "object"}')
        path = workflow_file(phase("make", producer=MAKES_FIFO, gate={"schema": "s.json"},
                                   max_attempts=1))
        proc = _cli(tmp_path, path, "--run-id", "r")
        assert proc.returncode == 1
        assert "named pipe" in json.loads(proc.stdout)["message"]

    def test_resume_with_a_fifo_in_place_of_a_passed_artifact(
            self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """A passed artifact swapped for a FIFO withdraws the pass; the phase runs again."""
        producer = ("import os, sys\nif os.path.lexists(sys.argv[1]):\n    os.unlink(sys.argv[1])\n"
                    "open(sys.argv[1], 'w').write('good')\n")
        path = workflow_file(phase("make", producer=producer))
        assert _cli(tmp_path, path, "--run-id", "r").returncode == 0
        artifact = tmp_path / "runs" / "r" / "make.txt"
        artifact.unlink()
        os.mkfifo(artifact)
        proc = _cli(tmp_path, path, "--resume", "r", "--format", "text")
        assert proc.returncode == 0, proc.stdout
        assert "artifact-changed: make.txt is a named pipe (FIFO)" in proc.stdout
        assert [r["verdict"] for r in _records(tmp_path, "r")] == ["pass", "pass"]


class TestRoots:
    """An artifact path must stay inside the run directory or a declared allowed root."""

    @pytest.mark.parametrize("artifact", ["../../escaped.txt", "/nowhere/escaped.txt",
                                          "{spec_dir}/x.txt", "sub/../../x.txt"])
    def test_escaping_path_is_refused_before_anything_runs(
            self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
            artifact: str) -> None:
        """Exit 2, one line naming the field, and the producer never ran."""
        marker = tmp_path / "producer-ran"
        producer = (f"import sys\nopen({str(marker)!r}, 'w').write('x')\n"
                    "open(sys.argv[1], 'w').write('good')\n")
        path = workflow_file(phase("make", producer=producer, artifact=artifact))
        proc = _cli(tmp_path, path, "--run-id", "r")
        assert proc.returncode == 2, proc.stdout
        assert "phases[0].artifact" in proc.stderr and "outside the run directory" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert str(path) in proc.stderr
        assert not marker.exists()
        assert not (tmp_path / "runs" / "r").exists()

    def test_symlink_leaving_the_run_is_a_failed_attempt(
            self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """A producer that links the artifact to a file elsewhere fails its attempt."""
        outside = tmp_path / "elsewhere.txt"
        outside.write_text("good")
        producer = f"import os, sys\nos.symlink({str(outside)!r}, sys.argv[1])\n"
        path = workflow_file(phase("make", producer=producer, max_attempts=1))
        proc = _cli(tmp_path, path, "--run-id", "r")
        assert proc.returncode == 1
        assert "resolves outside" in json.loads(proc.stdout)["message"]

    def test_symlink_inside_the_run_is_followed(self, tmp_path: Path, phase: Build,
                                                workflow_file: WriteWorkflow) -> None:
        """A link to a regular file in the run directory is the file it names."""
        producer = ("import os, sys\nopen(sys.argv[1] + '.real', 'w').write('good')\n"
                    "os.symlink(os.path.basename(sys.argv[1]) + '.real', sys.argv[1])\n")
        path = workflow_file(phase("make", producer=producer))
        proc = _cli(tmp_path, path, "--run-id", "r")
        assert proc.returncode == 0, proc.stdout
        assert _records(tmp_path, "r")[0]["artifact"]["bytes"] == 4

    def test_allowed_root_admits_an_absolute_path(self, tmp_path: Path, phase: Build,
                                                  workflow_file: WriteWorkflow) -> None:
        """A workflow's allowed_roots admit absolute artifact paths under them."""
        shared = tmp_path / "extra_root"
        shared.mkdir()
        path = workflow_file(phase("make", artifact=str(shared / "out.txt")))
        spec = load_workflow_spec(path)
        with pytest.raises(InputError, match=r"phases\[0\]\.artifact"):
            execute(spec, spec_dir=tmp_path, params={}, runs_dir=tmp_path / "runs",
                    role="writer", identity="alice", run_id="r1")

        rooted = load_workflow_spec(workflow_file(phase("make", artifact=str(shared / "out.txt")),
                                                  name="rooted", allowed_roots=["extra_root"]))
        result = execute(rooted, spec_dir=tmp_path, params={}, runs_dir=tmp_path / "runs",
                         role="writer", identity="alice", run_id="r2")
        assert result.status == "completed", result.message
        assert _records(tmp_path, "r2")[0]["artifact"]["path"] == str(shared / "out.txt")


class TestRootsResolved:
    """open_regular compares an artifact's real path with the real path of each root."""

    def test_a_root_through_a_symlink_admits_what_it_names(self, tmp_path: Path) -> None:
        """A root written through a symlink admits the files of the directory it names."""
        real = tmp_path / "real"
        real.mkdir()
        (real / "a.txt").write_text("x")
        (tmp_path / "link").symlink_to(real)
        os.close(open_regular(tmp_path / "link" / "a.txt", [tmp_path / "link"]))
        os.close(open_regular(real / "a.txt", [tmp_path / "link"]))

    def test_a_root_with_dotdot_after_a_symlink_is_where_the_link_leads(
            self, tmp_path: Path) -> None:
        """``link/../common`` is the sibling of the link's target, not of the link."""
        (tmp_path / "far" / "deep").mkdir(parents=True)
        (tmp_path / "far" / "common").mkdir()
        (tmp_path / "near" / "common").mkdir(parents=True)
        (tmp_path / "near" / "link").symlink_to(tmp_path / "far" / "deep")
        root = tmp_path / "near" / "link" / ".." / "common"
        (tmp_path / "far" / "common" / "a.txt").write_text("x")
        (tmp_path / "near" / "common" / "a.txt").write_text("x")
        os.close(open_regular(tmp_path / "far" / "common" / "a.txt", [root]))
        with pytest.raises(OutsideRoots):
            open_regular(tmp_path / "near" / "common" / "a.txt", [root])

    def test_a_link_out_of_a_plain_root_is_refused(self, tmp_path: Path) -> None:
        """A symlink inside a root that leads out of it is refused, the root being plain."""
        (tmp_path / "root").mkdir()
        (tmp_path / "outside.txt").write_text("x")
        (tmp_path / "root" / "a.txt").symlink_to(tmp_path / "outside.txt")
        with pytest.raises(OutsideRoots):
            open_regular(tmp_path / "root" / "a.txt", [tmp_path / "root"])


class TestGateChildren:
    """A gate's background children do not outlive it."""

    def test_background_child_of_a_gate_is_killed(self, tmp_path: Path, phase: Build,
                                                  workflow_file: WriteWorkflow) -> None:
        """A gate that leaves ``sleep 300 &`` behind passes, and the sleep is gone."""
        pidfile = tmp_path / "pid"
        gate = {"command": ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; exit 0"]}
        path = workflow_file(phase("make", gate=gate))
        proc = _cli(tmp_path, path, "--run-id", "r")
        assert proc.returncode == 0, proc.stdout
        assert gone(int(pidfile.read_text()))

    def test_workflow_api_reports_the_same(self, tmp_path: Path, phase: Build,
                                           workflow_file: WriteWorkflow) -> None:
        """The library call returns with the child gone too."""
        pidfile = tmp_path / "pid"
        gate = {"command": ["sh", "-c",
                            f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}; exit 0"]}
        result = Workflow.load(workflow_file(phase("make", gate=gate))).run(
            role="writer", identity="alice", runs_dir=tmp_path / "runs", run_id="r")
        assert result.status == "completed"
        assert gone(int(pidfile.read_text()))
