"""The verify benchmark script runs and reports the gate beside its baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..conftest import load_script

SCRIPT = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "accept_verify.py"


def _load() -> Any:
    return load_script(SCRIPT)


@pytest.mark.benchmark
class TestAcceptVerifyBenchmark:
    """benchmarks/accept_verify.py."""

    def test_runs_and_prints_every_row(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A short run prints the gate, three baselines and the budget line."""
        # A loose budget: this checks the script, not the machine's speed.
        assert _load().main(["--number", "500", "--budget-us", "1000"]) == 0
        out = capsys.readouterr().out
        for row in ("verify(dict, trace)", "baseline: bare dict checks",
                    "baseline: json.loads + bare checks", "baseline: jsonschema iter_errors",
                    "budget: verify(dict, trace) <= 1000 us/call -> met"):
            assert row in out

    def test_baseline_agrees_with_the_gate(self) -> None:
        """The inline baseline judges the benchmark's result the way verify does."""
        bench = _load()
        assert bench.bare_checks(bench.RESULT, bench.TRACE)
        assert not bench.bare_checks({**bench.RESULT, "target_id": "cust_9999"}, bench.TRACE)
