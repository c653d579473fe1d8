"""``roadcheck worker`` against a real PostgreSQL store: roles, claims, kills and takeovers.

Workers run as separate processes, as they would on separate machines; they
share the database and, here, one runs directory for artifacts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli
from roadcheck.evidence.postgres import verify_pg_run

from ..postgres import sql

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]

#: Appends its pid and run id to LOG, sleeps on the first call of a run when SLOW, writes "good".
PRODUCER = """
import os, sys, time
log = {log!r}
with open(log, "a") as fh:
    fh.write(f"{{os.getpid()}} {{os.environ['ROADCHECK_RUN_ID']}}\\n")
    fh.flush()
    os.fsync(fh.fileno())
if {slow!r} and len(open(log).read().splitlines()) == 1:
    time.sleep(120)
time.sleep({pause!r})
open(sys.argv[1], "w").write("good")
"""


pytestmark = pytest.mark.usefixtures("no_evidence_key")


class Workers:
    """Worker processes of one test, each in its own session; all killed at the end."""

    def __init__(self, workflow: Path, url: str, runs: Path) -> None:
        self.workflow, self.url, self.runs = workflow, url, runs
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, role: str, identity: str, *extra: str) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROADCHECK_")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "roadcheck", "worker", str(self.workflow), "--store", self.url,
             "--as", role, "--identity", identity, "--runs-dir", str(self.runs),
             "--lease", "2", "--poll", "0.1", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[str]) -> tuple[int, str, str]:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out, err

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()


@pytest.fixture
def workers(tmp_path: Path, url: str) -> Iterator[Callable[[Path], Workers]]:
    made: list[Workers] = []

    def make(workflow: Path) -> Workers:
        made.append(Workers(workflow, url, tmp_path / "runs"))
        return made[-1]

    yield make
    for w in made:
        w.kill_all()


def submit(workflow: Path, url: str, tmp_path: Path, run_id: str) -> None:
    """Create a run without working any phase."""
    result = CliRunner().invoke(cli, ["submit", str(workflow), "--store", url,
                                      "--run-id", run_id, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 3, result.output


def wait_for(url: str, condition: str, within: float = 60.0) -> None:
    """Wait until ``SELECT bool_and(<condition>) FROM roadcheck_runs`` holds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        (row,) = sql(url, f"SELECT coalesce(bool_and({condition}), false) FROM roadcheck_runs")
        if row[0]:
            return
        time.sleep(0.1)
    rows = sql(url, "SELECT * FROM roadcheck_runs")
    raise AssertionError(f"runs never reached {condition}: {rows}")


def wait_lines(path: Path, n: int, within: float = 30.0) -> list[str]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= n:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{path} never had {n} lines")


def records(url: str, run_id: str) -> list[tuple[Any, ...]]:
    return sql(url, "SELECT phase, attempt, verdict, role, identity FROM roadcheck_evidence "
                    "WHERE run_id = %s ORDER BY position", run_id)


def reap(log: Path) -> None:
    """Kill producers left running by a killed worker (they live in their own session)."""
    for line in log.read_text().splitlines() if log.exists() else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split()[0]), signal.SIGKILL)


class TestWorkers:
    """Producer, reviewer and publisher as separate processes on one database."""

    def test_two_roles_complete_a_run(self, tmp_path: Path, url: str, phase: Build,
                                      workflow_file: WriteWorkflow,
                                      workers: Callable[[Path], Workers]) -> None:
        """A writer and a reviewer worker complete a run; SIGTERM stops each with exit 0."""
        log = tmp_path / "log"
        body = PRODUCER.format(log=str(log), slow=False, pause=0)
        wf = workflow_file(phase("make", producer=body),
                           phase("review", role="qa", reviews="make", producer=body),
                           phase("publish", producer=body))
        submit(wf, url, tmp_path, "r1")
        pool = workers(wf)
        writer, reviewer = pool.start("writer", "alice"), pool.start("qa", "bob")
        wait_for(url, "status = 'completed'")
        for proc in (writer, reviewer):
            code, _out, err = pool.stop(proc)
            assert code == 0, err
        assert records(url, "r1") == [("make", 1, "pass", "writer", "alice"),
                                      ("review", 1, "pass", "qa", "bob"),
                                      ("publish", 1, "pass", "writer", "alice")]
        assert verify_pg_run(url, "r1", None).ok
        audit = CliRunner().invoke(cli, ["audit", "r1", "--store", url])
        assert audit.exit_code == 0 and "(postgres store)" in audit.stdout

    def test_a_reviewer_never_reviews_its_own_work(self, tmp_path: Path, url: str,
                                                   phase: Build, workflow_file: WriteWorkflow,
                                                   workers: Callable[[Path], Workers]) -> None:
        """The identity is the worker's: alice as qa is never handed what alice produced."""
        wf = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
        runs = str(tmp_path / "runs")
        made = CliRunner().invoke(cli, ["run", str(wf), "--store", url, "--as", "writer",
                                        "--identity", "alice", "--run-id", "r1",
                                        "--runs-dir", runs])
        assert made.exit_code == 3 and "SOMEONE_OTHER_THAN_alice" in made.stdout
        proc = workers(wf).start("qa", "alice", "--once")
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert [r[0] for r in records(url, "r1")] == ["make"]
        (state,) = sql(url, "SELECT next_role, barred_identity, claims FROM roadcheck_runs")
        assert state == ("qa", "alice", 1)
        again = CliRunner().invoke(cli, ["run", str(wf), "--store", url, "--as", "qa",
                                         "--identity", "bob", "--resume", "r1",
                                         "--runs-dir", runs, "--format", "json"])
        assert again.exit_code == 0, again.output
        assert json.loads(again.stdout)["status"] == "completed"

    def test_two_workers_of_one_role_never_take_the_same_phase(
            self, tmp_path: Path, url: str, phase: Build, workflow_file: WriteWorkflow,
            workers: Callable[[Path], Workers]) -> None:
        """Six runs, two writer workers: each phase is produced once and recorded once."""
        log = tmp_path / "log"
        wf = workflow_file(phase("make", producer=PRODUCER.format(log=str(log), slow=False,
                                                                  pause=0.3)))
        ids = [f"r{i}" for i in range(6)]
        for run_id in ids:
            submit(wf, url, tmp_path, run_id)
        pool = workers(wf)
        procs = [pool.start("writer", "w1"), pool.start("writer", "w2")]
        wait_for(url, "status = 'completed'")
        for proc in procs:
            assert pool.stop(proc)[0] == 0
        produced = sorted(line.split()[1] for line in log.read_text().splitlines())
        assert produced == ids
        for run_id in ids:
            assert records(url, run_id) == [("make", 1, "pass", "writer", records(
                url, run_id)[0][4])]
        assert sql(url, "SELECT DISTINCT claims FROM roadcheck_runs") == [(1,)]
        owners = {r[0] for r in sql(url, "SELECT identity FROM roadcheck_evidence")}
        assert owners <= {"w1", "w2"}

    def test_a_killed_worker_is_taken_over_after_its_lease(
            self, tmp_path: Path, url: str, phase: Build, workflow_file: WriteWorkflow,
            workers: Callable[[Path], Workers]) -> None:
        """kill -9 mid-phase: the lease expires, another worker runs the phase, once."""
        log = tmp_path / "log"
        wf = workflow_file(phase("make", producer=PRODUCER.format(log=str(log), slow=True,
                                                                  pause=0)),
                           phase("check", role="qa", reviews="make"))
        submit(wf, url, tmp_path, "r1")
        pool = workers(wf)
        try:
            first = pool.start("writer", "w1")
            wait_lines(log, 1)
            os.killpg(first.pid, signal.SIGKILL)
            first.communicate()
            second = pool.start("writer", "w2")
            wait_for(url, "next_role = 'qa'")
            assert pool.stop(second)[0] == 0
        finally:
            reap(log)
        assert len(log.read_text().splitlines()) == 2  # the first producer never finished
        assert records(url, "r1") == [("make", 1, "pass", "writer", "w2")]
        assert sql(url, "SELECT claims, lease_owner FROM roadcheck_runs") == [(2, None)]
        assert verify_pg_run(url, "r1", None).ok

    def test_an_effect_is_reconciled_not_repeated(
            self, tmp_path: Path, url: str, phase: Build, script: Callable[[str, str], str],
            workflow_file: WriteWorkflow, workers: Callable[[Path], Workers]) -> None:
        """A worker killed after its effect happened: the next one asks the owner, never redoes."""
        ledger = tmp_path / "ledger"
        produce = f"""
import os, sys, time
with open({str(ledger)!r}, "a") as fh:
    fh.write(f"{{os.getpid()}} sent\\n")
time.sleep(120)
"""
        reconcile = script("reconcile.py", f"""
import os, sys
if os.path.exists({str(ledger)!r}) and open({str(ledger)!r}).read():
    print("good", end="")
    sys.exit(0)
sys.exit(1)
""")
        wf = workflow_file(phase("send", producer=produce,
                                 effect={"retry_class": "unsafe_to_retry",
                                         "reconcile": ["{python}", reconcile]}))
        submit(wf, url, tmp_path, "r1")
        pool = workers(wf)
        try:
            first = pool.start("writer", "w1")
            wait_lines(ledger, 1)
            os.killpg(first.pid, signal.SIGKILL)
            first.communicate()
            second = pool.start("writer", "w2")
            wait_for(url, "status = 'completed'")
            assert pool.stop(second)[0] == 0
        finally:
            reap(ledger)
        assert len(ledger.read_text().splitlines()) == 1
        assert records(url, "r1") == [("send", 1, "pass", "writer", "w2")]
        states = [json.loads(str(r[0]))["state"] for r in sql(
            url, "SELECT entry FROM roadcheck_effects ORDER BY position")]
        assert states == ["attempted", "confirmed"]

    def test_resuming_an_edited_completed_run_is_refused(self, tmp_path: Path, url: str,
                                                          phase: Build,
                                                          workflow_file: WriteWorkflow) -> None:
        """Resuming a finished run whose record was edited refuses like the file stores
        (exit 2, naming the record), never reports it completed; a paused run that cannot
        be claimed is verified the same way."""
        wf = workflow_file(phase("make"), phase("publish"))
        runs = str(tmp_path / "runs")
        args = ["run", str(wf), "--store", url, "--as", "writer", "--identity", "alice",
                "--runs-dir", runs]
        made = CliRunner().invoke(cli, [*args, "--run-id", "r1"])
        assert made.exit_code == 0, made.output
        again = CliRunner().invoke(cli, [*args, "--resume", "r1"])
        assert again.exit_code == 0 and "completed" in again.stdout
        sql(url, "UPDATE roadcheck_evidence SET identity = 'mallory' WHERE position = 2")
        result = CliRunner().invoke(cli, [*args, "--resume", "r1"])
        assert result.exit_code == 2, result.output
        assert "record 2" in result.stderr and "was edited" in result.stderr
        assert "resume refused" in result.stderr
        assert "completed" not in result.stdout


class TestSubmit:
    """``roadcheck submit`` creates a run on the store and works none of its phases."""

    def test_a_submitted_run_waits_for_its_first_role(self, tmp_path: Path, url: str,
                                                      phase: Build,
                                                      workflow_file: WriteWorkflow) -> None:
        """Exit 3, no record, no artifact; the next line is the worker that takes it."""
        wf = workflow_file(phase("make"), phase("review", role="qa", reviews="make"),
                           params={"topic": "default"})
        runs = tmp_path / "runs"
        result = CliRunner().invoke(cli, ["submit", str(wf), "--store", url, "--run-id", "r1",
                                          "--param", "topic=rates", "--runs-dir", str(runs),
                                          "--format", "json"])
        assert result.exit_code == 3, result.output
        doc = json.loads(result.stdout)
        assert doc["run_id"] == "r1" and doc["status"] == "paused"
        assert doc["waiting_for"] == "writer"
        assert [p["status"] for p in doc["phases"]] == ["pending", "pending"]
        assert doc["next_command"].startswith(f"roadcheck worker {wf} --store ")
        assert doc["next_command"].endswith(f"--as writer --runs-dir {runs}")
        assert records(url, "r1") == []
        assert not runs.exists()
        (state,) = sql(url, "SELECT status, next_role, claims FROM roadcheck_runs")
        assert state == ("open", "writer", 0)
        ((manifest,),) = sql(url, "SELECT manifest FROM roadcheck_runs WHERE run_id = 'r1'")
        assert json.loads(str(manifest))["params"] == {"topic": "rates"}

    def test_a_worker_completes_a_submitted_run(self, tmp_path: Path, url: str, phase: Build,
                                                workflow_file: WriteWorkflow) -> None:
        """The run submitted is the one the worker of its role takes and completes."""
        wf = workflow_file(phase("make"))
        submit(wf, url, tmp_path, "r1")
        done = CliRunner().invoke(cli, ["worker", str(wf), "--store", url, "--as", "writer",
                                        "--identity", "alice", "--once",
                                        "--runs-dir", str(tmp_path / "runs")])
        assert done.exit_code == 0, done.output
        assert records(url, "r1") == [("make", 1, "pass", "writer", "alice")]
        assert verify_pg_run(url, "r1", None).ok

    @pytest.mark.parametrize(("args", "message"), [
        (["--param", "nope=1"], "nope"),
        (["--run-id", "../x"], "run id"),
        (["--store", "sqlite"], "is not a postgresql:// URL"),
    ])
    def test_bad_input_creates_nothing(self, tmp_path: Path, url: str, phase: Build,
                                       workflow_file: WriteWorkflow, args: list[str],
                                       message: str) -> None:
        """An undeclared param, a bad run id or a store that is no URL: exit 2, one line."""
        wf = workflow_file(phase("make"))
        result = CliRunner().invoke(cli, ["submit", str(wf), "--store", url, *args])
        assert result.exit_code == 2, result.output
        assert message in result.stderr and len(result.stderr.splitlines()) == 1
        if "--store" not in args:
            assert sql(url, "SELECT count(*) FROM roadcheck_runs") == [(0,)]

    def test_a_run_id_taken_is_refused(self, tmp_path: Path, url: str, phase: Build,
                                       workflow_file: WriteWorkflow) -> None:
        """Submitting the same run id twice is exit 2; the first run is untouched."""
        wf = workflow_file(phase("make"))
        submit(wf, url, tmp_path, "r1")
        again = CliRunner().invoke(cli, ["submit", str(wf), "--store", url, "--run-id", "r1"])
        assert again.exit_code == 2, again.output
        assert len(again.stderr.splitlines()) == 1
        assert sql(url, "SELECT count(*) FROM roadcheck_runs") == [(1,)]


class TestWorkerErrors:
    """Bad input is one line and exit 2."""

    def test_a_store_that_is_not_a_url(self, tmp_path: Path, phase: Build,
                                       workflow_file: WriteWorkflow) -> None:
        """--store of a worker must be a postgresql:// URL."""
        wf = workflow_file(phase("make"))
        result = CliRunner().invoke(cli, ["worker", str(wf), "--store", "sqlite", "--as", "w"])
        assert result.exit_code == 2
        assert "is not a postgresql:// URL" in result.stderr

    def test_an_unreachable_database(self, tmp_path: Path, phase: Build,
                                     workflow_file: WriteWorkflow) -> None:
        """A database that does not answer is exit 2 with one line, no traceback."""
        wf = workflow_file(phase("make"))
        result = CliRunner().invoke(cli, ["worker", str(wf), "--store",
                                          "postgresql://u:pw@127.0.0.1:1/x", "--as", "w",
                                          "--identity", "a", "--once",
                                          "--runs-dir", str(tmp_path / "runs")])
        assert result.exit_code == 2
        assert result.stderr.startswith("error[") and "pw" not in result.stderr
        assert len(result.stderr.splitlines()) == 1


    def test_an_agent_phase_without_its_api_key(self, tmp_path: Path, url: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """No API key for a model phase: a worker stops before it claims, a run before it exists."""
        monkeypatch.delenv("ROADCHECK_TEST_MISSING_KEY", raising=False)
        wf = tmp_path / "wf.yaml"
        wf.write_text(
            "workflow: drafted\n"
            "phases:\n"
            "  - name: draft\n"
            "    role: writer\n"
            "    producer:\n"
            "      agent:\n"
            "        provider: openai\n"
            "        base_url: http://127.0.0.1:9/v1\n"
            "        model: m\n"
            "        api_key_env: ROADCHECK_TEST_MISSING_KEY\n"
            "        task: write it\n"
            "    artifact: draft.md\n"
            "    gate: {command: [\"true\"]}\n")
        worker = ["worker", str(wf), "--store", url, "--as", "writer", "--identity", "a",
                  "--once", "--runs-dir", str(tmp_path / "runs")]
        run = ["run", str(wf), "--store", url, "--as", "writer", "--identity", "a",
               "--runs-dir", str(tmp_path / "runs")]
        for args in (worker, run):
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 2, result.output
            assert "phases[0].producer.agent" in result.stderr
            assert "ROADCHECK_TEST_MISSING_KEY" in result.stderr
            assert len(result.stderr.splitlines()) == 1
        assert not (tmp_path / "runs").exists()
        # nothing was written to the database either: not even the schema
        assert sql(url, "SELECT to_regclass('roadcheck_runs')") == [(None,)]


class TestKillStress:
    """kill -9 of a worker at random instants, each run finished by another worker."""

    @pytest.mark.stress
    def test_fifty_kills(self, tmp_path: Path, url: str, phase: Build,
                         script: Callable[[str, str], str], workflow_file: WriteWorkflow,
                         workers: Callable[[Path], Workers]) -> None:
        """50 kills: every phase recorded once, the effect happened once, every chain verifies."""
        import random

        ledger = tmp_path / "ledger"
        # Each phase takes a while, so that most kills (0.1-0.9 s after the worker starts)
        # land while the run is going on whatever the machine's speed: a run that finished
        # before its kill tests nothing.
        quick = "import sys, time\ntime.sleep(0.2)\nopen(sys.argv[1], 'w').write('good')\n"
        send = f"""
import os, sys, time
time.sleep(0.05)
with open({str(ledger)!r}, "a") as fh:
    fh.write(os.environ["ROADCHECK_RUN_ID"] + "\\n")
time.sleep(0.05)
open(sys.argv[1], "w").write("good")
"""
        reconcile = script("reconcile.py", f"""
import os, sys
run = os.environ["ROADCHECK_RUN_ID"]
if os.path.exists({str(ledger)!r}) and run in open({str(ledger)!r}).read().split():
    print("good", end="")
    sys.exit(0)
sys.exit(1)
""")
        wf = workflow_file(phase("a", producer=quick), phase("b", producer=quick),
                           phase("send", producer=send,
                                 effect={"retry_class": "unsafe_to_retry",
                                         "reconcile": ["{python}", reconcile]}),
                           phase("c", producer=quick))
        pool = workers(wf)
        rng = random.Random(20261201)
        killed = 0
        for n in range(50):
            run_id = f"r{n}"
            submit(wf, url, tmp_path, run_id)
            first = pool.start("writer", "w1", "--lease", "1")
            time.sleep(rng.uniform(0.1, 0.9))
            os.killpg(first.pid, signal.SIGKILL)
            first.communicate()
            if sql(url, "SELECT status FROM roadcheck_runs WHERE run_id = %s", run_id) != [
                    ("completed",)]:
                killed += 1
                second = pool.start("writer", "w2", "--lease", "1")
                wait_for(url, "status = 'completed'")
                assert pool.stop(second)[0] == 0
            phases = [r[0] for r in records(url, run_id)]
            assert phases == ["a", "b", "send", "c"], (run_id, phases)
            assert verify_pg_run(url, run_id, None).ok
            assert ledger.read_text().split().count(run_id) == 1, run_id
        assert killed >= 25, killed  # the others landed after the run completed

    def test_run_refuses_a_store_that_is_neither(self, tmp_path: Path, phase: Build,
                                                 workflow_file: WriteWorkflow) -> None:
        """roadcheck run --store takes jsonl, sqlite or a postgresql:// URL, nothing else."""
        wf = workflow_file(phase("make"))
        result = CliRunner().invoke(cli, ["run", str(wf), "--store", "mysql://x", "--as", "w",
                                          "--runs-dir", str(tmp_path / "runs")])
        assert result.exit_code == 2
        assert "is not jsonl, sqlite or a postgresql:// URL" in result.stderr

    def test_a_run_held_by_a_worker_is_reported_paused(self, tmp_path: Path, url: str,
                                                       phase: Build,
                                                       workflow_file: WriteWorkflow) -> None:
        """Resuming a run another worker holds changes nothing and names the holder."""
        wf = workflow_file(phase("make"))
        submit(wf, url, tmp_path, "r1")
        sql(url, "UPDATE roadcheck_runs SET lease_token = 'x', lease_owner = 'w9', "
                 "lease_expires = now() + interval '1 hour'")
        result = CliRunner().invoke(cli, ["run", str(wf), "--store", url, "--as", "writer",
                                          "--identity", "a", "--resume", "r1",
                                          "--runs-dir", str(tmp_path / "runs")])
        assert result.exit_code == 3
        assert "held by worker 'w9'" in result.stdout
        assert records(url, "r1") == []

    def test_a_tampered_run_is_not_worked(self, tmp_path: Path, url: str, phase: Build,
                                          workflow_file: WriteWorkflow) -> None:
        """A worker verifies the chain before it acts: an edited record stops it (exit 2)."""
        wf = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
        runs = str(tmp_path / "runs")
        made = CliRunner().invoke(cli, ["run", str(wf), "--store", url, "--as", "writer",
                                        "--identity", "alice", "--run-id", "r1",
                                        "--runs-dir", runs])
        assert made.exit_code == 3
        sql(url, "UPDATE roadcheck_evidence SET identity = 'mallory'")
        result = CliRunner().invoke(cli, ["worker", str(wf), "--store", url, "--as", "qa",
                                          "--identity", "bob", "--once", "--runs-dir", runs])
        assert result.exit_code == 2
        assert "was edited" in result.stderr
        assert [r[0] for r in records(url, "r1")] == ["make"]
        (state,) = sql(url, "SELECT lease_owner, status FROM roadcheck_runs")
        assert state == (None, "open")  # given back untouched
