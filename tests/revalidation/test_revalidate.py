"""The six questions, the decision and the next checkpoint, on real files and commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from roadcheck import SpecError, revalidate
from roadcheck.revalidation import Revalidation

from .conftest import NOW, Site, py, sha

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "resume"


def codes(rv: Revalidation, question: str | None = None) -> list[str]:
    """The finding codes, optionally of one question."""
    return [f.code for f in rv.findings if question is None or f.question == question]


class TestCheckpointDocument:
    """A bad checkpoint is exit 2 with the file, line and field."""

    def test_valid_document_continues(self, site: Site) -> None:
        """The baseline site revalidates to continue."""
        rv = revalidate(site.write(), now=NOW)
        assert rv.decision == "continue" and rv.exit == 0

    def test_json_and_yaml_agree(self, site: Site) -> None:
        """The same document as JSON and as YAML gives the same result (bytes aside)."""
        a = revalidate(site.write("cp.yaml"), now=NOW).to_dict()
        b = revalidate(site.write("cp.json"), now=NOW).to_dict()
        assert a.pop("checkpoint_sha256") != b.pop("checkpoint_sha256")
        assert a == b

    def test_bad_effect_state_names_field_and_line(self, site: Site) -> None:
        """An unknown effect state names external_effects.upload.state and its line."""
        path = site.write(external_effects={"upload": {"state": "sent", "ledger": "l.jsonl"}})
        with pytest.raises(SpecError) as exc:
            revalidate(path, now=NOW)
        assert "external_effects.upload.state" in str(exc.value)
        line = path.read_text().splitlines()[exc.value.line - 1]  # type: ignore[operator]
        assert "state" in line

    def test_attempted_and_confirmed_never_share_a_field(self, site: Site) -> None:
        """An effect carrying both a state and a confirmed flag is refused."""
        path = site.write(external_effects={"upload": {"state": "attempted", "confirmed": True}})
        with pytest.raises(SpecError, match="never share a field"):
            revalidate(path, now=NOW)

    def test_unknown_key_and_missing_observed_at(self, site: Site) -> None:
        """Missing observed_at and unknown keys are refused."""
        path = site.write(observed_at=None)
        with pytest.raises(SpecError, match="observed_at: required"):
            revalidate(path, now=NOW)
        path = site.write(remaning=[])
        with pytest.raises(SpecError, match=r"unknown key 'remaning'; did you mean 'remaining'\?"):
            revalidate(path, now=NOW)

    def test_bad_retry_class_and_shell_string(self, site: Site) -> None:
        """A retry class outside the three and a command given as text are refused."""
        with pytest.raises(SpecError, match=r"remaining\.0\.retry_class"):
            revalidate(site.write(remaining=[{"step": "x", "retry_class": "maybe"}]), now=NOW)
        path = site.write(external_effects={"upload": {"state": "unknown",
                                                       "reconcile": "curl x | sh"}})
        with pytest.raises(SpecError, match="never run in a shell"):
            revalidate(path, now=NOW)

    def test_cli_exit_2_one_line(self, site: Site) -> None:
        """The CLI prints one error line naming file, line and field, and exits 2."""
        path = site.write(capabilities={"publish": {"state": "allowed", "max_age": "soon"}})
        proc = subprocess.run([sys.executable, "-m", "roadcheck", "revalidate", str(path)],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(f"error[bad-input]: {path}:")
        assert "capabilities.publish.max_age" in lines[0]


class TestTask:
    """Question 1: the task file outranks the checkpoint."""

    @pytest.mark.parametrize(("task", "code"), [
        ({"state": "cancelled"}, "task-cancelled"),
        ({"state": "done"}, "task-finished"),
        ({"state": "active", "deadline": "2026-08-10T12:00:00Z"}, "task-deadline-passed"),
        ({"state": "active", "instructions_updated_at": "2026-08-10T14:30:00Z"},
         "task-instructions-changed"),
        ({"state": "active", "attempts": 5, "max_attempts": 5}, "task-attempts-exhausted"),
    ])
    def test_task_overrides(self, site: Site, task: dict[str, object], code: str) -> None:
        """A cancelled, finished, late, changed or exhausted task escalates."""
        (site.root / "task.json").write_text(json.dumps(task))
        rv = revalidate(site.write(), now=NOW)
        assert code in codes(rv, "task") and rv.decision == "escalate"

    def test_missing_task_file(self, site: Site) -> None:
        """A missing task file escalates; the checkpoint cannot stand in for it."""
        (site.root / "task.json").unlink()
        rv = revalidate(site.write(), now=NOW)
        assert codes(rv, "task") == ["task-unreadable"] and rv.decision == "escalate"

    def test_task_with_a_repeated_key(self, site: Site) -> None:
        """A task whose state is given twice is unreadable, not read last-wins."""
        (site.root / "task.json").write_text('{"state": "cancelled", "state": "active"}')
        rv = revalidate(site.write(), now=NOW)
        assert codes(rv, "task") == ["task-unreadable"] and rv.decision == "escalate"
        assert "duplicate key 'state'" in rv.findings[0].message

    def test_task_that_is_a_fifo(self, site: Site) -> None:
        """A named pipe as the task file escalates at once instead of waiting for a writer."""
        import os

        (site.root / "task.json").unlink()
        os.mkfifo(site.root / "task.json")
        rv = revalidate(site.write(), now=NOW)
        assert codes(rv, "task") == ["task-unreadable"] and rv.decision == "escalate"

    def test_older_instructions_are_fine(self, site: Site) -> None:
        """Instructions older than the checkpoint do not override it."""
        (site.root / "task.json").write_text(json.dumps(
            {"state": "active", "instructions_updated_at": "2026-08-10T10:00:00Z"}))
        assert codes(revalidate(site.write(), now=NOW), "task") == ["task-current"]


class TestArtifacts:
    """Question 2: present is not enough."""

    def test_valid(self, site: Site) -> None:
        """Size and digest match: artifact-valid."""
        assert codes(revalidate(site.write(), now=NOW), "artifacts") == ["artifact-valid"]

    def test_missing(self, site: Site) -> None:
        """No file: artifact-missing."""
        (site.root / "build" / "final.mp4").unlink()
        assert codes(revalidate(site.write(), now=NOW), "artifacts") == ["artifact-missing"]

    def test_too_small(self, site: Site) -> None:
        """Fewer bytes than min_bytes: artifact-too-small."""
        (site.root / "build" / "final.mp4").write_bytes(b"x")
        assert codes(revalidate(site.write(), now=NOW), "artifacts") == ["artifact-too-small"]

    def test_digest_mismatch(self, site: Site) -> None:
        """Same size, other bytes: artifact-digest-mismatch."""
        (site.root / "build" / "final.mp4").write_bytes(b"\x01" * 2048)
        rv = revalidate(site.write(), now=NOW)
        assert codes(rv, "artifacts") == ["artifact-digest-mismatch"]
        assert rv.decision == "continue"

    def test_invalid_with_unsafe_step_escalates(self, site: Site) -> None:
        """An invalid artifact with an unsafe step left escalates."""
        (site.root / "build" / "final.mp4").write_bytes(b"\x01" * 2048)
        steps = [{"step": "upload_again", "retry_class": "unsafe_to_retry",
                  "idempotency_key": "k"}]
        assert revalidate(site.write(remaining=steps), now=NOW).decision == "escalate"

    @pytest.mark.parametrize(("fmt", "good", "bad"), [
        ("json", b'{"a": 1}', b'{"a": '),
        ("jsonl", b'{"a": 1}\n{"b": 2}\n', b'{"a": 1}\nnope\n'),
        ("yaml", b"a: 1\n", b"a: [1\n"),
    ])
    def test_format(self, site: Site, fmt: str, good: bytes, bad: bytes) -> None:
        """A file must parse as its declared format."""
        out = site.root / "out.data"
        arts = {"out": {"path": "out.data", "expect": {"format": fmt}}}
        out.write_bytes(good)
        assert codes(revalidate(site.write(artifacts=arts), now=NOW), "artifacts") == [
            "artifact-valid"]
        out.write_bytes(bad)
        assert codes(revalidate(site.write(artifacts=arts), now=NOW), "artifacts") == [
            "artifact-unparseable"]

    def test_members(self, site: Site) -> None:
        """A directory's member count must match."""
        seg = site.root / "build" / "segments"
        seg.mkdir()
        for i in range(3):
            (seg / f"s{i}.ts").write_bytes(b"x")
        arts = {"segments": {"path": "build/segments",
                             "expect": {"members": {"glob": "*.ts", "count": 3}}}}
        assert codes(revalidate(site.write(artifacts=arts), now=NOW), "artifacts") == [
            "artifact-valid"]
        (seg / "s2.ts").unlink()
        assert codes(revalidate(site.write(artifacts=arts), now=NOW), "artifacts") == [
            "artifact-members-mismatch"]

    def test_older_than_inputs(self, site: Site) -> None:
        """An artifact older than its input is stale."""
        src = site.root / "script.txt"
        src.write_text("v2")
        os.utime(site.root / "build" / "final.mp4", (1_000_000, 1_000_000))
        arts = {"final": {"path": "build/final.mp4", "expect": {"newer_than": "script.txt"}}}
        assert codes(revalidate(site.write(artifacts=arts), now=NOW), "artifacts") == [
            "artifact-stale"]

    def test_inputs_digest(self, site: Site) -> None:
        """Inputs that no longer hash to inputs_digest are reported."""
        (site.root / "in.txt").write_text("one")
        path = site.write(inputs=["in.txt"])
        rv = revalidate(path, now=NOW, write_next=site.root / "n.yaml")
        digest = yaml.safe_load((site.root / "n.yaml").read_text())["inputs_digest"]
        assert "inputs-changed" not in codes(rv)
        (site.root / "in.txt").write_text("two")
        rv = revalidate(site.write(inputs=["in.txt"], inputs_digest=digest), now=NOW)
        assert "inputs-changed" in codes(rv, "artifacts")


class TestEffects:
    """Question 3: the owner of an effect outranks the local record."""

    def test_ledger_confirms_attempted(self, site: Site) -> None:
        """A local 'attempted' found in the ledger by idempotency key is confirmed."""
        effs = {"upload": {"state": "attempted", "idempotency_key": "job/upload",
                           "ledger": "ledger.jsonl"}}
        rv = revalidate(site.write(external_effects=effs), now=NOW)
        assert codes(rv, "effects") == ["effect-confirmed"] and rv.decision == "continue"
        assert "yt-123" in rv.findings[[f.code for f in rv.findings].index(
            "effect-confirmed")].message

    def test_ledger_denies_local_confirmed(self, site: Site) -> None:
        """A local 'confirmed' absent from the ledger did not happen."""
        (site.root / "ledger.jsonl").write_text("")
        rv = revalidate(site.write(), now=NOW)
        assert codes(rv, "effects") == ["effect-not-found"]
        assert [f.severity for f in rv.findings if f.question == "effects"] == ["warn"]

    def test_unreadable_ledger_is_unknown(self, site: Site) -> None:
        """A missing ledger is no answer: reconcile first."""
        (site.root / "ledger.jsonl").unlink()
        rv = revalidate(site.write(), now=NOW)
        assert codes(rv, "effects") == ["effect-unknown"] and rv.decision == "reconcile_first"

    def test_confirmed_without_owner_is_unreconciled(self, site: Site) -> None:
        """A confirmed claim with no owner to ask is unreconciled."""
        rv = revalidate(site.write(external_effects={"upload": {"state": "confirmed"}}),
                        now=NOW)
        assert codes(rv, "effects") == ["effect-unreconciled"]
        assert rv.decision == "reconcile_first" and rv.exit == 1

    @pytest.mark.parametrize(("code", "finding"), [
        (0, "effect-confirmed"), (1, "effect-not-found"), (5, "effect-unknown")])
    def test_reconcile_command(self, site: Site, code: int, finding: str) -> None:
        """The reconcile command's exit: 0 found, 1 not found, other unknown."""
        effs = {"upload": {"state": "attempted",
                           "reconcile": py(f"import sys; sys.exit({code})")}}
        assert codes(revalidate(site.write(external_effects=effs), now=NOW), "effects") == [
            finding]

    def test_reconcile_timeout_is_unknown(self, site: Site) -> None:
        """A reconcile command that hangs is unknown, not absent."""
        effs = {"upload": {"state": "attempted", "timeout": 0.5,
                           "reconcile": py("import time; time.sleep(10)")}}
        rv = revalidate(site.write(external_effects=effs), now=NOW)
        assert codes(rv, "effects") == ["effect-unknown"]


class TestAllowed:
    """Question 4: capabilities, budgets, blockers and date gates now."""

    def test_stale_capability(self, site: Site) -> None:
        """A recorded check older than max_age escalates."""
        caps = {"publish": {"state": "allowed", "checked_at": "2026-08-10T10:00:00Z",
                            "max_age": "1h"}}
        rv = revalidate(site.write(capabilities=caps), now=NOW)
        assert codes(rv, "allowed") == ["capability-stale"] and rv.decision == "escalate"

    @pytest.mark.parametrize(("code", "finding"), [
        (0, "capability-allowed"), (1, "capability-lost"), (3, "capability-stale")])
    def test_check_command(self, site: Site, code: int, finding: str) -> None:
        """The check command decides the capability now."""
        caps = {"publish": {"check": py(f"import sys; sys.exit({code})")}}
        assert codes(revalidate(site.write(capabilities=caps), now=NOW), "allowed") == [finding]

    def test_budgets(self, site: Site) -> None:
        """Spent is read from a file or a command and compared with the limit."""
        (site.root / "spent.txt").write_text("99\n")
        buds = {"api": {"limit": 100, "spent_file": "spent.txt"},
                "gpu": {"limit": 10, "spent_command": py("print(10)")},
                "misc": {"limit": 5, "spent_command": py("import sys; sys.exit(2)")}}
        rv = revalidate(site.write(budgets=buds), now=NOW)
        assert codes(rv, "allowed") == ["capability-allowed", "budget-available",
                                        "budget-exhausted", "budget-unknown"]

    def test_blockers_and_date_gates(self, site: Site) -> None:
        """An active blocker file and a closed date gate escalate."""
        (site.root / "pause").write_text("")
        rv = revalidate(site.write(
            blockers=[{"name": "fleet", "file": "pause"},
                      {"name": "old", "active": True, "until": "2026-08-10T00:00:00Z"}],
            date_gates=[{"name": "launch", "not_before": "2026-08-11T00:00:00Z"}]), now=NOW)
        assert codes(rv, "allowed")[1:] == ["blocker-active", "date-gate-closed"]
        assert rv.decision == "escalate"


class TestRecency:
    """Existence is not delivery: the cadence must be met."""

    def test_missed_and_met(self, site: Site) -> None:
        """Output older than the cadence is a finding; a fresh one is not."""
        rv = revalidate(site.write(cadence={"last_output_at": "2026-08-08T06:00:00Z",
                                            "every": "24h"}), now=NOW)
        assert codes(rv, "recency") == ["cadence-missed"] and rv.decision == "escalate"
        rv = revalidate(site.write(cadence={"last_output_at": "2026-08-10T06:00:00Z",
                                            "every": "24h"}), now=NOW)
        assert codes(rv, "recency") == ["cadence-met"]

    def test_command_reports_last_output(self, site: Site) -> None:
        """A command may print the last output time; no timestamp is cadence-unknown."""
        rv = revalidate(site.write(cadence={"command": py("print('2026-08-07T00:00:00Z')"),
                                            "every": "1d"}), now=NOW)
        assert codes(rv, "recency") == ["cadence-missed"]
        rv = revalidate(site.write(cadence={"command": py("print('soon')"), "every": "1d"}),
                        now=NOW)
        assert codes(rv, "recency") == ["cadence-unknown"]


class TestClassification:
    """Question 5: every remaining step gets a class."""

    def test_unknown_effect_forces_reconcile_first(self, site: Site) -> None:
        """A step whose effect is unknown is reconcile_first whatever was recorded."""
        effs = {"post": {"state": "attempted", "reconcile": py("import sys; sys.exit(9)")}}
        steps = [{"step": "post", "retry_class": "safe_to_retry", "effect": "post"},
                 {"step": "render", "retry_class": "safe_to_retry"}]
        rv = revalidate(site.write(external_effects=effs, remaining=steps), now=NOW)
        assert [s.to_dict() for s in rv.remaining] == [
            {"step": "post", "retry_class": "reconcile_first"},
            {"step": "render", "retry_class": "safe_to_retry"}]
        assert rv.decision == "reconcile_first"

    def test_unsafe_without_key_needs_operator(self, site: Site) -> None:
        """An unsafe step with no idempotency key is never retried automatically."""
        steps = [{"step": "tweet", "retry_class": "unsafe_to_retry"}]
        rv = revalidate(site.write(remaining=steps), now=NOW)
        assert codes(rv, "classification") == ["step-needs-operator"]
        assert rv.decision == "escalate"

    def test_unknown_effect_outranks_a_missing_step_key(self, site: Site) -> None:
        """An unknown effect means reconcile first, even when its unsafe step has no key.

        The step is named like the effect, so it is that effect's step; the
        effect's own idempotency key counts for it.
        """
        effs = {"upload": {"state": "attempted", "idempotency_key": "job/upload",
                           "reconcile": py("import sys; sys.exit(9)")}}
        steps = [{"step": "upload", "retry_class": "unsafe_to_retry"}]
        rv = revalidate(site.write(external_effects=effs, remaining=steps), now=NOW)
        assert codes(rv, "effects") == ["effect-unknown"]
        assert codes(rv, "classification") == ["step-classified"]
        assert [s.to_dict() for s in rv.remaining] == [
            {"step": "upload", "retry_class": "reconcile_first"}]
        assert rv.decision == "reconcile_first" and rv.exit == 1
        assert rv.next_action.startswith("reconcile upload")

    def test_effect_key_counts_for_its_step(self, site: Site) -> None:
        """A confirmed effect's idempotency key makes its unsafe step retryable by key."""
        effs = {"upload": {"state": "attempted", "idempotency_key": "job/upload",
                           "ledger": "ledger.jsonl"}}
        steps = [{"step": "upload", "retry_class": "unsafe_to_retry"}]
        rv = revalidate(site.write(external_effects=effs, remaining=steps), now=NOW)
        assert codes(rv, "classification") == ["step-classified"]
        assert rv.decision == "continue"

    def test_a_step_can_name_another_effect(self, site: Site) -> None:
        """A step named like one effect but naming another in 'effect' belongs to that one."""
        effs = {"upload": {"state": "attempted", "idempotency_key": "job/upload",
                           "reconcile": py("import sys; sys.exit(9)")},
                "post": {"state": "attempted", "reconcile": py("import sys; sys.exit(1)")}}
        steps = [{"step": "upload", "retry_class": "unsafe_to_retry", "effect": "post"}]
        rv = revalidate(site.write(external_effects=effs, remaining=steps), now=NOW)
        assert codes(rv, "classification") == ["step-needs-operator"]
        assert rv.decision == "escalate"

    def test_unsafe_with_key_is_kept(self, site: Site) -> None:
        """An unsafe step with an idempotency key keeps its class."""
        steps = [{"step": "tweet", "retry_class": "unsafe_to_retry", "idempotency_key": "t1"}]
        rv = revalidate(site.write(remaining=steps), now=NOW)
        assert codes(rv, "classification") == ["step-classified"]
        assert rv.remaining[0].retry_class == "unsafe_to_retry"


class TestNextCheckpoint:
    """Question 6: the next checkpoint carries what was observed, and nothing else is written."""

    def test_written_only_on_request(self, site: Site) -> None:
        """Without write_next the directory is byte-for-byte unchanged."""
        path = site.write()
        before = {p: p.read_bytes() for p in site.root.rglob("*") if p.is_file()}
        revalidate(path, now=NOW)
        after = {p: p.read_bytes() for p in site.root.rglob("*") if p.is_file()}
        assert before == after

    def test_next_carries_evidence(self, site: Site) -> None:
        """observed_at is now, digests are observed, one next_action is set."""
        effs = {"upload": {"state": "attempted", "idempotency_key": "job/upload",
                           "ledger": "ledger.jsonl"}}
        rv = revalidate(site.write(external_effects=effs), now=NOW,
                        write_next=site.root / "next.yaml")
        doc = yaml.safe_load((site.root / "next.yaml").read_text())
        assert doc["observed_at"] == NOW
        assert doc["artifacts"]["final_media"]["digest"] == sha(site.media)
        assert doc["external_effects"]["upload"] == {
            "state": "confirmed", "remote_id": "yt-123", "idempotency_key": "job/upload",
            "ledger": "ledger.jsonl"}
        assert isinstance(doc["next_action"], str) and rv.next_checkpoint is not None
        assert revalidate(site.root / "next.yaml", now=NOW).decision == "continue"

    def test_unverified_claim_not_copied_as_verified(self, site: Site) -> None:
        """A confirmed claim nobody can check is written as unknown; a bad artifact as invalid."""
        (site.root / "build" / "final.mp4").write_bytes(b"\x01" * 2048)
        revalidate(site.write(external_effects={"upload": {"state": "confirmed"}}), now=NOW,
                   write_next=site.root / "next.json")
        doc = json.loads((site.root / "next.json").read_text())
        assert doc["external_effects"]["upload"]["state"] == "unknown"
        assert doc["artifacts"]["final_media"]["state"] == "invalid"
        assert "digest" not in doc["artifacts"]["final_media"]
        assert doc["next_action"].startswith("reconcile upload")

    def test_paths_relative_to_new_location(self, site: Site) -> None:
        """A next checkpoint in another directory still points at the same files."""
        (site.root / "later").mkdir()
        revalidate(site.write(), now=NOW, write_next=site.root / "later" / "cp.yaml")
        rv = revalidate(site.root / "later" / "cp.yaml", now=NOW)
        assert rv.decision == "continue"


class TestDecision:
    """The fold of findings, its exit codes and its determinism."""

    def test_escalate_outranks_reconcile(self, site: Site) -> None:
        """A cancelled task with an unknown effect escalates."""
        (site.root / "task.json").write_text(json.dumps({"state": "cancelled"}))
        rv = revalidate(site.write(external_effects={"upload": {"state": "unknown"}}), now=NOW)
        assert rv.decision == "escalate" and rv.exit == 1

    def test_same_inputs_same_bytes(self, site: Site) -> None:
        """Two runs with the same --now print byte-identical JSON and text."""
        path = site.write()
        outs = set()
        for fmt in ("json", "text", "json", "text"):
            proc = subprocess.run([sys.executable, "-m", "roadcheck", "revalidate", str(path),
                                   "--now", NOW, "--format", fmt], capture_output=True,
                                  check=False)
            outs.add((fmt, proc.stdout))
        assert len(outs) == 2

    def test_json_shape(self, site: Site) -> None:
        """The CLI prints the public JSON shape and exits with the decision's code."""
        path = site.write(external_effects={"upload": {"state": "unknown"}})
        proc = subprocess.run([sys.executable, "-m", "roadcheck", "revalidate", str(path),
                               "--now", NOW, "--format", "json"], capture_output=True,
                              text=True, check=False)
        doc = json.loads(proc.stdout)
        assert proc.returncode == 1
        assert list(doc) == ["decision", "exit", "findings", "remaining", "next_action",
                             "next_checkpoint", "checkpoint_sha256"]
        assert doc["decision"] == "reconcile_first" and doc["exit"] == 1
        assert set(doc["findings"][0]) == {"question", "code", "message"}


class TestExamples:
    """The two stories of docs/revalidate.md run as documented."""

    def _run(self, tmp_path: Path, name: str) -> tuple[int, dict[str, object]]:
        work = tmp_path / name
        shutil.copytree(EXAMPLES / name, work)
        proc = subprocess.run([sys.executable, "-m", "roadcheck", "revalidate",
                               str(work / "checkpoint.yaml"), "--now", "2026-08-10T15:00:00Z",
                               "--format", "json"], capture_output=True, text=True, check=False)
        return proc.returncode, json.loads(proc.stdout)

    def test_video_job_continues(self, tmp_path: Path) -> None:
        """Artifacts valid and upload in the ledger: continue from distribution."""
        code, doc = self._run(tmp_path, "video")
        assert code == 0 and doc["decision"] == "continue"
        assert doc["remaining"] == [{"step": "distribute", "retry_class": "reconcile_first"}]
        found = [f["code"] for f in doc["findings"]]  # type: ignore[attr-defined]
        assert "effect-confirmed" in found and found.count("artifact-valid") == 3

    def test_chain_health_is_stale(self, tmp_path: Path) -> None:
        """Successors exist, but the last output is stale: escalate."""
        code, doc = self._run(tmp_path, "chain")
        found = [f["code"] for f in doc["findings"]]  # type: ignore[attr-defined]
        assert code == 1 and doc["decision"] == "escalate"
        assert "cadence-missed" in found and "artifact-valid" in found


class TestPublicApi:
    """roadcheck.revalidate is the function, not a shadowing subpackage."""

    def test_exports(self) -> None:
        """revalidate and Revalidation are in __all__ and survive the subpackage import."""
        import roadcheck
        import roadcheck.revalidation

        assert {"revalidate", "Revalidation"} <= set(roadcheck.__all__)
        assert callable(roadcheck.revalidate)
        assert roadcheck.revalidate is roadcheck.revalidation.revalidate
        assert roadcheck.Revalidation is roadcheck.revalidation.Revalidation


class TestNextAction:
    """The one next_action follows the decision."""

    def test_invalid_artifact_is_rebuilt_first(self, site: Site) -> None:
        """With an invalid artifact and only safe steps left, the action rebuilds it first."""
        (site.root / "build" / "final.mp4").write_bytes(b"x")
        rv = revalidate(site.write(), now=NOW)
        assert rv.decision == "continue"
        assert rv.next_action.startswith("rebuild final_media")

    def test_escalation_names_the_cause(self, site: Site) -> None:
        """An escalation's action names the first finding that forced it."""
        (site.root / "task.json").write_text(json.dumps({"state": "cancelled"}))
        rv = revalidate(site.write(), now=NOW)
        assert rv.next_action == "escalate to an operator: the task is cancelled now"

    def test_unwritable_next_is_bad_input(self, site: Site) -> None:
        """A --write-next into a missing directory is exit 2, not a crash."""
        proc = subprocess.run([sys.executable, "-m", "roadcheck", "revalidate", str(site.write()),
                               "--write-next", str(site.root / "no" / "such" / "cp.yaml")],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 2 and "cannot write the next checkpoint" in proc.stderr


class TestConfirmedSteps:
    """A step whose effect its owner confirms is done: it is never the next thing to run."""

    def _site(self, site: Site, **step: str) -> Path:
        return site.write(remaining=[{"step": "upload", "retry_class": "unsafe_to_retry",
                                      "idempotency_key": "job/upload", **step},
                                     {"step": "distribute", "retry_class": "reconcile_first"}],
                          next_action=None)

    def test_a_confirmed_step_is_done_and_not_next(self, site: Site) -> None:
        """The upload the ledger holds is reported done; the next action is the step after it,
        and the remaining steps leave it out."""
        rv = revalidate(self._site(site), now=NOW)
        assert rv.decision == "continue"
        assert [s.step for s in rv.remaining] == ["distribute"]
        assert rv.next_action == "run distribute (reconcile_first)"
        (done,) = [f for f in rv.findings if f.question == "classification"
                   and f.message.startswith("upload:")]
        assert "done" in done.message and "not repeated" in done.message

    def test_the_json_carries_the_next_action(self, site: Site) -> None:
        """--format json has the next action beside the remaining steps."""
        rv = revalidate(self._site(site), now=NOW)
        assert rv.to_dict()["next_action"] == "run distribute (reconcile_first)"

    def test_the_next_checkpoint_leaves_the_done_step_out(self, site: Site) -> None:
        """The next checkpoint's remaining steps and next action agree with the report."""
        revalidate(self._site(site), now=NOW, write_next=site.root / "next.yaml")
        doc = yaml.safe_load((site.root / "next.yaml").read_text())
        assert [s["step"] for s in doc["remaining"]] == ["distribute"]
        assert doc["next_action"] == "run distribute (reconcile_first)"

    def test_a_recorded_next_action_that_names_the_done_step_is_not_repeated(
            self, site: Site) -> None:
        """The checkpoint's own next action was written before the upload was confirmed:
        it is not said again; the report, its JSON and the next checkpoint name the step
        after it."""
        path = site.write(remaining=[{"step": "upload", "retry_class": "unsafe_to_retry",
                                      "idempotency_key": "job/upload"},
                                     {"step": "distribute", "retry_class": "reconcile_first"}],
                          next_action="run upload")
        rv = revalidate(path, now=NOW, write_next=site.root / "next.yaml")
        assert rv.next_action == "run distribute (reconcile_first)"
        assert rv.to_dict()["next_action"] == "run distribute (reconcile_first)"
        doc = yaml.safe_load((site.root / "next.yaml").read_text())
        assert doc["next_action"] == "run distribute (reconcile_first)"

    def test_a_recorded_next_action_stands_when_no_step_was_found_done(
            self, site: Site) -> None:
        path = site.write(remaining=[{"step": "distribute", "retry_class": "reconcile_first"}],
                          next_action="verify each destination first")
        assert revalidate(path, now=NOW).next_action == "verify each destination first"

    def test_the_only_step_done_closes_the_task(self, site: Site) -> None:
        """When the confirmed step was the last one, nothing remains."""
        path = site.write(remaining=[{"step": "upload", "retry_class": "unsafe_to_retry"}],
                          next_action=None)
        rv = revalidate(path, now=NOW)
        assert rv.remaining == [] and rv.next_action == "nothing remains; close the task"
        assert rv.decision == "continue"

    def test_a_step_of_an_effect_the_owner_does_not_hold_is_still_run(self, site: Site) -> None:
        """Not found in the ledger: the step stays, with its recorded class."""
        (site.root / "ledger.jsonl").write_text("")
        path = site.write(external_effects={"upload": {"state": "attempted",
                                                       "idempotency_key": "job/upload",
                                                       "ledger": "ledger.jsonl"}},
                          remaining=[{"step": "upload", "retry_class": "safe_to_retry"}],
                          next_action=None)
        rv = revalidate(path, now=NOW)
        assert [s.step for s in rv.remaining] == ["upload"]
        assert rv.next_action == "run upload (safe_to_retry)"
