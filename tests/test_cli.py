"""The replay command line: reports, exit codes, and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from roadcheck import __version__
from roadcheck.cli import cli

from .conftest import EXAMPLES, ROOT

FIXTURES = sorted(p.name for p in EXAMPLES.glob("fixture_*.jsonl"))


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Invoke the CLI from the repo root, so paths in reports are relative and stable."""
    monkeypatch.chdir(ROOT)

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    return invoke


class TestReplayReports:
    def test_text_report_over_all_fixtures(self, run, golden) -> None:  # type: ignore[no-untyped-def]
        """The full text report over the eight fixtures matches its golden file."""
        result = run("replay", "examples/spec.json", *[f"examples/{n}" for n in FIXTURES])
        assert result.exit_code == 1
        golden("replay_fixtures.txt", result.output)

    def test_json_report_over_all_fixtures(self, run, golden) -> None:  # type: ignore[no-untyped-def]
        """The JSON document over the eight fixtures matches its golden file."""
        result = run("replay", "examples/spec.json", "--format", "json",
                     *[f"examples/{n}" for n in FIXTURES])
        assert result.exit_code == 1
        golden("replay_fixtures.json", result.output)
        doc = orjson.loads(result.output)
        assert doc["summary"] == {"pass": 3, "block": 4, "error": 1, "warn": 1, "exit": 1}
        assert {r["verdict"] for r in doc["results"]} == {"PASS", "BLOCK", "ERROR"}
        assert set(doc["results"][0]) >= {"id", "path", "verdict", "exit", "reasons", "warnings",
                                          "task_success"}

    @pytest.mark.parametrize("name", FIXTURES)
    def test_each_fixture_report(self, run, golden, name: str) -> None:  # type: ignore[no-untyped-def]
        """Each fixture's single-file report matches its golden file."""
        result = run("replay", "examples/spec.json", f"examples/{name}")
        golden(f"replay_{name.removeprefix('fixture_').removesuffix('.jsonl')}.txt",
               result.output)

    def test_report_is_byte_identical_and_self_hashed(self, run) -> None:  # type: ignore[no-untyped-def]
        """Two runs print the same bytes, and the footer hashes the body above it."""
        import hashlib

        args = ("replay", "examples/spec.json", *[f"examples/{n}" for n in FIXTURES])
        first, second = run(*args).output, run(*args).output
        assert first == second
        body, footer = first.rsplit("report-sha256: ", 1)
        assert footer.strip() == hashlib.sha256(body.encode()).hexdigest()

    def test_contrast_line_only_on_block(self, run) -> None:  # type: ignore[no-untyped-def]
        """A BLOCK prints the final metric beside what the trajectory says."""
        out = run("replay", "examples/spec.json", "examples/fixture_skipped.jsonl").output
        assert ("contrast : final metric says task_success=true / trajectory says "
                "checkpoint-skipped") in out
        ok = run("replay", "examples/spec.json", "examples/fixture_conforms.jsonl").output
        assert "contrast :" not in ok

    def test_summary_only_and_by(self, run) -> None:  # type: ignore[no-untyped-def]
        """--summary-only drops per-trajectory blocks; --by breaks verdicts down."""
        out = run("replay", "examples/spec.json", "--summary-only", "--by", "task_success",
                  *[f"examples/{n}" for n in FIXTURES]).output
        assert "verdict :" not in out
        assert "by task_success=true: 3 PASS, 4 BLOCK, 0 ERROR" in out
        assert "by task_success=(absent): 0 PASS, 0 BLOCK, 1 ERROR" in out
        assert "summary: 3 PASS (1 with warnings), 4 BLOCK, 1 ERROR -> overall exit 1" in out


class TestExitCodesAndErrors:
    @pytest.mark.parametrize(("names", "code"), [
        (["fixture_conforms.jsonl"], 0),
        (["fixture_uncontracted.jsonl"], 0),
        (["fixture_skipped.jsonl"], 1),
        (["fixture_bad_input.jsonl"], 2),
        (["fixture_bad_input.jsonl", "fixture_conforms.jsonl"], 2),
        (["fixture_bad_input.jsonl", "fixture_late_checkpoint.jsonl"], 1),
    ])
    def test_exit_is_the_worst_verdict(self, run, names: list[str], code: int) -> None:  # type: ignore[no-untyped-def]
        """The process exits with the worst verdict: BLOCK > ERROR > PASS."""
        assert run("replay", "examples/spec.json", *[f"examples/{n}" for n in names]).exit_code \
            == code

    @pytest.mark.parametrize(("content", "name", "needle"), [
        ("{", "spec.json", "spec.json:1: invalid JSON"),
        ("", "spec.json", "empty document"),
        ("{}", "spec.json", "declares no mandatory checkpoint"),
        ("[1]", "spec.json", "must be an object"),
        ('{"mandatory_checkpoints": [{"checkpoint_id": "c"}]}', "spec.json",
         "must_precede: required"),
        ("mandatory_checkpoints:\n  - checkpoint_id: c\n    must_precede: s\n    scope: all\n",
         "spec.yaml", "spec.yaml:4: unusable spec"),
        ("handoff_contracts:\n  - from_agent: a\n    to_agent: b\n    require_verifed: true\n",
         "spec.yaml", "unknown key 'require_verifed'; did you mean 'require_verified'?"),
        ("mandatory_checkpoints: [{checkpoint_id: c, must_precede: s, voided_by: [{text: "
         "{regex: '('}}]}]\n", "spec.yaml", "bad regex"),
        ("mandatory_checkpoints:\n  - [unclosed\n", "spec.yaml", "invalid YAML"),
    ])
    def test_bad_spec_is_one_line_exit_2(self, run, tmp_path: Path, content: str, name: str,  # type: ignore[no-untyped-def]
                                         needle: str) -> None:
        """An unusable spec exits 2 with one line naming the file and the problem."""
        spec = tmp_path / name
        spec.write_text(content)
        result = CliRunner().invoke(cli, ["replay", str(spec), str(EXAMPLES /
                                                                   "fixture_conforms.jsonl")])
        assert result.exit_code == 2
        assert result.output.startswith("error[bad-input]: ")
        assert needle in result.output
        assert result.output.count("\n") == 1

    def test_missing_spec_and_trajectory(self, run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        """A missing spec is an error; a missing trajectory is an ERROR verdict."""
        missing_spec = run("replay", str(tmp_path / "none.json"), "examples/fixture_conforms.jsonl")
        assert missing_spec.exit_code == 2 and "cannot read" in missing_spec.output
        missing_traj = run("replay", "examples/spec.json", str(tmp_path / "none.jsonl"))
        assert missing_traj.exit_code == 2 and "ERROR (bad-input)" in missing_traj.output

    def test_usage_errors_exit_2(self, run) -> None:  # type: ignore[no-untyped-def]
        """No trajectory, or an unknown format, is a usage error with exit 2."""
        assert run("replay", "examples/spec.json").exit_code == 2
        assert run("replay", "examples/spec.json", "--format", "xml",
                   "examples/fixture_conforms.jsonl").exit_code == 2


class TestEntryPoints:
    def test_version(self, run) -> None:  # type: ignore[no-untyped-def]
        """--version prints the package version, and nothing about how replay runs."""
        assert run("--version").output.strip() == f"roadcheck, version {__version__}"

    def test_python_dash_m_and_console_script(self) -> None:
        """python -m roadcheck runs the same CLI as the console script, in a fresh process."""
        out = subprocess.run([sys.executable, "-m", "roadcheck", "replay", "examples/spec.json",
                              "examples/fixture_skipped.jsonl"], cwd=ROOT, capture_output=True,
                             text=True, check=False)
        assert out.returncode == 1
        assert "verdict : BLOCK (checkpoint-skipped) exit 1" in out.stdout
        assert out.stderr == ""

    def test_internal_error_never_exits_0(self, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """A bug inside a command exits 70 with one line, never 0 and never a traceback."""
        import roadcheck.conformance as conformance
        from roadcheck.cli import main

        def boom(*_a: object, **_k: object) -> None:
            raise RuntimeError("kaboom")

        monkeypatch.setattr(conformance, "replay_files", boom)
        monkeypatch.chdir(ROOT)
        with pytest.raises(SystemExit) as info:
            main(["replay", "examples/spec.json", "examples/fixture_conforms.jsonl"])
        assert info.value.code == 70
        err = capsys.readouterr().err
        assert err == "error[internal]: RuntimeError: kaboom\n"


#: The console script, whose ``replay`` ends without the interpreter's teardown.
ROADCHECK = [str(Path(sys.executable).with_name("roadcheck"))]


class TestReplayProcessExit:
    """A ``replay`` process ends without tearing down the interpreter: every byte it
    wrote is out first, and its exit code is the report's."""

    def test_the_console_script_is_there(self) -> None:
        assert Path(ROADCHECK[0]).is_file()

    def test_a_report_larger_than_a_pipe_arrives_whole(self, tmp_path: Path) -> None:
        runs = tmp_path / "runs"
        runs.mkdir()
        fixtures = sorted(EXAMPLES.glob("fixture_*.jsonl"))
        for i in range(200):
            src = fixtures[i % len(fixtures)]
            (runs / f"{i:03d}-{src.name}").write_bytes(src.read_bytes())
        spec = str(EXAMPLES / "spec.json")
        for fmt in ("json", "text"):
            piped = subprocess.run([*ROADCHECK, "replay", spec, str(runs),
                                    "--format", fmt], capture_output=True, check=False)
            assert piped.returncode == 1, piped.stderr
            assert len(piped.stdout) > 1 << 16  # more than a pipe holds at once
            inside = CliRunner().invoke(cli, ["replay", spec, str(runs), "--format", fmt])
            assert inside.exit_code == 1
            assert piped.stdout == inside.stdout_bytes, fmt
            to_file = tmp_path / f"report.{fmt}"
            written = subprocess.run([*ROADCHECK, "replay", spec, str(runs),
                                      "--format", fmt, "-o", str(to_file)],
                                     capture_output=True, check=False)
            assert written.returncode == 1, written.stderr
            assert to_file.read_bytes() == piped.stdout

    def test_exit_codes_and_errors(self, tmp_path: Path) -> None:
        spec = str(EXAMPLES / "spec.json")
        passing = subprocess.run([*ROADCHECK, "replay", spec,
                                  str(EXAMPLES / "fixture_conforms.jsonl")],
                                 capture_output=True, check=False)
        assert passing.returncode == 0, passing.stderr
        missing = subprocess.run([*ROADCHECK, "replay",
                                  str(tmp_path / "none.json"), "x.jsonl"],
                                 capture_output=True, check=False)
        assert missing.returncode == 2
        assert missing.stderr.startswith(b"error[bad-input]: ")
        usage = subprocess.run([*ROADCHECK, "replay"],
                               capture_output=True, check=False)
        assert usage.returncode == 2
        assert usage.stderr == (b"error[usage]: replay: missing argument 'SPEC'; "
                                b"see 'roadcheck replay --help'\n")
