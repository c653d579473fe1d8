"""Resume refuses broken evidence, params are fixed data, creation is exclusive, torn tails."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.evidence_layout import copy_lines, records, split, to_attempt_files

from roadcheck.cli import cli
from roadcheck.errors import RoadcheckError
from roadcheck.evidence.store import SLOT

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]

BAD_THEN_MARK = "import sys\nopen(sys.argv[1], 'w').write('bad')\n"


def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), env=env)


def _run(path: Path, runs: Path, *extra: str, role: str = "writer",
         identity: str = "alice", env: dict[str, str] | None = None) -> Any:
    return _invoke("run", str(path), "--as", role, "--identity", identity, "--runs-dir",
                   str(runs), *extra, env=env)


def _evidence(runs: Path, run_id: str = "r") -> Path:
    return runs / run_id / "evidence.jsonl"


class TestResumeRefusesBrokenEvidence:
    """Resume verifies the chain, the head and the attempt files before it acts."""

    def _failed_run(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
                    store: str = "jsonl") -> tuple[Path, Path, Path]:
        marker = tmp_path / "second-ran"
        second = f"import sys\nopen({str(marker)!r}, 'w').write('x')\n" \
                 "open(sys.argv[1], 'w').write('good')\n"
        path = workflow_file(phase("first", producer=BAD_THEN_MARK, max_attempts=1),
                             phase("second", producer=second))
        runs = tmp_path / "runs"
        result = _run(path, runs, "--run-id", "r", "--store", store)
        assert result.exit_code == 1, result.output
        return path, runs, marker

    def test_sed_edited_verdict_is_refused(self, tmp_path: Path, phase: Build,
                                           workflow_file: WriteWorkflow) -> None:
        """A failed record edited to pass (hash stale) stops resume: exit 2, evidence-broken."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file)
        ev = _evidence(runs)
        ev.write_text(ev.read_text().replace('"verdict":"fail"', '"verdict":"pass"'))
        assert _invoke("evidence", "verify", "r", "--runs-dir", str(runs)).exit_code == 1
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2, result.output
        assert "error[evidence-broken]" in result.stderr
        assert "record 1" in result.stderr
        assert not marker.exists()

    def test_sqlite_edit_is_refused(self, tmp_path: Path, phase: Build,
                                    workflow_file: WriteWorkflow) -> None:
        """The same edit in the SQLite store is refused too."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file, "sqlite")
        conn = sqlite3.connect(runs / "r" / "evidence.sqlite")
        conn.execute("UPDATE evidence SET verdict = 'pass'")
        conn.commit()
        conn.close()
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2, result.output
        assert "error[evidence-broken]" in result.stderr
        assert not marker.exists()

    def test_missing_attempt_copy_is_refused(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow) -> None:
        """An attempt copy that vanished from attempts.jsonl is broken evidence."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file)
        (runs / "r" / "attempts.jsonl").write_text("")
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2
        assert "error[evidence-broken]" in result.stderr
        assert "attempt copy of record 1 is missing from attempts.jsonl" in result.stderr
        assert not marker.exists()

    def test_edited_attempt_copy_is_refused(self, tmp_path: Path, phase: Build,
                                            workflow_file: WriteWorkflow) -> None:
        """An attempt copy edited from fail to pass no longer matches its record."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file)
        copies = runs / "r" / "attempts.jsonl"
        copies.write_text("".join(line.replace('"verdict":"fail"', '"verdict":"pass"') + "\n"
                                  for line in copy_lines(runs / "r")))
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2
        assert "error[evidence-broken]" in result.stderr
        assert "differs" in result.stderr
        assert not marker.exists()

    def test_missing_attempt_file_is_refused(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow) -> None:
        """In a run made before attempts.jsonl, a per-attempt file that vanished is broken
        evidence."""
        path, runs, _ = self._failed_run(tmp_path, phase, workflow_file)
        to_attempt_files(runs / "r")
        (runs / "r" / "phases" / "first.attempt1.fail.json").unlink()
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2
        assert "error[evidence-broken]" in result.stderr
        assert "first.attempt1.fail.json" in result.stderr

    def test_renamed_attempt_file_is_refused(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow) -> None:
        """An attempt file renamed from fail to pass no longer matches its record."""
        path, runs, _ = self._failed_run(tmp_path, phase, workflow_file)
        to_attempt_files(runs / "r")
        phases = runs / "r" / "phases"
        (phases / "first.attempt1.fail.json").rename(phases / "first.attempt1.pass.json")
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2
        assert "error[evidence-broken]" in result.stderr

    def test_cut_tail_is_refused(self, tmp_path: Path, phase: Build,
                                 workflow_file: WriteWorkflow) -> None:
        """Deleting the last record (the failure) is caught by the anchored head."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file)
        _evidence(runs).write_text("")
        (runs / "r" / "attempts.jsonl").write_text("")
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2
        assert "error[evidence-broken]" in result.stderr
        assert not marker.exists()

    def test_intact_run_resumes(self, tmp_path: Path, phase: Build,
                                workflow_file: WriteWorkflow) -> None:
        """An untouched failed run resumes and retries the failed phase."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file)
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 1, result.output
        assert "hard-stop: phase 'first'" in result.stdout
        assert not marker.exists()

    def test_intact_run_with_attempt_files_resumes_in_its_layout(
            self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """A run made before attempts.jsonl resumes and adds a file per attempt, as then."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file)
        assert not marker.exists()
        to_attempt_files(runs / "r")
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 1, result.output
        assert "hard-stop: phase 'first'" in result.stdout
        names = sorted(p.name for p in (runs / "r" / "phases").iterdir())
        assert names == ["first.attempt1.fail.json", "first.attempt2.fail.json"]
        assert not (runs / "r" / "attempts.jsonl").exists()
        assert _invoke("evidence", "verify", "r", "--runs-dir", str(runs)).exit_code == 0


class TestParamsAreData:
    """Built-in names cannot be set, undeclared params are refused, params are fixed."""

    @pytest.mark.parametrize("name", ["spec_dir", "python", "run_dir", "run_id", "artifact",
                                      "input", "phase"])
    def test_builtin_names_are_refused(self, tmp_path: Path, phase: Build,
                                       workflow_file: WriteWorkflow, name: str) -> None:
        """A producer role cannot choose the code that grades it: exit 2, nothing created."""
        path = workflow_file(phase("make"), params={"doc": ""})
        result = _run(path, tmp_path / "runs", "--run-id", "r", "--param", f"{name}=/tmp/evil")
        assert result.exit_code == 2
        assert f"'{name}' is built in" in result.stderr
        assert not (tmp_path / "runs" / "r").exists()

    def test_undeclared_param_is_refused(self, tmp_path: Path, phase: Build,
                                         workflow_file: WriteWorkflow) -> None:
        """A param the workflow does not declare is refused."""
        path = workflow_file(phase("make"), params={"doc": ""})
        result = _run(path, tmp_path / "runs", "--run-id", "r", "--param", "docs=x")
        assert result.exit_code == 2
        assert "'docs' is not declared" in result.stderr

    def test_resume_with_param_is_refused(self, tmp_path: Path, phase: Build,
                                          workflow_file: WriteWorkflow) -> None:
        """Params are fixed at creation: a later role's resume cannot change them."""
        path = workflow_file(phase("make"), phase("review", role="qa", reviews="make"),
                             params={"doc": ""})
        runs = tmp_path / "runs"
        assert _run(path, runs, "--run-id", "r", "--param", "doc=a").exit_code == 3
        result = _run(path, runs, "--resume", "r", "--param", "doc=b", role="qa",
                      identity="bob")
        assert result.exit_code == 2
        assert "fixed when the run was created" in result.stderr
        manifest = json.loads((runs / "r" / "run.json").read_text())
        assert manifest["params"] == {"doc": "a"}

    def test_params_are_in_the_chain(self, tmp_path: Path, phase: Build,
                                     workflow_file: WriteWorkflow) -> None:
        """Every record carries the sha256 of the run's params."""
        path = workflow_file(phase("make"), params={"doc": ""})
        runs = tmp_path / "runs"
        assert _run(path, runs, "--run-id", "r", "--param", "doc=a").exit_code == 0
        want = hashlib.sha256(b'{"doc":"a"}').hexdigest()
        recs = records(_evidence(runs))
        assert [r["params_sha256"] for r in recs] == [want]

    def test_edited_params_are_refused_on_resume(self, tmp_path: Path, phase: Build,
                                                 workflow_file: WriteWorkflow) -> None:
        """Editing run.json's params after creation breaks the evidence."""
        path = workflow_file(phase("make"), phase("review", role="qa", reviews="make"),
                             params={"doc": ""})
        runs = tmp_path / "runs"
        assert _run(path, runs, "--run-id", "r", "--param", "doc=a").exit_code == 3
        mpath = runs / "r" / "run.json"
        manifest = json.loads(mpath.read_text())
        manifest["params"]["doc"] = "b"
        mpath.write_text(json.dumps(manifest))
        result = _run(path, runs, "--resume", "r", role="qa", identity="bob")
        assert result.exit_code == 2
        assert "error[evidence-broken]" in result.stderr
        assert "run.json" in result.stderr

    def test_audit_shows_params(self, tmp_path: Path, phase: Build,
                                workflow_file: WriteWorkflow) -> None:
        """The audit text and HTML list the run's params."""
        path = workflow_file(phase("make"), params={"doc": ""})
        runs = tmp_path / "runs"
        _run(path, runs, "--run-id", "r", "--param", "doc=<corpus>")
        out = tmp_path / "a.html"
        result = _invoke("audit", "r", "--runs-dir", str(runs), "--html", str(out))
        assert result.exit_code == 0, result.output
        assert "params: doc=<corpus>" in result.stdout
        assert "doc</td><td>&lt;corpus&gt;" in out.read_text()


@pytest.mark.usefixtures("no_evidence_key")
class TestKeyFile:
    """``--key-file`` on run, evidence verify and audit."""

    def test_keyed_run_end_to_end(self, tmp_path: Path, phase: Build,
                                  workflow_file: WriteWorkflow) -> None:
        """Created with a key file; verify needs it; resume without it exits 2."""
        keyfile = tmp_path / "secret.key"
        keyfile.write_bytes(b"s" * 32)
        path = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
        runs = str(tmp_path / "runs")
        runner = CliRunner()
        base = ["run", str(path), "--runs-dir", runs]
        first = runner.invoke(cli, [*base, "--as", "writer", "--identity", "a", "--run-id", "r",
                                    "--key-file", str(keyfile)])
        assert first.exit_code == 3, first.output
        ok = runner.invoke(cli, ["evidence", "verify", "r", "--runs-dir", runs,
                                 "--key-file", str(keyfile)])
        assert ok.exit_code == 0 and "authenticated (hmac-sha256" in ok.stdout
        nokey = runner.invoke(cli, ["evidence", "verify", "r", "--runs-dir", runs])
        assert nokey.exit_code == 2 and "give its key" in nokey.stderr
        resumed = runner.invoke(cli, [*base, "--as", "qa", "--identity", "b", "--resume", "r"])
        assert resumed.exit_code == 2 and "give its key" in resumed.stderr
        audit = runner.invoke(cli, ["audit", "r", "--runs-dir", runs, "--key-file",
                                    str(keyfile)])
        assert audit.exit_code == 0 and "authenticated" in audit.stdout
        done = runner.invoke(cli, [*base, "--as", "qa", "--identity", "b", "--resume", "r",
                                   "--key-file", str(keyfile)])
        assert done.exit_code == 0, done.output

    def test_key_file_inside_runs_is_refused(self, tmp_path: Path, phase: Build,
                                             workflow_file: WriteWorkflow) -> None:
        """A key any writer of the runs could read is no key: exit 2."""
        (tmp_path / "runs").mkdir()
        keyfile = tmp_path / "runs" / "k"
        keyfile.write_bytes(b"s" * 32)
        result = CliRunner().invoke(cli, ["run", str(workflow_file(phase("make"))), "--as",
                                          "writer", "--runs-dir", str(tmp_path / "runs"),
                                          "--key-file", str(keyfile)])
        assert result.exit_code == 2
        assert "inside the runs directory" in result.stderr

    def test_unkeyed_verify_prints_its_limits(self, tmp_path: Path, phase: Build,
                                              workflow_file: WriteWorkflow) -> None:
        """Text output says plainly what an unkeyed check cannot detect."""
        runs = tmp_path / "runs"
        assert _run(workflow_file(phase("make")), runs, "--run-id", "r").exit_code == 0
        result = CliRunner().invoke(cli, ["evidence", "verify", "r", "--runs-dir", str(runs)])
        assert result.exit_code == 0
        assert "scope: no key: a writer of the run directory could re-hash" in result.stdout


class TestExclusiveCreation:
    """Two new runs with the same id: exactly one is created."""

    def test_concurrent_creations(self, tmp_path: Path, phase: Build,
                                  workflow_file: WriteWorkflow) -> None:
        """Of eight simultaneous creations of run 'r', one succeeds, seven say already exists."""
        from roadcheck.harness import Workflow

        wf = Workflow.load(workflow_file(phase("make")))
        barrier = threading.Barrier(8)
        outcomes: list[str] = []

        def create() -> None:
            barrier.wait()
            try:
                wf.run(role="writer", identity="alice", run_id="r", runs_dir=tmp_path / "runs")
                outcomes.append("ok")
            except RoadcheckError as exc:
                outcomes.append(f"{exc.exit_code} {exc.message}")

        threads = [threading.Thread(target=create) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outcomes.count("ok") == 1, outcomes
        assert all(o.startswith("2 ") and "already exists" in o for o in outcomes if o != "ok")


class TestTornTail:
    """A torn last line that never committed is set aside on resume."""

    def _paused(self, tmp_path: Path, phase: Build,
                workflow_file: WriteWorkflow) -> tuple[Path, Path]:
        path = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
        runs = tmp_path / "runs"
        assert _run(path, runs, "--run-id", "r").exit_code == 3
        return path, runs

    def test_uncommitted_torn_line_is_set_aside(self, tmp_path: Path, phase: Build,
                                                workflow_file: WriteWorkflow) -> None:
        """The bytes move to evidence.torn.1, the store is cut back, the run goes on."""
        path, runs = self._paused(tmp_path, phase, workflow_file)
        ev = _evidence(runs)
        intact = ev.read_bytes()
        with open(ev, "ab") as fh:
            fh.write(b'{"run_id":"r","phase":"review","verd')
        result = _run(path, runs, "--resume", "r", "--format", "text", role="qa",
                      identity="bob")
        assert result.exit_code == 0, result.output
        assert "set aside" in result.stdout
        assert (runs / "r" / "evidence.torn.1").read_bytes() == b'{"run_id":"r","phase":' \
                                                                 b'"review","verd'
        # the head line moved on (the run went on); the records before the torn line stay
        assert split(ev)[1].startswith(intact[SLOT:])
        assert _invoke("evidence", "verify", "r", "--runs-dir", str(runs)).exit_code == 0
        audit = _invoke("audit", "r", "--runs-dir", str(runs))
        assert "evidence.torn.1" in audit.stdout

    def test_committed_torn_line_is_broken(self, tmp_path: Path, phase: Build,
                                           workflow_file: WriteWorkflow) -> None:
        """A last record the head counts, with its newline cut off, is broken evidence."""
        path, runs = self._paused(tmp_path, phase, workflow_file)
        ev = _evidence(runs)
        ev.write_bytes(ev.read_bytes()[:-20])
        result = _run(path, runs, "--resume", "r", role="qa", identity="bob")
        assert result.exit_code == 2
        assert "error[evidence-broken]" in result.stderr
        assert not (runs / "r" / "evidence.torn.1").exists()


class TestRecordShape:
    """A record that chains and is counted by the head must still have the record's shape."""

    # a list does not fit a SQLite column, and its CHECK constraint refuses another verdict
    @pytest.mark.parametrize(("store", "field", "value"), [
        ("jsonl", "attempt", "one"), ("sqlite", "attempt", "one"), ("jsonl", "iteration", [1]),
        ("sqlite", "iteration", 1.5), ("jsonl", "verdict", "maybe"), ("jsonl", "gate", "ok"),
        ("sqlite", "gate", "ok"), ("jsonl", "run_id", "another-run"),
        ("sqlite", "run_id", "another-run")])
    def test_mistyped_rehashed_record_is_refused(self, tmp_path: Path, phase: Build,
                                                 workflow_file: WriteWorkflow, store: str,
                                                 field: str, value: Any) -> None:
        """Without a key a writer can re-hash a mistyped record: resume refuses it, exit 2."""
        from ..evidence.test_tamper_matrix import matching_head, read_state, rehash, write_state

        marker = tmp_path / "second-ran"
        second = f"import sys\nopen({str(marker)!r}, 'w').write('x')\n" \
                 "open(sys.argv[1], 'w').write('good')\n"
        path = workflow_file(phase("first", producer=BAD_THEN_MARK, max_attempts=1),
                             phase("second", producer=second))
        runs = tmp_path / "runs"
        assert _run(path, runs, "--run-id", "r", "--store", store).exit_code == 1
        records, head = read_state(runs / "r", store)
        records[0][field] = value
        rehash(records)
        write_state(runs / "r", store, records, matching_head(head, records))
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2, (result.output, result.stderr)
        assert "error[evidence-broken]" in result.stderr
        assert field in result.stderr
        assert not marker.exists()
        # verify and audit name the same record; neither crashes on its shape
        verify = _invoke("evidence", "verify", "r", "--runs-dir", str(runs))
        assert verify.exit_code == 1, (verify.output, verify.exception)
        assert "BROKEN (malformed)" in verify.stdout and field in verify.stdout
        for fmt in ("text", "html"):
            extra = ("--html", str(tmp_path / "audit.html")) if fmt == "html" else ()
            audit = _invoke("audit", "r", "--runs-dir", str(runs), *extra)
            assert audit.exit_code == 1, (audit.output, audit.exception)
            assert "malformed" in audit.stdout


class TestGatingIsFixed:
    """A resume never changes gating: ``gated`` in run.json cannot switch the gates off."""

    def _failed_run(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
                    store: str) -> tuple[Path, Path, Path]:
        marker = tmp_path / "second-ran"
        second = f"import sys\nopen({str(marker)!r}, 'w').write('x')\n" \
                 "open(sys.argv[1], 'w').write('good')\n"
        path = workflow_file(phase("first", producer=BAD_THEN_MARK, max_attempts=1),
                             phase("second", producer=second))
        runs = tmp_path / "runs"
        assert _run(path, runs, "--run-id", "r", "--store", store).exit_code == 1
        return path, runs, marker

    @pytest.mark.parametrize("store", ["jsonl", "sqlite"])
    @pytest.mark.parametrize("value", [False, 0, [], None, "false", {}])
    def test_retyped_gated_is_refused(self, tmp_path: Path, phase: Build,
                                      workflow_file: WriteWorkflow, store: str,
                                      value: Any) -> None:
        """``gated`` set to anything but true (false included) stops resume: exit 2."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file, store)
        manifest = runs / "r" / "run.json"
        doc = json.loads(manifest.read_text())
        doc["gated"] = value
        manifest.write_text(json.dumps(doc))
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2, result.output
        assert "gated" in result.stderr or "evidence-broken" in result.stderr
        assert not marker.exists()

    def test_gated_key_removed_is_refused(self, tmp_path: Path, phase: Build,
                                          workflow_file: WriteWorkflow) -> None:
        """A manifest without ``gated`` is not read as gated or ungated: exit 2."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file, "jsonl")
        manifest = runs / "r" / "run.json"
        doc = json.loads(manifest.read_text())
        del doc["gated"]
        manifest.write_text(json.dumps(doc))
        assert _run(path, runs, "--resume", "r").exit_code == 2
        assert not marker.exists()

    def test_duplicate_key_in_run_json_is_refused(self, tmp_path: Path, phase: Build,
                                                  workflow_file: WriteWorkflow) -> None:
        """A key twice in run.json means what the reader decides: refused, never read."""
        path, runs, marker = self._failed_run(tmp_path, phase, workflow_file, "jsonl")
        manifest = runs / "r" / "run.json"
        manifest.write_text(manifest.read_text().replace('"gated": true',
                                                         '"gated": false, "gated": true'))
        result = _run(path, runs, "--resume", "r")
        assert result.exit_code == 2, result.output
        assert "duplicate key 'gated'" in result.stderr
        assert _invoke("evidence", "verify", "r", "--runs-dir", str(runs)).exit_code == 2
        assert not marker.exists()

    def test_ungated_run_is_not_resumed(self, tmp_path: Path, phase: Build,
                                        workflow_file: WriteWorkflow) -> None:
        """An ungated run (a baseline without evidence) cannot be resumed into a pass."""
        import roadcheck

        path = workflow_file(phase("first"))
        runs = tmp_path / "runs"
        wf = roadcheck.Workflow.load(str(path))
        wf.run(role="writer", identity="alice", runs_dir=runs, run_id="u", gated=False)
        result = _run(path, runs, "--resume", "u")
        assert result.exit_code == 2, result.output
        assert "ungated" in result.stderr
        # flipped to gated, it has no head to anchor anything: still refused
        manifest = runs / "u" / "run.json"
        manifest.write_text(manifest.read_text().replace('"gated": false', '"gated": true'))
        result = _run(path, runs, "--resume", "u")
        assert result.exit_code == 2, result.output
        assert "error[evidence-broken]" in result.stderr
