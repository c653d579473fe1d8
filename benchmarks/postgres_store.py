"""The PostgreSQL store: per-phase overhead over the JSONL store, and workers sharing runs.

1. Overhead: one workflow of trivial phases (``touch ARTIFACT``, gate ``test -f``)
   run to completion in process with the JSONL store and with the PostgreSQL
   store, interleaved, medians of ``--repeat``; the figure is ``(postgres -
   jsonl) / phases``, target <= +2 ms per phase on loopback. The time of one
   append on each store is printed beside it (the PostgreSQL one is two round
   trips: the fence and the head read with BEGIN, the writes sent with COMMIT).
2. Workers: ``--workers`` worker processes of one role share ``--runs`` runs of
   ``--run-phases`` phases each (1,000 phases by default); the figure is the
   throughput, and the check is that every phase was recorded exactly once and
   every chain verifies.

The database is ``--url`` (default ``$ROADCHECK_TEST_DATABASE_URL``, else the local
server); the benchmark works in a schema of its own and drops it. Usage:
``python benchmarks/postgres_store.py [--phases 100] [--repeat 5] [--workers 4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from roadcheck.evidence.postgres import PostgresStore, verify_pg_run
from roadcheck.evidence.store import JsonlStore
from roadcheck.harness import Workflow
from roadcheck.harness.worker import WorkerOptions, run_on_database, submit_run

BUDGET_MS = 2.0
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _tools() -> tuple[list[str], list[str]]:
    touch, test = shutil.which("touch"), shutil.which("test")
    if touch and test:
        return [touch, "{artifact}"], [test, "-f", "{artifact}"]
    py = sys.executable
    return ([py, "-c", "import sys; open(sys.argv[1], 'a').close()", "{artifact}"],
            [py, "-c", "import os, sys; sys.exit(not os.path.isfile(sys.argv[1]))", "{artifact}"])


def doc(name: str, phases: int) -> dict[str, object]:
    producer, gate = _tools()
    return {"workflow": name, "phases": [
        {"name": f"p{i:03d}", "role": "op", "producer": producer, "artifact": f"a{i:03d}",
         "gate": {"command": gate}} for i in range(phases)]}


#: Median seconds of one append on each store during the last :func:`overhead`.
APPEND: dict[str, float] = {}


@contextmanager
def _timed_appends() -> Iterator[dict[str, list[float]]]:
    """Every append's seconds, by store, while the block runs."""
    seen: dict[str, list[float]] = {"jsonl": [], "postgres": []}
    real = {"jsonl": JsonlStore.append, "postgres": PostgresStore.append}

    def timed(kind: str) -> Any:
        def append(self: Any, record: Any) -> Any:
            start = time.perf_counter()
            try:
                return real[kind](self, record)
            finally:
                seen[kind].append(time.perf_counter() - start)
        return append

    JsonlStore.append = timed("jsonl")  # type: ignore[method-assign]
    PostgresStore.append = timed("postgres")  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        JsonlStore.append = real["jsonl"]  # type: ignore[method-assign]
        PostgresStore.append = real["postgres"]  # type: ignore[method-assign]


def overhead(url: str, phases: int, repeat: int, root: Path) -> tuple[float, float]:
    """Median seconds per run with the JSONL store and with the PostgreSQL store,
    interleaved; the median append of each goes to :data:`APPEND`."""
    wf = Workflow.from_dict(doc("overhead", phases))
    jsonl, pg = [], []
    with _timed_appends() as seen:
        for n in range(repeat):
            start = time.perf_counter()
            res = wf.run(role="op", identity="bench", run_id=f"j{n}", runs_dir=root / "jsonl")
            jsonl.append(time.perf_counter() - start)
            assert res.status == "completed", res.message
            opts = WorkerOptions("op", "bench", root / "pg")
            start = time.perf_counter()
            res = run_on_database(wf.spec, wf.spec_dir, None, url, opts=opts, params={},
                                  run_id=f"p{n}")
            pg.append(time.perf_counter() - start)
            assert res.status == "completed", res.message
    APPEND.update({k: statistics.median(v) for k, v in seen.items() if v})
    return statistics.median(jsonl), statistics.median(pg)


def workers(url: str, count: int, runs: int, run_phases: int, root: Path) -> float:
    """Seconds for ``count`` worker processes to complete ``runs`` submitted runs."""
    path = root / "pool.json"
    path.write_text(json.dumps(doc("pool", run_phases)), encoding="utf-8")
    wf = Workflow.load(path)
    for n in range(runs):
        res = submit_run(wf.spec, wf.spec_dir, str(path), url, params={},
                         run_id=f"s{n:03d}", runs_dir=root / "runs")
        assert res.status == "paused", res.message
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROADCHECK_")}
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "roadcheck", "worker", str(path),
                               "--store", url,
                               "--as", "op", "--identity", f"w{i}", "--runs-dir",
                               str(root / "runs"), "--poll", "0.05"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
             for i in range(count)]
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            (left,) = conn.execute("SELECT count(*) FROM roadcheck_runs WHERE workflow = 'pool' "
                                   "AND status <> 'completed'").fetchone() or (1,)
            if not left:
                break
            if any(p.poll() is not None for p in procs):
                raise SystemExit("a worker exited early")
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.communicate(timeout=60)
        twice = conn.execute(
            "SELECT count(*) FROM (SELECT run_id, phase FROM roadcheck_evidence "
            "JOIN roadcheck_runs "
            "USING (run_id) WHERE roadcheck_runs.workflow = 'pool' GROUP BY run_id, phase "
            "HAVING count(*) > 1) t").fetchone()
        (total,) = conn.execute(
            "SELECT count(*) FROM roadcheck_evidence JOIN roadcheck_runs USING (run_id) "
            "WHERE roadcheck_runs.workflow = 'pool'").fetchone() or (0,)
    if twice != (0,) or total != runs * run_phases:
        raise SystemExit(f"FAIL: {total} records for {runs * run_phases} phases, "
                         f"{twice} phases recorded twice")
    for n in range(runs):
        if not verify_pg_run(url, f"s{n:03d}", None).ok:
            raise SystemExit(f"FAIL: run s{n:03d} does not verify")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url",
                        default=os.environ.get("ROADCHECK_TEST_DATABASE_URL") or DEFAULT_URL)
    parser.add_argument("--phases", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--run-phases", type=int, default=20)
    args = parser.parse_args()
    schema = f"roadcheck_bench_{secrets.token_hex(4)}"
    url = f"{args.url}{'&' if '?' in args.url else '?'}options=-csearch_path%3D{schema}"
    with psycopg.connect(args.url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            with tempfile.TemporaryDirectory(prefix="roadcheck-pg-bench-") as tmp:
                root = Path(tmp)
                jsonl, pg = overhead(url, args.phases, args.repeat, root)
                per_phase = (pg - jsonl) / args.phases * 1000
                print(f"per-phase overhead ({args.phases} phases, median of {args.repeat}):")
                print(f"  jsonl store      {jsonl * 1000 / args.phases:7.2f} ms/phase")
                print(f"  postgres store   {pg * 1000 / args.phases:7.2f} ms/phase")
                print(f"  postgres - jsonl {per_phase:7.2f} ms/phase (target <= +{BUDGET_MS} ms)")
                if APPEND:
                    print(f"  one append       jsonl {APPEND['jsonl'] * 1000:.2f} ms, "
                          f"postgres {APPEND['postgres'] * 1000:.2f} ms (medians)")
                phases = args.runs * args.run_phases
                elapsed = workers(url, args.workers, args.runs, args.run_phases, root)
                print(f"{args.workers} workers, {phases} phases across {args.runs} runs: "
                      f"{elapsed:.2f} s, {phases / elapsed:.0f} phases/s; every phase "
                      "recorded once, every chain verifies")
        finally:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    if per_phase > BUDGET_MS:
        print(f"FAIL: {per_phase:.2f} ms/phase over the JSONL store exceeds {BUDGET_MS} ms")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
