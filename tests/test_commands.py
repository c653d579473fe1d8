"""The one command runner: its own process group, killed whole, and bounded output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roadcheck._commands import KEEP_HEAD, KEEP_TAIL, run_command

from .processes import gone

PY = sys.executable
#: Every test here runs the code under test in a child interpreter with this limit, so
#: a runner that hangs fails the test instead of blocking the suite.
LIMIT = 20


def _in_child(code: str) -> dict[str, object]:
    """Run ``code`` (which prints one JSON line) in a fresh interpreter, bounded in time."""
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=LIMIT,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc


class TestProcessGroup:
    """A command's children never outlive it."""

    def test_background_child_is_killed_after_exit_0(self, tmp_path: Path) -> None:
        """A command that leaves ``sleep 300 &`` behind and exits 0 leaves nothing running."""
        pidfile = tmp_path / "pid"
        script = f"sleep 300 >/dev/null 2>&1 </dev/null & echo $! > {pidfile}; exit 0"
        doc = _in_child(
            "import json; from roadcheck._commands import run_command\n"
            f"r = run_command(['sh', '-c', {script!r}], cwd=None, timeout=30)\n"
            "print(json.dumps({'exit': r.exit_code, 'error': r.error}))")
        assert doc == {"exit": 0, "error": None}
        pid = int(pidfile.read_text())
        assert gone(pid), f"background child {pid} outlived its command"

    def test_child_holding_the_pipe_does_not_hold_the_runner(self, tmp_path: Path) -> None:
        """A background child that keeps stdout open is killed; the runner returns at once."""
        pidfile = tmp_path / "pid"
        script = f"echo before; sleep 300 & echo $! > {pidfile}; exit 0"
        started = time.monotonic()
        doc = _in_child(
            "import json; from roadcheck._commands import run_command\n"
            f"r = run_command(['sh', '-c', {script!r}], cwd=None, timeout=60)\n"
            "print(json.dumps({'exit': r.exit_code, 'error': r.error, 'out': r.stdout}))")
        assert time.monotonic() - started < LIMIT / 2
        assert doc == {"exit": 0, "error": None, "out": "before\n"}
        assert gone(int(pidfile.read_text()))

    def test_timeout_kills_the_whole_group(self, tmp_path: Path) -> None:
        """On timeout the command and every process it started are killed."""
        pidfile = tmp_path / "pid"
        script = f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}; sleep 300"
        r = run_command(["sh", "-c", script], cwd=None, timeout=0.5)
        assert r.exit_code is None and r.error == "timed out after 0.5s"
        assert gone(int(pidfile.read_text()))

    def test_term_is_tried_before_kill(self, tmp_path: Path) -> None:
        """On timeout a command gets SIGTERM first and may clean up in the grace period."""
        marker = tmp_path / "cleaned"
        code = ("import signal, sys, time\n"
                "def bye(*_):\n"
                f"    open({str(marker)!r}, 'w').write('yes'); sys.exit(0)\n"
                "signal.signal(signal.SIGTERM, bye)\n"
                "print('ready', flush=True)\n"
                "time.sleep(300)\n")
        r = run_command([PY, "-c", code], cwd=None, timeout=1.0)
        assert r.error == "timed out after 1s"
        assert marker.read_text() == "yes"
        assert r.stdout == "ready\n"

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
    def test_die_with_parent(self, tmp_path: Path) -> None:
        """With die_with_parent, a caller killed by SIGKILL takes its command with it."""
        pidfile = tmp_path / "pid"
        child = (f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
                 "time.sleep(300)")
        code = ("import sys; from roadcheck._commands import run_command\n"
                f"run_command([sys.executable, '-c', {child!r}], cwd=None, timeout=300, "
                "die_with_parent=True)\n")
        parent = subprocess.Popen([PY, "-c", code])
        try:
            deadline = time.monotonic() + LIMIT
            while not pidfile.exists() or not pidfile.read_text():
                assert time.monotonic() < deadline, "the command never started"
                time.sleep(0.02)
        finally:
            parent.kill()
            parent.wait(timeout=LIMIT)
        assert gone(int(pidfile.read_text()))

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
    def test_die_with_parent_takes_the_whole_group(self, tmp_path: Path) -> None:
        """A caller killed by SIGKILL takes its command's whole group with it, a background
        child of the command too."""
        pidfile = tmp_path / "pids"
        tmp = tmp_path / "tmp"
        script = f"sleep 300 & echo $! $$ > {tmp}; mv {tmp} {pidfile}; wait"
        code = ("from roadcheck._commands import run_command\n"
                f"run_command(['sh', '-c', {script!r}], cwd=None, timeout=300, "
                "die_with_parent=True)\n")
        parent = subprocess.Popen([PY, "-c", code])
        try:
            deadline = time.monotonic() + LIMIT
            while not pidfile.exists():
                assert time.monotonic() < deadline, "the command never started"
                time.sleep(0.02)
        finally:
            parent.kill()
            parent.wait(timeout=LIMIT)
        pids = [int(p) for p in pidfile.read_text().split()]
        assert len(pids) == 2 and all(gone(pid) for pid in pids)

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
    def test_a_fork_of_the_caller_does_not_hold_the_tie(self, tmp_path: Path) -> None:
        """A caller that forked after its first tied command (a worker pool, say) still
        takes its commands with it when killed, its fork running on."""
        pidfile = tmp_path / "pid"
        code = ("import os, time\n"
                "from roadcheck._commands import run_command\n"
                "run_command(['true'], cwd=None, timeout=30, die_with_parent=True)\n"
                "if os.fork() == 0:\n"
                "    time.sleep(10)\n"
                "    os._exit(0)\n"
                f"run_command(['sh', '-c', 'echo $$ > {tmp_path / 'tmp'}; mv {tmp_path / 'tmp'} "
                f"{pidfile}; exec sleep 300'], cwd=None, timeout=300, die_with_parent=True)\n")
        parent = subprocess.Popen([PY, "-c", code])
        try:
            deadline = time.monotonic() + LIMIT
            while not pidfile.exists():
                assert time.monotonic() < deadline, "the command never started"
                time.sleep(0.02)
        finally:
            parent.kill()
            parent.wait(timeout=LIMIT)
        assert gone(int(pidfile.read_text()))

    def test_die_with_parent_needs_no_preexec_fn(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A command tied to its caller's life is started without a ``preexec_fn`` (which
        would cost it vfork): by ``posix_spawn``, in a session of its own, holding the
        lifeline's read end."""
        seen: list[dict[str, object]] = []
        spawned: list[dict[str, object]] = []
        real, real_spawn = subprocess.Popen, os.posix_spawn

        def popen(*args: object, **kwargs: object) -> object:
            seen.append(kwargs)
            return real(*args, **kwargs)  # type: ignore[call-overload]

        def spawn(*args: object, **kwargs: object) -> int:
            spawned.append(kwargs)
            return real_spawn(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(subprocess, "Popen", popen)
        monkeypatch.setattr(os, "posix_spawn", spawn)
        code = ("import os; print(os.getsid(0) == os.getpid(), "
                "any(os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:') "
                "for fd in os.listdir('/proc/self/fd') if int(fd) > 2))")
        r = run_command([PY, "-c", code], cwd=None, timeout=LIMIT, die_with_parent=True)
        assert (r.exit_code, r.stdout.strip()) == (0, "True True")
        assert all(kw.get("preexec_fn") is None for kw in seen)
        assert any(kw.get("setsid") for kw in spawned)

    @pytest.mark.parametrize("timeout", [1e30, float("inf"), 2.0**64])
    def test_huge_timeout_is_no_limit(self, timeout: float) -> None:
        """A timeout beyond what poll(2) can wait for means no practical limit, not a crash."""
        r = run_command([PY, "-c", "import time; time.sleep(0.2); print('done')"], cwd=None,
                        timeout=timeout)
        assert (r.exit_code, r.error, r.stdout.strip()) == (0, None, "done")

    def test_runs_in_its_own_session(self) -> None:
        """The command leads its own session, so its group can be killed without ours."""
        r = run_command([PY, "-c", "import os; print(os.getsid(0) == os.getpid())"], cwd=None,
                        timeout=LIMIT)
        assert r.stdout.strip() == "True"


class TestBoundedOutput:
    """Output is read through a bounded buffer: the head, the tail, and what was dropped."""

    def test_small_output_is_kept_whole(self) -> None:
        """Output under the limits comes back byte for byte, stdout and stderr apart."""
        r = run_command([PY, "-c", "import sys; print('out'); print('err', file=sys.stderr)"],
                        cwd=None, timeout=LIMIT)
        assert (r.exit_code, r.stdout, r.stderr, r.dropped) == (0, "out\n", "err\n", 0)

    def test_huge_output_is_bounded_in_memory(self) -> None:
        """200 MB on stdout completes, keeps head and tail, and the runner stays small."""
        writer = ("import sys\n"
                  "w = sys.stdout.buffer.write\n"
                  "w(b'START\\n')\n"
                  "chunk = b'x' * (1 << 20)\n"
                  "for _ in range(200):\n"
                  "    w(chunk)\n"
                  "w(b'\\nEND\\n')\n")
        doc = _in_child(
            "import json, resource, sys\n"
            "from roadcheck._commands import run_command\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            f"r = run_command([sys.executable, '-c', {writer!r}], cwd=None, timeout=60)\n"
            "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "print(json.dumps({'exit': r.exit_code, 'grew_kb': after - before,\n"
            "    'len': len(r.stdout), 'head': r.stdout[:6], 'tail': r.stdout[-4:],\n"
            "    'dropped': r.dropped, 'output': len(r.output)}))")
        assert doc["exit"] == 0
        assert doc["head"] == "START\n" and doc["tail"] == "END\n"
        assert doc["grew_kb"] < 150 * 1024, f"runner grew by {doc['grew_kb']} KiB"
        assert isinstance(doc["len"], int) and doc["len"] < KEEP_HEAD + KEEP_TAIL + 200
        assert doc["dropped"] == 200 * (1 << 20) + 11 - KEEP_HEAD - KEEP_TAIL
        assert isinstance(doc["output"], int) and doc["output"] < 20_000

    def test_dropped_bytes_are_marked(self) -> None:
        """The kept text says how many bytes were dropped between head and tail."""
        code = f"import sys; sys.stdout.write('a' * {KEEP_HEAD} + 'b' * 1000 + 'c' * {KEEP_TAIL})"
        r = run_command([PY, "-c", code], cwd=None, timeout=LIMIT)
        assert r.dropped == 1000
        assert r.stdout.startswith("a" * KEEP_HEAD) and r.stdout.endswith("c" * KEEP_TAIL)
        assert "[1000 bytes dropped]" in r.stdout
        assert "b" not in r.stdout.replace("bytes", "")

    def test_both_pipes_drain_together(self) -> None:
        """A child filling stderr while stdout is quiet never blocks on a full pipe."""
        code = ("import sys\n"
                "sys.stderr.write('e' * (4 << 20)); sys.stderr.flush()\n"
                "sys.stdout.write('done')\n")
        r = run_command([PY, "-c", code], cwd=None, timeout=LIMIT)
        assert (r.exit_code, r.stdout) == (0, "done")
        assert r.dropped == (4 << 20) - KEEP_HEAD - KEEP_TAIL


class TestErrors:
    """A missing program or a timeout is reported, never raised."""

    def test_missing_program(self) -> None:
        """A program that does not exist is an error in the result."""
        r = run_command(["/nonexistent/tool"], cwd=None, timeout=LIMIT)
        assert r.exit_code is None and r.error is not None
        assert r.error.startswith("could not start '/nonexistent/tool'")

    def test_output_before_timeout_is_kept(self) -> None:
        """What a command printed before it timed out is still reported."""
        code = "import time; print('partial', flush=True); time.sleep(300)"
        r = run_command([PY, "-c", code], cwd=None, timeout=0.5)
        assert r.error == "timed out after 0.5s" and r.stdout == "partial\n"

    @pytest.mark.parametrize("stdin", [None, subprocess.DEVNULL])
    def test_exit_code_is_passed_through(self, stdin: int | None) -> None:
        """The command's exit code is reported as is."""
        r = run_command([PY, "-c", "import sys; sys.exit(7)"], cwd=None, timeout=LIMIT,
                        stdin=stdin)
        assert (r.exit_code, r.error) == (7, None)


class TestStart:
    """How a command is found and what it inherits, as :class:`subprocess.Popen` gives it."""

    def test_program_found_on_the_path_of_its_environment(self, tmp_path: Path) -> None:
        """A bare name is looked up on the ``PATH`` the command is given, not the caller's."""
        tool = tmp_path / "only-here"
        tool.write_text("#!/bin/sh\necho found\n")
        tool.chmod(0o755)
        r = run_command(["only-here"], cwd=None, timeout=LIMIT,
                        env={"PATH": f"{tmp_path / 'none'}:{tmp_path}"})
        assert (r.exit_code, r.stdout.strip(), r.error) == (0, "found", None)
        missing = run_command(["only-here"], cwd=None, timeout=LIMIT, env={"PATH": "/nowhere"})
        assert missing.exit_code is None
        assert missing.error == "could not start 'only-here': No such file or directory"

    def test_a_file_that_cannot_run_is_reported(self, tmp_path: Path) -> None:
        """A path that is not executable, or a directory, is an error in the result."""
        plain = tmp_path / "plain"
        plain.write_text("echo no\n")
        for path in (plain, tmp_path):
            r = run_command([str(path)], cwd=None, timeout=LIMIT)
            assert r.exit_code is None
            assert r.error == f"could not start {str(path)!r}: Permission denied"

    def test_ignored_signals_come_back_at_their_default(self) -> None:
        """SIGPIPE and SIGXFSZ, which Python ignores, are not ignored in the command."""
        r = run_command(["sh", "-c", "trap"], cwd=None, timeout=LIMIT)
        assert r.exit_code == 0
        assert "PIPE" not in r.stdout and "XFSZ" not in r.stdout

    def test_no_standard_input_reads_end_of_file(self) -> None:
        """``stdin=DEVNULL`` (one ``/dev/null`` kept open) gives end of file, every time."""
        for _ in range(3):
            r = run_command([PY, "-c", "import sys; print(repr(sys.stdin.read()))"], cwd=None,
                            timeout=LIMIT, stdin=subprocess.DEVNULL)
            assert (r.exit_code, r.stdout.strip()) == (0, "''")
