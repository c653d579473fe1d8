"""Tests for the engine: gates end to end, retry with feedback, hard-stop, resume, roles."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.evidence_layout import copy_lines, record_lines, records

import roadcheck
from roadcheck.errors import InputError
from roadcheck.harness import Workflow

from .conftest import FIXES_ON_FEEDBACK, WRITES_GOOD

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]


def _run(path: Path, tmp_path: Path, **kw: Any) -> roadcheck.RunResult:
    kw.setdefault("role", "writer")
    kw.setdefault("identity", "alice")
    return Workflow.load(path).run(runs_dir=tmp_path / "runs", **kw)


def _records(tmp_path: Path, run_id: str) -> list[dict[str, Any]]:
    return records(tmp_path / "runs" / run_id / "evidence.jsonl")


class TestGateShapes:
    """Each gate kind decides a phase end to end."""

    def test_command_gate_pass(self, tmp_path: Path, phase: Build,
                               workflow_file: WriteWorkflow) -> None:
        """A command gate exiting 0 passes the phase and records exit code 0."""
        result = _run(workflow_file(phase("make")), tmp_path, run_id="r")
        assert (result.status, result.exit) == ("completed", 0)
        rec = _records(tmp_path, "r")[0]
        assert rec["verdict"] == "pass"
        assert rec["gate"]["kind"] == "command"
        assert rec["gate"]["exit_code"] == 0

    def test_schema_gate(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """A schema gate fails an artifact that violates the JSON Schema, naming the field."""
        schema = tmp_path / "out.schema.json"
        schema.write_text(json.dumps({"type": "object", "required": ["title"],
                                      "properties": {"title": {"type": "string",
                                                               "minLength": 1}}}))
        producer = "import sys, json\nopen(sys.argv[1], 'w').write(json.dumps({'title': ''}))\n"
        path = workflow_file(phase("make", producer=producer, gate={"schema": "out.schema.json"},
                                   max_attempts=1))
        result = _run(path, tmp_path, run_id="r")
        assert result.status == "hard-stop"
        rec = _records(tmp_path, "r")[0]
        assert rec["gate"]["kind"] == "schema"
        assert "/title" in rec["gate"]["detail"]

    def test_callable_gate(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
                           script: Callable[[str, str], str]) -> None:
        """A callable gate's pass flag, summary and detail land in the record."""
        script("mygates.py", "def check(artifact, ctx):\n"
                             "    text = artifact.read_text()\n"
                             "    return text == 'good', f'saw {text}', 'detail here'\n")
        result = _run(workflow_file(phase("make", gate={"callable": "mygates:check"})), tmp_path,
                      run_id="r")
        assert result.status == "completed"
        rec = _records(tmp_path, "r")[0]
        assert rec["gate"]["summary"] == "saw good"
        assert rec["gate"]["detail"] == "detail here"

    def test_callable_gate_that_raises_fails(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow,
                                             script: Callable[[str, str], str]) -> None:
        """A crashing callable is a failed gate, not a pass."""
        script("crashgates.py", "def check(artifact, ctx):\n    raise RuntimeError('boom')\n")
        path = workflow_file(phase("make", gate={"callable": "crashgates:check"},
                                   max_attempts=1))
        result = _run(path, tmp_path, run_id="r")
        assert result.status == "hard-stop"
        assert _records(tmp_path, "r")[0]["gate"]["summary"].endswith("raised RuntimeError")

    @pytest.mark.parametrize(("printed", "status"), [("0.9", "completed"), ("0.4", "hard-stop"),
                                                     ("n/a", "hard-stop")])
    def test_score_gate(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
                        script: Callable[[str, str], str], printed: str, status: str) -> None:
        """A score gate passes at the threshold and fails below it or on no number."""
        grader = script("grader.py", f"print('rubric score')\nprint('score: {printed}')\n")
        gate = {"score": ["{python}", grader, "{artifact}"], "threshold": 0.8}
        result = _run(workflow_file(phase("make", gate=gate, max_attempts=1)), tmp_path,
                      run_id="r")
        assert result.status == status
        assert _records(tmp_path, "r")[0]["gate"]["kind"] == "score"

    @pytest.mark.parametrize(("target", "status", "verdict"), [
        ("cust_1001", "completed", "pass"), ("cust_9999", "hard-stop", "fail")])
    def test_accept_gate(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
                         target: str, status: str, verdict: str) -> None:
        """An accept contract judges the artifact as the claimed result, allow-list included."""
        (tmp_path / "contract.yaml").write_text(
            "required: {status: string, target_id: string}\n"
            "enums: {target_id: [cust_1001, cust_1002]}\n", encoding="utf-8")
        producer = ("import sys, json\nopen(sys.argv[1], 'w').write(json.dumps("
                    f"{{'status': 'created', 'target_id': '{target}'}}))\n")
        path = workflow_file(phase("make", producer=producer, gate={"accept": "contract.yaml"},
                                   max_attempts=1))
        result = _run(path, tmp_path, run_id="r")
        assert result.status == status
        rec = _records(tmp_path, "r")[0]
        assert (rec["gate"]["kind"], rec["verdict"]) == ("accept", verdict)
        if verdict == "fail":
            assert "cust_9999" in rec["gate"]["detail"]

    def test_command_gate_never_uses_a_shell(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow) -> None:
        """Shell syntax in a gate argv is passed literally, so it cannot chain commands."""
        marker = tmp_path / "pwned"
        gate = {"command": [sys.executable, "-c", "import sys; sys.exit(0)",
                            f"; touch {marker}"]}
        _run(workflow_file(phase("make", gate=gate)), tmp_path, run_id="r")
        assert not marker.exists()


class TestRetryWithFeedback:
    """A failed attempt is handed back to the next attempt's producer."""

    def test_producer_fixes_artifact_on_second_attempt(self, tmp_path: Path, phase: Build,
                                                       workflow_file: WriteWorkflow) -> None:
        """The second attempt reads the feedback file and the env vars, and passes."""
        path = workflow_file(phase("make", producer=FIXES_ON_FEEDBACK))
        result = _run(path, tmp_path, run_id="r")
        assert result.status == "completed"
        recs = _records(tmp_path, "r")
        assert [r["verdict"] for r in recs] == ["fail", "pass"]
        env = json.loads((tmp_path / "runs" / "r" / "make.txt.env.json").read_text())
        assert env["ROADCHECK_ATTEMPT"] == "2"
        assert env["ROADCHECK_ITERATION"] == "2"
        assert env["ROADCHECK_LAST_GATE_SUMMARY"] == "gate command exited 4"
        assert env["ROADCHECK_LAST_GATE_DETAIL"] == "expected good, found 'bad'"
        assert env["ROADCHECK_LAST_GATE_EXIT"] == "4"
        assert env["feedback"]["summary"] == "gate command exited 4"
        assert env["feedback"]["record"]["hash"] == recs[0]["hash"]

    def test_first_attempt_gets_no_feedback(self, tmp_path: Path, phase: Build,
                                            workflow_file: WriteWorkflow,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """Feedback variables inherited from outside never reach a first attempt."""
        monkeypatch.setenv("ROADCHECK_FEEDBACK_FILE", "/nonexistent")
        path = workflow_file(phase("make", producer=FIXES_ON_FEEDBACK, max_attempts=1))
        assert _run(path, tmp_path, run_id="r").status == "hard-stop"

    def test_attempt_copies(self, tmp_path: Path, phase: Build,
                            workflow_file: WriteWorkflow) -> None:
        """Each attempt leaves its record's copy as a line of attempts.jsonl; no file of its own."""
        _run(workflow_file(phase("make", producer=FIXES_ON_FEEDBACK)), tmp_path, run_id="r")
        run_dir = tmp_path / "runs" / "r"
        copies = [json.loads(line) for line in copy_lines(run_dir)]
        assert [(c["phase"], c["attempt"], c["verdict"]) for c in copies] == [
            ("make", 1, "fail"), ("make", 2, "pass")]
        assert copy_lines(run_dir) == record_lines(run_dir / "evidence.jsonl")
        assert not (run_dir / "phases").exists()


class TestHardStop:
    """A phase that never passes stops the run after max_attempts."""

    def test_diagnostic_names_phase_attempts_and_output(self, tmp_path: Path, phase: Build,
                                                        workflow_file: WriteWorkflow) -> None:
        """After max_attempts failures the run exits 1 naming the phase and last gate output."""
        bad = "import sys\nopen(sys.argv[1], 'w').write('bad')\n"
        path = workflow_file(phase("make", producer=bad, max_attempts=2), phase("next"))
        result = _run(path, tmp_path, run_id="r")
        assert (result.status, result.exit) == ("hard-stop", 1)
        assert "phase 'make' failed 2 of 2 attempts" in result.message
        assert "expected good, found 'bad'" in result.message
        assert "expected good" in result.last_output
        assert [p.status for p in result.phases] == ["failed", "pending"]
        assert len(_records(tmp_path, "r")) == 2

    @pytest.mark.parametrize(("producer", "summary"), [
        ("import sys\nsys.exit(3)\n", "producer exited 3"),
        ("import time\ntime.sleep(5)\n", "producer timed out after 0.3s"),
        ("pass\n", "producer exited 0 but wrote no artifact"),
    ])
    def test_broken_producer_is_a_recorded_failure(self, tmp_path: Path, phase: Build,
                                                   workflow_file: WriteWorkflow, producer: str,
                                                   summary: str) -> None:
        """A crash, a timeout or a missing artifact is a failed attempt with a record."""
        path = workflow_file(phase("make", producer=producer, max_attempts=1, timeout=0.3))
        result = _run(path, tmp_path, run_id="r")
        assert result.status == "hard-stop"
        rec = _records(tmp_path, "r")[0]
        assert rec["verdict"] == "fail"
        assert rec["gate"]["summary"] == summary


class TestResume:
    """Resuming a run skips passed phases and keeps the iteration counter monotonic."""

    def test_resume_after_hard_stop(self, tmp_path: Path, phase: Build,
                                    workflow_file: WriteWorkflow,
                                    script: Callable[[str, str], str]) -> None:
        """A resumed run skips the passed phase and continues numbering attempts."""
        flag = tmp_path / "fixed"
        producer = (f"import sys, os\nopen(sys.argv[1], 'w').write("
                    f"'good' if os.path.exists({str(flag)!r}) else 'bad')\n")
        path = workflow_file(phase("first"), phase("second", producer=producer, max_attempts=2))
        first = _run(path, tmp_path, run_id="r")
        assert first.status == "hard-stop"
        flag.write_text("")
        seen: list[str] = []

        def revalidate(p: Any, record: Any, run_dir: Path) -> None:
            seen.append(p.name)

        second = _run(path, tmp_path, resume="r", revalidate=revalidate)
        assert second.status == "completed"
        assert seen == ["first"]
        recs = _records(tmp_path, "r")
        assert [(r["phase"], r["attempt"], r["iteration"]) for r in recs] == [
            ("first", 1, 1), ("second", 1, 2), ("second", 2, 3), ("second", 3, 4)]
        assert second.phases[1].attempts == 3

    def test_revalidation_hook_can_withdraw_a_pass(self, tmp_path: Path, phase: Build,
                                                   workflow_file: WriteWorkflow) -> None:
        """A revalidator that returns a reason makes the passed phase run again."""
        path = workflow_file(phase("first"))
        _run(path, tmp_path, run_id="r")
        result = _run(path, tmp_path, resume="r",
                      revalidate=lambda p, rec, d: "artifact changed since its record")
        assert result.status == "completed"
        assert [r["iteration"] for r in _records(tmp_path, "r")] == [1, 2]
        assert "artifact changed" in result.notes[0]

    def test_resume_of_unknown_run(self, tmp_path: Path, phase: Build,
                                   workflow_file: WriteWorkflow) -> None:
        """Resuming a run that does not exist is bad input."""
        with pytest.raises(InputError, match="no run 'ghost'"):
            _run(workflow_file(phase("first")), tmp_path, resume="ghost")

    def test_existing_run_id_needs_resume(self, tmp_path: Path, phase: Build,
                                          workflow_file: WriteWorkflow) -> None:
        """Starting a new run under an existing id is refused."""
        path = workflow_file(phase("first"))
        _run(path, tmp_path, run_id="r")
        with pytest.raises(InputError, match="already exists"):
            _run(path, tmp_path, run_id="r")

    @pytest.mark.parametrize("run_id", ["../escape", "/abs", "a/b", ".hidden", "a..b", ""])
    def test_run_id_that_could_escape_is_refused(self, tmp_path: Path, phase: Build,
                                                 workflow_file: WriteWorkflow,
                                                 run_id: str) -> None:
        """A run id with a path separator or dot-dot is refused before anything is written."""
        with pytest.raises(InputError, match="could escape the runs directory"):
            _run(workflow_file(phase("first")), tmp_path, run_id=run_id or "-")
        assert not (tmp_path / "escape").exists()


class TestRoleGuard:
    """One role and one identity per invocation; a reviewer never reviews its own work."""

    def _review_flow(self, phase: Build, workflow_file: WriteWorkflow) -> Path:
        review = phase("review", role="qa", reviews="make",
                       producer="import sys, shutil\nshutil.copy(sys.argv[2], sys.argv[1])\n")
        review["producer"].append("{input}")
        return workflow_file(phase("make"), review)

    def test_pauses_at_another_roles_phase(self, tmp_path: Path, phase: Build,
                                           workflow_file: WriteWorkflow) -> None:
        """The run pauses with exit 3 at the first phase of a role it does not hold."""
        result = _run(self._review_flow(phase, workflow_file), tmp_path, run_id="r")
        assert (result.status, result.exit, result.waiting_for) == ("paused", 3, "qa")
        assert "paused: waiting for role 'qa'" in result.message

    def test_same_identity_review_is_refused(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow) -> None:
        """The producing identity may not run the review even under the reviewer role."""
        path = self._review_flow(phase, workflow_file)
        _run(path, tmp_path, run_id="r")
        result = _run(path, tmp_path, resume="r", role="qa", identity="alice")
        assert (result.status, result.exit, result.reason) == ("refused", 1,
                                                               "role-guard-refused")
        # the refusal itself is evidence; nothing was produced or gated
        assert [r["verdict"] for r in _records(tmp_path, "r")] == ["pass", "refused"]
        assert not (tmp_path / "runs" / "r" / "review.txt").exists()

    def test_other_identity_review_runs(self, tmp_path: Path, phase: Build,
                                        workflow_file: WriteWorkflow) -> None:
        """A different identity holding the reviewer role completes the run; both recorded."""
        path = self._review_flow(phase, workflow_file)
        _run(path, tmp_path, run_id="r")
        result = _run(path, tmp_path, resume="r", role="qa", identity="bob")
        assert result.status == "completed"
        recs = _records(tmp_path, "r")
        assert [(r["role"], r["identity"]) for r in recs] == [("writer", "alice"), ("qa", "bob")]

    def test_identity_defaults_to_environment(self, tmp_path: Path, phase: Build,
                                              workflow_file: WriteWorkflow,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
        """Without an explicit identity, ROADCHECK_IDENTITY is recorded."""
        monkeypatch.setenv("ROADCHECK_IDENTITY", "carol")
        Workflow.load(workflow_file(phase("make"))).run(role="writer",
                                                         runs_dir=tmp_path / "runs",
                                                         run_id="r")
        assert _records(tmp_path, "r")[0]["identity"] == "carol"


class TestTrajectoryOut:
    """Every run writes a native trajectory that replay can audit."""

    def test_replay_reads_the_harness_trajectory(self, tmp_path: Path, phase: Build,
                                                 workflow_file: WriteWorkflow) -> None:
        """Replay passes the run's trajectory against a spec requiring each gate pass."""
        path = workflow_file(phase("make", producer=FIXES_ON_FEEDBACK), phase("ship"))
        _run(path, tmp_path, run_id="r")
        spec = tmp_path / "replay.json"
        spec.write_text(json.dumps({"mandatory_checkpoints": [
            {"checkpoint_id": "passed:make", "must_precede": "produce:ship"}]}))
        traj = tmp_path / "runs" / "r" / "trajectory.jsonl"
        run = roadcheck.replay(str(spec), [str(traj)])
        assert run.results[0].verdict == "PASS"
        assert run.results[0].task_success is True

    def test_removed_checkpoint_blocks(self, tmp_path: Path, phase: Build,
                                       workflow_file: WriteWorkflow) -> None:
        """A trajectory without the gate-pass checkpoint is blocked by replay."""
        _run(workflow_file(phase("make"), phase("ship")), tmp_path, run_id="r")
        traj = tmp_path / "runs" / "r" / "trajectory.jsonl"
        kept = [ln for ln in traj.read_text().splitlines() if '"passed:make"' not in ln]
        traj.write_text("\n".join(kept) + "\n")
        spec = tmp_path / "replay.json"
        spec.write_text(json.dumps({"mandatory_checkpoints": [
            {"checkpoint_id": "passed:make", "must_precede": "produce:ship"}]}))
        assert roadcheck.replay(str(spec), [str(traj)]).results[0].verdict == "BLOCK"

    def test_resume_continues_one_trajectory(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow) -> None:
        """Across pause and resume the trajectory keeps one final line and rising seq."""
        review = phase("review", role="qa", reviews="make")
        path = workflow_file(phase("make"), review)
        _run(path, tmp_path, run_id="r")
        _run(path, tmp_path, resume="r", role="qa", identity="bob")
        traj = roadcheck.read_trajectory(str(tmp_path / "runs" / "r" / "trajectory.jsonl"))
        kinds = [e.kind for e in traj.events]
        assert kinds.count("final") == 1
        assert traj.task_success is True


class TestUngated:
    """The measurement baseline: same producers, gates skipped."""

    def test_ungated_runs_every_phase_without_records(self, tmp_path: Path, phase: Build,
                                                      workflow_file: WriteWorkflow) -> None:
        """Ungated, a failing artifact still flows on and no evidence is written."""
        bad = "import sys\nopen(sys.argv[1], 'w').write('bad')\n"
        path = workflow_file(phase("make", producer=bad), phase("ship", producer=WRITES_GOOD))
        result = _run(path, tmp_path, run_id="r", gated=False)
        assert result.status == "completed"
        assert [p.status for p in result.phases] == ["unchecked", "unchecked"]
        assert not (tmp_path / "runs" / "r" / "evidence.jsonl").exists()

