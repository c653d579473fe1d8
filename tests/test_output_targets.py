"""Every file the command line writes respects what its path names.

A new path or a regular file is written atomically (a temporary beside it, renamed
over it). A target that exists and is not a regular file is written through: a FIFO
gets the bytes, a device stays the device, a symlink stays a link and its target
gets the content. A directory is refused with one line. Each case runs the real
entry point, for every command that writes a file.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from roadcheck import _files

from .test_output_files import _main, _run

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
NOW = "2026-08-10T15:00:00Z"


def _replay_as(fmt: str, target: str, _runs: Path) -> list[str]:
    return ["replay", str(EX / "spec.json"), str(EX / "fixture_skipped.jsonl"), "--format", fmt,
            "-o", target]


#: name -> (argv for a target and the runs directory, the exit code it gives)
COMMANDS: dict[str, tuple[Callable[[str, Path], list[str]], int]] = {
    "replay text": (lambda t, _: ["replay", str(EX / "spec.json"),
                                  str(EX / "fixture_conforms.jsonl"), "-o", t], 0),
    **{f"replay {fmt}": (partial(_replay_as, fmt), 1)
       for fmt in ("json", "junit", "sarif", "github", "html")},
    "accept": (lambda t, _: ["accept", "--contract", str(EX / "accept/contract.yaml"),
                             "--result", str(EX / "accept/result.json"),
                             "--trace", str(EX / "accept/trace.jsonl"), "-o", t], 0),
    "revalidate -o": (lambda t, _: ["revalidate", str(EX / "resume/video/checkpoint.yaml"),
                                    "--now", NOW, "-o", t], 0),
    "revalidate --write-next": (lambda t, _: [
        "revalidate", str(EX / "resume/video/checkpoint.yaml"), "--now", NOW,
        "--write-next", t, "--format", "json"], 0),
    "audit --html": (lambda t, runs: ["audit", "r", "--runs-dir", str(runs), "--html", t], 0),
}


@pytest.fixture
def runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A finished run for ``audit`` to read."""
    where = tmp_path / "work"
    where.mkdir()
    assert _run(capsys, where, str(where / "runs"))[0] == 0
    capsys.readouterr()
    return where / "runs"


def _reference(capsys: pytest.CaptureFixture[str], name: str, tmp_path: Path,
               runs: Path, as_name: str) -> bytes:
    """What the command writes to a new regular file of the same name (the next checkpoint
    names the file it was written to)."""
    argv, code = COMMANDS[name]
    (tmp_path / "reference").mkdir()
    plain = tmp_path / "reference" / as_name
    assert _main(capsys, *argv(str(plain), runs))[0] == code
    return plain.read_bytes()


class _Reader(threading.Thread):
    """Reads a FIFO to its end, as a process at the other end of a pipe would."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.data = b""

    def run(self) -> None:
        with open(self.path, "rb") as fh:
            self.data = fh.read()


def _leftovers(*dirs: Path) -> list[str]:
    return [n for d in dirs for n in os.listdir(d) if n.endswith(".tmp")]


@pytest.mark.parametrize("name", list(COMMANDS))
class TestTargets:
    def test_a_fifo_gets_the_bytes(self, name: str, tmp_path: Path, runs: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
        """A FIFO with a reader receives exactly what a new file would hold, and stays a FIFO."""
        expected = _reference(capsys, name, tmp_path, runs, "out.fifo")
        fifo = tmp_path / "out.fifo"
        os.mkfifo(fifo)
        reader = _Reader(fifo)
        reader.start()
        argv, code = COMMANDS[name]
        assert _main(capsys, *argv(str(fifo), runs))[0] == code
        reader.join(10)
        assert not reader.is_alive()
        assert reader.data == expected
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        assert _leftovers(tmp_path) == []

    def test_a_device_stays_a_device(self, name: str, tmp_path: Path, runs: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
        """A character device (a null device made for the test) is written to, not replaced."""
        device = tmp_path / "null"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        argv, code = COMMANDS[name]
        assert _main(capsys, *argv(str(device), runs))[0] == code
        after = os.lstat(device)
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == os.makedev(1, 3)
        assert _leftovers(tmp_path) == []

    def test_a_symlink_stays_a_link_and_its_target_is_replaced(
            self, name: str, tmp_path: Path, runs: Path,
            capsys: pytest.CaptureFixture[str]) -> None:
        """A link to a regular file keeps pointing where it did; the file it names gets the
        content, atomically, beside itself."""
        expected = _reference(capsys, name, tmp_path, runs, "link.out")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        real = elsewhere / "report.out"
        real.write_text("old")
        link = tmp_path / "link.out"
        link.symlink_to(real)
        argv, code = COMMANDS[name]
        assert _main(capsys, *argv(str(link), runs))[0] == code
        assert link.is_symlink() and os.readlink(link) == str(real)
        assert real.read_bytes() == expected
        assert _leftovers(tmp_path, elsewhere) == []

    def test_a_dangling_symlink_gets_its_target_made(
            self, name: str, tmp_path: Path, runs: Path,
            capsys: pytest.CaptureFixture[str]) -> None:
        """A link to a file not made yet stays a link, and the file appears where it points."""
        expected = _reference(capsys, name, tmp_path, runs, "link.out")
        real = tmp_path / "later.out"
        link = tmp_path / "link.out"
        link.symlink_to(real)
        argv, code = COMMANDS[name]
        assert _main(capsys, *argv(str(link), runs))[0] == code
        assert link.is_symlink()
        assert real.read_bytes() == expected

    def test_a_symlink_to_a_fifo_writes_through_both(
            self, name: str, tmp_path: Path, runs: Path,
            capsys: pytest.CaptureFixture[str]) -> None:
        """A link to a FIFO: the link and the FIFO stay, the reader gets the bytes."""
        expected = _reference(capsys, name, tmp_path, runs, "link.out")
        fifo = tmp_path / "out.fifo"
        os.mkfifo(fifo)
        link = tmp_path / "link.out"
        link.symlink_to(fifo)
        reader = _Reader(fifo)
        reader.start()
        argv, code = COMMANDS[name]
        assert _main(capsys, *argv(str(link), runs))[0] == code
        reader.join(10)
        assert reader.data == expected
        assert link.is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)

    def test_a_directory_is_refused_in_one_line(self, name: str, tmp_path: Path, runs: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
        """A directory as the target: exit 2, one line naming it, the directory untouched."""
        target = tmp_path / "adir"
        target.mkdir()
        argv, _ = COMMANDS[name]
        code, _, err = _main(capsys, *argv(str(target), runs))
        assert code == 2
        assert len(err.splitlines()) == 1 and str(target) in err and "directory" in err
        assert os.listdir(target) == []

    def test_a_fifo_nobody_reads_is_an_error_not_a_hang(
            self, name: str, tmp_path: Path, runs: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> None:
        """A FIFO with no reader: after a bounded wait, exit 2 with one line naming it."""
        monkeypatch.setattr(_files, "FIFO_WAIT", 0.2)
        fifo = tmp_path / "out.fifo"
        os.mkfifo(fifo)
        argv, _ = COMMANDS[name]
        code, _, err = _main(capsys, *argv(str(fifo), runs))
        assert code == 2
        assert len(err.splitlines()) == 1 and str(fifo) in err and "FIFO" in err
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)

