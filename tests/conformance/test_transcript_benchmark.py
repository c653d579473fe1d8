"""The transcript replay benchmark, asserted from its own measuring function."""

from __future__ import annotations

from types import ModuleType

import pytest

from ..conftest import ROOT, load_script

SCRIPT = ROOT / "benchmarks" / "transcripts_replay.py"


def _bench() -> ModuleType:
    return load_script(SCRIPT)


@pytest.mark.benchmark
class TestTranscriptsReplayBenchmark:
    """Replay of both recorded airline files against plain JSON decoding."""

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
