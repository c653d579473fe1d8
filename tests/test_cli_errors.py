"""Every error the command line prints has one shape: ``error[code]: where: message``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import cli

from .conftest import ROOT

SHAPE = re.compile(r"error\[[a-z-]+\]: \S.*\n\Z")


def _assay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], cwd=ROOT, capture_output=True,
                          text=True, check=False, env=env)


class TestUsageErrors:
    @pytest.mark.parametrize(("args", "line"), [
        (["replay", "examples/spec.json"],
         "error[usage]: replay: missing argument 'TRAJECTORIES...'; see 'assay replay --help'"),
        (["run"], "error[usage]: run: missing argument 'WORKFLOW'; see 'assay run --help'"),
        (["evidence", "verify"],
         "error[usage]: evidence verify: missing argument 'RUN'; "
         "see 'assay evidence verify --help'"),
        (["replay", "examples/spec.json", "examples/fixture_conforms.jsonl", "--format", "xml"],
         "error[usage]: replay: invalid value for '--format': 'xml' is not one of 'text', "
         "'json', 'junit', 'sarif', 'github', 'html'; see 'assay replay --help'"),
        (["replay", "--bogus", "examples/spec.json"],
         "error[usage]: replay: no such option '--bogus'; see 'assay replay --help'"),
        (["replay", "--summary", "examples/spec.json"],
         "error[usage]: replay: no such option '--summary' (did you mean '--summary-only'?); "
         "see 'assay replay --help'"),
        (["bogus"], "error[usage]: no such command 'bogus'; see 'assay --help'"),
        (["replay", "examples/spec.json", "examples/fixture_conforms.jsonl", "--by"],
         "error[usage]: replay: option '--by' requires an argument; "
         "see 'assay replay --help'"),
        (["evidence", "verify", "r", "--runs-dir"],
         "error[usage]: evidence verify: option '--runs-dir' requires an argument; "
         "see 'assay evidence verify --help'"),
        (["run", "examples/doc_pipeline/workflow.yaml"],
         "error[usage]: run: missing option '--as'; see 'assay run --help'"),
        (["run", "examples", "--as", "writer"],
         "error[usage]: run: invalid value for 'WORKFLOW': file 'examples' is a directory; "
         "see 'assay run --help'"),
        (["run", "examples/doc_pipeline/workflow.yaml", "--as", "w", "--param", "doc"],
         "error[usage]: run: invalid value for --param: 'doc' is not KEY=VALUE; "
         "see 'assay run --help'"),
        (["accept", "--contract", "x.yaml"],
         "error[usage]: accept: --contract and --result are required (or use --self-test); "
         "see 'assay accept --help'"),
        (["revalidate", "examples/resume/video/checkpoint.yaml", "--now", "soon"],
         "error[usage]: revalidate: invalid value for --now: "),
    ])
    def test_usage_error_is_one_line_exit_2(self, args: list[str], line: str) -> None:
        """A click usage error is one ``error[usage]`` line naming the command, exit 2."""
        out = _assay(*args)
        assert out.returncode == 2
        assert out.stdout == ""
        assert SHAPE.fullmatch(out.stderr), out.stderr
        assert out.stderr.startswith(line), out.stderr

    def test_usage_error_through_the_test_runner(self) -> None:
        """The in-process runner (the tested path) prints the same one line."""
        result = CliRunner().invoke(cli, ["replay", "examples/spec.json"])
        assert result.exit_code == 2
        assert result.output == ("error[usage]: replay: missing argument 'TRAJECTORIES...'; "
                                 "see 'assay replay --help'\n")

    def test_help_and_version_still_exit_0(self) -> None:
        """--help and --version are not errors."""
        assert _assay("replay", "--help").returncode == 0
        out = _assay("--version")
        assert out.returncode == 0 and out.stdout.startswith("assay, version ")

    def test_assay_errors_share_the_shape(self, tmp_path: Path) -> None:
        """A document error and a usage error both read ``error[code]: where: message``."""
        spec = tmp_path / "spec.yaml"
        spec.write_text("mandatory_checkpoints:\n  - checkpoint_id: c\n    must_precede: s\n"
                        "    scope: all\n")
        out = _assay("replay", str(spec), "examples/fixture_conforms.jsonl")
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
        ("bash", "complete -o nosort -F _assay_completion assay"),
        ("zsh", "compdef _assay_completion assay"),
        ("fish", "complete --no-files --command assay"),
    ])
    def test_completion_script_is_produced(self, shell: str, needle: str) -> None:
        """``_ASSAY_COMPLETE=<shell>_source assay`` prints the shell's completion script."""
        env = {**os.environ, "_ASSAY_COMPLETE": f"{shell}_source"}
        out = subprocess.run([sys.executable, "-m", "assay"], cwd=ROOT, capture_output=True,
                             text=True, check=False, env=env)
        assert out.returncode == 0
        assert needle in out.stdout

    def test_completion_completes_commands(self) -> None:
        """Asked to complete ``assay re``, the script's backend offers the matching commands."""
        env = {**os.environ, "_ASSAY_COMPLETE": "bash_complete", "COMP_WORDS": "assay re",
               "COMP_CWORD": "1"}
        out = subprocess.run([sys.executable, "-m", "assay"], cwd=ROOT, capture_output=True,
                             text=True, check=False, env=env)
        assert out.returncode == 0
        assert out.stdout.split() == ["plain,replay", "plain,revalidate"]

    def test_completion_is_documented(self) -> None:
        """docs/cli.md says how to turn completion on."""
        text = (ROOT / "docs" / "cli.md").read_text()
        assert 'eval "$(_ASSAY_COMPLETE=bash_source assay)"' in text
