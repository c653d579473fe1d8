"""Ctrl-C: exit 130, what was judged so far, and one line saying where it stopped.

Each test holds the command at a known point before it sends SIGINT, so the
interrupt lands in the same place on every run: replay blocks reading a named
pipe placed in the middle of its batch, accept blocks in a probe command that
announces itself.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from .conftest import DATA, EXAMPLES

BEFORE = 150
AFTER = 150
WAIT = 60.0


def _ctrl_c_default() -> None:
    """In the child: Ctrl-C acts, even when the suite runs where SIGINT is ignored.

    A shell starts a background job (``pytest ... &`` without job control) with
    SIGINT ignored, and a process inherits that: the command would never see
    the signal these tests send.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "roadcheck", *args], cwd=cwd,
                            preexec_fn=_ctrl_c_default,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _until(check, proc: subprocess.Popen[bytes]):  # type: ignore[no-untyped-def]
    """Poll ``check`` until it gives a value; fail if the process ends first."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        got = check()
        if got is not None:
            return got
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    proc.kill()
    pytest.fail(f"the command did not reach the interrupt point in {WAIT:g}s")


def _batch(tmp_path: Path) -> list[str]:
    """BEFORE passing files, a named pipe, then AFTER more files."""
    good = (EXAMPLES / "fixture_conforms.jsonl").read_bytes()
    names = []
    for i in range(BEFORE + 1 + AFTER):
        name = f"t{i:04d}.jsonl"
        if i == BEFORE:
            os.mkfifo(tmp_path / name)
        else:
            (tmp_path / name).write_bytes(good)
        names.append(name)
    return names


def _writer_when_read(fifo: Path) -> int | None:
    """The pipe's write end once a reader has it open (ENXIO until then)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return None


class TestReplayInterrupted:
    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_prints_what_was_judged_and_exits_130(self, tmp_path: Path, fmt: str) -> None:
        """SIGINT mid-batch: the judged results are rendered, then one line on stderr."""
        names = _batch(tmp_path)
        proc = _start(["replay", str(EXAMPLES / "spec.json"), *names, "--format", fmt],
                      tmp_path)
        fd = _until(lambda: _writer_when_read(tmp_path / names[BEFORE]), proc)
        try:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=WAIT)
        finally:
            os.close(fd)
        assert proc.returncode == 130
        lines = err.decode().splitlines()
        assert lines == [f"error[interrupted]: interrupted after {BEFORE} of "
                         f"{len(names)} files; the report covers those only"]
        if fmt == "json":
            doc = orjson.loads(out)
            assert [r["id"] for r in doc["results"]] == names[:BEFORE]
            assert doc["summary"] == {"pass": BEFORE, "block": 0, "error": 0, "warn": 0,
                                      "exit": 130}
        else:
            text = out.decode()
            assert f"[{BEFORE}] {names[BEFORE - 1]}\n" in text
            assert names[BEFORE] not in text
            assert f"summary: {BEFORE} PASS, 0 BLOCK, 0 ERROR -> overall exit 130" in text

    def test_no_click_abort(self, tmp_path: Path) -> None:
        """The interrupt is not click's bare 'Aborted!' with the BLOCK exit code."""
        names = _batch(tmp_path)
        proc = _start(["replay", str(EXAMPLES / "spec.json"), *names, "--summary-only"],
                      tmp_path)
        fd = _until(lambda: _writer_when_read(tmp_path / names[BEFORE]), proc)
        try:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=WAIT)
        finally:
            os.close(fd)
        assert b"Aborted!" not in err
        assert b"Traceback" not in err
        assert proc.returncode == 130


class TestOtherCommandsInterrupted:
    def test_accept_during_probe(self, tmp_path: Path) -> None:
        """SIGINT while a probe runs: exit 130 and one 'interrupted' line, nothing else."""
        marker = tmp_path / "probe-started"
        probe = shlex.join([sys.executable, "-c",
                            f"import time; open({str(marker)!r}, 'w').close(); time.sleep(60)"])
        accept = DATA / "accept"
        proc = _start(["accept", "-c", str(accept / "contract.json"),
                       "-r", str(accept / "result_sent.json"),
                       "-t", str(accept / "trace_sent.jsonl"), "--probe-cmd", probe], tmp_path)
        _until(lambda: True if marker.exists() else None, proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 130
        assert err.decode().splitlines() == ["error[interrupted]: interrupted"]
        assert out == b""


class TestLibrary:
    def test_replay_files_carries_the_partial_run(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """replay_files turns Ctrl-C into ReplayInterrupted holding the judged results."""
        from roadcheck.conformance import ReplayInterrupted, load_spec, replay_files
        from roadcheck.ingest import native

        paths = [str(EXAMPLES / n) for n in ("fixture_conforms.jsonl", "fixture_skipped.jsonl",
                                             "fixture_verified.jsonl")]

        def stopping(real):  # type: ignore[no-untyped-def]
            def stop_at_third(path, *rest):  # type: ignore[no-untyped-def]
                if path == paths[2]:  # Ctrl-C while the third file is read
                    raise KeyboardInterrupt
                return real(path, *rest)
            return stop_at_third

        monkeypatch.setattr(native, "read_bytes", stopping(native.read_bytes))
        with pytest.raises(ReplayInterrupted) as info:
            replay_files(load_spec(EXAMPLES / "spec.json"), paths)
        stop = info.value
        assert isinstance(stop, KeyboardInterrupt)
        assert (stop.done, stop.total) == (2, 3)
        assert [r.verdict for r in stop.run.results] == ["PASS", "BLOCK"]
        assert stop.run.interrupted and stop.run.exit == 130
