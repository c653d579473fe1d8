"""Files the command line writes for the user: whole or not at all, and a bad path is exit 2.

Every case runs the real entry point (``roadcheck.cli.main``), where an escaped
OSError would be the internal-error exit 70.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from roadcheck._files import check_writable_dir, write_output
from roadcheck.cli import main
from roadcheck.errors import InputError

WRITES = "import sys\nopen(sys.argv[1], 'w').write('good')\n"
CHECKS = "import sys\nsys.exit(0 if open(sys.argv[1]).read() == 'good' else 4)\n"


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    code = info.value.code
    assert isinstance(code, int)
    return code, out, err


def _workflow(root: Path) -> Path:
    (root / "write.py").write_text(WRITES)
    (root / "check.py").write_text(CHECKS)
    path = root / "wf.json"
    path.write_text(json.dumps({"workflow": "wf", "phases": [
        {"name": "make", "role": "writer", "artifact": "make.txt",
         "producer": ["{python}", str(root / "write.py"), "{artifact}"],
         "gate": {"command": ["{python}", str(root / "check.py"), "{artifact}"]}}]}))
    return path


def _run(capsys: pytest.CaptureFixture[str], root: Path, runs: str) -> tuple[int, str, str]:
    return _main(capsys, "run", str(_workflow(root)), "--as", "writer", "--identity", "t",
                 "--run-id", "r", "--runs-dir", runs)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _one_error_line(err: str, *parts: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error[bad-input]: ")
    for part in parts:
        assert part in lines[0], (part, lines[0])


@pytest.fixture
def finished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    runs = str(tmp_path / "runs")
    assert _run(capsys, tmp_path, runs)[0] == 0
    return runs


class TestAuditHtml:
    def test_missing_directory(self, tmp_path: Path, finished_run: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
        """--html into a directory that does not exist: exit 2 naming it, nothing printed."""
        target = tmp_path / "missing-dir" / "x.html"
        code, out, err = _main(capsys, "audit", "r", "--runs-dir", finished_run,
                               "--html", str(target))
        assert code == 2
        _one_error_line(err, str(target), "does not exist")
        assert out == ""
        assert not (tmp_path / "missing-dir").exists()

    def test_target_is_a_directory(self, tmp_path: Path, finished_run: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
        """--html naming a directory: exit 2, the directory left as it was."""
        (tmp_path / "out").mkdir()
        code, _, err = _main(capsys, "audit", "r", "--runs-dir", finished_run,
                             "--html", str(tmp_path / "out"))
        assert code == 2  # refused while parsing the options, before anything ran
        assert str(tmp_path / "out") in err and "is a directory" in err
        assert list((tmp_path / "out").iterdir()) == []

    def test_parent_is_a_file(self, tmp_path: Path, finished_run: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
        """--html under a regular file: exit 2 with the reason."""
        (tmp_path / "plain").write_text("x")
        target = tmp_path / "plain" / "x.html"
        code, _, err = _main(capsys, "audit", "r", "--runs-dir", finished_run,
                             "--html", str(target))
        assert code == 2
        _one_error_line(err, str(target), "is not a directory")

    def test_written_whole_with_no_temporary_left(self, tmp_path: Path, finished_run: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
        """A good --html path gets the page, readable like any new file, and no leftovers."""
        target = tmp_path / "pages" / "audit.html"
        target.parent.mkdir()
        code, out, _ = _main(capsys, "audit", "r", "--runs-dir", finished_run,
                             "--html", str(target))
        assert code == 0
        assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        assert os.listdir(target.parent) == ["audit.html"]
        umask = os.umask(0)
        os.umask(umask)
        assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
        assert "hash chain" in out


class TestRevalidateWriteNext:
    def test_missing_directory(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--write-next into a missing directory: exit 2 naming the path, nothing written."""
        cp = tmp_path / "cp.json"
        (tmp_path / "task.json").write_text(json.dumps({"state": "active"}))
        cp.write_text(json.dumps({"observed_at": "2026-08-10T14:20:00Z",
                                  "task": {"path": "task.json", "state": "active"},
                                  "remaining": [], "next_action": "go on"}))
        before = _files(tmp_path)
        target = tmp_path / "later" / "next.yaml"
        code, _, err = _main(capsys, "revalidate", str(cp), "--now", "2026-08-10T15:00:00Z",
                             "--write-next", str(target))
        assert code == 2
        _one_error_line(err, str(target), "does not exist")
        assert _files(tmp_path) == before


class TestRunsDir:
    def test_under_a_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--runs-dir below a regular file: exit 2 with the path and the reason, nothing run."""
        (tmp_path / "plain").write_text("x")
        runs = str(tmp_path / "plain" / "runs")
        code, out, err = _run(capsys, tmp_path, runs)
        assert code == 2
        _one_error_line(err, runs, "is not a directory")
        assert not (tmp_path / "make.txt").exists() and out == ""

    def test_is_a_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--runs-dir naming a regular file: exit 2."""
        (tmp_path / "runs").write_text("x")
        code, _, err = _run(capsys, tmp_path, str(tmp_path / "runs"))
        assert code == 2  # refused while parsing the options, before anything ran
        assert str(tmp_path / "runs") in err and "is a file" in err

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses Linux sysfs")
    def test_unwritable(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A directory nobody may write into (sysfs refuses even root): exit 2 with the reason."""
        runs = "/sys/roadcheck-runs"
        code, _, err = _run(capsys, tmp_path, runs)
        assert code == 2
        _one_error_line(err, runs, "cannot write")


class TestHelper:
    def test_replaces_atomically(self, tmp_path: Path) -> None:
        """An existing file is replaced whole and keeps its mode."""
        target = tmp_path / "out.txt"
        target.write_text("old")
        target.chmod(0o640)
        write_output(target, "new")
        assert target.read_text() == "new"
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        assert os.listdir(tmp_path) == ["out.txt"]

    def test_failure_leaves_no_temporary(self, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
        """When the final rename fails, the temporary file is removed and InputError raised."""
        def refuse(src: str, dst: str) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "replace", refuse)
        with pytest.raises(InputError, match="No space left on device") as info:
            write_output(tmp_path / "out.txt", b"data")
        assert info.value.path == str(tmp_path / "out.txt")
        assert os.listdir(tmp_path) == []

    def test_check_writable_dir_writes_nothing(self, tmp_path: Path) -> None:
        """Checking a directory (existing or to be created) leaves nothing behind."""
        check_writable_dir(tmp_path)
        check_writable_dir(tmp_path / "a" / "b")
        assert os.listdir(tmp_path) == []

    def test_directory_target(self, tmp_path: Path) -> None:
        """A target that is a directory is refused, naming it (library callers get this)."""
        with pytest.raises(InputError, match="it is a directory") as info:
            write_output(tmp_path, "x")
        assert info.value.path == str(tmp_path)
