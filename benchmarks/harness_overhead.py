"""Harness overhead per phase against a bare loop of the same subprocesses, and its fsyncs.

Each phase runs a trivial producer (``touch ARTIFACT``) and a command gate
(``test -f ARTIFACT`` passes). The bare loop runs the same two subprocesses per
phase with no state machine, no digests and no records. Three figures, each
beside its baseline in one run:

1. In process (``Workflow.run``), 200 phases: ``(engine time - bare time) /
   phases`` with durable flat-file records and with SQLite. Budget 3 ms.
2. Through the CLI (``roadcheck run``, a new process as a user or CI starts it,
   its start-up included), 100 phases, durable JSONL store, against a bare loop
   of the same processes, interleaved, medians of ``--repeat``: ``(roadcheck run
   - bare loop) / phases``. Target <= 3 ms per phase. roadcheck's modules run
   from compiled bytecode, as an installed package has them (here in a private
   cache, compiled by a first run that is not counted), even where
   ``PYTHONDONTWRITEBYTECODE`` is set. The CPU time of both sides is printed
   beside the wall time.
3. fsync calls per phase (``os.fsync`` and ``os.fdatasync`` counted while the
   workflow runs in process, at 20 and 40 phases, the difference divided by
   20), without and with a declared ``effect``; and the same through the CLI
   with ``strace -f`` where strace may trace. Target 1 and 2: one durable
   point for the record and the head that counts it before the transition, a
   second for the attempted effect before its producer runs (fewer or more
   both miss). The syncs a run
   pays once when it is created are printed beside them.

Exits 1 when a target is missed. Usage: ``python benchmarks/harness_overhead.py
[--phases 200] [--cli-phases 100] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roadcheck.harness import Workflow

BUDGET_MS = 3.0


def _tools() -> tuple[list[str], list[str]]:
    touch, test = shutil.which("touch"), shutil.which("test")
    if touch and test:
        return [touch, "{artifact}"], [test, "-f", "{artifact}"]
    py = sys.executable  # where coreutils are missing, fall back to Python
    return ([py, "-c", "import sys; open(sys.argv[1], 'a').close()", "{artifact}"],
            [py, "-c", "import os, sys; sys.exit(not os.path.isfile(sys.argv[1]))", "{artifact}"])


def document(phases: int, effect: bool = False) -> dict[str, object]:
    """A workflow of ``phases`` trivial phases, one role; ``effect`` declares one per phase."""
    producer, gate = _tools()
    doc: list[dict[str, object]] = [
        {"name": f"p{i:03d}", "role": "op", "producer": producer, "artifact": f"a{i:03d}",
         "gate": {"command": gate}} for i in range(phases)]
    if effect:
        for i, phase in enumerate(doc):
            phase["effect"] = {"retry_class": "reconcile_first", "idempotency_key": f"k{i}",
                               "reconcile": gate}
    return {"workflow": "overhead", "phases": doc}


def build(phases: int, effect: bool = False) -> Workflow:
    """A workflow of ``phases`` trivial phases, one role."""
    return Workflow.from_dict(document(phases, effect))


def bare(phases: int, root: Path) -> float:
    """Seconds to run the same producer and gate subprocesses in a plain loop."""
    producer, gate = _tools()
    root.mkdir(parents=True)
    env = dict(os.environ)
    start = time.perf_counter()
    for i in range(phases):
        art = str(root / f"a{i:03d}")
        for argv in (producer, gate):
            subprocess.run([a.replace("{artifact}", art) for a in argv], env=env,
                           capture_output=True, check=True)
    return time.perf_counter() - start


def engine(wf: Workflow, runs: Path, store: str) -> float:
    """Seconds for the harness to run the workflow to completion with ``store``."""
    start = time.perf_counter()
    result = wf.run(role="op", identity="bench", runs_dir=runs, store=store,  # type: ignore[arg-type]
                    run_id=f"bench-{store}")
    elapsed = time.perf_counter() - start
    assert result.status == "completed", result.message
    return elapsed


def measure(phases: int, repeat: int) -> dict[str, float]:
    """Median seconds of the bare loop and of the engine with each store."""
    wf = build(phases)
    times: dict[str, list[float]] = {"bare": [], "jsonl": [], "sqlite": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(dir=".") as tmp:
            times["bare"].append(bare(phases, Path(tmp) / "bare"))
            times["jsonl"].append(engine(wf, Path(tmp) / "runs", "jsonl"))
            times["sqlite"].append(engine(wf, Path(tmp) / "runs", "sqlite"))
    return {k: statistics.median(v) for k, v in times.items()}


#: CPU seconds (user + system, the processes started included) of the last
#: :func:`cli_overhead`'s medians: ``{"bare": ..., "cli": ...}``, for the diagnostic line.
CLI_CPU: dict[str, float] = {}


def _children_cpu() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cli_overhead(phases: int, repeat: int) -> tuple[float, float]:
    """Median seconds of a bare loop and of ``roadcheck run`` (a new process) over ``phases``,
    interleaved; the CPU medians go to :data:`CLI_CPU`."""
    roadcheck = shutil.which("roadcheck", path=os.path.dirname(sys.executable)) or "roadcheck"
    times: dict[str, list[float]] = {"bare": [], "cli": []}
    cpu: dict[str, list[float]] = {"bare": [], "cli": []}
    with tempfile.TemporaryDirectory(dir=".") as cache:
        # as installed: bytecode compiled once (here into a private cache), not per process
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(cache) / "pycache")
        for n in range(repeat + 1):  # the first round compiles the cache and is not counted
            with tempfile.TemporaryDirectory(dir=".") as tmp:
                wf = Path(tmp) / "wf.json"
                wf.write_text(json.dumps(document(phases)))
                # the bare loop's own CPU (starting its processes) counts, as roadcheck's does
                used = _children_cpu() + time.process_time()
                took = bare(phases, Path(tmp) / "bare")
                if n:
                    times["bare"].append(took)
                    cpu["bare"].append(_children_cpu() + time.process_time() - used)
                used, start = _children_cpu(), time.perf_counter()
                subprocess.run([roadcheck, "run", str(wf), "--as", "op", "--identity", "bench",
                                "--run-id", f"cli{n}", "--runs-dir", str(Path(tmp) / "runs")],
                               check=True, capture_output=True, env=env)
                if n:
                    times["cli"].append(time.perf_counter() - start)
                    cpu["cli"].append(_children_cpu() - used)
    CLI_CPU.update({k: statistics.median(v) for k, v in cpu.items()})
    return statistics.median(times["bare"]), statistics.median(times["cli"])


SYNC_SECONDS = [0.0]  # time spent inside the counted sync calls, for the diagnostic line


def fsync_calls(phases: int, effect: bool) -> int:
    """fsync and fdatasync calls while a workflow of ``phases`` phases runs in this process."""
    calls = [0]
    real = os.fsync, os.fdatasync

    def fsync(fd: int) -> None:
        calls[0] += 1
        start = time.perf_counter()
        real[0](fd)
        SYNC_SECONDS[0] += time.perf_counter() - start

    def fdatasync(fd: int) -> None:
        calls[0] += 1
        start = time.perf_counter()
        real[1](fd)
        SYNC_SECONDS[0] += time.perf_counter() - start

    wf = build(phases, effect)
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        os.fsync, os.fdatasync = fsync, fdatasync  # type: ignore[assignment]
        try:
            result = wf.run(role="op", identity="bench", runs_dir=Path(tmp) / "runs",
                            run_id="fsyncs")
        finally:
            os.fsync, os.fdatasync = real  # type: ignore[assignment]
    assert result.status == "completed", result.message
    return calls[0]


def fsyncs_per_phase(phases: int, effect: bool) -> tuple[float, int]:
    """``(calls per phase, calls per run)``: the difference between ``2 * phases`` and ``phases``.

    A run pays a fixed number of syncs when it is created (``run.json``, the
    store's first line, their directories); the per-phase figure leaves them
    out by running the workflow at two lengths.
    """
    one, two = fsync_calls(phases, effect), fsync_calls(2 * phases, effect)
    per = (two - one) / phases
    return per, one - round(per * phases)


def cli_fsyncs(phases: int) -> tuple[float, int] | None:
    """``(calls per phase, calls per run)`` of ``roadcheck run`` under ``strace -f``, or None."""
    strace = shutil.which("strace")
    roadcheck = shutil.which("roadcheck", path=os.path.dirname(sys.executable)) or "roadcheck"
    if strace is None:
        return None
    counts = []
    for n in (phases, 2 * phases):
        with tempfile.TemporaryDirectory(dir=".") as tmp:
            wf = Path(tmp) / "wf.json"
            wf.write_text(json.dumps(document(n)))
            log = Path(tmp) / "strace.txt"
            proc = subprocess.run([strace, "-f", "-e", "trace=fsync,fdatasync", "-o", str(log),
                                   roadcheck, "run", str(wf), "--as", "op", "--identity", "bench",
                                   "--run-id", "s", "--runs-dir", str(Path(tmp) / "runs")],
                                  capture_output=True, check=False)
            if proc.returncode != 0:  # strace not permitted here (no ptrace)
                return None
            counts.append(sum(1 for line in log.read_text().splitlines()
                              if " fsync(" in line or " fdatasync(" in line))
    per = (counts[1] - counts[0]) / phases
    return per, counts[0] - round(per * phases)


def sync_target_met(per_phase: float, target: float) -> bool:
    """The count is the contract's durable points: fewer is a record not made durable,
    more is a sync the contract does not need; either misses."""
    return abs(per_phase - target) < 0.05


def main(argv: list[str] | None = None) -> int:
    """Print each figure beside its baseline; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", type=int, default=200)
    parser.add_argument("--cli-phases", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    missed: list[str] = []
    t = measure(args.phases, args.repeat)
    n = args.phases
    print(f"{n} phases in process, median of {args.repeat} runs")
    print(f"bare loop      : {t['bare']:.3f} s ({t['bare'] / n * 1000:.2f} ms per phase)")
    for store in ("jsonl", "sqlite"):
        over = (t[store] - t["bare"]) / n * 1000
        ok = over <= BUDGET_MS
        print(f"engine {store:<7} : {t[store]:.3f} s, overhead {over:.2f} ms per phase "
              f"(budget {BUDGET_MS:.0f} ms)  {'ok' if ok else 'MISSED'}")
        if not ok:
            missed.append(f"in-process {store}")

    n = args.cli_phases
    base, cli = cli_overhead(n, args.repeat)
    over = (cli - base) / n * 1000
    ok = over <= BUDGET_MS
    print(f"{n} phases through the CLI, durable JSONL store, median of {args.repeat} runs")
    print(f"bare loop      : {base:.3f} s ({base / n * 1000:.2f} ms per phase)")
    print(f"roadcheck run  : {cli:.3f} s, overhead {over:.2f} ms per phase "
          f"(target <= {BUDGET_MS:.0f} ms)  {'ok' if ok else 'MISSED'}")
    if CLI_CPU:
        print(f"CPU time       : bare loop {CLI_CPU['bare']:.3f} s, roadcheck run "
              f"{CLI_CPU['cli']:.3f} s ({(CLI_CPU['cli'] - CLI_CPU['bare']) / n * 1000:.2f} ms "
              "per phase more)")
    if not ok:
        missed.append("CLI")

    for effect, target in ((False, 1.0), (True, 2.0)):
        SYNC_SECONDS[0] = 0.0
        per, fixed = fsyncs_per_phase(20, effect)
        each = SYNC_SECONDS[0] / max(3 * 20 * per + 2 * fixed, 1) * 1000
        ok = sync_target_met(per, target)
        label = "with a declared effect" if effect else "without an effect"
        print(f"fsyncs per phase {label:<22}: {per:.1f} (target {target:.0f}; "
              f"{fixed} more once per run; {each:.2f} ms per sync on this disk now)  "
              f"{'ok' if ok else 'MISSED'}")
        if not ok:
            missed.append(f"fsyncs {label}")
    traced = cli_fsyncs(20)
    if traced is None:
        print("fsyncs per phase through the CLI: not counted (strace missing or not permitted)")
    else:
        per, fixed = traced
        ok = sync_target_met(per, 1.0)
        print(f"fsyncs per phase through the CLI (strace -f): {per:.1f} (target 1; {fixed} more "
              f"once per run)  {'ok' if ok else 'MISSED'}")
        if not ok:
            missed.append("fsyncs through the CLI")
    print("missed: " + ", ".join(missed) if missed else "all targets met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
