"""Where guard state lives: the user's state directory, outside the project, by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roadcheck.guard import GuardStore, paths

SPEC = {"mandatory_checkpoints": [{"checkpoint_id": "ok", "must_precede": "deploy"}]}
EVENT = {"hook_event_name": "PreToolUse", "session_id": "sess-1", "tool_name": "Bash",
         "tool_input": {"command": "ls"}, "tool_use_id": "t1"}


def _hook(tmp: Path, *args: str, env: dict[str, str] | None = None,
          ) -> subprocess.CompletedProcess[str]:
    spec = tmp / "spec.json"
    spec.write_text(json.dumps(SPEC))
    return subprocess.run([sys.executable, "-m", "roadcheck", "guard", "claude-code", "--spec",
                           str(spec), *args], input=json.dumps(EVENT), capture_output=True,
                          text=True, cwd=tmp, timeout=60, env={**os.environ, **(env or {})})


class TestDefaults:
    @pytest.mark.parametrize(("env", "platform", "want"), [
        ({"XDG_STATE_HOME": "/xdg/state", "HOME": "/h"}, "linux", "/xdg/state/roadcheck/guard"),
        ({"HOME": "/h"}, "linux", "/h/.local/state/roadcheck/guard"),
        ({"XDG_STATE_HOME": "relative", "HOME": "/h"}, "linux",
         "/h/.local/state/roadcheck/guard"),
        ({"HOME": "/Users/ann"}, "darwin", "/Users/ann/.local/state/roadcheck/guard"),
        ({"LOCALAPPDATA": "C:\\Users\\ann\\AppData\\Local"}, "win32",
         "C:\\Users\\ann\\AppData\\Local\\roadcheck\\guard"),
    ])
    def test_the_state_directory_is_the_users(self, env: dict[str, str], platform: str,
                                              want: str) -> None:
        """XDG_STATE_HOME, else ~/.local/state; %LOCALAPPDATA% on Windows."""
        assert str(paths.default_state_dir(env, platform)) == want

    @pytest.mark.parametrize(("env", "platform", "want"), [
        ({"XDG_CONFIG_HOME": "/xdg/config", "HOME": "/h"}, "linux",
         "/xdg/config/roadcheck/guard.key"),
        ({"HOME": "/h"}, "linux", "/h/.config/roadcheck/guard.key"),
        ({"APPDATA": "C:\\Users\\ann\\AppData\\Roaming"}, "win32",
         "C:\\Users\\ann\\AppData\\Roaming\\roadcheck\\guard.key"),
    ])
    def test_the_key_is_in_the_users_config_directory(self, env: dict[str, str],
                                                      platform: str, want: str) -> None:
        """XDG_CONFIG_HOME, else ~/.config; %APPDATA% on Windows."""
        assert str(paths.default_key_path(env, platform)) == want

    def test_an_explicit_directory_wins(self, tmp_path: Path) -> None:
        """The argument, then ROADCHECK_GUARD_STATE_DIR, then the user's directory."""
        env = {"ROADCHECK_GUARD_STATE_DIR": str(tmp_path / "env"), "XDG_STATE_HOME": "/x"}
        assert paths.state_dir(tmp_path / "arg", env) == tmp_path / "arg"
        assert paths.state_dir(None, env) == tmp_path / "env"
        assert paths.state_dir(None, {"XDG_STATE_HOME": "/x"}) == Path("/x/roadcheck/guard")


class TestTheHook:
    def test_without_state_dir_nothing_is_written_in_the_project(self, tmp_path: Path) -> None:
        """The hook run in a project keeps its session in the user's state directory."""
        project = tmp_path / "project"
        project.mkdir()
        out = _hook(project)
        assert out.returncode == 0, out.stderr
        assert sorted(p.name for p in project.iterdir()) == ["spec.json"]
        home = Path(os.environ["XDG_STATE_HOME"]) / "roadcheck" / "guard"
        assert (home / "sess-1" / "guard.json").is_file()

    def test_the_environment_and_the_option_name_another(self, tmp_path: Path) -> None:
        """ROADCHECK_GUARD_STATE_DIR is used; --state-dir wins over it."""
        env = {"ROADCHECK_GUARD_STATE_DIR": str(tmp_path / "env")}
        assert _hook(tmp_path, env=env).returncode == 0
        assert (tmp_path / "env" / "sess-1" / "guard.json").is_file()
        assert _hook(tmp_path, "--state-dir", str(tmp_path / "opt"), env=env).returncode == 0
        assert (tmp_path / "opt" / "sess-1" / "guard.json").is_file()

    def test_the_library_store_takes_the_same_default(self) -> None:
        """GuardStore(None, spec) is the user's state directory."""
        store = GuardStore(None, SPEC)
        assert store.dir == Path(os.environ["XDG_STATE_HOME"]) / "roadcheck" / "guard"
