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
    assert "mixed rules: 100 rules of every kind, session of 10000 prior events" in out
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


def test_the_mixed_spec_uses_every_construct_and_blocks() -> None:
    """The mixed spec holds 100 rules of every kind with every condition, its 10,000-event
    session replays, and the asked calls meet forbidden, flows and checkpoint rules."""
    from collections import Counter

    bench = load_script(SCRIPT)
    doc = bench.mixed_spec()
    assert sum(len(doc[k]) for k in ("mandatory_checkpoints", "forbidden", "limits",
                                      "obligations", "flows")) == 100
    text = repr(doc)
    for word in ("'gt'", "'lt'", "'regex'", "'glob'", "'in'", "'any'", "'not'", "'ok'",
                 "'unless'", "'value'", "'session'", "'warn'", "items.*.sku"):
        assert word in text, word
    guard = Guard(doc)
    for event in bench.mixed_session():
        guard.observe(event)
    assert guard.last_seq == 10_000
    codes: Counter[str] = Counter()
    for i in range(100):
        decision = guard.check({"event": "action", "action_type": f"tool_{i}",
                                "args": {"to": "a@outside.example" if i % 3 == 0
                                         else "b@corp.example", "n": i * 97,
                                         "items": [{"sku": "X1" if i % 5 == 0 else "S1"}],
                                         "ref": f"R{(i * 97) % 10_000:06d}"}})
        codes.update(str(r.code) for r in decision.reasons)
    assert codes["forbidden-action"] and codes["tainted-flow"] and codes["checkpoint-skipped"]
