"""What the CI formats and the HTML page cost over the JSON report, measured side by side.

Writes ``--trajectories`` native trajectories of 20 events (every other one
skips its checkpoint, so half BLOCK with a reason to locate), judges them once
with ``replay_files``, then renders the same run as: the JSON document (the
baseline), and SARIF, GitHub annotations, JUnit XML and HTML, each including
``locate`` on the files the format needs again (SARIF and GitHub: those with
a reason naming an event; HTML: all, for the timelines; JUnit: none).
Each figure is the total time (judging + rendering) over the baseline's total;
the targets: JUnit 1.5x, SARIF and GitHub 2.0x (half the files read again),
HTML 4.0x (every file read again, a timeline per trajectory).
Usage: ``python benchmarks/ci_formats.py [--trajectories 5000]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from roadcheck._inputs import load_replay_spec
from roadcheck.conformance import replay_files
from roadcheck.ingest.locate import locate
from roadcheck.report.ci import located_paths, replay_document

TARGETS = {"sarif": 2.0, "github": 2.0, "junit": 1.5, "html": 4.0}
SPEC = Path(__file__).resolve().parent.parent / "examples" / "spec.json"


def write(root: Path, count: int) -> list[str]:
    """``count`` trajectories; the odd ones lack the checkpoint before ``send_report``."""
    events = [{"seq": i, "agent": "scanner", "event": "action", "action_type": "pull_rows"}
              for i in range(1, 16)]
    events += [
        {"seq": 16, "agent": "scanner", "event": "handoff", "from_agent": "scanner",
         "to_agent": "aggregator",
         "payload": {"row_count": {"value": 1, "verified": True}, "source": "db"}},
        {"seq": 17, "agent": "aggregator", "event": "handoff", "from_agent": "aggregator",
         "to_agent": "reporter", "payload": {"row_count": {"value": 1, "verified": True},
                                             "summary": {"value": "ok", "verified": True}}},
        {"seq": 18, "agent": "reporter", "event": "checkpoint",
         "checkpoint_id": "confirm_with_user", "confirmed_by": "owner"},
        {"seq": 19, "agent": "reporter", "event": "action", "action_type": "send_report",
         "irreversible": True},
        {"seq": 20, "agent": "reporter", "event": "final", "task_success": True}]
    good = b"".join(orjson.dumps(e) + b"\n" for e in events)
    bad = b"".join(orjson.dumps(e) + b"\n" for e in events if e["seq"] != 18)
    paths = []
    for n in range(count):
        path = root / f"t{n:06d}.jsonl"
        path.write_bytes(bad if n % 2 else good)
        paths.append(str(path))
    return paths


def timed(fn: Callable[[], str]) -> tuple[float, int]:
    start = time.perf_counter()
    text = fn()
    return time.perf_counter() - start, len(text)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trajectories", type=int, default=5000)
    args = parser.parse_args()
    spec = load_replay_spec(str(SPEC))
    with tempfile.TemporaryDirectory() as tmp:
        paths = write(Path(tmp), args.trajectories)
        start = time.perf_counter()
        run = replay_files(spec, paths)
        judge = time.perf_counter() - start
        base, size = timed(lambda: replay_document(run, spec, fmt="json"))
        baseline = judge + base
        print(f"{args.trajectories} trajectories, judged in {judge:.2f}s")
        print(f"json (baseline): render {base:.2f}s, total {baseline:.2f}s, {size} bytes")
        missed = []
        for fmt, target in TARGETS.items():
            def render(fmt: str = fmt) -> str:
                return replay_document(run, spec, fmt=fmt,
                                       located=locate(located_paths(run, fmt, paths)))
            took, size = timed(render)
            ratio = (judge + took) / baseline
            ok = ratio <= target
            print(f"{fmt}: locate+render {took:.2f}s, total {judge + took:.2f}s, "
                  f"{ratio:.2f}x the baseline (target <= {target}x) {'ok' if ok else 'MISS'}, "
                  f"{size} bytes")
            if not ok:
                missed.append(fmt)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
