"""Gate commands get no standard input: a gate that reads it reads nothing, never waits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PY = sys.executable
#: A gate that reads its standard input to the end, then checks the artifact.
READS_STDIN = [PY, "-c", "import os, sys; sys.stdin.read(); "
               "sys.exit(not os.path.isfile(sys.argv[1]))", "{artifact}"]
#: A score command that reads its standard input to the end, then prints a score.
SCORES_AFTER_STDIN = [PY, "-c", "import sys; sys.stdin.read(); print(1.0)"]


@pytest.mark.parametrize("gate", [{"command": READS_STDIN, "timeout": 5},
                                  {"score": SCORES_AFTER_STDIN, "threshold": 0.5,
                                   "timeout": 5}], ids=["command", "score"])
def test_a_gate_reading_stdin_gets_end_of_file(tmp_path: Path, gate: dict[str, object]) -> None:
    """``roadcheck run`` started with a standard input that stays open (a terminal, a pipe
    nobody writes to): the gate reads end of file at once and passes, rather than waiting
    on the run's input until its timeout fails it."""
    workflow = tmp_path / "wf.json"
    touch = [PY, "-c", "import sys; open(sys.argv[1], 'w').write('x')", "{artifact}"]
    workflow.write_text(json.dumps({"workflow": "w", "phases": [
        {"name": "a", "role": "op", "producer": touch, "artifact": "out.txt", "gate": gate}]}))
    with subprocess.Popen([PY, "-m", "roadcheck", "run", str(workflow), "--as", "op",
                           "--identity", "me", "--runs-dir", str(tmp_path / "runs"),
                           "--format", "json"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            proc.wait(timeout=60)  # its standard input held open, never written or closed
        finally:
            if proc.poll() is None:
                proc.kill()
        out, err = proc.stdout.read(), proc.stderr.read()
    doc = json.loads(out)
    assert (proc.returncode, doc["status"]) == (0, "completed"), err.decode()
