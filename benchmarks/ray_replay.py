"""Batch replay on Ray against two local processes, on one machine with 2 CPUs.

Writes ``--trajectories`` native trajectories of 20 events each, then judges them
three ways, side by side in one run: one local process (``replay_files``), two
local processes over the same batches of 64 files (the baseline, as a local
``--jobs 2`` would), and Ray (``ray.init(num_cpus=2)``, ``replay_paths``). Ray's
start-up is reported apart from the replay. The figure is Ray's replay time over
the two-process time, against a target of 1.5x; the reports must be equal.
Usage: ``python benchmarks/ray_replay.py [--trajectories 20000]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson

from assay._inputs import load_replay_spec
from assay.conformance import ReplayRun, replay_files
from assay.report import replay_report

TARGET = 1.5
BATCH = 64
SPEC = Path(__file__).resolve().parent.parent / "examples" / "spec.json"


def write(root: Path, count: int) -> list[str]:
    """``count`` trajectories of 20 events: actions, a handoff, the checkpoint, the final."""
    events = [{"seq": i, "ts": "2026-07-11T03:14:05Z", "agent": "scanner", "event": "action",
               "action_type": "pull_rows"} for i in range(1, 16)]
    events += [
        {"seq": 16, "ts": "2026-07-11T03:14:09Z", "agent": "scanner", "event": "handoff",
         "from_agent": "scanner", "to_agent": "aggregator",
         "payload": {"row_count": {"value": 17491, "verified": True}, "source": "billing_db"}},
        {"seq": 17, "ts": "2026-07-11T03:14:12Z", "agent": "aggregator", "event": "handoff",
         "from_agent": "aggregator", "to_agent": "reporter",
         "payload": {"row_count": {"value": 17491, "verified": True},
                     "summary": {"value": "ok", "verified": True}}},
        {"seq": 18, "ts": "2026-07-11T03:14:20Z", "agent": "reporter", "event": "checkpoint",
         "checkpoint_id": "confirm_with_user", "confirmed_by": "owner"},
        {"seq": 19, "ts": "2026-07-11T03:14:22Z", "agent": "reporter", "event": "action",
         "action_type": "send_report", "irreversible": True},
        {"seq": 20, "ts": "2026-07-11T03:14:23Z", "agent": "reporter", "event": "final",
         "task_success": True}]
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    paths = []
    for n in range(count):
        sub = root / f"{n // 1000:04d}"
        sub.mkdir(exist_ok=True)
        path = sub / f"t{n:07d}.jsonl"
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def _batch(paths: list[str]) -> ReplayRun:
    return replay_files(load_replay_spec(SPEC), paths)


def two_processes(paths: list[str]) -> ReplayRun:
    """The same batches as Ray's, judged by a pool of two local processes, in order."""
    batches = [paths[i:i + BATCH] for i in range(0, len(paths), BATCH)]
    with ProcessPoolExecutor(2) as pool:
        runs = list(pool.map(_batch, batches))
    spec = load_replay_spec(SPEC)
    return ReplayRun(spec.source, [r for run in runs for r in run.results],
                     tuple(f for run in runs for f in run.files), spec_sha256=spec.sha256)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=20_000)
    args = parser.parse_args()
    import ray

    from assay.integrations.ray import replay_paths

    spec = load_replay_spec(SPEC)
    with tempfile.TemporaryDirectory(prefix="assay-ray-bench-") as tmp:
        paths = write(Path(tmp), args.trajectories)
        start = time.perf_counter()
        local = replay_report(replay_files(spec, paths), spec, fmt="json")
        one = time.perf_counter() - start
        start = time.perf_counter()
        two = replay_report(two_processes(paths), spec, fmt="json")
        pair = time.perf_counter() - start
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        boot = time.perf_counter() - start
        try:
            start = time.perf_counter()
            dist = replay_report(replay_paths(spec, paths, batch_size=BATCH), spec, fmt="json")
            on_ray = time.perf_counter() - start
        finally:
            ray.shutdown()
    n = args.trajectories
    print(f"{n} trajectories x 20 events, batches of {BATCH}:")
    print(f"  1 local process      {one:7.2f} s  {n / one:8.0f} trajectories/s")
    print(f"  2 local processes    {pair:7.2f} s  {n / pair:8.0f} trajectories/s (baseline)")
    print(f"  Ray, 2 CPUs          {on_ray:7.2f} s  {n / on_ray:8.0f} trajectories/s "
          f"(+ {boot:.2f} s to start Ray)")
    ratio = on_ray / pair
    print(f"  Ray / 2 processes    {ratio:7.2f}x (target <= {TARGET}x)")
    if not local == two == dist:
        print("FAIL: the reports differ")
        return 1
    if ratio > TARGET:
        print(f"FAIL: Ray takes {ratio:.2f}x the two-process time")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
