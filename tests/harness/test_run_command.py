"""``roadcheck run`` without click: the plain command line read by hand answers as click does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roadcheck._run_command import parse_args

from ..conftest import ROOT

TOUCH = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write('x')", "{artifact}"]
CHECK = [sys.executable, "-c", "import os, sys; sys.exit(not os.path.isfile(sys.argv[1]))",
         "{artifact}"]

#: The console entry point, as the ``roadcheck`` script runs it (its own command line).
LEAN = "import sys; from roadcheck.__main__ import main; sys.argv[0] = 'roadcheck'; main()"
#: The click command line, given the same arguments.
CLICK = "import sys; from roadcheck.cli import main; main(sys.argv[1:])"
#: The lean path, reporting the modules it loaded once the run is done.
MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("\\n" + json.dumps(sorted(sys.modules))))
from roadcheck.__main__ import main
sys.argv[0] = "roadcheck"
main()
"""


def _workflow(folder: Path) -> None:
    folder.mkdir()
    (folder / "wf.json").write_text(json.dumps({"workflow": "w", "phases": [
        {"name": "a", "role": "op", "producer": TOUCH, "artifact": "a.txt",
         "gate": {"command": CHECK}},
        {"name": "b", "role": "qa", "producer": TOUCH, "artifact": "b.txt",
         "gate": {"command": CHECK}}]}))
    (folder / "bad.json").write_text('{"workflow": "w", "phases": [{"name": 3}]}')


def _both(tmp_path: Path, *args: str) -> list[tuple[int, str, str]]:
    """``(exit, stdout, stderr)`` of the lean path and of click, each in a folder of its own
    holding the same files (its path written as ``<dir>``)."""
    out = []
    for name, code in (("lean", LEAN), ("click", CLICK)):
        where = tmp_path / name
        if not where.exists():
            _workflow(where)
        proc = subprocess.run([sys.executable, "-c", code, "run", *args], cwd=where,
                              capture_output=True, text=True, check=False,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")})
        out.append((proc.returncode, proc.stdout.replace(str(where), "<dir>"),
                    proc.stderr.replace(str(where), "<dir>")))
    return out


CASES = {
    "completed part, paused": ["wf.json", "--as", "op", "--identity", "ann", "--run-id", "r1"],
    "json": ["wf.json", "--as=op", "--identity=ann", "--run-id=r2", "--format", "json"],
    "sqlite": ["wf.json", "--as", "op", "--identity", "ann", "--run-id", "r3",
                        "--store", "sqlite"],
    "undeclared param": ["wf.json", "--as", "op", "--identity", "ann", "--param", "x=1"],
    "bad spec": ["bad.json", "--as", "op", "--identity", "ann"],
    "missing file": ["nope.json", "--as", "op", "--identity", "ann"],
    "resume unknown": ["wf.json", "--as", "qa", "--identity", "bob", "--resume", "zz"],
    "runs dir a file": ["wf.json", "--as", "op", "--identity", "ann", "--runs-dir", "wf.json"],
    "no role": ["wf.json", "--identity", "ann"],
    "unknown option": ["wf.json", "--as", "op", "--bogus"],
    "bad param": ["wf.json", "--as", "op", "--param", "novalue"],
}


class TestLeanRun:
    @pytest.mark.parametrize("name", sorted(CASES))
    def test_answers_as_click_does(self, tmp_path: Path, name: str) -> None:
        """Same exit code, report and error line, taken by hand or deferred to click."""
        lean, click = _both(tmp_path, *CASES[name])
        assert lean == click

    def test_resume_answers_as_click_does(self, tmp_path: Path) -> None:
        """A paused run resumed by the other role, each way, ends the same."""
        first = _both(tmp_path, "wf.json", "--as", "op", "--identity", "ann", "--run-id", "r")
        assert first[0] == first[1] and first[0][0] == 3
        second = _both(tmp_path, "wf.json", "--as", "qa", "--identity", "bob", "--resume", "r",
                       "--format", "json")
        assert second[0] == second[1] and second[0][0] == 0

    def test_runs_dir_from_pyproject(self, tmp_path: Path) -> None:
        """``[tool.roadcheck] runs_dir`` is the default, as for click."""
        for name in ("lean", "click"):
            _workflow(tmp_path / name)
            (tmp_path / name / "pyproject.toml").write_text(
                '[tool.roadcheck]\nruns_dir = "elsewhere"\n')
        lean, click = _both(tmp_path, "wf.json", "--as", "op", "--identity", "ann",
                            "--run-id", "c")
        assert lean == click
        assert (tmp_path / "lean" / "elsewhere" / "c" / "evidence.jsonl").is_file()

    def test_loads_neither_click_nor_another_store(self, tmp_path: Path) -> None:
        """A plain JSONL run loads no click, no PostgreSQL store (nor psycopg), no SQLite."""
        _workflow(tmp_path / "w")
        shutil.copy(tmp_path / "w" / "wf.json", tmp_path / "wf.json")
        proc = subprocess.run([sys.executable, "-c", MODULES, "run", "wf.json", "--as", "op",
                               "--identity", "ann"], cwd=tmp_path, capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 3, proc.stderr
        modules = set(json.loads(proc.stderr.splitlines()[-1]))
        assert "roadcheck.harness.engine" in modules
        assert sorted(modules & {"click", "roadcheck.cli", "roadcheck.evidence.postgres",
                                 "roadcheck.harness.worker", "psycopg", "psycopg_pool",
                                 "sqlite3"}) == []


class TestParseArgs:
    def test_a_plain_line(self, tmp_path: Path) -> None:
        options = parse_args(["wf.json", "--as", "op", "--param", "a=1", "--param=b=2=3",
                              "--store=sqlite", "--format", "json"], {})
        assert options is not None
        assert (options["workflow"], options["role"], options["params"], options["store"],
                options["fmt"], options["runs_dir"]) == (
            "wf.json", "op", {"a": "1", "b": "2=3"}, "sqlite", "json", None)

    def test_the_role_from_the_environment(self) -> None:
        options = parse_args(["wf.json"], {"ROADCHECK_ROLE": "qa"})
        assert options is not None and options["role"] == "qa"
        assert parse_args(["wf.json"], {"ROADCHECK_ROLE": ""}) is None

    @pytest.mark.parametrize("args", [
        [], ["a.json", "b.json"], ["wf.json", "--as", "op", "--as", "qa"],
        ["wf.json", "--as"], ["wf.json", "--as", "--identity"], ["wf.json", "--help"],
        ["wf.json", "--as", "op", "--store", "postgresql://h/db"],
        ["wf.json", "--as", "op", "--lease", "5"], ["wf.json", "--as", "op", "--format", "sarif"],
        ["wf.json", "--as", "op", "--param", "=1"], ["wf.json", "--as", "op", "--", "x"],
        [".", "--as", "op"]])
    def test_anything_else_is_left_to_click(self, args: list[str]) -> None:
        assert parse_args(args, {}) is None
