"""Ray scaling, simulated: the time a worker takes per batch, and the driver's cost per batch.

``roadcheck replay --ray`` has one driver: it hands out batches of files, takes each
batch's results back in order and writes them to the report. On a cluster of
many nodes the workers add up, the driver does not, so the question is how
many CPUs one driver can keep busy. Two figures, measured side by side:

- per-batch time: one process judging batches of 64 files of 20 events
  (the work a Ray worker does per task, on this machine's CPU);
- driver overhead per batch: ``replay_paths`` on ``ray.init(num_cpus=2)`` with
  the judging replaced by tasks that return a batch's results at once (the
  same result rows, not judged), so that the wall time is the driver's own
  (submitting, Ray's scheduling and transfer, taking results back in order
  and writing them to the report), at batches of 64 and of 1,024 files; the two
  give the fixed cost per task and the cost per result. The driver's CPU time
  is the figure used (a head node gives the driver a CPU of its own; here it
  shares two with the workers); the wall time is printed beside it.

It prints the arithmetic for a cluster of ``--nodes`` nodes of ``--cpus``
CPUs each (docs/scale.md goes through it). It exits 1 when the driver's CPU
time per batch of 64 is more than half the per-batch time: such a driver could
not even keep this machine's 2 CPUs busy.
Usage: ``python benchmarks/ray_scale.py [--nodes 100] [--cpus 16]``.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from roadcheck._inputs import load_replay_spec
from roadcheck.report.replay import ChunkFolder, ReplayReportWriter, render_result

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ray_replay import SPEC, write

BATCH = 64
BIG = 1024
TASKS = 600


def per_batch_time(paths: list[str]) -> float:
    """Seconds one process takes to judge a batch of ``BATCH`` files (mean of many)."""
    from roadcheck.integrations.ray import _judge_batch

    spec = load_replay_spec(SPEC)
    render = partial(render_result, fmt="json", summary_only=False, by_field=None)
    fold = ChunkFolder("json", False)  # as a task folds its batch for the report writer
    _judge_batch(spec, paths[:BATCH], None, render, fold)  # the spec compiled, the code warm
    batches = [paths[i:i + BATCH] for i in range(0, len(paths) - BATCH + 1, BATCH)]
    start = time.perf_counter()
    for batch in batches:
        _judge_batch(spec, batch, None, render, fold)
    return (time.perf_counter() - start) / len(batches)


def template(path: str) -> list[Any]:
    """What a real batch returns for one file: its start, then its rendered result."""
    from roadcheck.integrations.ray import _judge_batch

    render = partial(render_result, fmt="json", summary_only=False, by_field=None)
    return _judge_batch(load_replay_spec(SPEC), [path], None, render)


def ready_rows(template: list[Any], paths: list[str]) -> list[Any]:
    """A batch's rows as a real batch returns them (a start and a rendered result a file,
    each naming its path), copied from ``template``, not judged."""
    from roadcheck.conformance.batch import _FileStart

    start_item, rendered = template[0], template[1]
    out: list[Any] = []
    for path in paths:
        out.append(_FileStart(path, start_item.fmt))
        out.append(rendered._replace(id=path, path=path))  # a Rendered (a named tuple)
    return out


def driver_per_batch(template: list[Any], size: int) -> tuple[float, float]:
    """Seconds of driver time per batch of ``size`` files when the workers take no time:
    the wall time, and the CPU time of the driver process (all its threads, Ray's own
    included), which is what it costs on a head node where it has a CPU to itself."""
    import ray

    import roadcheck.integrations.ray as on_ray

    def ready(spec: Any, paths: list[str], input_format: str | None, render: Any,
              fold: Any = None) -> Any:
        rows = ready_rows(template, paths)
        return rows if fold is None else fold(rows)

    spec = load_replay_spec(SPEC)
    real = on_ray._remote_batch
    on_ray._remote_batch = ray.remote(max_retries=on_ray.RETRIES)(ready)
    paths = [f"runs/{n // 1000:04d}/t{n:07d}.jsonl" for n in range(TASKS * size)]
    try:
        with ReplayReportWriter(io.StringIO(), spec, spec_source=spec.source,
                                spec_sha256=spec.sha256, fmt="json") as report:
            start, cpu = time.perf_counter(), time.process_time()
            on_ray.replay_paths(spec, paths, batch_size=size, sink=report,
                                render=partial(render_result, fmt="json"))
            report.finish()
            took, used = time.perf_counter() - start, time.process_time() - cpu
    finally:
        on_ray._remote_batch = real
    return took / TASKS, used / TASKS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--cpus", type=int, default=16, help="CPUs per node")
    args = parser.parse_args()
    import ray

    with tempfile.TemporaryDirectory(prefix="roadcheck-ray-scale-") as tmp:
        paths = write(Path(tmp), 64 * BATCH)
        batch = per_batch_time(paths)
        rows = template(paths[0])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        driver_per_batch(rows, BATCH)  # Ray's workers started and warm
        small_wall, small = driver_per_batch(rows, BATCH)
        big_wall, big = driver_per_batch(rows, BIG)
    finally:
        ray.shutdown()

    per_result = (big - small) / (BIG - BATCH)
    per_task = max(small - per_result * BATCH, 0.0)
    cpus = args.nodes * args.cpus
    judge = batch / BATCH  # one CPU's time per trajectory
    demand = cpus / judge  # trajectories/s the cluster's CPUs judge
    supply_small = BATCH / small  # trajectories/s one driver takes back, batches of 64
    supply_big = BIG / big
    ceiling = 1 / per_result if per_result > 0 else float("inf")
    print(f"per-batch time, {BATCH} files x 20 events:     {batch * 1e3:8.2f} ms "
          f"({judge * 1e6:.1f} us a trajectory, one CPU)")
    print(f"driver overhead per batch of {BATCH}:            {small * 1e3:8.2f} ms CPU "
          f"({small_wall * 1e3:.2f} ms wall; baseline: the per-batch time above)")
    print(f"driver overhead per batch of {BIG}:          {big * 1e3:8.2f} ms CPU "
          f"({big_wall * 1e3:.2f} ms wall)")
    print(f"  = {per_task * 1e3:.2f} ms a task + {per_result * 1e6:.1f} us a result")
    print(f"one driver keeps {batch / small:6.1f} CPUs busy at batches of {BATCH}, "
          f"{(BIG * judge) / big:6.1f} at batches of {BIG}")
    print(f"{args.nodes} nodes x {args.cpus} CPUs = {cpus} CPUs judge "
          f"{demand:,.0f} trajectories/s;")
    print(f"  one driver takes back {supply_small:,.0f}/s at batches of {BATCH}, "
          f"{supply_big:,.0f}/s at {BIG}, at most {ceiling:,.0f}/s however large the batch")
    bound = "the driver" if ceiling < demand else "the workers"
    print(f"  the bound at {cpus} CPUs: {bound}; 1M trajectories take "
          f"{1e6 / min(demand, supply_big):,.0f} s at batches of {BIG}")
    failed = verdict(small, batch)
    for line in failed:
        print(f"FAIL: {line}")
    return 1 if failed else 0


def verdict(driver_cpu_per_batch: float, batch_time: float) -> list[str]:
    """Missed when the driver's CPU time per batch is over half the time a worker takes."""
    if not driver_cpu_per_batch <= batch_time / 2:
        return [f"one driver cannot keep this machine's 2 CPUs busy at batches of {BATCH}"]
    return []


if __name__ == "__main__":
    sys.exit(main())
