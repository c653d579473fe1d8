"""The pytest plugin (``roadcheck`` fixture, ``assert_conforms``) and ``[tool.roadcheck]``
config."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roadcheck.cli import main
from roadcheck.config import Config, find_config
from roadcheck.errors import InputError
from roadcheck.testing import assert_conforms

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SPEC = EXAMPLES / "spec.json"


def _project(root: Path, table: str) -> Path:
    (root / "pyproject.toml").write_text(f"[project]\nname = \"p\"\n\n[tool.roadcheck]\n{table}")
    shutil.copy(SPEC, root / "spec.json")
    for name in ("fixture_skipped.jsonl", "fixture_conforms.jsonl"):
        shutil.copy(EXAMPLES / name, root / name)
    return root


class TestAssertConforms:
    def test_passes_and_returns_the_run(self) -> None:
        """A conforming trajectory passes; the run is returned."""
        run = assert_conforms(EXAMPLES / "fixture_conforms.jsonl", SPEC)
        assert run.exit == 0

    def test_failure_message_names_the_reasons_and_the_contrast(self) -> None:
        """A BLOCK raises AssertionError with each reason and the task_success contrast."""
        path = str(EXAMPLES / "fixture_skipped.jsonl")
        with pytest.raises(AssertionError) as info:
            assert_conforms(path, str(SPEC))
        assert str(info.value) == (
            f"1 trajectory of 1 did not conform to {SPEC}:\n"
            f"{path}: BLOCK (checkpoint-skipped)\n"
            "  reason: checkpoint-skipped: checkpoint 'confirm_with_user' is absent from the "
            "trajectory; the guarded action 'send_report' ran at seq 6\n"
            "  final metric says task_success=true; the trajectory says checkpoint-skipped")

    def test_error_fails_too(self) -> None:
        """A trajectory that cannot be judged never passes."""
        with pytest.raises(AssertionError, match="ERROR \\(bad-input\\)"):
            assert_conforms(EXAMPLES / "fixture_bad_input.jsonl", SPEC)

    def test_events_in_memory(self) -> None:
        """A list of events is judged like a file."""
        events = [json.loads(line) for line in
                  (EXAMPLES / "fixture_conforms.jsonl").read_text().splitlines()]
        assert assert_conforms(events, json.loads(SPEC.read_text())).exit == 0

    def test_spec_from_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without a spec, the [tool.roadcheck] spec found upward is used; without one, it fails."""
        _project(tmp_path, 'spec = "spec.json"\n')
        sub = tmp_path / "deep" / "er"
        sub.mkdir(parents=True)
        monkeypatch.chdir(sub)
        assert assert_conforms(tmp_path / "fixture_conforms.jsonl").exit == 0
        (tmp_path / "pyproject.toml").write_text("[project]\nname = \"p\"\n")
        with pytest.raises(AssertionError, match="no spec given"):
            assert_conforms(tmp_path / "fixture_conforms.jsonl")


class TestPlugin:
    def test_fixture_through_the_entry_point(self, tmp_path: Path) -> None:
        """In another project, the installed plugin gives the fixture; failures read well."""
        _project(tmp_path, 'spec = "spec.json"\n')
        (tmp_path / "test_runs.py").write_text(
            "def test_good(roadcheck):\n"
            "    roadcheck.assert_conforms('fixture_conforms.jsonl')\n"
            "def test_bad(roadcheck):\n"
            "    roadcheck.assert_conforms('fixture_skipped.jsonl')\n")
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "test_runs.py"], cwd=tmp_path, capture_output=True, text=True,
                              check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "1 failed, 1 passed" in done.stdout
        assert (f"AssertionError: 1 trajectory of 1 did not conform to "
                f"{tmp_path.resolve() / 'spec.json'}:") in done.stdout
        assert "reason: checkpoint-skipped: checkpoint 'confirm_with_user' is absent" in \
            done.stdout


class TestConfig:
    def test_none_found(self, tmp_path: Path) -> None:
        """No pyproject.toml with [tool.roadcheck] above: empty settings."""
        (tmp_path / "pyproject.toml").write_text("[project]\nname = \"p\"\n")
        assert find_config(tmp_path) == Config()

    def test_nearest_table_wins_and_paths_are_relative_to_it(self, tmp_path: Path) -> None:
        """The first pyproject.toml with [tool.roadcheck] upward is read; paths resolve there."""
        _project(tmp_path, 'spec = "spec.json"\nruns_dir = "out/runs"\nformat = "sarif"\n')
        inner = tmp_path / "pkg"
        inner.mkdir()
        (inner / "pyproject.toml").write_text("[project]\nname = \"inner\"\n")
        config = find_config(inner)
        assert config == Config(tmp_path.resolve() / "pyproject.toml",
                                tmp_path.resolve() / "spec.json",
                                tmp_path.resolve() / "out" / "runs", "sarif")

    @pytest.mark.parametrize(("table", "line", "text"), [
        ('spec = "s.json"\nformt = "json"\n', 6, "unknown key tool.roadcheck.formt"),
        ('format = "xml"\n', 5, "tool.roadcheck.format must be one of"),
        ("runs_dir = 3\n", 5, "tool.roadcheck.runs_dir must be a non-empty string"),
    ])
    def test_bad_settings_name_file_line_and_key(self, tmp_path: Path, table: str, line: int,
                                                 text: str) -> None:
        """A bad setting is an InputError at its file and line."""
        _project(tmp_path, table)
        with pytest.raises(InputError) as info:
            find_config(tmp_path)
        assert info.value.location_message().startswith(
            f"{tmp_path.resolve() / 'pyproject.toml'}:{line}: {text}")

    def test_cli_default_format_and_flag_override(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> None:
        """format from [tool.roadcheck] is the default; --format given wins."""
        monkeypatch.chdir(_project(tmp_path, 'format = "github"\n'))
        with pytest.raises(SystemExit):
            main(["replay", "spec.json", "fixture_skipped.jsonl"])
        assert capsys.readouterr().out.startswith("::error file=fixture_skipped.jsonl,line=5,")
        with pytest.raises(SystemExit):
            main(["replay", "spec.json", "fixture_skipped.jsonl", "--format", "text"])
        assert capsys.readouterr().out.startswith("roadcheck replay: ")

    def test_cli_bad_config_is_exit_2(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
        """A broken [tool.roadcheck] stops the command with one error line, exit 2."""
        monkeypatch.chdir(_project(tmp_path, 'format = "xml"\n'))
        with pytest.raises(SystemExit) as info:
            main(["replay", "spec.json", "fixture_skipped.jsonl"])
        out, err = capsys.readouterr()
        assert (info.value.code, out) == (2, "")
        assert err.startswith("error[bad-input]: ") and ":5: tool.roadcheck.format" in err

    def test_cli_runs_dir_default(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """runs_dir from [tool.roadcheck] is where audit looks for runs."""
        monkeypatch.chdir(_project(tmp_path, 'runs_dir = "elsewhere"\n'))
        with pytest.raises(SystemExit) as info:
            main(["audit", "nope"])
        assert info.value.code == 2
        assert "elsewhere" in capsys.readouterr().err
