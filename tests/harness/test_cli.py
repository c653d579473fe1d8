"""Tests for ``roadcheck run`` and ``roadcheck audit`` through the click runner."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from roadcheck.cli import cli

Build = Callable[..., dict[str, Any]]
WriteWorkflow = Callable[..., Path]

SCRIPT_PRODUCER = ("import sys\nopen(sys.argv[1], 'w').write("
                   "'<script>alert(1)</script> & \"quotes\"')\n")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


class TestRunCommand:
    """``roadcheck run`` exit codes and its JSON document."""

    def test_completed_json_shape(self, tmp_path: Path, phase: Build,
                                  workflow_file: WriteWorkflow) -> None:
        """A completed run exits 0 and prints the public JSON shape."""
        path = workflow_file(phase("make"))
        result = _invoke("run", str(path), "--as", "writer", "--identity", "alice",
                         "--run-id", "r1", "--runs-dir", str(tmp_path / "runs"),
                         "--format", "json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert {k: doc[k] for k in ("run_id", "workflow", "status", "exit")} == {
            "run_id": "r1", "workflow": "wf", "status": "completed", "exit": 0}
        assert doc["phases"] == [{"name": "make", "status": "passed", "attempts": 1,
                                  "iteration": 1}]

    def test_pause_then_resume_with_sqlite(self, tmp_path: Path, phase: Build,
                                           workflow_file: WriteWorkflow) -> None:
        """Exit 3 while waiting for the reviewer, 0 after the reviewer resumes; rows in SQLite."""
        path = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
        runs = str(tmp_path / "runs")
        first = _invoke("run", str(path), "--as", "writer", "--identity", "alice",
                        "--run-id", "r2", "--runs-dir", runs, "--store", "sqlite")
        assert first.exit_code == 3
        assert "paused: waiting for role 'qa'" in first.stdout
        second = _invoke("run", str(path), "--as", "qa", "--identity", "bob", "--resume", "r2",
                         "--runs-dir", runs)
        assert second.exit_code == 0, second.output
        conn = sqlite3.connect(tmp_path / "runs" / "r2" / "evidence.sqlite")
        try:
            rows = conn.execute("SELECT phase, verdict, identity FROM evidence").fetchall()
        finally:
            conn.close()
        assert rows == [("make", "pass", "alice"), ("review", "pass", "bob")]

    def test_refused_review_exits_1(self, tmp_path: Path, phase: Build,
                                    workflow_file: WriteWorkflow) -> None:
        """The producing identity resuming as reviewer is refused with exit 1."""
        path = workflow_file(phase("make"), phase("review", role="qa", reviews="make"))
        runs = str(tmp_path / "runs")
        _invoke("run", str(path), "--as", "writer", "--identity", "alice", "--run-id", "r3",
                "--runs-dir", runs)
        result = _invoke("run", str(path), "--as", "qa", "--identity", "alice", "--resume",
                         "r3", "--runs-dir", runs, "--format", "json")
        assert result.exit_code == 1
        doc = json.loads(result.stdout)
        assert (doc["status"], doc["reason"]) == ("refused", "role-guard-refused")

    def test_hard_stop_exits_1_with_diagnostic(self, tmp_path: Path, phase: Build,
                                               workflow_file: WriteWorkflow) -> None:
        """A phase out of attempts exits 1 and prints the last gate output."""
        bad = "import sys\nopen(sys.argv[1], 'w').write('bad')\n"
        path = workflow_file(phase("make", producer=bad, max_attempts=2))
        result = _invoke("run", str(path), "--as", "writer", "--runs-dir",
                         str(tmp_path / "runs"))
        assert result.exit_code == 1
        assert "hard-stop: phase 'make' failed 2 of 2 attempts" in result.stdout
        assert "  | expected good, found 'bad'" in result.stdout

    def test_bad_param(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow) -> None:
        """A --param without '=' is a usage error (exit 2)."""
        result = _invoke("run", str(workflow_file(phase("make"))), "--as", "w", "--param", "x")
        assert result.exit_code == 2


class TestAuditCommand:
    """``roadcheck audit`` text and the self-contained HTML page."""

    def _run_with_markup(self, tmp_path: Path, phase: Build, workflow_file: WriteWorkflow,
                         script: Callable[[str, str], str]) -> str:
        echo = script("echo_gate.py", "import sys\nprint(open(sys.argv[1]).read())\n"
                                      "sys.exit(1)\n")
        gate = {"command": ["{python}", echo, "{artifact}"]}
        path = workflow_file(phase("make", producer=SCRIPT_PRODUCER, gate=gate, max_attempts=1))
        runs = str(tmp_path / "runs")
        _invoke("run", str(path), "--as", "writer", "--identity", "<b>eve</b>", "--run-id", "r",
                "--runs-dir", runs)
        return runs

    def test_html_escapes_every_value(self, tmp_path: Path, phase: Build,
                                      workflow_file: WriteWorkflow,
                                      script: Callable[[str, str], str]) -> None:
        """Gate output holding <script> is escaped; the page has no script or external fetch."""
        runs = self._run_with_markup(tmp_path, phase, workflow_file, script)
        out = tmp_path / "audit.html"
        result = _invoke("audit", "r", "--runs-dir", runs, "--html", str(out))
        assert result.exit_code == 0, result.output
        page = out.read_text()
        assert "<script" not in page.lower()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "&lt;b&gt;eve&lt;/b&gt;" in page
        assert not re.search(r"(src|href)\s*=", page)
        assert "FAIL" in page
        assert "hash chain intact" in page

    def test_audit_of_tampered_run_exits_1(self, tmp_path: Path, phase: Build,
                                           workflow_file: WriteWorkflow,
                                           script: Callable[[str, str], str]) -> None:
        """The audit says BROKEN and exits 1 when a record was edited."""
        runs = self._run_with_markup(tmp_path, phase, workflow_file, script)
        ev = Path(runs) / "r" / "evidence.jsonl"
        ev.write_text(ev.read_text().replace('"verdict":"fail"', '"verdict":"pass"'))
        result = _invoke("audit", "r", "--runs-dir", runs)
        assert result.exit_code == 1
        assert "chain: BROKEN" in result.stdout
