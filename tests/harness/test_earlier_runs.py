"""A run made before the attempt copies moved into ``attempts.jsonl`` still verifies,
audits and resumes, in its own layout.

``tests/data/runs_with_attempt_files`` holds such a run exactly as that code wrote it
(only its ``.lock`` left out): workflow ``before-copies``, run ``r``, made by
``Workflow.load("workflow.json").run(role="writer", identity="alice", run_id="r",
runs_dir="runs")`` in that directory. Phase ``draft`` failed once and passed, each
attempt's copy a file of its own in ``phases/``; the run waits for a reviewer.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli

from ..conftest import DATA

EARLIER = DATA / "runs_with_attempt_files"


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    """A copy of the earlier run's directory (its workflow and ``runs/``)."""
    shutil.copytree(EARLIER, tmp_path / "earlier")
    return tmp_path / "earlier"


def _cli(where: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, [*args, "--runs-dir", str(where / "runs")])


def _resume(where: Path, identity: str = "bob") -> Any:
    return CliRunner().invoke(cli, ["run", str(where / "workflow.json"), "--resume", "r",
                                    "--as", "reviewer", "--identity", identity, "--runs-dir",
                                    str(where / "runs")])


class TestEarlierRun:
    def test_the_fixture_has_files_per_attempt(self) -> None:
        """The run is in the earlier layout: a file per attempt copy, no attempts.jsonl."""
        run_dir = EARLIER / "runs" / "r"
        assert sorted(p.name for p in (run_dir / "phases").iterdir()) == [
            "draft.attempt1.fail.json", "draft.attempt2.pass.json"]
        assert not (run_dir / "attempts.jsonl").exists()

    def test_verifies_and_audits(self, earlier: Path) -> None:
        """verify says OK and audit lists both attempts, exit 0."""
        verify = _cli(earlier, "evidence", "verify", "r")
        assert verify.exit_code == 0, verify.output
        assert "OK: 2 records" in verify.stdout
        audit = _cli(earlier, "audit", "r")
        assert audit.exit_code == 0, audit.output
        assert "#1 draft attempt 1 FAIL" in audit.stdout
        assert "#2 draft attempt 2 PASS" in audit.stdout

    def test_resumes_in_its_own_layout(self, earlier: Path) -> None:
        """The reviewer's resume completes the run and adds a file for its attempt."""
        result = _resume(earlier)
        assert result.exit_code == 0, result.output
        run_dir = earlier / "runs" / "r"
        assert sorted(p.name for p in (run_dir / "phases").iterdir()) == [
            "draft.attempt1.fail.json", "draft.attempt2.pass.json", "review.attempt1.pass.json"]
        assert not (run_dir / "attempts.jsonl").exists()
        verify = _cli(earlier, "evidence", "verify", "r")
        assert verify.exit_code == 0 and "OK: 3 records" in verify.stdout, verify.output

    def test_a_missing_attempt_file_refuses_the_resume(self, earlier: Path) -> None:
        """A deleted attempt file is broken evidence: the resume exits 2 and runs nothing."""
        (earlier / "runs" / "r" / "phases" / "draft.attempt1.fail.json").unlink()
        result = _resume(earlier)
        assert result.exit_code == 2, result.output
        assert "error[evidence-broken]" in result.stderr
        assert "draft.attempt1.fail.json" in result.stderr
        assert not (earlier / "runs" / "r" / "review.txt").exists()
