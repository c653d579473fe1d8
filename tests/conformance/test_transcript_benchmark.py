"""The transcript replay benchmark, asserted from its own measuring function."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "benchmarks" / "transcripts_replay.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("transcripts_replay", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.benchmark
class TestTranscriptsReplayBenchmark:
    """Replay of both shared airline files against plain JSON decoding."""

    def test_benchmark_runs_and_judges_every_run(self) -> None:
        """The benchmark measures both sides and judges all 250 runs without an ERROR.

        The ratio itself is a figure the script prints, not asserted here: a
        timed assertion fails on a loaded machine without anything being wrong.
        """
        bench = _bench()
        m = bench.measure(rounds=1)
        assert m["trajectories"] == 250
        assert m["counts"]["error"] == 0
        assert m["ratio"] > 0
