"""What ``roadcheck run`` says must be what happened: roles, attempts, output, stops, effects."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.evidence_layout import records

from roadcheck.cli import cli

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["run", *args])


def test_a_role_no_phase_has_is_refused_before_any_run(tmp_path: Path, phase: Build,
                                                       workflow_file: WriteWorkflow) -> None:
    """``--as editor`` when no phase has that role: one line, exit 2, no run directory."""
    wf = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
    runs = tmp_path / "runs"
    result = _run(str(wf), "--as", "editor", "--identity", "a", "--run-id", "e1",
                  "--runs-dir", str(runs))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "'editor'" in line and "qa" in line and "writer" in line
    assert not (runs / "e1").exists()


def test_a_refusal_is_not_an_attempt(tmp_path: Path, phase: Build,
                                     workflow_file: WriteWorkflow) -> None:
    """A review refused by the role guard, then done by another identity, with
    ``max_attempts: 1``: one attempt, never "2 attempts"."""
    wf = workflow_file(phase("make"), phase("review", role="qa", reviews="make",
                                            max_attempts=1))
    runs = str(tmp_path / "runs")
    base = ["--runs-dir", runs, "--format", "json"]
    assert _run(str(wf), "--as", "writer", "--identity", "alice", "--run-id", "r1",
                *base).exit_code == 3
    refused = _run(str(wf), "--as", "qa", "--identity", "alice", "--resume", "r1", *base)
    assert refused.exit_code == 1
    assert json.loads(refused.stdout)["phases"][1]["attempts"] == 0
    done = _run(str(wf), "--as", "qa", "--identity", "bob", "--resume", "r1", *base)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["phases"][1] == {"name": "review", "status": "passed",
                                                    "attempts": 1, "iteration": 3}
    text = _run(str(wf), "--as", "qa", "--identity", "bob", "--resume", "r1",
                "--runs-dir", runs)
    assert "role qa, 1 attempt," in text.stdout
    review = [(r["attempt"], r["verdict"]) for r in records(tmp_path / "runs" / "r1" /
                                                           "evidence.jsonl")
              if r["phase"] == "review"]
    assert review == [(1, "refused"), (1, "pass")]


def test_a_producers_output_is_kept_in_the_evidence(tmp_path: Path, phase: Build,
                                                     workflow_file: WriteWorkflow) -> None:
    producer = ("import sys\nprint('made by the producer')\n"
                "open(sys.argv[1], 'w').write('good')\n")
    wf = workflow_file(phase("make", producer=producer))
    result = _run(str(wf), "--as", "writer", "--identity", "a", "--run-id", "r1",
                  "--runs-dir", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    (rec,) = records(tmp_path / "runs" / "r1" / "evidence.jsonl")
    assert "made by the producer" in rec["artifact"]["output"]
    verified = CliRunner().invoke(cli, ["evidence", "verify", "r1", "--runs-dir",
                                        str(tmp_path / "runs")])
    assert verified.exit_code == 0, verified.output


def test_a_hard_stop_prints_its_resume_command(tmp_path: Path, phase: Build,
                                               workflow_file: WriteWorkflow) -> None:
    bad = "import sys\nopen(sys.argv[1], 'w').write('bad')\n"
    wf = workflow_file(phase("make", producer=bad, max_attempts=1))
    result = _run(str(wf), "--as", "writer", "--identity", "a", "--run-id", "r1",
                  "--runs-dir", str(tmp_path / "runs"), "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["status"] == "hard-stop"
    assert doc["next_command"] is not None
    assert "--resume r1 --as writer" in doc["next_command"]


#: Publishes (a line in LEDGER), leaves its artifact empty and dies, the first time only.
PUBLISH = """
import os, sys
ledger = {ledger!r}
open(ledger, "a").write("published\\n")
open(sys.argv[1], "w").close()
os._exit(9)
"""
#: The owner's record: found, with the receipt the gate wants.
LOOKUP = """
import sys
if open({ledger!r}).read().count("published") == 1:
    print("good", end="")
    sys.exit(0)
sys.exit(1)
"""


def test_an_effect_confirmed_with_its_artifact_left_empty_completes(
        tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
        script: Callable[[str, str], str]) -> None:
    """The producer published, left its artifact empty and died; reconcile finds the
    effect: its record becomes the artifact, the gate passes, nothing is published twice."""
    ledger = tmp_path / "ledger"
    lookup = script("lookup.py", LOOKUP.format(ledger=str(ledger)))
    wf = workflow_file(phase("publish", producer=PUBLISH.format(ledger=str(ledger)),
                             max_attempts=2,
                             effect={"retry_class": "unsafe_to_retry",
                                     "reconcile": ["{python}", lookup]}))
    result = _run(str(wf), "--as", "writer", "--identity", "a", "--run-id", "r1",
                  "--runs-dir", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    assert ledger.read_text().count("published") == 1
    assert (tmp_path / "runs" / "r1" / "publish.txt").read_text() == "good"


#: Found; the receipt is only given once READY exists (the owner was slow to file it).
LATE_LOOKUP = """
import os, sys
if os.path.exists({ready!r}):
    print("good", end="")
sys.exit(0)
"""


def test_a_confirmed_effect_without_its_record_asks_the_owner_again(
        tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
        script: Callable[[str, str], str]) -> None:
    """Confirmed by reconcile while the artifact stayed empty: each later attempt asks the
    owner for its record again, so a resume completes once the owner has it, instead of
    failing every attempt of every resume; the producer never runs again."""
    ledger, ready = tmp_path / "ledger", tmp_path / "ready"
    lookup = script("lookup.py", LATE_LOOKUP.format(ready=str(ready)))
    wf = workflow_file(phase("publish", producer=PUBLISH.format(ledger=str(ledger)),
                             max_attempts=2,
                             effect={"retry_class": "unsafe_to_retry",
                                     "reconcile": ["{python}", lookup]}))
    args = ["--as", "writer", "--identity", "a", "--runs-dir", str(tmp_path / "runs")]
    first = _run(str(wf), *args, "--run-id", "r1")
    assert first.exit_code == 1 and "hard-stop" in first.stdout
    ready.touch()
    second = _run(str(wf), *args, "--resume", "r1")
    assert second.exit_code == 0, second.output
    assert ledger.read_text().count("published") == 1
