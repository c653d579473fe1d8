"""The revalidation benchmarks run and measure what they say (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class TestSpeedBenchmark:
    """benchmarks/revalidate_speed.py revalidates the video job with a big artifact."""

    def test_prepared_checkpoint_continues(self, tmp_path: Path) -> None:
        """The prepared checkpoint carries the big file's digest and revalidates to continue."""
        import roadcheck

        bench = _load("revalidate_speed")
        cp = bench.prepare(tmp_path, 2)
        assert (cp.parent / "build" / "final.mp4").stat().st_size == 2 << 20
        assert roadcheck.revalidate(cp, now="2026-08-10T15:00:00Z").decision == "continue"

    def test_measure_reports_both_sides(self) -> None:
        """measure() returns both medians; the ratio is printed, never asserted here."""
        speed = _load("revalidate_speed").measure(1, 1)
        assert speed.revalidate_s > 0 and speed.hashlib_s > 0 and speed.ratio > 0
