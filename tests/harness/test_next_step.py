"""A stopped run says the whole next command, and a refused review is part of the evidence."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.evidence_layout import copy_lines, record_lines, records, write_record_lines

from roadcheck.cli import cli
from roadcheck.harness import Workflow

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _review_flow(phase: Build, workflow_file: WriteWorkflow) -> Path:
    """make (writer) -> review (qa, reviews make) -> ship (writer)."""
    return workflow_file(phase("make"), phase("review", role="qa", reviews="make"),
                         phase("ship"))


def _records(runs: Path, run_id: str) -> list[dict[str, Any]]:
    return records(runs / run_id / "evidence.jsonl")


class TestNextCommand:
    """Paused or refused, the run prints a command that continues it as written."""

    def test_paused_at_a_review_names_role_and_another_identity(
            self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """At a review the hint has the workflow, run id, role and a not-this-identity slot."""
        path = _review_flow(phase, workflow_file)
        runs = tmp_path / "runs"
        result = Workflow.load(path).run(role="writer", identity="alice", run_id="r",
                                         runs_dir=runs)
        assert result.status == "paused"
        assert result.next_command == (
            f"roadcheck run {path} --resume r --as qa --identity SOMEONE_OTHER_THAN_alice "
            f"--runs-dir {runs}")
        assert "an identity other than 'alice'" in result.message

    def test_paused_at_a_plain_phase_needs_no_identity(
            self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """A phase that reviews nothing is continued by whoever holds its role."""
        path = _review_flow(phase, workflow_file)
        runs = tmp_path / "runs"
        wf = Workflow.load(path)
        wf.run(role="writer", identity="alice", run_id="r", runs_dir=runs)
        second = wf.run(role="qa", identity="bob", resume="r", runs_dir=runs)
        assert second.status == "paused"
        assert second.next_command == (f"roadcheck run {path} --resume r --as writer "
                                       f"--runs-dir {runs}")

    def test_the_printed_commands_finish_the_run(self, tmp_path: Path, phase: Build,
                                                 workflow_file: WriteWorkflow,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """Running each printed next command (another identity in the slot) completes the run."""
        monkeypatch.chdir(tmp_path)
        path = _review_flow(phase, workflow_file)
        first = _invoke("run", path.name, "--as", "writer", "--identity", "alice",
                        "--run-id", "r")
        assert first.exit_code == 3
        hint = first.stdout.split("next   : ", 1)[1].splitlines()[0]
        assert hint == ("roadcheck run wf.json --resume r --as qa "
                        "--identity SOMEONE_OTHER_THAN_alice")
        second = _invoke(*shlex.split(hint.replace("SOMEONE_OTHER_THAN_alice", "bob"))[1:])
        assert second.exit_code == 3
        hint = second.stdout.split("next   : ", 1)[1].splitlines()[0]
        assert hint == "roadcheck run wf.json --resume r --as writer"
        third = _invoke(*shlex.split(hint)[1:], "--identity", "alice")
        assert third.exit_code == 0, third.output
        assert "next   :" not in third.stdout

    def test_hint_quotes_what_the_shell_would_split(self, tmp_path: Path, phase: Build,
                                                    workflow_file: WriteWorkflow) -> None:
        """A workflow path or identity with spaces is quoted so the command still works."""
        path = _review_flow(phase, workflow_file)
        runs = tmp_path / "my runs"
        result = Workflow.load(path).run(role="writer", identity="a b", run_id="r",
                                         runs_dir=runs)
        assert result.next_command is not None
        assert shlex.split(result.next_command)[-4:] == [
            "--identity", "SOMEONE_OTHER_THAN_a b", "--runs-dir", str(runs)]

    def test_json_carries_the_next_command(self, tmp_path: Path, phase: Build,
                                           workflow_file: WriteWorkflow) -> None:
        """``--format json`` has ``next_command`` (null once the run completed)."""
        path = workflow_file(phase("make"))
        runs = str(tmp_path / "runs")
        done = _invoke("run", str(path), "--as", "writer", "--identity", "alice",
                       "--runs-dir", runs, "--format", "json")
        assert json.loads(done.stdout)["next_command"] is None
        paused = _invoke("run", str(_review_flow(phase, workflow_file)), "--as", "writer",
                         "--identity", "alice", "--run-id", "p", "--runs-dir", runs,
                         "--format", "json")
        assert json.loads(paused.stdout)["next_command"].startswith("roadcheck run ")


class TestRefusalIsEvidence:
    """A refused review is a record in the hash chain, shown by audit, never fed back."""

    @pytest.mark.parametrize("store", ["jsonl", "sqlite"])
    def test_refusal_is_a_chained_record(self, tmp_path: Path, phase: Build,
                                         workflow_file: WriteWorkflow, store: str) -> None:
        """The same identity as reviewer: exit 1, one ``refused`` record, the chain verifies."""
        path = _review_flow(phase, workflow_file)
        runs = str(tmp_path / "runs")
        _invoke("run", str(path), "--as", "writer", "--identity", "alice", "--run-id", "r",
                "--runs-dir", runs, "--store", store)
        refused = _invoke("run", str(path), "--as", "qa", "--identity", "alice", "--resume",
                          "r", "--runs-dir", runs)
        assert refused.exit_code == 1
        assert "next   : roadcheck run " in refused.stdout
        assert "--identity SOMEONE_OTHER_THAN_alice" in refused.stdout
        verify = _invoke("evidence", "verify", "r", "--runs-dir", runs)
        assert verify.exit_code == 0, verify.output
        assert "2 records" in verify.stdout
        audit = _invoke("audit", "r", "--runs-dir", runs)
        assert audit.exit_code == 0
        line = audit.stdout.splitlines()[-1]
        assert line.startswith("#2 review attempt 1 REFUSED [role-guard] refused: identity "
                               "'alice' produced 'make'")
        assert "| qa/alice |" in line

    def test_refusal_record_fields(self, tmp_path: Path, phase: Build,
                                   workflow_file: WriteWorkflow) -> None:
        """The record names the reviewed artifact (with its sha256) and the refused identity."""
        path = _review_flow(phase, workflow_file)
        runs = tmp_path / "runs"
        wf = Workflow.load(path)
        wf.run(role="writer", identity="alice", run_id="r", runs_dir=runs)
        result = wf.run(role="qa", identity="alice", resume="r", runs_dir=runs)
        assert (result.status, result.reason) == ("refused", "role-guard-refused")
        made, refusal = _records(runs, "r")
        assert refusal["verdict"] == "refused"
        assert (refusal["phase"], refusal["attempt"], refusal["iteration"]) == ("review", 1, 2)
        assert (refusal["role"], refusal["identity"]) == ("qa", "alice")
        assert refusal["gate"]["kind"] == "role-guard"
        assert refusal["gate"]["exit_code"] is None
        # the reviewed artifact, by path and digest (the producer's output stays with its record)
        assert refusal["artifact"] == {k: v for k, v in made["artifact"].items()
                                       if k != "output"}
        assert json.loads(copy_lines(runs / "r")[-1]) == refusal
        guard = [json.loads(line) for line in
                 (runs / "r" / "trajectory.jsonl").read_text().splitlines()
                 if '"role-guard"' in line]
        assert guard[0]["evidence"] == refusal["hash"]

    def test_a_refusal_is_not_feedback_and_the_review_goes_on(
            self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """After a refusal another identity reviews: attempt 1 (a refusal is no attempt), no
        feedback, the run goes on."""
        path = _review_flow(phase, workflow_file)
        runs = tmp_path / "runs"
        wf = Workflow.load(path)
        wf.run(role="writer", identity="alice", run_id="r", runs_dir=runs)
        wf.run(role="qa", identity="alice", resume="r", runs_dir=runs)
        result = wf.run(role="qa", identity="bob", resume="r", runs_dir=runs)
        assert result.status == "paused" and result.waiting_for == "writer"
        review = _records(runs, "r")[-1]
        assert (review["phase"], review["verdict"], review["attempt"]) == ("review", "pass", 1)
        assert not (runs / "r" / "feedback").exists()

    def test_an_edited_refusal_breaks_the_chain(self, tmp_path: Path, phase: Build,
                                                workflow_file: WriteWorkflow) -> None:
        """Rewriting the refused identity is caught like any edited record."""
        path = _review_flow(phase, workflow_file)
        runs = tmp_path / "runs"
        wf = Workflow.load(path)
        wf.run(role="writer", identity="alice", run_id="r", runs_dir=runs)
        wf.run(role="qa", identity="alice", resume="r", runs_dir=runs)
        log = runs / "r" / "evidence.jsonl"
        *head, last = record_lines(log)
        assert '"identity":"alice"' in last
        write_record_lines(log, [*head, last.replace('"identity":"alice"', '"identity":"carol"')])
        verify = _invoke("evidence", "verify", "r", "--runs-dir", str(runs))
        assert verify.exit_code == 1
        assert "edited" in verify.stdout
