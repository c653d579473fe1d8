"""Engine overhead per phase: a 200-phase workflow against a bare loop of the same subprocesses.

Each phase runs a trivial producer (``touch ARTIFACT``) and a command gate
(``test -s ARTIFACT`` fails, ``test -f ARTIFACT`` passes). The bare loop runs the same
two subprocesses per phase with no state machine, no digests and no records. The
engine's overhead is ``(engine time - bare time) / phases``, measured with durable
flat-file records (fsync per record) and with SQLite (a committed row per
record). Usage: ``python benchmarks/harness_overhead.py [--phases 200] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.harness import Workflow

BUDGET_MS = 3.0


def _tools() -> tuple[list[str], list[str]]:
    touch, test = shutil.which("touch"), shutil.which("test")
    if touch and test:
        return [touch, "{artifact}"], [test, "-f", "{artifact}"]
    py = sys.executable  # where coreutils are missing, fall back to Python
    return ([py, "-c", "import sys; open(sys.argv[1], 'a').close()", "{artifact}"],
            [py, "-c", "import os, sys; sys.exit(not os.path.isfile(sys.argv[1]))", "{artifact}"])


def build(phases: int) -> Workflow:
    """A workflow of ``phases`` trivial phases, one role."""
    producer, gate = _tools()
    return Workflow.from_dict({"workflow": "overhead", "phases": [
        {"name": f"p{i:03d}", "role": "op", "producer": producer, "artifact": f"a{i:03d}",
         "gate": {"command": gate}} for i in range(phases)]})


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


def main(argv: list[str] | None = None) -> int:
    """Print the bare-loop baseline and the per-phase overhead of each store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    t = measure(args.phases, args.repeat)
    n = args.phases
    print(f"{n} phases, median of {args.repeat} runs")
    print(f"bare loop      : {t['bare']:.3f} s ({t['bare'] / n * 1000:.2f} ms per phase)")
    worst = 0.0
    for store in ("jsonl", "sqlite"):
        over = (t[store] - t["bare"]) / n * 1000
        worst = max(worst, over)
        print(f"engine {store:<7} : {t[store]:.3f} s, overhead {over:.2f} ms per phase "
              f"(budget {BUDGET_MS:.0f} ms)")
    return 0 if worst <= BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
