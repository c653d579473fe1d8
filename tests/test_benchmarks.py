"""Every benchmark script exits 1 when it misses a target, and 0 only when it meets them all.

Each script's measurements are replaced by figures chosen on either side of
its targets (the expensive parts: processes, Ray, a database, thousands of
files), and its ``main`` or its verdict function is run on them; a script with
a cheap measurement is run for real against a target it cannot meet. No
timing is asserted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from .conftest import EXAMPLES, ROOT, load_script

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """Import a benchmark script by name; ``sys.path`` and ``sys.argv`` are put back after."""
    monkeypatch.setattr(sys, "path", list(sys.path))

    def _load(name: str) -> ModuleType:
        monkeypatch.setattr(sys, "argv", [f"{name}.py"])
        return load_script(BENCHMARKS / f"{name}.py")

    return _load


def _argv(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["bench.py", *args])


def test_every_script_has_a_miss_test() -> None:
    """A new script under benchmarks/ needs its case here."""
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")}
    tested = {name.removeprefix("test_").removesuffix("_misses")
              for name in globals() if name.startswith("test_") and name.endswith("_misses")}
    assert scripts == tested


def test_accept_verify_misses(load: Callable[[str], ModuleType]) -> None:
    """An impossible budget is a miss; a budget nothing misses is met."""
    bench = load("accept_verify")
    assert bench.main(["--number", "10", "--budget-us", "0"]) == 1
    assert bench.main(["--number", "10", "--budget-us", "1e9"]) == 0


def test_agent_overhead_misses(load: Callable[[str], ModuleType],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Overhead past the 5 ms budget is a miss."""
    bench = load("agent_overhead")
    monkeypatch.setenv("OPENAI_API_KEY", "bench")

    def figures(overhead: float) -> Callable[..., dict[str, Any]]:
        return lambda n, repeat: {"round_trip_ms": 3.0, "agent_attempt_ms": 3.0 + overhead,
                                  "command_attempt_ms": 20.0, "agent_overhead_ms": overhead}

    monkeypatch.setattr(bench, "measure", figures(5.5))
    assert bench.main() == 1
    monkeypatch.setattr(bench, "measure", figures(0.5))
    assert bench.main() == 0


def test_claims_accuracy_misses(load: Callable[[str], ModuleType], tmp_path: Path) -> None:
    """Labels the contract agrees with meet the floors; a wrong label, a finding no label
    covers, or too few claims is a miss. A ``no_claim`` label is no claim: it does not
    count toward the least number of claims."""
    bench = load("claims_accuracy")
    session = "tests/data/recorded/claude-code/push-after-failed-tests.jsonl"

    def labels(tests_pass: str, *, pushed: bool = True, misfire: bool = False) -> Path:
        rows = [{"session": session, "seq": 5, "claim": "tests-pass", "words": "All tests pass",
                 "label": tests_pass, "reason": "pytest failed"}]
        if pushed:
            rows.append({"session": session, "seq": 5, "claim": "pushed",
                         "words": "I pushed", "label": "backed", "reason": "git push ran"})
        if misfire:
            rows.append({"session": session, "seq": 5, "claim": "deployed",
                         "words": "deployed", "label": "no_claim", "reason": "not found"})
        path = tmp_path / f"labels-{tests_pass}-{pushed}-{misfire}.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        return path

    read = tmp_path / "sessions.txt"
    read.write_text(f"{session}\n")
    for rows, least, code in ((labels("not_backed"), "2", 0), (labels("backed"), "2", 1),
                              (labels("not_backed"), "3", 1),
                              (labels("not_backed", misfire=True), "2", 0),
                              (labels("not_backed", misfire=True), "3", 1),
                              (labels("not_backed", pushed=False), "1", 1)):
        assert bench.main(["--labels", str(rows), "--sessions", str(read),
                           "--min-claims", least]) == code


def test_claims_accuracy_counts_claims_and_misfires_apart(
        load: Callable[[str], ModuleType], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The output gives the claims counted (backed or not) and the misfires apart."""
    bench = load("claims_accuracy")
    session = "tests/data/recorded/claude-code/push-after-failed-tests.jsonl"
    rows = [{"session": session, "seq": 5, "claim": "tests-pass", "words": "All tests pass",
             "label": "not_backed", "reason": "pytest failed"},
            {"session": session, "seq": 5, "claim": "pushed", "words": "I pushed",
             "label": "backed", "reason": "git push ran"},
            {"session": session, "seq": 5, "claim": "deployed", "words": "deployed",
             "label": "no_claim", "reason": "not found"}]
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    read = tmp_path / "sessions.txt"
    read.write_text(f"{session}\n")
    assert bench.main(["--labels", str(path), "--sessions", str(read),
                       "--min-claims", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "claims counted (backed or not_backed): 2" in out
    assert "misfires counted (no_claim): 1" in out


def test_ci_formats_misses(load: Callable[[str], ModuleType],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Two real trajectories against a target no format can meet, then one every format meets."""
    bench = load("ci_formats")
    _argv(monkeypatch, "--trajectories", "2")
    monkeypatch.setattr(bench, "TARGETS", {"junit": 0.0})
    assert bench.main() == 1
    monkeypatch.setattr(bench, "TARGETS", {"junit": 1e9})
    assert bench.main() == 0


def test_crash_resume_misses(load: Callable[[str], ModuleType],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A duplicate publish is a miss, and so is a set of trials where no kill landed mid-run."""
    bench = load("crash_resume")

    def trials(**kw: Any) -> Callable[..., list[Any]]:
        def make(*args: Any, **kwargs: Any) -> list[Any]:
            fields = {"killed": True, "publishes": 1, "exit": 0, "chain_ok": True,
                      "order_ok": True, **kw}
            return [bench.Trial(0.1, **fields), bench.Trial(0.2, **{**fields, "killed": False})]
        return make

    monkeypatch.setattr(bench, "run_trials", trials())
    assert bench.main(["2", "1"]) == 0
    monkeypatch.setattr(bench, "run_trials", trials(publishes=2))
    assert bench.main(["2", "1"]) == 1
    monkeypatch.setattr(bench, "run_trials", trials(killed=False))
    assert bench.main(["2", "1"]) == 1


def test_fuzz_campaign_misses(load: Callable[[str], ModuleType],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An internal error or a false pass is a miss; so is a campaign that ran no case."""
    bench = load("fuzz_campaign")
    for tallies, code in (({"native": bench.Tally(cases=5)}, 0),
                          ({"native": bench.Tally(cases=5, internal=1)}, 1),
                          ({"native": bench.Tally(cases=5, false_pass=1)}, 1),
                          ({}, 1)):
        monkeypatch.setattr(bench, "run", lambda *a, t=tallies, **k: t)
        assert bench.main(["--cases", "5"]) == code, tallies


def test_guard_forgery_misses(load: Callable[[str], ModuleType],
                              monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """A forgery honoured with a key is a miss; one honoured only without a key is not."""
    bench = load("guard_forgery")
    case = bench.CASES[0]

    def results(keyed_outcome: str) -> Callable[..., Any]:
        return lambda modes, only, verbose: {(case.cls, True): [(case, keyed_outcome)],
                                             (case.cls, False): [(case, "honoured: allow")]}

    monkeypatch.setattr(bench, "matrix", results("honoured: allow"))
    assert bench.main([]) == 1
    assert "MISSED with a key" in capsys.readouterr().out
    monkeypatch.setattr(bench, "matrix", results("detected"))
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert f"{case.cls:10} {'1/1':>12} {'0/1':>14}" in out


def test_guard_latency_misses(load: Callable[[str], ModuleType],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of the five figures over its target is a miss on its own."""
    bench = load("guard_latency")
    monkeypatch.setattr(bench, "bare_lookup", lambda calls: (0.1, 0.1))
    good: dict[str, Any] = {"check": (8.0, 12.0), "mixed": (12.0, 30.0), "observe": 7.0,
                            "hook": (60.0, 12.0, 50.0), "resident": (1.5, 8.0, 0.1),
                            "client": (20.0, 9.0, 9.5), "process": (70.0, 72.0)}
    for change in ({}, {"check": (21.0, 12.0)}, {"check": (8.0, 51.0)}, {"observe": 11.0},
                   {"hook": (81.0, 12.0, 50.0)}, {"mixed": (12.0, 51.0)},
                   {"resident": (5.1, 8.0, 0.1)}, {"resident": (1.5, 20.1, 0.1)},
                   {"process": (82.0, 72.0)}):
        f = {**good, **change}
        monkeypatch.setattr(bench, "check_latency", lambda calls, v=f["check"]: v)
        monkeypatch.setattr(bench, "mixed_check_latency", lambda calls, v=f["mixed"]: v)
        monkeypatch.setattr(bench, "observe_latency", lambda rounds, v=f["observe"]: v)
        monkeypatch.setattr(bench, "hook_latency", lambda runs, v=f["hook"]: v)
        monkeypatch.setattr(bench, "resident_latency", lambda calls, v=f["resident"]: v)
        monkeypatch.setattr(bench, "client_latency", lambda runs, v=f["client"]: v)
        monkeypatch.setattr(bench, "process_path_latency", lambda runs, ref, v=f["process"]: v)
        assert bench.main([]) == (1 if change else 0), change


def test_guard_latency_resident_mode_measures(load: Callable[[str], ModuleType]) -> None:
    """The resident round trip is measured through a real daemon, which answers every call
    (ask, for the stored session's push), and the daemon is gone afterwards."""
    bench = load("guard_latency")
    p50, p99, echo = bench.resident_latency(5)
    assert 0 < p50 <= p99 and echo > 0


def test_harness_overhead_misses(load: Callable[[str], ModuleType],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Overhead over 3 ms in process or through the CLI, or a sync count off its target
    (fewer as well as more), is a miss."""
    bench = load("harness_overhead")
    good: dict[str, Any] = {"jsonl": 1.02, "sqlite": 1.02, "cli": 1.02, "syncs": (1.0, 2.0),
                            "traced": (1.0, 7)}
    for change in ({}, {"jsonl": 1.04}, {"sqlite": 1.04}, {"cli": 1.04}, {"syncs": (2.0, 2.0)},
                   {"syncs": (0.0, 2.0)}, {"syncs": (1.0, 1.0)}, {"traced": (0.0, 7)},
                   {"traced": None}):
        f = {**good, **change}
        monkeypatch.setattr(bench, "measure", lambda phases, repeat, f=f: {
            "bare": 1.0, "jsonl": f["jsonl"], "sqlite": f["sqlite"]})
        monkeypatch.setattr(bench, "cli_overhead", lambda phases, repeat, f=f: (1.0, f["cli"]))
        monkeypatch.setattr(bench, "fsyncs_per_phase",
                            lambda phases, effect, f=f: (f["syncs"][effect], 7))
        monkeypatch.setattr(bench, "cli_fsyncs", lambda phases, f=f: f["traced"])
        missed = bool(change) and change != {"traced": None}  # strace missing: not counted
        assert bench.main(["--phases", "10", "--cli-phases", "10", "--repeat", "1"]) == missed, \
            change


def test_multirun_memory_misses(load: Callable[[str], ModuleType],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Peak RSS over 1.5x the file is a miss, and so is replay failing to give a verdict."""
    bench = load("multirun_memory")
    _argv(monkeypatch, "--megabytes", "0.001")

    def make_file(path: Path, megabytes: float) -> int:
        path.write_bytes(b"x" * 1000)
        return 1

    monkeypatch.setattr(bench, "make_file", make_file)
    for code, rss, want in ((1, 1400, 0), (1, 1600, 1), (2, 100, 1)):
        monkeypatch.setattr(bench, "peak", lambda cmd, c=code, r=rss: (c, r, 0.1))
        assert bench.main() == want, (code, rss)


def test_pm4py_declare_misses(load: Callable[[str], ModuleType],
                              monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """Under 3x, or the two sides disagreeing, is a miss; without pm4py, exit 2, never a pass."""
    bench = load("pm4py_declare")
    assert bench.verdict(True, 3.1) == []
    assert bench.verdict(True, 2.9) != []
    assert bench.verdict(True, float("nan")) != []
    assert bench.verdict(False, 50.0) == ["agreement"]
    monkeypatch.setattr(bench, "pm4py_installed", lambda: False)
    assert bench.main([]) == 2
    err = capsys.readouterr().err
    assert err == ("pm4py_declare: pm4py is not installed (pip install 'roadcheck[bench]'); "
                   "nothing was measured\n")


def test_pm4py_declare_log_violates_as_built(load: Callable[[str], ModuleType],
                                             tmp_path: Path) -> None:
    """roadcheck blocks exactly the traces built to violate, and the CSV holds the same events."""
    bench = load("pm4py_declare")
    from roadcheck.conformance import iter_replay, load_spec

    native, csv = bench.write_log(tmp_path, 12)
    spec, model = bench.write_specs(tmp_path)
    paths = sorted(str(p) for p in native.iterdir())
    blocked = {Path(r.path).stem for r in iter_replay(load_spec(spec), paths)
               if r.verdict == "BLOCK"}
    assert blocked == {f"t{i:06d}" for i in range(12) if bench.expected(i)}
    assert len(blocked) == 8
    rows = csv.read_text().splitlines()
    assert rows[0] == "case,activity,ts" and len(rows) == 1 + 12 * 20
    for path in paths:
        events = [orjson.loads(line) for line in Path(path).read_bytes().splitlines()]
        case = Path(path).stem
        assert [r.split(",")[1] for r in rows if r.startswith(case + ",")] == \
            [bench.activity(e) for e in events]
    assert orjson.loads(model.read_bytes()) == {"precedence": [
        ["confirm_with_user", "send_report"], ["approve_archive", "archive"]]}


def test_postgres_store_misses(load: Callable[[str], ModuleType],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """More than 2 ms per phase over the JSONL store is a miss (the database left out)."""
    bench = load("postgres_store")

    class Conn:
        def __enter__(self) -> Conn:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def execute(self, sql: str) -> None:
            return None

    monkeypatch.setattr(bench.psycopg, "connect", lambda *a, **k: Conn())
    monkeypatch.setattr(bench, "workers", lambda *a: 1.0)
    _argv(monkeypatch, "--url", "postgresql://bench@127.0.0.1:1/none", "--phases", "100")
    monkeypatch.setattr(bench, "overhead", lambda *a: (1.0, 1.3))
    assert bench.main() == 1
    monkeypatch.setattr(bench, "overhead", lambda *a: (1.0, 1.1))
    assert bench.main() == 0


def test_postgres_store_overhead_runs(load: Callable[[str], ModuleType], tmp_path: Path) -> None:
    """The overhead figure for real on 2 phases: both stores timed, and each one's appends."""
    from .postgres import pg_schema

    bench = load("postgres_store")
    with pg_schema() as url:
        jsonl, pg = bench.overhead(url, 2, 1, tmp_path)
    assert jsonl > 0 and pg > 0
    assert set(bench.APPEND) == {"jsonl", "postgres"} and min(bench.APPEND.values()) > 0


def test_ray_replay_misses(load: Callable[[str], ModuleType]) -> None:
    """The verdict: different bytes, Ray over 1.5x, worker memory growing over 1.25x, or no
    worker sampled, each a miss."""
    bench = load("ray_replay")
    assert bench.verdict(True, 1.2, 100.0, 120.0) == []
    assert len(bench.verdict(False, 1.2, 100.0, 120.0)) == 1
    assert len(bench.verdict(True, 1.6, 100.0, 120.0)) == 1
    assert len(bench.verdict(True, 1.2, 100.0, 130.0)) == 1
    assert len(bench.verdict(True, 1.2, 0.0, 120.0)) == 1
    assert len(bench.verdict(True, 1.2, 100.0, 0.0)) == 1


def test_ray_replay_counts_cpu(load: Callable[[str], ModuleType]) -> None:
    """The CPU counters the script prints: this process's time grows with work done here,
    and Ray's three shares are never negative."""
    bench = load("ray_replay")
    before = bench.jobs_cpu()
    driver, workers, others = bench.ray_cpu()
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    assert bench.jobs_cpu() >= before + 0.05
    assert bench.ray_cpu()[0] >= driver + 0.05
    assert workers >= 0.0
    assert others >= 0.0


def test_ray_scale_misses(load: Callable[[str], ModuleType]) -> None:
    """A driver taking over half a batch's time per batch is a miss."""
    bench = load("ray_scale")
    assert bench.verdict(0.004, 0.010) == []
    assert bench.verdict(0.006, 0.010) != []


def test_ray_scale_batches_run(load: Callable[[str], ModuleType], tmp_path: Path) -> None:
    """The script's own pieces run on real files (Ray left out): a batch judged, and the
    rows its stand-in tasks return, one start and one rendered result a path."""
    bench = load("ray_scale")
    from roadcheck.conformance.batch import _FileStart

    paths = bench.write(tmp_path, 2 * bench.BATCH)
    assert bench.per_batch_time(paths) > 0
    template = bench.template(paths[0])
    rows = bench.ready_rows(template, ["runs/a.jsonl", "runs/b.jsonl"])
    assert [type(r) is _FileStart for r in rows] == [True, False, True, False]
    assert [(r.id, r.path) for r in rows[1::2]] == [("runs/a.jsonl", "runs/a.jsonl"),
                                                   ("runs/b.jsonl", "runs/b.jsonl")]
    assert rows[1].verdict == "PASS" and rows[1].body == template[1].body


def test_reader_throughput_misses(load: Callable[[str], ModuleType],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Time over 4x parse-only, memory over 1.5x the file, or an ERROR, is a miss."""
    bench = load("reader_throughput")
    good = {"kind": "otel span export", "bytes": 1000, "lines": 1, "parse": 1.0, "reader": 3.5,
            "ratio": 3.5, "peak": 1200, "memory_ratio": 1.2,
            "counts": {"PASS": 1}}
    for change in ({}, {"ratio": 4.1}, {"memory_ratio": 1.6}, {"counts": {"ERROR": 1}}):
        monkeypatch.setattr(bench, "run", lambda *a, c=change: [good, {**good, **c}])
        assert bench.main([]) == (1 if change else 0), change


def test_replay_throughput_misses(load: Callable[[str], ModuleType],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each figure past its target is a miss: json, files as arguments, --jobs 2 on a large
    batch and on a small one, peak RSS, cold start."""
    bench = load("replay_throughput")
    good = {"floor": 1.0, "json": 2.9, "glob": 3.1, "summary": 1.5, "1": 1.0, "2": 0.6,
            "1 small": 1.0, "2 small": 1.04, "python -c pass": 0.02,
            "replay (8 fixtures)": 0.1, "rss": 1.1}
    _argv(monkeypatch, "--trajectories", "2", "--runs", "1", "--cold-runs", "1",
          "--jobs-trajectories", "2", "--rss-small", "2", "--rss-large", "3")
    monkeypatch.setattr(bench, "in_process", lambda paths: (1.0, 1.0))
    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: None)  # the run audit reads
    for change in ({}, {"json": 3.1, "glob": 3.1}, {"glob": 3.3}, {"2": 0.65},
                   {"2 small": 1.1}, {"replay (8 fixtures)": 0.13}, {"rss": 1.3}):
        f = {**good, **change}

        def medians(cmds: dict[str, list[str]], runs: int, expect: Any = None,
                    f: dict[str, float] = f) -> dict[str, float]:
            bench.CPU.clear()
            bench.CPU.update({k: 1.0 for k in cmds})
            return {k: f.get(k, 0.05) for k in cmds}

        def run(cmd: list[str], f: dict[str, float] = f) -> tuple[float, int, int]:
            return 1.0, 1, int(1000 * (f["rss"] if cmd[-1].endswith("rss3") else 1.0))

        monkeypatch.setattr(bench, "medians", medians)
        monkeypatch.setattr(bench, "run", run)
        assert bench.main() == (1 if change else 0), change


def test_revalidate_speed_misses(load: Callable[[str], ModuleType],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Revalidation over 1.2x hashing alone is a miss."""
    bench = load("revalidate_speed")
    monkeypatch.setattr(bench, "measure", lambda mb, rounds: bench.Speed(mb, 1.3, 1.0))
    assert bench.main([]) == 1
    monkeypatch.setattr(bench, "measure", lambda mb, rounds: bench.Speed(mb, 1.1, 1.0))
    assert bench.main([]) == 0


def test_shell_matching_misses(load: Callable[[str], ModuleType],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A reading that grows faster than the line (100x for 10x the length) is a miss; the
    real one over short words runs and meets the target."""
    bench = load("shell_matching")
    monkeypatch.setattr(bench, "measure", lambda chars, rounds: bench.Linear(chars, 0.01, 1.0))
    assert bench.main(["--rounds", "1"]) == 1
    monkeypatch.setattr(bench, "measure", lambda chars, rounds: bench.Linear(chars, 0.1, 1.0))
    assert bench.main(["--rounds", "1"]) == 0


def test_spec_diff_misses(load: Callable[[str], ModuleType],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A diff over twice one replay is a miss; the real one over a few files runs."""
    bench = load("spec_diff")
    monkeypatch.setattr(bench, "measure", lambda n, rounds: (1.0, 2.1))
    assert bench.main(["--trajectories", "1"]) == 1
    monkeypatch.setattr(bench, "measure", lambda n, rounds: (1.0, 1.9))
    assert bench.main(["--trajectories", "1"]) == 0


def test_spec_diff_measures_both(load: Callable[[str], ModuleType]) -> None:
    """The real measurement judges a small corpus both ways."""
    bench = load("spec_diff")
    replay, diff = bench.measure(14, 1)
    assert replay > 0 and diff > 0


def test_transcripts_replay_misses(load: Callable[[str], ModuleType],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Replay over 2x the readers' baseline is a miss."""
    bench = load("transcripts_replay")

    def figures(ratio: float) -> Callable[[int], dict[str, Any]]:
        return lambda rounds: {"json_load": 1.0, "orjson": 0.5, "baseline": 1.5,
                               "replay": 1.5 * ratio, "ratio": ratio, "ratio_json_load": ratio,
                               "trajectories": 1, "events": 1, "bytes": 1,
                               "counts": {"pass": 1, "block": 0, "error": 0}}

    monkeypatch.setattr(bench, "measure", figures(2.1))
    assert bench.main() == 1
    monkeypatch.setattr(bench, "measure", figures(1.9))
    assert bench.main() == 0


def test_doc_pipeline_benchmark_exits_1_when_a_fact_fails(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """The example's benchmark: an advance without evidence, or a broken document the gated
    run let through, is a miss."""
    bench = load_script(EXAMPLES / "doc_pipeline" / "benchmark.py")

    def doc(name: str, **kw: Any) -> Any:
        fields = {"gated_status": "failed", "stopped_at": "review", "advances": 2,
                  "unbacked": [], "ungated_published": True, "ungated_broken_at": "review",
                  "diagnostic": "", **kw}
        return bench.DocOutcome(name, **fields)

    clean = doc("clean.txt", gated_status="completed", stopped_at=None, advances=4,
                ungated_broken_at=None)
    html = str(tmp_path / "report.html")
    for docs, code in (([clean, doc("broken.txt")], 0),
                       ([clean, doc("broken.txt", unbacked=["summarize"])], 1),
                       ([clean, doc("broken.txt", gated_status="completed", stopped_at=None)],
                        1),
                       ([], 1)):
        monkeypatch.setattr(bench, "run_benchmark",
                            lambda workdir, d=docs: bench.BenchmarkResult(docs=d))
        assert bench.main(["--html", html]) == code, docs


def test_signing_misses(load: Callable[[str], ModuleType],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A small chain verifies under the target; a target nothing meets, or a chain that
    does not verify, is a miss."""
    bench = load("signing")
    assert bench.main(["--records", "2000", "--per-record", "20"]) == 0
    monkeypatch.setattr(bench, "TARGET_S", 0.0)
    assert bench.main(["--records", "200", "--per-record", "2"]) == 1
    monkeypatch.setattr(bench, "TARGET_S", 1e9)
    monkeypatch.setattr(bench, "verify", lambda *a: False)
    assert bench.main(["--records", "200", "--per-record", "2"]) == 1


def test_guard_latency_keeps_to_its_own_key(load: Callable[[str], ModuleType],
                                            monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """The hook measurement uses a key and state directory of its own: the user's
    configuration and state directories are never created or read."""
    bench = load("guard_latency")
    for name in ("ROADCHECK_GUARD_KEY_FILE", "ROADCHECK_GUARD_STATE_DIR",
                 "ROADCHECK_GUARD_NO_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "appdata"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "localappdata"))
    hook, bare, cli = bench.hook_latency(1)
    assert hook > 0 and bare > 0 and cli > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_mcp_proxy_misses(load: Callable[[str], ModuleType],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An added p50 over 2 ms on either transport is a miss on its own."""
    bench = load("mcp_proxy")
    for stdio, http, code in ((0.5, 1.9, 0), (2.1, 0.5, 1), (0.5, 2.01, 1)):
        figures = {"stdio": (1.0, 1.0 + stdio, stdio), "http": (2.0, 2.0 + http, http)}
        monkeypatch.setattr(bench, "measure", lambda t, calls, f=figures: f[t])
        assert bench.main(["--calls", "3"]) == code, figures


def test_postgres_store_workers_run(load: Callable[[str], ModuleType], tmp_path: Path) -> None:
    """The workers figure for real on 2 runs of 2 phases: every run submitted, worked once
    by one of two worker processes, and verified."""
    from .postgres import pg_schema

    bench = load("postgres_store")
    with pg_schema() as url:
        elapsed = bench.workers(url, 2, 2, 2, tmp_path)
    assert elapsed > 0
