"""Reading shell command lines: linear in the line's length, and what a guard check pays.

1. Linear time: ``matches_words`` on a ``git`` command holding one word of N
   characters, against the same with a word ten times as long. A reading linear in
   the length takes about 10x as long; the target is at most 15x (a quadratic one
   takes about 100x: the last one measured 2.2 s at 400,000 characters and 13 s at
   1 MB).
2. A typical line an agent runs (``cd app && git add -A && git commit -m "$(cat
   <<'EOF' ... EOF)" && git push origin main``) read and matched once, beside
   ``shlex.split`` of the same line, printed for reference.

Each figure is the median of interleaved rounds. Exits 1 when the ratio misses.
Run ``python benchmarks/shell_matching.py [--chars 400000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from roadcheck import shellcmd
from roadcheck.shellcmd import matches_words

TARGET = 15.0
TYPICAL = ("cd app && git add -A && git commit -m \"$(cat <<'EOF'\nfix: the parser\n\n"
           "Reads every line.\nEOF\n)\" && git push origin main")


@dataclass(frozen=True)
class Linear:
    chars: int
    short: float
    long: float

    @property
    def ratio(self) -> float:
        return self.long / self.short


def _once(line: str) -> float:
    shellcmd._read_cached.cache_clear()  # each round reads the line anew
    start = time.perf_counter()
    matches_words(line, ["git", "push"])
    return time.perf_counter() - start


def measure(chars: int, rounds: int) -> Linear:
    """Medians of interleaved rounds over a word of ``chars`` and of ``10 * chars``."""
    short, long = "git " + "a" * chars + " push", "git " + "a" * (10 * chars) + " push"
    _once("git push")  # the grammar is loaded once, outside the rounds
    a, b = [], []
    for _ in range(rounds):
        a.append(_once(short))
        b.append(_once(long))
    return Linear(chars, statistics.median(a), statistics.median(b))


def typical(rounds: int) -> tuple[float, float]:
    """A typical line read and matched, and shlex.split of it, in microseconds."""
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(_once(TYPICAL))
        start = time.perf_counter()
        shlex.split(TYPICAL)
        theirs.append(time.perf_counter() - start)
    return statistics.median(ours) * 1e6, statistics.median(theirs) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=400_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    lin = measure(args.chars, args.rounds)
    ok = lin.ratio <= TARGET
    print(f"a word of {lin.chars:,} chars: {lin.short * 1e3:.1f} ms; of {10 * lin.chars:,}: "
          f"{lin.long * 1e3:.1f} ms -> {lin.ratio:.1f}x for 10x the length "
          f"(target <= {TARGET:g}x: {'met' if ok else 'MISSED'})")
    ours, theirs = typical(max(args.rounds, 50))
    print(f"a typical agent line read and matched: {ours:.0f} us; shlex.split of it: "
          f"{theirs:.0f} us ({ours / theirs:.1f}x, for reference)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
