"""Batch replay on Ray against ``roadcheck replay --jobs 2``, on one machine with 2 CPUs.

Writes ``--trajectories`` native trajectories of 20 events each (default one
million), one trajectory per file and a thousand files per directory, once,
then judges them in one run, side by side:

- the baseline, ``roadcheck replay --jobs 2``: the call that command makes
  (``replay_files(jobs=2)``, the JSON report streamed to a file);
- Ray, as ``roadcheck replay --ray`` makes it (``replay_paths``, the JSON report
  streamed to a file, batches of the size it picks) on ``ray.init(num_cpus=2)``
  with the workers at the priority ``--ray`` gives a local instance (nice 0),
  at a tenth of the size and then at the full size, interleaved with the
  baseline ``--repeat`` times (medians compared). Ray's start-up is reported
  apart from the replay.

Beside each side's wall time it prints its CPU time, read from ``/proc`` and
``getrusage`` (the machine may be shared: CPU time moves less with the load):
for ``--jobs 2`` this process and its worker processes, for Ray the driver (Ray's
threads in it included), the Ray workers and Ray's other processes (its object
store, scheduler and agents), each apart.

While Ray works, the resident memory of every Ray worker process (and of the
driver) is sampled every 50 ms from ``/proc``. Targets: Ray's time at the full
size within 1.5x of the baseline's, and the peak RSS of a worker flat, that is
at the full size no more than 1.25x the one at a tenth of it. The two reports
must be the same bytes. Exit 1 on a miss.

Usage: ``python benchmarks/ray_replay.py [--trajectories 1000000] [--data DIR]
[--repeat 1]``
(``--data`` keeps the trajectories in DIR and reuses them on the next run).
Linux only (it reads ``/proc``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from roadcheck._inputs import load_replay_spec
from roadcheck.conformance import Spec, replay_files
from roadcheck.report.replay import ReplayReportWriter, render_result

TARGET = 1.5
FLAT = 1.25
PER_DIR = 1000
SPEC = Path(__file__).resolve().parent.parent / "examples" / "spec.json"


def trajectory() -> bytes:
    """One passing trajectory of 20 events: actions, two handoffs, the checkpoint, the final."""
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
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def write(root: Path, count: int) -> list[str]:
    """``count`` trajectory files under ``root`` (written once: a marker says they are there)."""
    paths = [str(root / f"{n // PER_DIR:04d}" / f"t{n:07d}.jsonl") for n in range(count)]
    marker = root / f"written-{count}"
    if marker.exists():
        return paths
    data = trajectory()
    for n, path in enumerate(paths):
        if n % PER_DIR == 0:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(data)
    marker.touch()
    return paths


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _processes() -> tuple[dict[int, int], dict[int, float], list[int]]:
    """Every process's parent, its CPU seconds so far (user and system), and the
    ``ray::`` worker processes, from ``/proc``."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    workers = []
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(b")", 1)[1].split()
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
        if cmdline.startswith(b"ray::"):
            workers.append(int(entry))
    return parents, cpu, workers


def _descends(parents: dict[int, int], pid: int, root: int) -> bool:
    for _ in range(16):
        pid = parents.get(pid, 0)
        if pid == root:
            return True
        if pid <= 1:
            return False
    return False


def jobs_cpu() -> float:
    """CPU seconds used so far by this process and its children waited for (the
    ``--jobs`` worker processes, once their pool is shut down)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def ray_cpu() -> tuple[float, float, float]:
    """CPU seconds used so far by this process (the driver, Ray's threads in it
    included), by the Ray workers descended from it, and by Ray's other processes
    (its object store, scheduler and agents, started by ``ray.init``)."""
    parents, cpu, workers = _processes()
    me = os.getpid()
    ours = [pid for pid in cpu if _descends(parents, pid, me)]
    on_workers = sum(cpu[pid] for pid in ours if pid in set(workers))
    return time.process_time(), on_workers, sum(cpu[pid] for pid in ours) - on_workers


def _ray_workers() -> list[int]:
    """This driver's Ray worker processes: ``ray::`` processes descended from it."""
    parents, _, workers = _processes()
    me = os.getpid()

    return [pid for pid in workers if _descends(parents, pid, me)]


class Sampler:
    """Peak RSS of each process ``find`` names, and of this one, sampled every 50 ms."""

    def __init__(self, find: Callable[[], list[int]]) -> None:
        self.find = find
        self.peaks: dict[int, int] = {}
        self.driver = 0
        self.stop = threading.Event()
        #: CPU seconds the sampling thread took (the driver's figure leaves them out).
        self.cpu = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        pids: list[int] = []
        rounds = 0
        while not self.stop.is_set():
            if rounds % 20 == 0:  # the process list once a second; /proc is slow to walk
                pids = self.find()
            rounds += 1
            for pid in pids:
                self.peaks[pid] = max(self.peaks.get(pid, 0), _rss_kib(pid))
            self.driver = max(self.driver, _rss_kib(os.getpid()))
            self.stop.wait(0.05)
        self.cpu = time.thread_time()  # the sampling's own CPU, not the driver's work

    @property
    def worker_peak_mib(self) -> float:
        return max(self.peaks.values(), default=0) / 1024

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@contextmanager
def report_file(path: Path, spec: Spec) -> Iterator[tuple[ReplayReportWriter, Any]]:
    """The JSON report streamed to ``path``, as ``roadcheck replay --format json`` writes it."""
    with open(path, "w", encoding="utf-8") as out, ReplayReportWriter(
            out, spec, spec_source=spec.source, spec_sha256=spec.sha256, fmt="json") as report:
        yield report, partial(render_result, fmt="json", summary_only=False, by_field=None)
        report.finish()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Runs:
    """What the interleaved runs measured: each side's wall and CPU seconds, and the
    memory sampled while Ray judged a tenth of the files and all of them."""

    def __init__(self) -> None:
        self.jobs: list[float] = []
        self.jobs_cpu: list[float] = []
        self.ray: list[float] = []
        #: (driver, workers, Ray's other processes) CPU seconds of each Ray run.
        self.ray_cpu: list[tuple[float, ...]] = []
        self.tenth: Sampler | None = None
        self.full: Sampler | None = None


def measure(spec: Spec, paths: list[str], small: int, repeat: int, out: Path) -> Runs:
    """Ray on a tenth of ``paths`` (its workers warm, their memory sampled), then
    ``--jobs 2`` and Ray on all of them, interleaved ``repeat`` times; the reports
    go to ``out``."""
    from roadcheck.integrations.ray import replay_paths

    runs = Runs()
    with Sampler(_ray_workers) as runs.tenth, report_file(out / "ray-small.json",
                                                          spec) as (report, render):
        replay_paths(spec, paths[:small], render=render, sink=report)
    for _ in range(repeat):  # interleaved, the medians compared
        start, cpu = time.perf_counter(), jobs_cpu()
        with report_file(out / "jobs2.json", spec) as (report, render):
            replay_files(spec, paths, jobs=2, render=render, sink=report)
        runs.jobs.append(time.perf_counter() - start)
        runs.jobs_cpu.append(jobs_cpu() - cpu)
        start, before = time.perf_counter(), ray_cpu()
        with Sampler(_ray_workers) as full, report_file(out / "ray.json",
                                                        spec) as (report, render):
            replay_paths(spec, paths, render=render, sink=report)
        runs.ray.append(time.perf_counter() - start)
        after = ray_cpu()
        runs.ray_cpu.append((after[0] - before[0] - full.cpu, after[1] - before[1],
                             after[2] - before[2]))
        runs.full = full
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1,
                        help="interleaved runs of each side; their medians are compared")
    parser.add_argument("--data", type=Path, default=None,
                        help="keep the trajectories here and reuse them (default: a temp dir)")
    args = parser.parse_args()
    import ray

    from roadcheck.integrations.ray import LOCAL_SYSTEM_CONFIG, auto_batch_size

    spec = load_replay_spec(SPEC)
    n = args.trajectories
    small = max(1, n // 10)
    with tempfile.TemporaryDirectory(prefix="roadcheck-ray-bench-") as tmp:
        root = args.data or Path(tmp) / "data"
        start = time.perf_counter()
        paths = write(root, n)
        wrote = time.perf_counter() - start
        out = Path(tmp)

        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, _system_config=LOCAL_SYSTEM_CONFIG)
        boot = time.perf_counter() - start
        try:
            runs = measure(spec, paths, small, args.repeat, out)
        finally:
            ray.shutdown()
        same = sha256(out / "jobs2.json") == sha256(out / "ray.json")
        size = (out / "ray.json").stat().st_size
    pair, on_ray = statistics.median(runs.jobs), statistics.median(runs.ray)
    cpu_pair = statistics.median(runs.jobs_cpu)
    parts = [statistics.median(c[i] for c in runs.ray_cpu) for i in range(3)]
    cpu_ray = statistics.median(sum(c) for c in runs.ray_cpu)
    tenth, full = runs.tenth, runs.full
    assert tenth is not None
    assert full is not None
    ratio = on_ray / pair
    growth = full.worker_peak_mib / tenth.worker_peak_mib if tenth.worker_peak_mib else 0.0
    print(f"{n} trajectories x 20 events, one per file ({PER_DIR} files a directory, "
          f"written in {wrote:.1f} s); Ray batches of {auto_batch_size(n, 2)} files; "
          f"JSON report {size / 2**20:.0f} MiB; load average {os.getloadavg()[0]:.1f}; "
          f"medians of {args.repeat}")
    print(f"  roadcheck replay --jobs 2   {pair:8.2f} s  {n / pair:8.0f} trajectories/s "
          f"{cpu_pair:8.2f} s CPU (baseline)")
    print(f"  Ray, 2 CPUs             {on_ray:8.2f} s  {n / on_ray:8.0f} trajectories/s "
          f"{cpu_ray:8.2f} s CPU (+ {boot:.2f} s to start Ray)")
    print(f"    Ray's CPU: the driver {parts[0]:.2f} s, the workers {parts[1]:.2f} s, "
          f"Ray's other processes {parts[2]:.2f} s")
    print(f"  Ray / --jobs 2          {ratio:8.2f}x (target <= {TARGET}x); CPU time "
          f"{cpu_ray / cpu_pair:.2f}x")
    print(f"  peak RSS of a Ray worker: {tenth.worker_peak_mib:6.1f} MiB at {small} "
          f"trajectories, {full.worker_peak_mib:6.1f} MiB at {n} ({growth:.2f}x, "
          f"target <= {FLAT}x); {len(full.peaks)} workers seen")
    print(f"  peak RSS of the driver:   {tenth.driver / 1024:6.1f} MiB at {small}, "
          f"{full.driver / 1024:6.1f} MiB at {n} (holds the list of paths)")
    failed = verdict(same, ratio, tenth.worker_peak_mib, full.worker_peak_mib)
    for line in failed:
        print(f"FAIL: {line}")
    return 1 if failed else 0


def verdict(same: bool, ratio: float, tenth_mib: float, full_mib: float) -> list[str]:
    """What was missed: the reports' bytes, Ray's time against --jobs 2, flat worker memory
    (a size where no worker was sampled is a miss, not a pass)."""
    out = []
    if not same:
        out.append("the Ray report differs from the --jobs 2 report")
    if not ratio <= TARGET:
        out.append(f"Ray takes {ratio:.2f}x the --jobs 2 time (target <= {TARGET}x)")
    if not tenth_mib or not full_mib:
        out.append("no Ray worker's memory was sampled at one of the sizes")
    elif not full_mib / tenth_mib <= FLAT:
        out.append(f"a Ray worker's peak RSS grows {full_mib / tenth_mib:.2f}x with ten times "
                   f"the files (target <= {FLAT}x)")
    return out


if __name__ == "__main__":
    sys.exit(main())
