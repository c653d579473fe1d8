"""``roadcheck replay`` without click: the plain command line read by hand answers as click does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roadcheck._replay_command import parse_args

from .conftest import EXAMPLES, ROOT

#: The console entry point, as the ``roadcheck`` script runs it (its own command line).
LEAN = "import sys; from roadcheck.__main__ import main; sys.argv[0] = 'roadcheck'; main()"
#: The click command line, given the same arguments.
CLICK = "import sys; from roadcheck.cli import main; main(sys.argv[1:])"
#: The lean path, reporting the modules it loaded once the replay is done.
MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("\\n" + json.dumps(sorted(sys.modules))))
from roadcheck.__main__ import main
sys.argv[0] = "roadcheck"
main()
"""
FIXTURES = sorted(p.name for p in EXAMPLES.glob("fixture_*.jsonl"))


def _folder(where: Path) -> None:
    """The example spec and fixtures, a directory of two of them, a broken spec."""
    where.mkdir()
    shutil.copy(EXAMPLES / "spec.json", where / "spec.json")
    for name in FIXTURES:
        shutil.copy(EXAMPLES / name, where / name)
    (where / "runs" / "deep").mkdir(parents=True)
    shutil.copy(EXAMPLES / "fixture_conforms.jsonl", where / "runs" / "a.jsonl")
    shutil.copy(EXAMPLES / "fixture_skipped.jsonl", where / "runs" / "deep" / "b.jsonl")
    (where / "bad.json").write_text('{"mandatory_checkpoints": [{"checkpoint_id": 3}]}')


def _both(tmp_path: Path, *args: str, pyproject: str | None = None,
          stdin: str | None = None) -> list[tuple[int, str, str, str]]:
    """``(exit, stdout, stderr, report.out)`` of the lean path and of click, each in a
    folder of its own holding the same files (its path written as ``<dir>``)."""
    out = []
    for name, code in (("lean", LEAN), ("click", CLICK)):
        where = tmp_path / name
        if not where.exists():
            _folder(where)
        if pyproject is not None:
            (where / "pyproject.toml").write_text(pyproject)
        proc = subprocess.run([sys.executable, "-c", code, "replay", *args], cwd=where,
                              capture_output=True, text=True, check=False, input=stdin,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")})
        report = where / "report.out"
        written = report.read_text().replace(str(where), "<dir>") if report.exists() else ""
        out.append((proc.returncode, proc.stdout.replace(str(where), "<dir>"),
                    proc.stderr.replace(str(where), "<dir>"), written))
    return out


CASES = {
    "the example fixtures": ["spec.json", *FIXTURES],
    "json": ["spec.json", *FIXTURES, "--format", "json"],
    "json, = form": ["spec.json", "--format=json", *FIXTURES],
    "summary": ["spec.json", *FIXTURES, "--summary-only"],
    "per file": ["spec.json", *FIXTURES, "--summary-only", "--per-file", "--format", "json"],
    "by a field": ["spec.json", *FIXTURES, "--by", "task_success"],
    "by a field none carries": ["spec.json", *FIXTURES, "--by", "team"],
    "strict": ["spec.json", "fixture_conforms.jsonl", "--strict"],
    "a directory": ["spec.json", "runs"],
    "a directory, recursive": ["spec.json", "-r", "runs", "--format", "json"],
    "two jobs": ["spec.json", *FIXTURES, "--jobs", "2", "--format", "json"],
    "input format": ["spec.json", "fixture_skipped.jsonl", "--input-format", "native"],
    "output file": ["spec.json", *FIXTURES, "-o", "report.out"],
    "output file, long": ["spec.json", "fixture_skipped.jsonl", "--output=report.out",
                          "--format", "json"],
    "pinned spec": ["spec.json", "fixture_conforms.jsonl", "--expect-spec-sha256",
                    "fb0621e1aa69f537ddd57bf4cf8e8ac81185adf338da8d5ffcadbd3c98992e28"],
    "pinned spec, wrong": ["spec.json", "fixture_conforms.jsonl", "--expect-spec-sha256",
                           "0" * 64],
    "pin malformed": ["spec.json", "fixture_conforms.jsonl", "--expect-spec-sha256", "xyz"],
    "notes": ["spec.json", "fixture_conforms.jsonl", "fixture_conforms.jsonl", "spec.json",
              "./fixture_conforms.jsonl"],
    "broken spec": ["bad.json", "fixture_conforms.jsonl"],
    "missing spec": ["nope.json", "fixture_conforms.jsonl"],
    "missing trajectory": ["spec.json", "nope.jsonl"],
    "spec a directory": ["runs", "fixture_conforms.jsonl"],
    "output a directory": ["spec.json", "fixture_conforms.jsonl", "-o", "runs"],
    "no trajectory": ["spec.json"],
    "unknown option": ["spec.json", "fixture_conforms.jsonl", "--bogus"],
    "repeated option": ["spec.json", "fixture_conforms.jsonl", "--format", "json",
                        "--format", "text"],
    "bad format": ["spec.json", "fixture_conforms.jsonl", "--format", "yaml"],
    "a CI format": ["spec.json", *FIXTURES, "--format", "github"],
    "per file alone": ["spec.json", *FIXTURES, "--per-file"],
    "zero jobs": ["spec.json", "fixture_conforms.jsonl", "--jobs", "0"],
    "quiet": ["spec.json", *FIXTURES, "-q"],
    "help": ["spec.json", "--help"],
}


class TestLeanReplay:
    @pytest.mark.parametrize("name", sorted(CASES))
    def test_answers_as_click_does(self, tmp_path: Path, name: str) -> None:
        """Same exit code, report and error line, taken by hand or deferred to click."""
        lean, click = _both(tmp_path, *CASES[name])
        assert lean == click

    def test_standard_input(self, tmp_path: Path) -> None:
        """``-`` reads the trajectory from standard input either way."""
        lean, click = _both(tmp_path, "spec.json", "-",
                            stdin=(EXAMPLES / "fixture_skipped.jsonl").read_text())
        assert lean == click
        assert lean[0] == 1

    @pytest.mark.parametrize("fmt", ["json", "sarif"])
    def test_format_from_pyproject(self, tmp_path: Path, fmt: str) -> None:
        """``[tool.roadcheck] format`` is the default, as for click (a CI format is left
        to click), and a flag given wins."""
        config = f'[tool.roadcheck]\nformat = "{fmt}"\n'
        lean, click = _both(tmp_path, "spec.json", *FIXTURES, pyproject=config)
        assert lean == click
        assert lean[1].startswith("{")
        lean, click = _both(tmp_path, "spec.json", *FIXTURES, "--format", "text",
                            pyproject=config)
        assert lean == click
        assert lean[1].startswith("roadcheck replay:")

    def test_broken_pyproject(self, tmp_path: Path) -> None:
        """A broken ``[tool.roadcheck]`` is its one error line either way, a flag given or not."""
        config = '[tool.roadcheck]\nformat = "yaml"\n'
        for extra in ([], ["--format", "json"]):
            lean, click = _both(tmp_path, "spec.json", "fixture_conforms.jsonl", *extra,
                                pyproject=config)
            assert lean == click
            assert lean[0] == 2 and lean[2].startswith("error[bad-input]:")

    def test_version(self) -> None:
        """``roadcheck --version`` prints click's line."""
        out = [subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True,
                              text=True, check=False) for code in (LEAN, CLICK)]
        assert [(p.returncode, p.stdout, p.stderr) for p in out] == [
            (0, out[1].stdout, "")] * 2
        assert out[0].stdout.startswith("roadcheck, version ")

    def test_loads_no_click(self) -> None:
        """A plain replay loads neither click nor any command module, nor what the replay
        never needs (see tests/test_command_imports.py)."""
        from .test_command_imports import HEAVY, REPLAY_ABSENT

        proc = subprocess.run([sys.executable, "-c", MODULES, "replay", "examples/spec.json",
                               *(f"examples/{name}" for name in FIXTURES)], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 1, proc.stderr
        modules = set(json.loads(proc.stderr.splitlines()[-1]))
        assert "roadcheck.conformance.engine" in modules
        names = {*modules, *(m.split(".")[0] for m in modules)}
        assert sorted(names & {"click", "roadcheck.cli", "typing_inspection", *HEAVY,
                               *REPLAY_ABSENT}) == []

    def test_version_loads_no_click(self) -> None:
        proc = subprocess.run([sys.executable, "-c", MODULES, "--version"], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        modules = set(json.loads(proc.stderr.splitlines()[-1]))
        assert sorted(modules & {"click", "roadcheck.cli", "typing", "msgspec"}) == []


class TestParseArgs:
    def test_a_plain_line(self, tmp_path: Path) -> None:
        options = parse_args(["spec.json", "a.jsonl", "-r", "--format=json", "b", "--jobs",
                              "3", "--summary-only", "--per-file", "--by", "team", "-o",
                              "out.json", "--strict", "--input-format", "native"], {})
        assert options is not None
        assert options == {
            "spec": "spec.json", "trajectories": ("a.jsonl", "b"), "recursive": True,
            "fmt": "json", "jobs": 3, "summary_only": True, "per_file": True,
            "by_field": "team", "output": "out.json", "strict": True,
            "input_format": "native", "expect_spec_sha256": None}

    def test_defaults(self) -> None:
        assert parse_args(["spec.json", "-"], {}) == {
            "spec": "spec.json", "trajectories": ("-",), "recursive": False, "fmt": None,
            "jobs": 1, "summary_only": False, "per_file": False, "by_field": None,
            "output": None, "strict": False, "input_format": None,
            "expect_spec_sha256": None}

    def test_pin_normalised(self) -> None:
        options = parse_args(["s.json", "t", "--expect-spec-sha256", "SHA256:" + "AB" * 32],
                             {})
        assert options is not None
        assert options["expect_spec_sha256"] == "ab" * 32

    @pytest.mark.parametrize("args", [
        [], ["spec.json"], ["spec.json", "t", "--help"], ["spec.json", "t", "-h"],
        ["spec.json", "t", "--bogus"], ["spec.json", "t", "--"], ["spec.json", "t", "-rq"],
        ["spec.json", "t", "-q"], ["spec.json", "t", "-v"], ["spec.json", "t", "--show", "block"],
        ["spec.json", "t", "--ray"], ["spec.json", "t", "--format"],
        ["spec.json", "t", "--format", "html", "-o", "x.html"],
        ["spec.json", "t", "--format", "junit"], ["spec.json", "t", "--format", "JSON"],
        ["spec.json", "t", "--format", "json", "--format", "json"],
        ["spec.json", "t", "-r", "-r"], ["spec.json", "t", "--strict=1"],
        ["spec.json", "t", "-o=x"], ["spec.json", "t", "-o", "-x"],
        ["spec.json", "t", "--jobs", "0"], ["spec.json", "t", "--jobs", "+2"],
        ["spec.json", "t", "--jobs", " 2"], ["spec.json", "t", "--jobs", "two"],
        ["spec.json", "t", "--per-file"], ["spec.json", "t", "--input-format", "nope"],
        ["spec.json", "t", "--expect-spec-sha256", "abc"], ["spec.json", "t", "--by", "-x"],
        ["spec.json", "t", "--version"],
    ])
    def test_anything_else_goes_to_click(self, args: list[str]) -> None:
        assert parse_args(args, {}) is None

    def test_completion_goes_to_click(self) -> None:
        assert parse_args(["spec.json", "t"], {"_ROADCHECK_COMPLETE": "bash_complete"}) is None

    def test_paths_click_would_refuse(self, tmp_path: Path) -> None:
        """A directory as the spec or the output file goes to click, which says so."""
        (tmp_path / "f.json").write_text("{}")
        assert parse_args([str(tmp_path), "t"], {}) is None
        assert parse_args([str(tmp_path / "f.json"), "t", "-o", str(tmp_path)], {}) is None
        assert parse_args([str(tmp_path / "f.json"), "t", "-o", str(tmp_path / "new")],
                          {}) is not None
