"""Revalidating the video-job checkpoint with a 50 MB artifact versus hashing it alone.

The video-job example is copied to a temporary directory, its final media is
replaced by 50 MB of seeded random bytes and the checkpoint's digest updated.
Each round times ``roadcheck.revalidate`` (in process: load the checkpoint, read the
task, check every artifact, reconcile the upload in the ledger, re-check the
capability and budget, classify) and, side by side, ``hashlib`` hashing the same
file. The ratio of the medians is printed; the target is at most 1.2.

Run ``python benchmarks/revalidate_speed.py [MEGABYTES] [ROUNDS]``.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "resume" / "video"
TARGET = 1.2


@dataclass(frozen=True)
class Speed:
    """Median seconds of each side and their ratio."""

    megabytes: int
    revalidate_s: float
    hashlib_s: float

    @property
    def ratio(self) -> float:
        """Revalidation time over hashing time."""
        return self.revalidate_s / self.hashlib_s


def prepare(root: Path, megabytes: int) -> Path:
    """Copy the example, write the big artifact and point the checkpoint at its digest."""
    work = root / "video"
    shutil.copytree(EXAMPLE, work)
    media = work / "build" / "final.mp4"
    rnd = random.Random(50)
    with open(media, "wb") as fh:
        for _ in range(megabytes):
            fh.write(rnd.randbytes(1 << 20))
    with open(media, "rb") as fh:
        digest = "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()
    cp = work / "checkpoint.yaml"
    text = cp.read_text()
    old = text.split('digest: "', 1)[1].split('"', 1)[0]
    cp.write_text(text.replace(old, digest, 1))
    return cp


def measure(megabytes: int = 50, rounds: int = 7) -> Speed:
    """Alternate both sides ``rounds`` times after one warm-up each; return the medians."""
    import roadcheck

    with tempfile.TemporaryDirectory() as tmp:
        cp = prepare(Path(tmp), megabytes)
        media = cp.parent / "build" / "final.mp4"

        def hash_only() -> None:
            with open(media, "rb") as fh:
                hashlib.file_digest(fh, "sha256").hexdigest()

        def revalidate() -> None:
            rv = roadcheck.revalidate(cp, now="2026-08-10T15:00:00Z")
            assert rv.decision == "continue", rv.findings

        revalidate()
        hash_only()
        rv_times, h_times = [], []
        for _ in range(rounds):
            t = time.perf_counter()
            hash_only()
            h_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            revalidate()
            rv_times.append(time.perf_counter() - t)
    return Speed(megabytes, statistics.median(rv_times), statistics.median(h_times))


def main(argv: list[str]) -> int:
    """Print both medians and the ratio; exit 1 when the ratio is over the target."""
    megabytes = int(argv[0]) if argv else 50
    rounds = int(argv[1]) if len(argv) > 1 else 7
    s = measure(megabytes, rounds)
    print(f"artifact: {s.megabytes} MB, {rounds} rounds, medians")
    print(f"hashlib sha256 alone : {s.hashlib_s * 1000:8.1f} ms")
    print(f"roadcheck.revalidate     : {s.revalidate_s * 1000:8.1f} ms")
    ok = s.ratio <= TARGET
    print(f"ratio: {s.ratio:.3f} (target <= {TARGET})  {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
