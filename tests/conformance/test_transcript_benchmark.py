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

    def test_within_twice_the_decode_baseline(self) -> None:
        """Replay takes at most 2 x (json.load + orjson) and judges all 250 runs."""
        bench = _bench()
        if not all(p.exists() for p in bench.FILES):
            pytest.skip("the shared recorded runs are not checked out")
        m = bench.measure(rounds=5)
        assert m["trajectories"] == 250
        assert m["counts"]["error"] == 0
        assert m["ratio"] <= 2.0, m
