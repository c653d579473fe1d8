"""A state file that is not a plain file never blocks the hook, and every wait is bounded.

Claude Code lets a call run when its hook times out, so a FIFO the agent leaves where
the guard reads (or a lock it holds) must be answered with deny, quickly, never waited on.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and flock are POSIX")

SPEC = """\
mandatory_checkpoints:
  - {checkpoint_id: push_ok, must_precede: {action_type: Bash, command: {words: [git, push]}}}
"""
#: Well inside Claude Code's 60 s hook timeout, with room for a loaded machine.
BOUND = 20.0


class Hook:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.spec = tmp / "spec.yaml"
        self.spec.write_text(SPEC)
        self.state = tmp / "state"
        self.session = self.state / "sess-1"

    def __call__(self, event: str = "PreToolUse", command: str = "git push",
                 ) -> tuple[subprocess.CompletedProcess[str], float]:
        doc = {"hook_event_name": event, "session_id": "sess-1", "tool_name": "Bash",
               "tool_input": {"command": command}, "tool_use_id": "t1"}
        t0 = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-m", "roadcheck", "guard", "claude-code", "--spec",
             str(self.spec), "--state-dir", str(self.state)],
            input=json.dumps(doc), capture_output=True, text=True, cwd=ROOT, timeout=60)
        return out, time.monotonic() - t0

    def started(self) -> Hook:
        """One call made, so every state file exists."""
        out, _ = self("PostToolUse", "ls")
        assert out.returncode == 0, out.stderr
        out, _ = self()
        assert out.returncode == 0, out.stderr
        return self


def _denied(out: subprocess.CompletedProcess[str], took: float, *words: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("roadcheck guard: denied: "), out.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert took < BOUND


def _replace(path: Path, make: Any) -> None:
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    make(path)


STATE_FILES = ["guard.json", "guard.snapshot", "guard.lock", "evidence.sqlite",
               "evidence.sqlite-wal"]


class TestSpecialFiles:
    @pytest.mark.parametrize("name", STATE_FILES)
    def test_a_fifo_in_place_of_a_state_file_is_refused_at_once(self, tmp_path: Path,
                                                                name: str) -> None:
        """A named pipe is never opened for a blocking read: deny, naming the file."""
        hook = Hook(tmp_path).started()
        _replace(hook.session / name, os.mkfifo)
        out, took = hook()
        _denied(out, took, name, "named pipe (FIFO)")

    def test_a_fifo_in_the_spec_cache_is_refused(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path).started()
        (entry,) = (hook.state / ".specs").iterdir()
        _replace(entry, os.mkfifo)
        out, took = hook()
        _denied(out, took, entry.name, "named pipe (FIFO)")

    def test_a_fifo_as_the_spec_is_refused(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path)
        _replace(hook.spec, os.mkfifo)
        out, took = hook()
        _denied(out, took, "spec.yaml", "named pipe (FIFO)")

    @pytest.mark.parametrize("name", ["guard.json", "guard.snapshot", "evidence.sqlite"])
    def test_a_symlink_to_elsewhere_is_refused(self, tmp_path: Path, name: str) -> None:
        """A link is never followed out of the session directory."""
        hook = Hook(tmp_path).started()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.write_bytes((hook.session / name).read_bytes())
        _replace(hook.session / name, lambda p: p.symlink_to(elsewhere))
        out, took = hook()
        _denied(out, took, name, "symbolic link")

    def test_a_symlink_to_a_socket_is_refused(self, tmp_path: Path) -> None:
        hook = Hook(tmp_path).started()
        sock = tmp_path / "elsewhere.sock"
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(sock))
        _replace(hook.session / "guard.json", lambda p: p.symlink_to(sock))
        out, took = hook()
        _denied(out, took, "guard.json", "symbolic link")

    @pytest.mark.parametrize("name", ["guard.json", "guard.snapshot", "evidence.sqlite"])
    def test_a_directory_in_place_of_a_file_is_refused(self, tmp_path: Path,
                                                       name: str) -> None:
        hook = Hook(tmp_path).started()
        _replace(hook.session / name, lambda p: p.mkdir())
        out, took = hook()
        _denied(out, took, name, "directory")

    def test_a_session_directory_that_is_a_link_is_refused(self, tmp_path: Path) -> None:
        """The session directory itself must be a directory, not a link to one."""
        hook = Hook(tmp_path).started()
        os.rename(hook.session, tmp_path / "moved")
        hook.session.symlink_to(tmp_path / "moved")
        out, took = hook()
        _denied(out, took, "sess-1", "symbolic link")

    def test_temporary_names_cannot_be_planted(self, tmp_path: Path) -> None:
        """A FIFO at any name the guard might write through does not block its write."""
        hook = Hook(tmp_path).started()
        for name in (".guard.json.tmp", f".guard.snapshot.{os.getpid()}.tmp"):
            os.mkfifo(hook.session / name)
        out, took = hook("PostToolUse", "ls")
        assert out.returncode == 0, out.stderr
        assert took < BOUND


class TestBoundedWaits:
    def test_a_held_lock_is_answered_with_deny_within_the_bound(self, tmp_path: Path) -> None:
        """Another process holding the session's lock forever: deny after a few seconds."""
        hook = Hook(tmp_path).started()
        holder = subprocess.Popen(
            [sys.executable, "-c", "import fcntl, sys, time\n"
             "fd = open(sys.argv[1], 'a')\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
             "print('held', flush=True)\ntime.sleep(120)\n", str(hook.session / "guard.lock")],
            stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            out, took = hook()
            _denied(out, took, "guard.lock", "locked by another process")
        finally:
            holder.kill()
            holder.wait()
            if holder.stdout is not None:
                holder.stdout.close()

    def test_a_hook_that_would_overrun_answers_deny(self, tmp_path: Path) -> None:
        """Whatever hangs inside the hook, it answers deny (exit 2) before its deadline."""
        hook = Hook(tmp_path)
        script = ("import sys, time\n"
                  "import roadcheck.guard.claude_code as hook\n"
                  "hook.DEADLINE = 1.0\n"
                  "def hang(*args, **kwargs):\n    time.sleep(300)\n"
                  "hook.run_hook = hang\n"
                  "sys.argv[0] = 'roadcheck'\n"
                  "from roadcheck.__main__ import main\nmain(sys.argv[1:])\n")
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-c", script, "guard", "claude-code", "--spec",
                              str(hook.spec), "--state-dir", str(hook.state)],
                             input="{}", capture_output=True, text=True, cwd=ROOT, timeout=60)
        _denied(out, time.monotonic() - t0, "did not answer within 1 s")
