"""Peak memory of replay on one large multi-run results file, beside the file's size.

A tau-bench results file (one JSON array of runs) of about 141 MB is written
to a temporary directory: the 200 recorded gpt-4o airline runs of
tests/data/tau/taubench, repeated with fresh task ids until the size is
reached (the same bytes for the same flags). ``roadcheck replay --format json``
judges it against examples/tau/airline.yaml in a new process, and its peak
RSS (``ru_maxrss`` of the child) is printed beside the file size and beside
the peak RSS of ``roadcheck replay`` on the 8 example fixtures (what the process
costs before any run is held). Target: peak RSS <= 1.5 x the file size.
Exits 1 when the target is missed.

Run: ``python benchmarks/multirun_memory.py [--megabytes 141]``.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "data" / "tau" / "taubench" / "gpt-4o-airline.json.gz"
SPEC = ROOT / "examples" / "tau" / "airline.yaml"
ROADCHECK = shutil.which("roadcheck", path=os.path.dirname(sys.executable)) or "roadcheck"
TARGET = 1.5


def make_file(path: Path, megabytes: float) -> int:
    """Write a tau-bench results array of about ``megabytes`` MB; return its run count."""
    runs = orjson.loads(gzip.decompress(SOURCE.read_bytes()))
    want = int(megabytes * 1_000_000)
    written = runs_out = 0
    with open(path, "wb") as fh:
        fh.write(b"[\n")
        while written < want:
            for run in runs:
                copy = dict(run, task_id=runs_out)
                chunk = orjson.dumps(copy, option=orjson.OPT_INDENT_2)
                fh.write((b",\n" if runs_out else b"") + chunk)
                written += len(chunk) + 2
                runs_out += 1
                if written >= want:
                    break
        fh.write(b"\n]\n")
    return runs_out


def peak(cmd: list[str]) -> tuple[int, int, float]:
    """(exit code, peak RSS in bytes, seconds) of ``cmd`` as a child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--megabytes", type=float, default=141.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="roadcheck-bench-") as tmp:
        path = Path(tmp) / "results.json"
        runs = make_file(path, args.megabytes)
        size = path.stat().st_size
        fixtures = sorted(glob.glob(str(ROOT / "examples" / "fixture_*.jsonl")))
        _, idle, _ = peak([ROADCHECK, "replay", str(ROOT / "examples" / "spec.json"), *fixtures])
        code, rss, took = peak([ROADCHECK, "replay", "--format", "json", "--input-format",
                                "tau-bench", str(SPEC), str(path)])
    if code not in (0, 1):
        print(f"replay exited {code}, expected a verdict")
        return 1
    ratio = rss / size
    ok = ratio <= TARGET
    print(f"file          : {size / 1e6:.1f} MB, {runs} tau-bench runs")
    print(f"replay        : {took:.2f} s, peak RSS {rss / 1e6:.1f} MB "
          f"(the process alone, on 8 fixtures: {idle / 1e6:.1f} MB)")
    print(f"ratio         : {ratio:.2f} x the file size (target <= {TARGET:.2f})  "
          f"{'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
