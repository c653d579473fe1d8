"""Runs of native files judged and rendered in C (``roadcheck._accel.judge_files``) write the
reports the file-by-file path writes, byte for byte, however the batch mixes files the C
judge vouches for with files it gives way on."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import roadcheck._accel as accel  # a missing extension fails these tests; it never skips them
from roadcheck import conformance
from roadcheck._inputs import PathList
from roadcheck.cli import cli
from roadcheck.conformance import CompiledSpec, load_spec
from roadcheck.report.replay import ResultRenderer

from ..conftest import EXAMPLES, ROOT

SPEC = str(EXAMPLES / "spec.json")
FIXTURES = sorted(EXAMPLES.glob("fixture_*.jsonl"))
MODES = [["--format", "json"], ["--format", "json", "--summary-only"], ["--format", "text"],
         ["--format", "text", "--summary-only"]]


def _line(**rec: Any) -> str:
    return json.dumps(rec, ensure_ascii=False)


def _native(agent: str = "reporter", success: bool = True) -> bytes:
    """A file the C judge judges: a handoff without its contract's verification, a claim
    carried two handoffs (its message quotes a JSON string), an uncontracted handoff, the
    checkpoint after its action."""
    return ("\n".join([
        _line(seq=1, event="handoff", agent="scanner", from_agent="scanner",
              to_agent="aggregator", payload={"row_count": {"value": 3, "verified": False},
                                              "source": "db", "summary": "abc"}),
        _line(seq=2, event="handoff", agent="aggregator", from_agent="aggregator",
              to_agent="reporter", payload={"row_count": 3, "summary": "abc"}),
        _line(seq=3, event="handoff", agent="x", from_agent="reporter", to_agent="auditor",
              payload={}),
        _line(seq=4, event="action", agent=agent, action_type="send_report"),
        _line(seq=5, event="checkpoint", agent=agent, checkpoint_id="confirm_with_user"),
        _line(seq=6, event="final", agent="closer", task_success=success),
    ]) + "\n").encode()


def _corpus(root: Path, n: int) -> list[Path]:
    """``n`` files of every kind, in name order: the C judge vouches for most, and gives
    way on the others (broken, other formats, compressed, names and text a report must
    escape)."""
    fixtures = [p.read_bytes() for p in FIXTURES]
    tau = sorted((ROOT / "tests" / "data" / "tau").rglob("*.json"))
    made = []
    for i in range(n):
        kind = i % 23
        name = f"t{i:05d}.jsonl"
        data = fixtures[i % len(fixtures)]
        if kind == 3:
            data = _native()
        elif kind == 5:
            data = _native(agent="rep\u202eorter")  # a text report escapes it
        elif kind == 7:
            data = _native(agent="r\u00e9p", success=False)
        elif kind == 11:
            data = b'{"seq": 1, "event": "final", "task_success": tru'
        elif kind == 13 and tau:
            data, name = tau[0].read_bytes(), f"t{i:05d}.json"
        elif kind == 17:
            data, name = gzip.compress(_native(), mtime=0), f"t{i:05d}.jsonl.gz"
        elif kind == 19:
            name = f't{i:05d} "q" \\ \u00e9\t.jsonl'
        elif kind == 21:
            data = b""
        path = root / name
        path.write_bytes(data)
        made.append(path)
    return made


def _report(args: list[str], *, in_c: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes]:
    with monkeypatch.context() as m:
        if not in_c:
            m.setattr(conformance, "_native_runs", lambda *a, **k: None)
        res = CliRunner().invoke(cli, ["replay", *args])
    return res.exit_code, res.stdout_bytes


@pytest.mark.parametrize("mode", MODES, ids=" ".join)
def test_a_mixed_batch_writes_the_same_report(mode: list[str], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """More files than one run holds, every kind interleaved: the same bytes and exit."""
    _corpus(tmp_path, 2 * conformance._RUN + 40)
    args = [*mode, SPEC, str(tmp_path)]
    runs = []
    real = accel.judge_files

    def counted(*a: Any) -> Any:
        out = real(*a)
        runs.append(out[0] - a[2])
        return out

    monkeypatch.setattr(accel, "judge_files", counted)
    fast = _report(args, in_c=True, monkeypatch=monkeypatch)
    assert sum(runs) > conformance._RUN  # most files went through C, in several runs
    assert _report(args, in_c=False, monkeypatch=monkeypatch) == fast
    assert fast[0] == 1


def test_text_escapes_as_the_report_does(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A text report's runs in C print as they are only what ``escape_controls`` leaves as
    it is: agents named with the characters at each edge of the escaped ranges."""
    edges = "\x7e\x7f\x80\x9f\xa0\u061b\u061c\u061d\u200d\u200e\u200f\u2010\u2027\u2028" \
            "\u2029\u202e\u202f\u2065\u2066\u2069\u206a\ufeff\U0001f600"
    for i, ch in enumerate(edges):
        (tmp_path / f"t{i:03d}.jsonl").write_bytes(_native(agent=f"a{ch}b"))
    args = ["--format", "text", SPEC, str(tmp_path)]
    fast = _report(args, in_c=True, monkeypatch=monkeypatch)
    assert _report(args, in_c=False, monkeypatch=monkeypatch) == fast
    assert b"a\\x7fb" in fast[1] and "a\u00a0b".encode() in fast[1]


def test_files_named_one_by_one_and_a_missing_one(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    made = _corpus(tmp_path, 30)
    args = [SPEC, *map(str, made[:12]), str(tmp_path / "missing.jsonl"), *map(str, made[12:])]
    for mode in MODES:
        fast = _report([*mode, *args], in_c=True, monkeypatch=monkeypatch)
        assert _report([*mode, *args], in_c=False, monkeypatch=monkeypatch) == fast, mode


def test_a_batch_of_other_formats_backs_off(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch the C judge keeps giving way on is asked less and less often, and the native
    files after it are judged in C again."""
    other = b'{"seq": 1, "event": "final", "task_success": tru'
    for i in range(200):
        (tmp_path / f"a{i:04d}.jsonl").write_bytes(other)
    for i in range(100):
        (tmp_path / f"b{i:04d}.jsonl").write_bytes(FIXTURES[2].read_bytes())
    calls = []
    real = accel.judge_files

    def counted(*a: Any) -> Any:
        out = real(*a)
        calls.append((a[2], out[0]))
        return out

    monkeypatch.setattr(accel, "judge_files", counted)
    fast = _report(["--format", "json", SPEC, str(tmp_path)], in_c=True,
                   monkeypatch=monkeypatch)
    assert len([c for c in calls if c[0] < 200]) < 12
    # the files after a streak of give-ways: judged in C once the pause (64 files at most)
    # is over
    assert 100 - 64 <= sum(done - start for start, done in calls) < 100
    monkeypatch.setattr(accel, "judge_files", real)
    assert _report(["--format", "json", SPEC, str(tmp_path)], in_c=False,
                   monkeypatch=monkeypatch) == fast


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "roadcheck", "replay", *args], cwd=ROOT,
                          capture_output=True, check=False)


@pytest.mark.parametrize("mode", [MODES[0], MODES[1], MODES[3]], ids=" ".join)
def test_workers_fold_runs_into_the_same_report(mode: list[str], tmp_path: Path) -> None:
    """``--jobs 2``: workers judge runs in C and the writer merges them (a text report's
    results are numbered where they are written, so workers render those file by file)."""
    _corpus(tmp_path, 700)
    one = _cli(*mode, SPEC, str(tmp_path))
    two = _cli(*mode, "--jobs", "2", SPEC, str(tmp_path))
    assert (two.returncode, two.stdout) == (one.returncode, one.stdout)
    pure = subprocess.run([sys.executable, "-m", "roadcheck", "replay", *mode, SPEC, str(tmp_path)],
                          cwd=ROOT, capture_output=True, check=False,
                          env={**os.environ, "ROADCHECK_PURE_PYTHON": "1"})
    assert (pure.returncode, pure.stdout) == (one.returncode, one.stdout)


@pytest.mark.parametrize("mode", [MODES[0], MODES[1], MODES[3]], ids=" ".join)
def test_threads_judge_a_native_batch(mode: list[str], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``--jobs 2`` on a batch whose first run the C judge vouches for whole: the rest is
    judged in threads, the files it gives way on later judged the usual way, in order."""
    good = [p.read_bytes() for p in FIXTURES if "bad_input" not in p.name]
    for i in range(conformance._RUN + 50):
        (tmp_path / f"a{i:05d}.jsonl").write_bytes(good[i % len(good)])
    _corpus(tmp_path, 3 * conformance._RUN)  # t*: every kind, after the a* files
    args = [*mode, SPEC, str(tmp_path)]
    used = []
    real = conformance._threaded_runs

    def spy(*a: Any, **k: Any) -> Any:
        used.append(a[2:5])
        return real(*a, **k)

    monkeypatch.setattr(conformance, "_threaded_runs", spy)
    two = _report(["--jobs", "2", *args], in_c=True, monkeypatch=monkeypatch)
    assert used == [(conformance._RUN, 4 * conformance._RUN + 50, 2)]
    assert _report(args, in_c=True, monkeypatch=monkeypatch) == two
    assert _report(args, in_c=False, monkeypatch=monkeypatch) == two
    pure = subprocess.run([sys.executable, "-m", "roadcheck", "replay", "--jobs", "2", *args],
                          cwd=ROOT, capture_output=True, check=False,
                          env={**os.environ, "ROADCHECK_PURE_PYTHON": "1"})
    assert (pure.returncode, pure.stdout) == two


def test_a_failing_thread_run_is_judged_file_by_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(3 * conformance._RUN):
        (tmp_path / f"a{i:05d}.jsonl").write_bytes(FIXTURES[2 + i % 3].read_bytes())
    args = ["--format", "json", "--jobs", "2", SPEC, str(tmp_path)]
    expected = _report(args, in_c=False, monkeypatch=monkeypatch)
    real = accel.judge_files

    def flaky(*a: Any) -> Any:
        if a[2] >= 2 * conformance._RUN:
            raise MemoryError("out of memory")
        return real(*a)

    monkeypatch.setattr(accel, "judge_files", flaky)
    assert _report(args, in_c=True, monkeypatch=monkeypatch) == expected


class TestJudgeFiles:
    def _args(self, paths: list[str], fmt: str = "json") -> tuple[Any, ...]:
        compiled = CompiledSpec(load_spec(SPEC))
        style = ResultRenderer(fmt=fmt).native_style(compiled)
        return (*PathList(paths).buffers(), compiled.plan(accel), style)

    def test_stops_before_the_first_file_it_gives_way_on(self, tmp_path: Path) -> None:
        good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
        good.write_bytes(FIXTURES[2].read_bytes())
        bad.write_bytes(b"{")
        blob, ends, plan, style = self._args([str(good), str(good), str(bad), str(good)])
        done, entries, bodies, passed, blocked, warned = accel.judge_files(
            blob, ends, 0, 4, plan, style, 1, 0)
        assert (done, passed, blocked, warned) == (2, 2, 0, 0)
        assert entries.count(b'"format": "native"') == 2 and bodies.count(b'"id"') == 2
        assert accel.judge_files(blob, ends, 2, 4, plan, style, 1, 0)[0] == 2
        assert accel.judge_files(blob, ends, 3, 4, plan, style, 1, 0)[0] == 4

    def test_what_it_gives_way_on(self, tmp_path: Path) -> None:
        fifo = tmp_path / "fifo.jsonl"
        os.mkfifo(fifo)
        for path in ["-", str(tmp_path / "missing.jsonl"), str(tmp_path), str(fifo)]:
            blob, ends, plan, style = self._args([path])
            for listed in (0, 1):  # a listed file replaced since: found out, never read
                assert accel.judge_files(blob, ends, 0, 1, plan, style, 1, listed)[0] == 0, path

    def test_results_written_to_a_file(self, tmp_path: Path) -> None:
        """With a descriptor, the results go to its end and the call says where."""
        good = tmp_path / "good.jsonl"
        good.write_bytes(FIXTURES[2].read_bytes())
        blob, ends, plan, style = self._args([str(good)] * 3)
        inline = accel.judge_files(blob, ends, 0, 3, plan, style, 1, 0)
        with open(tmp_path / "scratch", "w+b") as fh:
            fh.write(b"before")
            fh.flush()
            done, entries, where, *counts = accel.judge_files(blob, ends, 0, 3, plan, style, 1,
                                                             0, fh.fileno())
            assert (done, entries, *counts) == (inline[0], inline[1], *inline[3:])
            assert where == (fh.fileno(), 6, len(inline[2]))
            assert os.pread(fh.fileno(), len(inline[2]), 6) == inline[2]
        with pytest.raises(OSError, match="Bad file descriptor"):
            accel.judge_files(blob, ends, 0, 3, plan, style, 1, 0, 987654)

    def test_listed_files_are_read_alike(self, tmp_path: Path) -> None:
        good = tmp_path / "good.jsonl"
        good.write_bytes(FIXTURES[2].read_bytes())
        blob, ends, plan, style = self._args([str(good)] * 3)
        assert (accel.judge_files(blob, ends, 0, 3, plan, style, 1, 3)
                == accel.judge_files(blob, ends, 0, 3, plan, style, 1, 0))

    def test_a_text_report_gives_way_on_what_it_would_escape(self, tmp_path: Path) -> None:
        path = tmp_path / "t.jsonl"
        path.write_bytes(_native(agent="a\u202eb"))
        json_ = self._args([str(path)])
        text = self._args([str(path)], fmt="text")
        assert accel.judge_files(*json_[:2], 0, 1, *json_[2:], 1, 0)[0] == 1
        assert accel.judge_files(*text[:2], 0, 1, *text[2:], 1, 0)[0] == 0

    def test_bad_arguments_raise(self, tmp_path: Path) -> None:
        blob, ends, plan, style = self._args([str(tmp_path / "x.jsonl")])
        with pytest.raises(IndexError):
            accel.judge_files(blob, ends, 0, 2, plan, style, 1, 0)
        with pytest.raises(TypeError):
            accel.judge_files(blob, ends, 0, 1, object(), style, 1, 0)
        with pytest.raises(TypeError):
            accel.judge_files(blob, ends, 0, 1, plan, style[:5], 1, 0)
        with pytest.raises(ValueError, match="unknown mode"):
            accel.judge_files(blob, ends, 0, 1, plan, (9, *style[1:]), 1, 0)
        bad_codes = (*style[:4], (b'a"b', *style[4][1:]), *style[5:])
        with pytest.raises(ValueError, match="plain ASCII"):
            accel.judge_files(blob, ends, 0, 1, plan, bad_codes, 1, 0)
