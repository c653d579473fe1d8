"""Replay throughput and cold start, each measured beside its baseline in one run.

1. A corpus of 10,000 trajectories x 20 events (half conforming, half blocking)
   is written to disk. It is read once with orjson alone (open, read, one
   ``orjson.loads`` per line: the floor any reader pays) and once through the
   full replay gate (strict validation, every rule of examples/spec.json,
   verdicts). Target: gate <= 1.5 x parse-only.
2. Memory: peak traced allocation while streaming verdicts over 1,000 and over
   10,000 trajectories. Target: flat in corpus size.
3. Cold start of ``assay replay examples/spec.json examples/fixture_*.jsonl``
   against ``python -c pass``. Target: <= 0.15 s above it.

Run: ``python benchmarks/replay_throughput.py [--trajectories N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from assay.conformance import iter_replay, load_spec  # noqa: E402

SPEC = ROOT / "examples" / "spec.json"


def _trajectory(i: int, conforming: bool) -> str:
    """Twenty events of the billing pipeline; the blocking half skips the checkpoint."""
    ts = "2026-07-11T03:14:05Z"
    ev: list[dict[str, object]] = []
    seq = 0

    def add(agent: str, **rec: object) -> None:
        nonlocal seq
        seq += 1
        ev.append({"seq": seq, "ts": ts, "agent": agent, **rec})

    for k in range(5):
        add("scanner", event="action", action_type="pull_rows", args={"page": k})
    add("scanner", event="handoff", from_agent="scanner", to_agent="aggregator",
        payload={"row_count": {"value": 17491 + i, "verified": True}, "source": "billing_db",
                 "anomaly_count": {"value": i % 7, "verified": conforming}})
    for k in range(6):
        add("aggregator", event="action", action_type="summarize_rows", args={"chunk": k})
    add("aggregator", event="handoff", from_agent="aggregator", to_agent="reporter",
        payload={"row_count": {"value": 17491 + i, "verified": True},
                 "summary": {"value": f"run {i}: {17491 + i} rows", "verified": True},
                 "anomaly_count": {"value": i % 7, "verified": conforming}})
    for _ in range(3):
        add("reporter", event="action", action_type="format_report")
    if conforming:
        add("reporter", event="checkpoint", checkpoint_id="confirm_with_user", confirmed_by="owner")
    else:
        add("reporter", event="action", action_type="draft_email")
    add("reporter", event="action", action_type="send_report", irreversible=True)
    add("reporter", event="action", action_type="archive")
    add("reporter", event="final", task_success=True)
    assert len(ev) == 20
    return "".join(json.dumps(e) + "\n" for e in ev)


def make_corpus(directory: Path, n: int) -> list[str]:
    """Write ``n`` trajectory files and return their paths, in order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = directory / f"t{i:05d}.jsonl"
        path.write_text(_trajectory(i, conforming=i % 2 == 0))
        paths.append(str(path))
    return paths


def parse_only(paths: list[str]) -> int:
    """The floor: read every file and decode every line with orjson."""
    loads = orjson.loads
    count = 0
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        for line in data.split(b"\n"):
            if line:
                loads(line)
                count += 1
    return count


def gate(paths: list[str]) -> tuple[int, int]:
    """The full replay gate, streaming verdicts; returns (PASS, BLOCK) counts."""
    spec = load_spec(SPEC)
    passed = blocked = 0
    for result in iter_replay(spec, paths):
        if result.verdict == "PASS":
            passed += 1
        elif result.verdict == "BLOCK":
            blocked += 1
        else:
            raise SystemExit(f"unexpected ERROR: {result.reasons[0].message}")
    return passed, blocked


def best_of(fn, arg, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn(arg)
        times.append(time.perf_counter() - t0)
    return min(times), out


def peak_memory(paths: list[str]) -> int:
    gc.collect()
    tracemalloc.start()
    gate(paths)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def cold_start(repeat: int) -> tuple[float, float]:
    """Median wall time of ``python -c pass`` and of the CLI over the example fixtures."""
    assay = shutil.which("assay", path=os.path.dirname(sys.executable)) or "assay"
    fixtures = sorted(glob.glob(str(ROOT / "examples" / "fixture_*.jsonl")))
    cmds = {"python": [sys.executable, "-c", "pass"],
            "assay": [assay, "replay", str(SPEC), *fixtures]}
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():  # interleaved, so drift hits both alike
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            times[name].append(time.perf_counter() - t0)
    return statistics.median(times["python"]), statistics.median(times["assay"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold-runs", type=int, default=15)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="assay-bench-") as tmp:
        paths = make_corpus(Path(tmp) / "corpus", args.trajectories)
        parse_only(paths)  # warm the page cache for both contenders
        t_parse, events = best_of(parse_only, paths, args.repeat)
        t_gate, (passed, blocked) = best_of(gate, paths, args.repeat)  # type: ignore[misc]
        print(f"corpus          : {len(paths)} trajectories, {events} events "
              f"({passed} PASS, {blocked} BLOCK)")
        print(f"parse-only      : {t_parse:.3f} s  (orjson, line by line)")
        print(f"replay gate     : {t_gate:.3f} s  (strict reader + every rule + verdicts)")
        print(f"ratio           : {t_gate / t_parse:.2f} x parse-only   (target <= 1.50)")

        small = paths[: max(1, len(paths) // 10)]
        m_small, m_large = peak_memory(small), peak_memory(paths)
        print(f"peak memory     : {m_small / 1024:.0f} KiB over {len(small)} trajectories, "
              f"{m_large / 1024:.0f} KiB over {len(paths)}  "
              f"(ratio {m_large / m_small:.2f}, target ~1.0: flat)")

    py, cli = cold_start(args.cold_runs)
    print(f"cold start      : python -c pass {py * 1000:.0f} ms, assay replay (8 fixtures) "
          f"{cli * 1000:.0f} ms -> {(cli - py) * 1000:+.0f} ms above it   (target <= +150 ms)")


if __name__ == "__main__":
    main()
