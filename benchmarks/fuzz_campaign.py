"""A fuzz campaign over every input surface: internal errors and false passes, counted.

Run: ``python benchmarks/fuzz_campaign.py [--cases 100000] [--seed 0] [--workers 2]``.

Each case mutates one valid seed document of one surface (replay specs, native
trajectories, transcripts, OTel / ATIF / OpenAI Agents traces, accept
contracts, results and traces, workflows, resume checkpoints, evidence-store
files) and runs roadcheck on it in-process; the engine and both oracles live in
``tests/fuzz/`` (``mutate.py``, ``reference.py``, ``surfaces.py``). The cases
are a pure function of ``--seed`` and their index, so two runs with the same
arguments judge the same cases.

Prints, per surface, how many cases ran, how many mutations made the document
invalid, and the counts of internal errors (a traceback, exit 70, a hang) and
of false passes (exit 0 on a document made invalid, when the seed's verdict
was not lenient), each distinct failure signature once with an example, then
``internal errors: N, false passes: M``. Exits 1 unless both are 0 (and when
no case ran).
``--save DIR`` writes the smallest input of each signature there, with a
``manifest.json`` the regression tests read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fuzz.surfaces import SURFACES, Outcome, Workspace  # noqa: E402

#: Share of the cases each surface gets; the slow ones (a subprocess per phase) get fewer.
WEIGHTS = {"spec": 10, "native": 10, "transcript": 10, "otel": 9, "atif": 9,
           "openai-agents": 9, "contract": 8, "result": 6, "trace": 8, "workflow": 5,
           "checkpoint": 10, "store": 6}


def plan(cases: int) -> list[tuple[str, int]]:
    """(surface, index) for every case: each surface's share, interleaved."""
    total = sum(WEIGHTS.values())
    counts = {s: cases * w // total for s, w in WEIGHTS.items()}
    for s in list(WEIGHTS)[: cases - sum(counts.values())]:
        counts[s] += 1
    out = [(s, k) for s, n in counts.items() for k in range(n)]
    # interleave so that both workers see every surface from the start
    out.sort(key=lambda sk: (sk[1] / max(counts[sk[0]], 1), sk[0]))
    return out


@dataclass
class Failure:
    """One failing case, kept when it is the smallest of its signature."""

    surface: str
    seed: str
    kind: str  # internal | false_pass | instrument
    signature: str
    op: str
    detail: str
    invalid: str | None
    exits: dict[str, Any]
    data: bytes
    case: str = ""  # "<surface>#<index>": the case, rebuilt by one_case(seed, surface, index)


_WS: Workspace | None = None


def _init(root: str) -> None:
    global _WS
    work = Path(tempfile.mkdtemp(dir=root))
    _WS = Workspace(work)


def _case_rng(seed: int, surface: str, k: int) -> random.Random:
    return random.Random(f"{seed}:{surface}:{k}")


def one_case(seed: int, surface: str, k: int, ws: Workspace) -> tuple[Outcome, bytes]:
    """Judge case ``k`` of ``surface``: the same arguments always give the same case."""
    seeds = SURFACES[surface]
    s = seeds[k % len(seeds)]
    case = ws.case(s, _case_rng(seed, surface, k))
    return ws.judge(case), case.mutation.data


def _normal(reason: str | None) -> str:
    if reason is None:
        return "valid"
    reason = re.sub(r"\.\w+: (unknown key|not an event field)", r".*: \1", reason)
    reason = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", reason)
    reason = re.sub(r"\d+", "N", reason)
    return reason[:120]


def signature(out: Outcome) -> tuple[str, str] | None:
    """(kind, signature) of a failing outcome; ``None`` when both oracles hold."""
    if out.internal:
        return "internal", out.internal
    if out.false_pass:
        return "false_pass", (f"{out.false_pass} exit 0 on {out.seed}: {out.op}: "
                              f"{_normal(out.invalid)}")
    return None


def _work(args: tuple[int, list[tuple[str, int]]]) -> list[tuple[str, bool, Failure | None]]:
    seed, batch = args
    assert _WS is not None
    results = []
    for surface, k in batch:
        try:
            out, data = one_case(seed, surface, k, _WS)
        except Exception as exc:  # a bug of the instrument itself: shown, never hidden
            results.append((surface, False, Failure(
                surface, "?", "instrument", f"{type(exc).__name__}: {exc}"[:200], "?",
                f"case {k}", None, {}, b"", f"{surface}#{k}")))
            continue
        sig = signature(out)
        fail = None
        if sig is not None:
            fail = Failure(out.surface, out.seed, sig[0], sig[1], out.op, out.detail,
                           out.invalid, dict(out.exits), data, f"{surface}#{k}")
        results.append((surface, out.invalid is not None, fail))
    return results


@dataclass
class Tally:
    """Counts of one surface."""

    cases: int = 0
    invalid: int = 0
    internal: int = 0
    false_pass: int = 0
    instrument: int = 0
    smallest: dict[str, Failure] = field(default_factory=dict)
    count: Counter[str] = field(default_factory=Counter)


def run(cases: int, seed: int = 0, workers: int = 2, batch: int = 25,
        progress: bool = False) -> dict[str, Tally]:
    """Run the campaign; returns the tally per surface."""
    todo = plan(cases)
    batches = [(seed, todo[i:i + batch]) for i in range(0, len(todo), batch)]
    tallies: dict[str, Tally] = defaultdict(Tally)
    root = tempfile.mkdtemp(prefix="roadcheck-fuzz-")
    done = 0
    try:
        if workers <= 1:
            _init(root)
            stream: Any = map(_work, batches)
            pool = None
        else:
            pool = multiprocessing.get_context("fork").Pool(workers, _init, (root,))
            stream = pool.imap(_work, batches)
        for results in stream:
            for surface, invalid, fail in results:
                t = tallies[surface]
                t.cases += 1
                t.invalid += invalid
                if fail is None:
                    continue
                if fail.kind == "internal":
                    t.internal += 1
                elif fail.kind == "instrument":
                    t.instrument += 1
                else:
                    t.false_pass += 1
                t.count[fail.signature] += 1
                best = t.smallest.get(fail.signature)
                if best is None or len(fail.data) < len(best.data):
                    t.smallest[fail.signature] = fail
            done += len(results)
            if progress and done % 5000 < batch:
                print(f"  {done}/{cases} cases", file=sys.stderr, flush=True)
        if pool is not None:
            pool.close()
            pool.join()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return dict(tallies)


def report(tallies: dict[str, Tally], seconds: float | None = None) -> str:
    """The per-surface table, each signature once, and the totals line."""
    lines = [f"{'surface':14} {'cases':>7} {'invalid':>8} {'internal':>9} {'false pass':>11}"]
    for surface in WEIGHTS:
        t = tallies.get(surface, Tally())
        lines.append(f"{surface:14} {t.cases:>7} {t.invalid:>8} {t.internal:>9} "
                     f"{t.false_pass:>11}")
    for surface in WEIGHTS:
        t = tallies.get(surface)
        if t is None or not t.smallest:
            continue
        lines.append(f"\n{surface}:")
        for sig, f in sorted(t.smallest.items(), key=lambda kv: (kv[1].kind, kv[0])):
            lines.append(f"  [{f.kind}] x{t.count[sig]} {sig}")
            lines.append(f"      e.g. seed {f.seed}: {f.op}: {f.detail[:100]}")
    internal = sum(t.internal for t in tallies.values())
    false = sum(t.false_pass for t in tallies.values())
    cases = sum(t.cases for t in tallies.values())
    took = f" in {seconds:.0f} s" if seconds is not None else ""
    lines.append(f"\n{cases} cases{took}")
    broken = sum(t.instrument for t in tallies.values())
    if broken:
        lines.append(f"instrument errors (bugs of the fuzz code itself): {broken}")
    lines.append(f"internal errors: {internal}, false passes: {false}")
    return "\n".join(lines) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60]


def save(tallies: dict[str, Tally], out: Path) -> int:
    """Write the smallest input of each signature under ``out/<surface>/`` and a manifest."""
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    known = {(e["surface"], e["signature"]) for e in manifest}
    added = 0
    for surface, t in tallies.items():
        for sig, f in sorted(t.smallest.items()):
            if (surface, sig) in known or f.kind == "instrument":
                continue
            from tests.fuzz.surfaces import SURFACES as S

            seed = next(s for s in S[surface] if s.name == f.seed)
            suffix = Path(str(seed.path)).suffix or ".doc"
            digest = hashlib.sha1(sig.encode()).hexdigest()[:8]
            name = f"{f.kind}-{_slug(sig)[:50]}-{digest}{suffix}"
            (out / surface).mkdir(parents=True, exist_ok=True)
            (out / surface / name).write_bytes(f.data)
            manifest.append({"surface": surface, "seed": f.seed, "file": f"{surface}/{name}",
                             "kind": f.kind, "signature": sig, "op": f.op,
                             "detail": f.detail[:200], "invalid": f.invalid, "case": f.case,
                             "exits": f.exits})
            added += 1
    manifest.sort(key=lambda e: (e["surface"], e["file"]))
    out.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return added


def main(argv: list[str] | None = None) -> int:
    """Run the campaign from the command line; 0 only when nothing failed."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--save", type=Path, default=None,
                   help="write the smallest input of each failure signature here")
    args = p.parse_args(argv)
    start = time.perf_counter()
    tallies = run(args.cases, args.seed, args.workers, progress=True)
    took = time.perf_counter() - start
    sys.stdout.write(report(tallies, took))
    if args.save is not None:
        print(f"saved {save(tallies, args.save)} new regression inputs to {args.save}")
    failed = sum(t.internal + t.false_pass + t.instrument for t in tallies.values())
    if not sum(t.cases for t in tallies.values()):
        print("no case ran: nothing was measured")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
