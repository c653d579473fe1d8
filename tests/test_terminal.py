"""The replay report at a terminal, run for real under a pseudo-terminal.

The command runs in a child process whose standard output and standard error
are each a pseudo-terminal (or a pipe), and the tests read the bytes it wrote:
colour codes, the order of the blocks, the progress line. The plain report a
pipe gets is the one the goldens and report-sha256 lines pin.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roadcheck.report._spool import IN_MEMORY

from .conftest import EXAMPLES, ROOT

FIXTURES = sorted(str(p.relative_to(ROOT)) for p in EXAMPLES.glob("fixture_*.jsonl"))
SPEC = "examples/spec.json"
ESC = b"\x1b["
WAIT = 60.0


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(extra)
    return env


def _ctrl_c_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Run:
    """A command started with its stdout and stderr each a pseudo-terminal or a pipe."""

    def __init__(self, args: list[str], *, stdout_tty: bool = True, stderr_tty: bool = True,
                 env: dict[str, str] | None = None, cwd: Path = ROOT) -> None:
        self.fds: dict[str, int] = {}
        ends: dict[str, int] = {}
        for name, tty in (("out", stdout_tty), ("err", stderr_tty)):
            if tty:
                master, slave = pty.openpty()
            else:
                master, slave = os.pipe()
            self.fds[name], ends[name] = master, slave
        self.proc = subprocess.Popen([sys.executable, "-m", "roadcheck", *args], cwd=cwd,
                                     stdin=subprocess.DEVNULL, stdout=ends["out"],
                                     stderr=ends["err"], env=env if env is not None else _env(),
                                     preexec_fn=_ctrl_c_default)
        for fd in ends.values():
            os.close(fd)
        self.got = {"out": b"", "err": b""}
        self.open = set(self.fds)

    def read_until(self, done, timeout: float = WAIT) -> None:  # type: ignore[no-untyped-def]
        """Read both streams until ``done(self)`` holds or both are closed."""
        deadline = time.monotonic() + timeout
        while self.open and not done(self) and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fds[n] for n in self.open], [], [], 0.05)
            for name in list(self.open):
                if self.fds[name] in ready:
                    try:
                        data = os.read(self.fds[name], 65536)
                    except OSError:  # a pseudo-terminal whose other end closed
                        data = b""
                    if data:
                        self.got[name] += data
                    else:
                        self.open.discard(name)

    def finish(self) -> tuple[int, bytes, bytes]:
        self.read_until(lambda r: False)
        code = self.proc.wait(timeout=WAIT)
        for fd in self.fds.values():
            os.close(fd)
        return code, self.got["out"], self.got["err"]


def _run(*args: str, **kw: object) -> tuple[int, bytes, bytes]:
    return Run(list(args), **kw).finish()  # type: ignore[arg-type]


def _plain(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "roadcheck", *args], cwd=ROOT, env=_env(**env),
                          capture_output=True, check=False)


def _text(out: bytes) -> str:
    """What a person reads: colour codes removed, the terminal's CRLF as LF."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", out.decode()).replace("\r\n", "\n")


class TestTheRule:
    def test_terminal_gets_colour_and_failures_first(self) -> None:
        code, out, _ = _run("replay", SPEC, *FIXTURES)
        assert code == 1
        assert ESC + b"1;31m  verdict : BLOCK" in out
        assert ESC + b"1;35m  verdict : ERROR" in out
        text = _text(out)
        heads = [line for line in text.splitlines() if line.startswith("[")]
        assert heads == ["[1] examples/fixture_bad_input.jsonl",
                         "[2] examples/fixture_broken_contract.jsonl",
                         "[4] examples/fixture_late_checkpoint.jsonl",
                         "[5] examples/fixture_propagated.jsonl",
                         "[6] examples/fixture_skipped.jsonl"]
        assert text.splitlines()[-1] == ("summary: 3 PASS (1 with warnings), 4 BLOCK, 1 ERROR "
                                         "-> overall exit 1")
        assert "report-sha256" not in text

    def test_no_color_keeps_the_view_without_colour(self) -> None:
        code, out, _ = _run("replay", SPEC, *FIXTURES, env=_env(NO_COLOR="1"))
        assert code == 1
        assert ESC not in out
        assert "[6] examples/fixture_skipped.jsonl\n  verdict : BLOCK" in _text(out)
        assert "fixture_conforms" not in _text(out)

    def test_force_color_colours_a_pipe(self) -> None:
        done = _plain("replay", SPEC, *FIXTURES, FORCE_COLOR="1")
        assert done.returncode == 1
        assert ESC + b"1;31m  verdict : BLOCK" in done.stdout
        assert b"report-sha256" not in done.stdout

    def test_a_pipe_gets_the_plain_report(self, tmp_path: Path) -> None:
        """Piped, the report is the plain one: the bytes --output writes, sha256 line and all."""
        done = _plain("replay", SPEC, *FIXTURES)
        target = tmp_path / "report.txt"
        _plain("replay", SPEC, *FIXTURES, "--output", str(target), FORCE_COLOR="1")
        assert done.stdout == target.read_bytes()
        assert ESC not in done.stdout
        assert done.stdout.decode().splitlines()[-1].startswith("report-sha256: ")
        assert "final : task_success=true (recorded, printed for contrast, ignored for the " \
               "verdict)" in done.stdout.decode()

    def test_stdout_piped_with_stderr_a_terminal_stays_plain(self) -> None:
        code, out, _ = _run("replay", SPEC, *FIXTURES, stdout_tty=False)
        assert code == 1
        assert out == _plain("replay", SPEC, *FIXTURES).stdout


class TestLayout:
    def test_the_note_is_said_once(self) -> None:
        _, out, _ = _run("replay", SPEC, *FIXTURES, "-v")
        text = _text(out)
        assert "recorded, printed for contrast, ignored for the verdict" not in text
        assert text.count("printed for contrast") == 1
        assert text.count("  final : task_success=true\n") == 7
        lines = text.splitlines()
        assert lines[-2].startswith("note : task_success is what each run recorded")

    def test_verbose_adds_the_pass_blocks_after_the_failures(self) -> None:
        _, out, _ = _run("replay", SPEC, *FIXTURES, "-v")
        heads = [line.split()[0] for line in _text(out).splitlines() if line.startswith("[")]
        assert heads == ["[1]", "[2]", "[4]", "[5]", "[6]", "[3]", "[7]", "[8]"]
        assert "  warn : uncontracted-handoff" in _text(out)

    def test_quiet_prints_the_summary_alone(self) -> None:
        code, out, _ = _run("replay", SPEC, *FIXTURES, "-q")
        assert code == 1
        assert _text(out) == ("summary: 3 PASS (1 with warnings), 4 BLOCK, 1 ERROR -> overall "
                              "exit 1\n")
        assert ESC + b"1;31m4 BLOCK" in out

    @pytest.mark.parametrize(("show", "heads"), [
        ("error", ["[1]"]),
        ("pass", ["[3]", "[7]", "[8]"]),
        ("block", ["[2]", "[4]", "[5]", "[6]"]),
        ("pass,error", ["[1]", "[3]", "[7]", "[8]"]),
    ])
    def test_show_filters_the_blocks(self, show: str, heads: list[str]) -> None:
        """--show picks the verdicts; in a pipe it is the same view, plain."""
        done = _plain("replay", SPEC, *FIXTURES, "--show", show)
        assert done.returncode == 1
        assert ESC not in done.stdout
        text = done.stdout.decode()
        assert [line.split()[0] for line in text.splitlines() if line.startswith("[")] == heads
        assert text.splitlines()[-1].startswith("summary: 3 PASS")

    def test_same_view_with_jobs(self) -> None:
        """The view's blocks are rendered where they are judged: --jobs 2 changes nothing."""
        one = _plain("replay", SPEC, *FIXTURES, "-v")
        two = _plain("replay", SPEC, *FIXTURES, "-v", "--jobs", "2")
        assert two.returncode == one.returncode == 1
        assert two.stdout == one.stdout

    def test_explicit_view_in_a_file(self, tmp_path: Path) -> None:
        target = tmp_path / "r.txt"
        done = _plain("replay", SPEC, *FIXTURES, "-q", "--output", str(target), FORCE_COLOR="1")
        assert done.stdout == b""
        assert target.read_bytes() == (b"summary: 3 PASS (1 with warnings), 4 BLOCK, 1 ERROR "
                                       b"-> overall exit 1\n")

    def test_summary_only_and_by(self) -> None:
        done = _plain("replay", SPEC, *FIXTURES[:2], "-v", "--summary-only", "--by", "model",
                      "--per-file")
        assert done.stdout.decode().splitlines()[3:] == [
            "file : examples/fixture_bad_input.jsonl: 0 PASS, 0 BLOCK, 1 ERROR",
            "file : examples/fixture_broken_contract.jsonl: 0 PASS, 1 BLOCK, 0 ERROR",
            "files: 2, 2 trajectories",
            "by model=(absent): 0 PASS, 1 BLOCK, 1 ERROR",
            "summary: 0 PASS, 1 BLOCK, 1 ERROR -> overall exit 1",
        ]

    def test_a_batch_ends_with_the_totals_and_the_worst_files(self) -> None:
        """Like ``ruff --statistics``: how often each code fired, then the files with the
        most failures (at most five, the first of equals first)."""
        done = _plain("replay", SPEC, *FIXTURES, "-v", "--summary-only")
        lines = done.stdout.decode().splitlines()
        at = lines.index("files: 8, 8 trajectories")
        assert lines[at + 1].startswith("reasons: bad-input 1, checkpoint-after-action 1, ")
        assert lines[at + 2] == "warnings: uncontracted-handoff 1"
        worst = [line for line in lines if line.startswith("worst: ")]
        assert worst == [
            "worst: examples/fixture_bad_input.jsonl: 0 BLOCK, 1 ERROR",
            "worst: examples/fixture_broken_contract.jsonl: 1 BLOCK, 0 ERROR",
            "worst: examples/fixture_late_checkpoint.jsonl: 1 BLOCK, 0 ERROR",
            "worst: examples/fixture_propagated.jsonl: 1 BLOCK, 0 ERROR",
            "worst: examples/fixture_skipped.jsonl: 1 BLOCK, 0 ERROR",
        ]
        assert not [line for line in lines if line.startswith("file :")]

    def test_hostile_id_is_shown_as_text(self, tmp_path: Path) -> None:
        """An ESC or a bidi control in a trajectory id cannot reach the terminal raw."""
        lines = (EXAMPLES / "fixture_skipped.jsonl").read_text().splitlines()
        first = json.loads(lines[0])
        first["trajectory_id"] = "evil\x1b[2J\u202eid"
        lines[0] = json.dumps(first)
        path = tmp_path / "hostile.jsonl"
        path.write_text("\n".join(lines) + "\n")
        _, out, _ = _run("replay", str(ROOT / SPEC), str(path))
        assert b"\x1b[2J" not in out
        assert "\u202e".encode() not in out


class TestUsage:
    @pytest.mark.parametrize("args", [["-q", "-v"], ["--show", "block", "-q"],
                                      ["--show", "bogus"], ["--show", ""],
                                      ["--format", "json", "-v"]])
    def test_refused(self, args: list[str]) -> None:
        done = _plain("replay", SPEC, *FIXTURES, *args)
        assert done.returncode == 2
        assert done.stdout == b""
        assert done.stderr.decode().startswith("error[usage]: replay: ")
        assert len(done.stderr.splitlines()) == 1


class TestProgress:
    def test_on_a_terminal_and_cleared(self) -> None:
        code, _, err = _run("replay", SPEC, *FIXTURES, stdout_tty=False)
        assert code == 1
        assert err.startswith(b"\r\x1b[Kroadcheck replay: 1 of 8 files, 0 trajectories")
        assert err.endswith(b"\r\x1b[K")

    def test_never_in_a_pipe(self) -> None:
        code, _, err = _run("replay", SPEC, *FIXTURES, stderr_tty=False)
        assert code == 1
        assert err == b""

    def test_not_for_one_file(self) -> None:
        _, _, err = _run("replay", SPEC, FIXTURES[0])
        assert err == b""

    @pytest.mark.parametrize("fmt", ["junit", "sarif", "github", "html"])
    def test_for_the_formats_written_whole(self, fmt: str, tmp_path: Path) -> None:
        """A report written at the end shows the same line while it judges; the report's
        bytes are those written without a terminal."""
        out = tmp_path / f"report.{fmt}"
        code, _, err = _run("replay", SPEC, *FIXTURES, "--format", fmt, "-o", str(out),
                            stdout_tty=False)
        assert code == 1
        assert err.startswith(b"\r\x1b[Kroadcheck replay: 1 of 8 files, 0 trajectories")
        if fmt == "html":  # a page to open: where it is, once it is written
            assert err.endswith(b"\r\x1b[K" + f"wrote {out} (8 trajectories)\r\n".encode())
        else:
            assert err.endswith(b"\r\x1b[K")
        plain = tmp_path / f"plain.{fmt}"
        assert _plain("replay", SPEC, *FIXTURES, "--format", fmt, "-o",
                      str(plain)).returncode == 1
        assert out.read_bytes() == plain.read_bytes()


#: Code that reports which top-level modules a command loaded (as tests/test_command_imports).
PROBE = """
import json, sys
from roadcheck.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


class TestLazyRich:
    @pytest.mark.parametrize(("extra", "env", "loaded"), [
        ([], {}, False), (["-v"], {}, False), (["-v"], {"FORCE_COLOR": "1"}, True),
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)])
    def test_rich_only_when_colour_is_rendered(self, extra: list[str], env: dict[str, str],
                                               loaded: bool) -> None:
        done = subprocess.run([sys.executable, "-c", PROBE, "replay", SPEC, *FIXTURES, *extra],
                              cwd=ROOT, env=_env(**env), capture_output=True, text=True,
                              check=True)
        modules = json.loads(done.stderr.splitlines()[-1])
        assert ("rich" in modules) is loaded


def _batch_ending_in_a_pipe(tmp_path: Path, n: int) -> list[str]:
    """``n`` blocking trajectories, then a named pipe the test feeds when it has looked."""
    bad = (EXAMPLES / "fixture_skipped.jsonl").read_bytes()
    names = []
    for i in range(n):
        (tmp_path / f"t{i:04d}.jsonl").write_bytes(bad)
        names.append(f"t{i:04d}.jsonl")
    os.mkfifo(tmp_path / "last.jsonl")
    return [*names, "last.jsonl"]


def _feed_when_read(fifo: Path, data: bytes, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            assert proc.poll() is None
            time.sleep(0.01)
            continue
        os.write(fd, data)
        os.close(fd)
        return
    pytest.fail("the command never opened the last file")


def _wait_for_reader(fifo: Path, proc: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            assert proc.poll() is None
            time.sleep(0.01)
    pytest.fail("the command never opened the last file")


def _spooled_bytes(pid: int) -> int:
    """What the process holds in deleted (temporary) files: its spooled results."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        link = f"/proc/{pid}/fd/{fd}"
        try:
            if os.readlink(link).endswith("(deleted)"):
                total += os.stat(link).st_size
        except OSError:
            continue
    return total


class TestStreamed:
    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_output_file_is_written_as_judged(self, tmp_path: Path, fmt: str) -> None:
        """Before the last file is judged the results so far are on disk, not in memory
        (past the megabyte a spool holds in memory), and the target does not exist yet;
        at the end it is the report stdout would get."""
        n = 3 * IN_MEMORY // 1000  # some 600 bytes a result: twice what memory holds
        names = _batch_ending_in_a_pipe(tmp_path, n)
        target = tmp_path / "out" / "report"
        target.parent.mkdir()
        spec = str(EXAMPLES / "spec.json")
        run = Run(["replay", spec, *names, "--format", fmt, "--output", str(target)],
                  stdout_tty=False, stderr_tty=False, cwd=tmp_path)
        fd = _wait_for_reader(tmp_path / "last.jsonl", run.proc)
        try:
            assert _spooled_bytes(run.proc.pid) > n * 200
            assert not target.exists()
            assert [p.name.endswith(".tmp") for p in target.parent.iterdir()] == [True]
            os.write(fd, (EXAMPLES / "fixture_conforms.jsonl").read_bytes())
        finally:
            os.close(fd)
        code, out, err = run.finish()
        assert (code, out, err) == (1, b"", b"")
        (tmp_path / "last.jsonl").unlink()
        (tmp_path / "last.jsonl").write_bytes((EXAMPLES / "fixture_conforms.jsonl").read_bytes())
        whole = subprocess.run([sys.executable, "-m", "roadcheck", "replay", spec, *names,
                                "--format", fmt], cwd=tmp_path, capture_output=True, check=False)
        assert target.read_bytes() == whole.stdout
        assert [p.name for p in target.parent.iterdir()] == ["report"]

    def test_terminal_shows_failures_as_they_are_judged(self, tmp_path: Path) -> None:
        names = _batch_ending_in_a_pipe(tmp_path, 3)
        run = Run(["replay", str(EXAMPLES / "spec.json"), *names], cwd=tmp_path)
        fd = _wait_for_reader(tmp_path / "last.jsonl", run.proc)
        try:
            run.read_until(lambda r: b"[3] t0002.jsonl" in r.got["out"], timeout=10)
            assert b"[3] t0002.jsonl" in run.got["out"]
            assert b"summary" not in run.got["out"]
            os.write(fd, (EXAMPLES / "fixture_conforms.jsonl").read_bytes())
        finally:
            os.close(fd)
        code, out, _ = run.finish()
        assert code == 1
        assert _text(out).splitlines()[-1] == "summary: 1 PASS, 3 BLOCK, 0 ERROR -> overall exit 1"

    def test_ctrl_c_leaves_the_partial_report_whole(self, tmp_path: Path) -> None:
        names = _batch_ending_in_a_pipe(tmp_path, 5)
        target = tmp_path / "report.txt"
        target.write_text("old\n")
        run = Run(["replay", str(EXAMPLES / "spec.json"), *names, "--output", str(target)],
                  stdout_tty=False, stderr_tty=False, cwd=tmp_path)
        fd = _wait_for_reader(tmp_path / "last.jsonl", run.proc)
        try:
            assert target.read_text() == "old\n"
            run.proc.send_signal(signal.SIGINT)
            code, _, err = run.finish()
        finally:
            os.close(fd)
        assert code == 130
        assert err.decode().splitlines() == ["error[interrupted]: interrupted after 5 of 6 "
                                             "files; the report covers those only"]
        text = target.read_text()
        assert "summary: 0 PASS, 5 BLOCK, 0 ERROR -> overall exit 130" in text
        assert text.splitlines()[-1].startswith("report-sha256: ")
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []

    def test_ctrl_c_with_progress_keeps_what_was_judged(self, tmp_path: Path) -> None:
        """A JUnit report written whole, with the progress line: Ctrl-C still writes the
        five results judged, and the line is cleared before the error."""
        names = _batch_ending_in_a_pipe(tmp_path, 5)
        target = tmp_path / "report.xml"
        run = Run(["replay", str(EXAMPLES / "spec.json"), *names, "--format", "junit",
                   "--output", str(target)], stdout_tty=False, cwd=tmp_path)
        fd = _wait_for_reader(tmp_path / "last.jsonl", run.proc)
        try:
            run.proc.send_signal(signal.SIGINT)
            code, _, err = run.finish()
        finally:
            os.close(fd)
        assert code == 130
        assert err.startswith(b"\r\x1b[Kroadcheck replay: 1 of 6 files")
        last = err.rsplit(b"\r\x1b[K", 1)[1].decode()
        assert last.startswith("error[interrupted]: interrupted after 5 of 6 files")
        assert target.read_text().count("<testcase ") == 5

    def test_failure_leaves_the_target_untouched(self, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """An error while the report is written removes the temporary; the old file stays."""
        from click.testing import CliRunner

        from roadcheck.cli import cli
        from roadcheck.report import replay as replay_report

        target = tmp_path / "report.txt"
        target.write_text("old\n")

        def broken(self: object, **kw: object) -> int:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(replay_report.ReplayReportWriter, "finish", broken)
        result = CliRunner().invoke(cli, ["replay", str(EXAMPLES / "spec.json"),
                                          str(EXAMPLES / "fixture_conforms.jsonl"),
                                          "--output", str(target)])
        assert result.exit_code == 2
        assert result.stderr == (f"error[bad-input]: {target}: cannot write the report: "
                                 "No space left on device\n")
        assert target.read_text() == "old\n"
        assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]


REVALIDATE = ("revalidate", "examples/resume/chain/checkpoint.yaml", "--now",
              "2026-08-10T15:00:00Z")
ACCEPT = ("accept", "--self-test")


class TestAcceptAndRevalidate:
    @pytest.mark.parametrize(("args", "painted"), [
        (REVALIDATE, [ESC + b"1;31mSTOP" + ESC + b"0m  blocker-active",
                      ESC + b"1;31mdecision: escalate (exit 1)"]),
        (ACCEPT, [ESC + b"1;32m[ACCEPTED]" + ESC + b"0m agent created cust_1001",
                  ESC + b"1;31mFAIL" + ESC + b"0m - result is not valid JSON"]),
    ])
    def test_coloured_at_a_terminal_with_the_same_words(self, args: tuple[str, ...],
                                                        painted: list[bytes]) -> None:
        code, out, _ = _run(*args)
        plain = _plain(*args)
        assert code == plain.returncode
        for part in painted:
            assert part in out
        assert _text(out) == plain.stdout.decode()
        assert ESC not in plain.stdout

    @pytest.mark.parametrize("args", [REVALIDATE, ACCEPT])
    def test_no_color(self, args: tuple[str, ...]) -> None:
        _, out, _ = _run(*args, env=_env(NO_COLOR="1"))
        assert out.replace(b"\r\n", b"\n") == _plain(*args).stdout
