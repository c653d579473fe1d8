"""``roadcheck diff`` costs at most twice one replay: each file is read once and judged by
both specs.

A corpus of ``--trajectories`` files (the example fixtures that read, copied in turn)
is written to a temporary directory. Each round judges it in this process twice, in
turn: once as replay does (:func:`roadcheck.conformance.iter_replay` with the old
spec), once as ``roadcheck diff`` does (:func:`roadcheck.conformance.diff.diff_specs`,
old and new spec). The figure is the ratio of the medians of their CPU times
(``time.process_time``), rounds interleaved so that drift hits both alike. Target:
<= 2.0 x. Exits 1 on a miss.

Run: ``python benchmarks/spec_diff.py [--trajectories 2000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from roadcheck.conformance import iter_replay, load_spec, parse_spec  # noqa: E402
from roadcheck.conformance.diff import diff_specs  # noqa: E402

TARGET = 2.0
OLD = ROOT / "examples" / "spec.json"
#: The old spec, tightened: every send needs its own confirmation, every field verified.
NEW = {
    "mandatory_checkpoints": [
        {"checkpoint_id": "confirm_with_user", "must_precede": "send_report", "scope": "each"}],
    "handoff_contracts": [
        {"from_agent": "scanner", "to_agent": "aggregator",
         "required_fields": ["row_count", "source"], "require_verified": True},
        {"from_agent": "aggregator", "to_agent": "reporter",
         "required_fields": ["row_count", "summary"], "require_verified": True}],
}


def corpus(folder: Path, n: int) -> list[str]:
    """``n`` files, the example fixtures that read copied in turn."""
    fixtures = sorted(p for p in (ROOT / "examples").glob("fixture_*.jsonl")
                      if "bad_input" not in p.name)
    paths = []
    for i in range(n):
        path = folder / f"run-{i:06d}.jsonl"
        shutil.copyfile(fixtures[i % len(fixtures)], path)
        paths.append(str(path))
    return paths


def _cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def measure(trajectories: int, rounds: int) -> tuple[float, float]:
    """Median CPU seconds of one replay and of one diff over the same corpus."""
    old, new = load_spec(OLD), parse_spec(NEW)
    with tempfile.TemporaryDirectory() as tmp:
        paths = corpus(Path(tmp), trajectories)
        replay: list[float] = []
        diff: list[float] = []
        for _ in range(rounds):
            replay.append(_cpu(lambda: sum(1 for _ in iter_replay(old, paths))))
            diff.append(_cpu(lambda: diff_specs(old, new, paths)))
    return statistics.median(replay), statistics.median(diff)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    replay, diff = measure(args.trajectories, args.rounds)
    ratio = diff / replay if replay else float("inf")
    ok = ratio <= TARGET
    print(f"replay: {replay * 1000:.1f} ms CPU for {args.trajectories} files")
    print(f"diff  : {diff * 1000:.1f} ms CPU (two specs, each file read once)")
    print(f"diff / replay: {ratio:.2f} x (target <= {TARGET} x) {'ok' if ok else 'MISS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
