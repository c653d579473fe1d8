"""roadcheck run --resume revalidates before it skips, and never re-runs an effect blindly."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from roadcheck import SpecError
from roadcheck.harness import Workflow, load_workflow_spec

ROOT = Path(__file__).resolve().parents[2]


def _kit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_resume",
                                                  ROOT / "benchmarks" / "crash_resume.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


kit = _kit()


def _run(root: Path, *, resume: bool = False, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    return kit.roadcheck(root, *kit.run_args("r1", resume), "--format", "json", env=env)


def _effects(root: Path) -> list[dict[str, object]]:
    text = (root / "runs" / "r1" / "effects.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _publishes(root: Path) -> int:
    return len((root / "ledger.jsonl").read_text().splitlines())


class TestArtifactRevalidation:
    """A passed phase whose artifact changed is gated again on resume."""

    def test_changed_artifact_is_regated(self, tmp_path: Path) -> None:
        """Tampering with a passed artifact makes the phase run again, with a note."""
        kit.setup(tmp_path)
        assert _run(tmp_path).returncode == 0
        (tmp_path / "runs" / "r1" / "build.txt").write_text("tampered")
        wf = Workflow.load(tmp_path / "workflow.json")
        result = wf.run(role="ops", identity="t", resume="r1", runs_dir=tmp_path / "runs")
        assert result.exit == 0
        assert any("artifact-changed" in n and "build.txt" in n for n in result.notes)
        assert (tmp_path / "runs" / "r1" / "build.txt").read_text() == "built"
        assert _publishes(tmp_path) == 1

    def test_unchanged_artifact_is_skipped(self, tmp_path: Path) -> None:
        """An untouched artifact keeps its pass: nothing runs again."""
        kit.setup(tmp_path)
        assert _run(tmp_path).returncode == 0
        doc = json.loads(_run(tmp_path, resume=True).stdout)
        assert doc["exit"] == 0 and [p["attempts"] for p in doc["phases"]] == [1, 1, 1]

    def test_keep_passed_trusts(self, tmp_path: Path) -> None:
        """The keep_passed revalidator still trusts a recorded pass when asked to."""
        from roadcheck.harness import keep_passed

        kit.setup(tmp_path)
        assert _run(tmp_path).returncode == 0
        (tmp_path / "runs" / "r1" / "build.txt").write_text("tampered")
        result = Workflow.load(tmp_path / "workflow.json").run(
            role="ops", identity="t", resume="r1", runs_dir=tmp_path / "runs",
            revalidate=keep_passed)
        assert result.notes == []


class TestEffects:
    """Attempted before the producer, confirmed by the gate or the reconcile step."""

    def test_states_recorded_in_order(self, tmp_path: Path) -> None:
        """A clean run records attempted then confirmed by the gate."""
        kit.setup(tmp_path)
        assert _run(tmp_path).returncode == 0
        assert [(e["state"], e["by"]) for e in _effects(tmp_path)] == [
            ("attempted", "engine"), ("confirmed", "gate")]
        assert _effects(tmp_path)[0]["idempotency_key"] == "r1/publish"

    def test_crash_after_remote_commit_is_reconciled(self, tmp_path: Path) -> None:
        """Killed after publishing, before the receipt: resume adopts the provider's record."""
        kit.setup(tmp_path)
        first = _run(tmp_path, env={"CRASH_AFTER_PUBLISH": "1"})
        assert first.returncode == -9
        assert not (tmp_path / "runs" / "r1" / "receipt.json").exists()
        second = _run(tmp_path, resume=True)
        assert second.returncode == 0, second.stderr
        assert _publishes(tmp_path) == 1
        assert [(e["state"], e["by"]) for e in _effects(tmp_path)] == [
            ("attempted", "engine"), ("confirmed", "reconcile")]
        receipt = json.loads((tmp_path / "runs" / "r1" / "receipt.json").read_text())
        assert receipt["idempotency_key"] == "r1/publish"

    def test_crash_takes_the_provider_down_with_its_parent(self, tmp_path: Path) -> None:
        """The simulated crash leaves the remote record and nothing local: no late receipt.

        The provider runs under a stand-in parent and shares this test's stdout
        pipe, so reading the pipe to its end waits until the provider itself
        has exited, however slow the machine.
        """
        kit.setup(tmp_path)
        receipt = tmp_path / "receipt.json"
        parent = ("import subprocess, sys; subprocess.run(sys.argv[1:]); "
                  "print('parent survived')")
        proc = subprocess.run(
            [sys.executable, "-c", parent, sys.executable, str(tmp_path / "provider.py"),
             "publish", str(tmp_path / "ledger.jsonl"), "r1/publish", str(receipt)],
            capture_output=True, text=True, check=False, timeout=60,
            env={**__import__("os").environ, "CRASH_AFTER_PUBLISH": "1"})
        assert proc.returncode == -9
        assert "parent survived" not in proc.stdout
        assert _publishes(tmp_path) == 1
        assert not receipt.exists()
        assert not (tmp_path / "receipt.json.tmp").exists()

    def test_unknown_unsafe_effect_stops(self, tmp_path: Path) -> None:
        """An unsafe effect whose owner gives no answer stops the run with exit 1."""
        kit.setup(tmp_path)
        assert _run(tmp_path, env={"CRASH_AFTER_PUBLISH": "1"}).returncode == -9
        proc = subprocess.run(
            [sys.executable, "-m", "roadcheck", *kit.run_args("r1", True)], cwd=tmp_path,
            capture_output=True, text=True, check=False,
            env={**__import__("os").environ, "RECONCILE_EXIT": "7"})
        assert proc.returncode == 1
        assert "reconciling gave no answer" in proc.stdout and "exited 7" in proc.stdout
        assert _publishes(tmp_path) == 1
        assert _effects(tmp_path)[-1]["state"] == "unknown"

    def test_not_found_runs_the_producer(self, tmp_path: Path) -> None:
        """When the owner has no record, the effect did not happen and is produced once."""
        kit.setup(tmp_path)
        assert _run(tmp_path, env={"CRASH_AFTER_PUBLISH": "1"}).returncode == -9
        (tmp_path / "ledger.jsonl").write_text("")  # the provider rolled it back
        assert _run(tmp_path, resume=True).returncode == 0
        assert _publishes(tmp_path) == 1
        assert [e["state"] for e in _effects(tmp_path)] == [
            "attempted", "not_found", "attempted", "confirmed"]

    def test_safe_effect_without_answer_retries(self, tmp_path: Path) -> None:
        """A safe_to_retry effect with no answer from its owner runs again."""
        path = kit.setup(tmp_path, retry_class="safe_to_retry")
        assert _run(tmp_path, env={"CRASH_AFTER_PUBLISH": "1"}).returncode == -9
        proc = subprocess.run([sys.executable, "-m", "roadcheck", *kit.run_args("r1", True)],
                              cwd=tmp_path, capture_output=True, text=True, check=False,
                              env={**__import__("os").environ, "RECONCILE_EXIT": "7"})
        assert proc.returncode == 0, proc.stdout
        assert _publishes(tmp_path) == 2 and path.exists()

    def test_effect_spec_is_validated(self, tmp_path: Path) -> None:
        """An unknown retry class in a phase effect is refused when the workflow loads."""
        path = kit.setup(tmp_path)
        doc = json.loads(path.read_text())
        doc["phases"][1]["effect"]["retry_class"] = "sometimes"
        path.write_text(json.dumps(doc))
        with pytest.raises(SpecError, match=r"effect\.retry_class"):
            load_workflow_spec(path)


class TestCrashResume:
    """SIGKILL at chosen or seeded random instants, then resume: the effect happens once."""

    def test_five_kills(self, tmp_path: Path) -> None:
        """5 kills spread over a run's first quarter second, where its phases run.

        The first three land while any machine is still starting the run, so at
        least three are kills mid-run; the later ones reach the phases.
        """
        trials = kit.run_delays(tmp_path, [0.02, 0.06, 0.10, 0.15, 0.25])
        bad = [t for t in trials if not t.clean]
        assert not bad, bad
        assert sum(t.killed for t in trials) >= 3

    @pytest.mark.stress
    def test_fifty_kills(self, tmp_path: Path) -> None:
        """50 kills: one publish each, every advance backed by evidence, chain verifies."""
        trials = kit.run_trials(tmp_path, 50, seed=20260810)
        bad = [t for t in trials if not t.clean]
        assert not bad, bad
        assert sum(t.killed for t in trials) >= 10


class TestEffectsLog:
    """The effects log survives a torn last line."""

    def test_torn_line_is_skipped_and_next_append_is_whole(self, tmp_path: Path) -> None:
        """A half-written line is ignored and the next state is still read."""
        from roadcheck.harness.resume import append_effect, effect_states

        append_effect(tmp_path, {"phase": "publish", "state": "attempted"})
        with open(tmp_path / "effects.jsonl", "ab") as fh:
            fh.write(b'{"phase": "publish", "sta')
        assert effect_states(tmp_path) == {"publish": "attempted"}
        append_effect(tmp_path, {"phase": "publish", "state": "confirmed"})
        assert effect_states(tmp_path) == {"publish": "confirmed"}
