"""Every error the command line prints has one shape: ``error[code]: where: message``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from roadcheck.cli import cli

from .conftest import ROOT

SHAPE = re.compile(r"error\[[a-z-]+\]: \S.*\n\Z")


def _roadcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roadcheck", *args], cwd=ROOT, capture_output=True,
                          text=True, check=False, env=env)


class TestUsageErrors:
    @pytest.mark.parametrize(("args", "line"), [
        (["replay", "examples/spec.json"],
         "error[usage]: replay: missing argument 'TRAJECTORIES...'; see 'roadcheck replay --help'"),
        (["run"], "error[usage]: run: missing argument 'WORKFLOW'; see 'roadcheck run --help'"),
        (["evidence", "verify"],
         "error[usage]: evidence verify: missing argument 'RUN'; "
         "see 'roadcheck evidence verify --help'"),
        (["replay", "examples/spec.json", "examples/fixture_conforms.jsonl", "--format", "xml"],
         "error[usage]: replay: invalid value for '--format': 'xml' is not one of 'text', "
         "'json', 'junit', 'sarif', 'github', 'html'; see 'roadcheck replay --help'"),
        (["replay", "--bogus", "examples/spec.json"],
         "error[usage]: replay: no such option '--bogus'; see 'roadcheck replay --help'"),
        (["replay", "--summary", "examples/spec.json"],
         "error[usage]: replay: no such option '--summary' (did you mean '--summary-only'?); "
         "see 'roadcheck replay --help'"),
        (["bogus"], "error[usage]: no such command 'bogus'; see 'roadcheck --help'"),
        (["replay", "examples/spec.json", "examples/fixture_conforms.jsonl", "--by"],
         "error[usage]: replay: option '--by' requires an argument; "
         "see 'roadcheck replay --help'"),
        (["evidence", "verify", "r", "--runs-dir"],
         "error[usage]: evidence verify: option '--runs-dir' requires an argument; "
         "see 'roadcheck evidence verify --help'"),
        (["run", "examples/doc_pipeline/workflow.yaml"],
         "error[usage]: run: missing option '--as'; see 'roadcheck run --help'"),
        (["run", "examples", "--as", "writer"],
         "error[usage]: run: invalid value for 'WORKFLOW': file 'examples' is a directory; "
         "see 'roadcheck run --help'"),
        (["run", "examples/doc_pipeline/workflow.yaml", "--as", "w", "--param", "doc"],
         "error[usage]: run: invalid value for --param: 'doc' is not KEY=VALUE; "
         "see 'roadcheck run --help'"),
        (["accept", "--contract", "x.yaml"],
         "error[usage]: accept: --contract and --result are required (or use --self-test); "
         "see 'roadcheck accept --help'"),
        (["revalidate", "examples/resume/video/checkpoint.yaml", "--now", "soon"],
         "error[usage]: revalidate: invalid value for --now: "),
    ])
    def test_usage_error_is_one_line_exit_2(self, args: list[str], line: str) -> None:
        """A click usage error is one ``error[usage]`` line naming the command, exit 2."""
        out = _roadcheck(*args)
        assert out.returncode == 2
        assert out.stdout == ""
        assert SHAPE.fullmatch(out.stderr), out.stderr
        assert out.stderr.startswith(line), out.stderr

    def test_usage_error_through_the_test_runner(self) -> None:
        """The in-process runner (the tested path) prints the same one line."""
        result = CliRunner().invoke(cli, ["replay", "examples/spec.json"])
        assert result.exit_code == 2
        assert result.output == ("error[usage]: replay: missing argument 'TRAJECTORIES...'; "
                                 "see 'roadcheck replay --help'\n")

    def test_help_and_version_still_exit_0(self) -> None:
        """--help and --version are not errors."""
        assert _roadcheck("replay", "--help").returncode == 0
        out = _roadcheck("--version")
        assert out.returncode == 0 and out.stdout.startswith("roadcheck, version ")

    def test_roadcheck_errors_share_the_shape(self, tmp_path: Path) -> None:
        """A document error and a usage error both read ``error[code]: where: message``."""
        spec = tmp_path / "spec.yaml"
        spec.write_text("mandatory_checkpoints:\n  - checkpoint_id: c\n    must_precede: s\n"
                        "    scope: all\n")
        out = _roadcheck("replay", str(spec), "examples/fixture_conforms.jsonl")
        assert out.returncode == 2
        assert SHAPE.fullmatch(out.stderr)
        assert out.stderr.startswith(f"error[bad-input]: {spec}:4: unusable spec: "
                                     "mandatory_checkpoints.0.scope: ")


class TestHelp:
    @pytest.mark.parametrize("group", [[], ["evidence"]])
    def test_no_command_summary_is_cut(self, group: list[str]) -> None:
        """Every command summary in ``--help`` fits an 80-column terminal whole."""
        result = CliRunner().invoke(cli, [*group, "--help"], terminal_width=80)
        assert result.exit_code == 0
        commands = result.output.split("Commands:\n", 1)[1].splitlines()
        assert commands
        for line in commands:
            assert len(line) <= 80, line
            assert not line.rstrip().endswith("..."), line


class TestCompletion:
    @pytest.mark.parametrize(("shell", "needle"), [
        ("bash", "complete -o nosort -F _roadcheck_completion roadcheck"),
        ("zsh", "compdef _roadcheck_completion roadcheck"),
        ("fish", "complete --no-files --command roadcheck"),
    ])
    def test_completion_script_is_produced(self, shell: str, needle: str) -> None:
        """``_ROADCHECK_COMPLETE=<shell>_source roadcheck`` prints the shell's completion script."""
        env = {**os.environ, "_ROADCHECK_COMPLETE": f"{shell}_source"}
        out = subprocess.run([sys.executable, "-m", "roadcheck"], cwd=ROOT, capture_output=True,
                             text=True, check=False, env=env)
        assert out.returncode == 0
        assert needle in out.stdout

    def test_completion_completes_commands(self) -> None:
        """Asked to complete ``roadcheck re``, the script's backend offers the matching commands."""
        env = {**os.environ, "_ROADCHECK_COMPLETE": "bash_complete", "COMP_WORDS": "roadcheck re",
               "COMP_CWORD": "1"}
        out = subprocess.run([sys.executable, "-m", "roadcheck"], cwd=ROOT, capture_output=True,
                             text=True, check=False, env=env)
        assert out.returncode == 0
        assert out.stdout.split() == ["plain,replay", "plain,revalidate"]

    def test_completion_is_documented(self) -> None:
        """docs/cli.md says how to turn completion on."""
        text = (ROOT / "docs" / "cli.md").read_text()
        assert 'eval "$(_ROADCHECK_COMPLETE=bash_source roadcheck)"' in text
