"""The guard latency benchmark runs tiny and prints its figures (no timing is asserted)."""

from __future__ import annotations

import pytest

from roadcheck.guard import Guard

from ..conftest import ROOT, load_script

SCRIPT = ROOT / "benchmarks" / "guard_latency.py"


@pytest.mark.benchmark
def test_benchmark_prints_every_figure_beside_its_baseline(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A tiny run prints check, observe and the hook beside their baselines; exit follows."""
    bench = load_script(SCRIPT)
    code = bench.main(["--calls", "200", "--hooks", "1"])
    out = capsys.readouterr().out
    assert "guard latency: 100-rule spec, session of 1000 prior events" in out
    assert "check   p50" in out and "| bare dict lookup p50" in out
    assert "observe p50" in out and "hook process wall p50" in out
    assert "| python -c pass p50" in out
    assert code == (0 if "all targets met" in out else 1)


def test_the_session_is_what_the_benchmark_claims() -> None:
    """1,000 events replay without error under the 100-rule spec, and the asked call asks."""
    bench = load_script(SCRIPT)
    guard = Guard(bench.spec())
    for event in bench.session():
        guard.observe(event)
    assert guard.last_seq == 1000 and len(guard.spec.mandatory_checkpoints) == 101
    push = guard.check({"event": "action", "action_type": "Bash",
                        "args": {"command": "git push"}, "command": "git push"})
    assert push.verdict == "ask"
