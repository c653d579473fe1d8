"""Property tests over every input surface: no internal error, no pass on an invalid input.

Each example is one mutation of one valid seed document (``surfaces.py``),
run in-process through the CLI. Hypothesis draws the case number; the
mutation is a pure function of it, and ``derandomize=True`` makes every run
judge the same cases. The default suite runs a quarter of ``EXAMPLES`` (about
10 s), HYPOTHESIS_PROFILE=stress all of them, and ``-m stress`` four times them.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..conftest import ROOT, examples, load_script
from .surfaces import SURFACES, Workspace

#: Examples per surface: the cheap in-process ones get more than those that start processes.
#: The default suite runs a quarter of them (``examples``); ``pytest -m stress`` runs each
#: surface again with four times as many.
EXAMPLES = {"workflow": 100, "store": 100}
DEFAULT_EXAMPLES = 400
STRESS_FACTOR = 4

pytestmark = pytest.mark.fuzz


def _judge(workspace: Workspace, surface: str, k: int) -> None:
    seeds = SURFACES[surface]
    case = workspace.case(seeds[k % len(seeds)], random.Random(k))
    out = workspace.judge(case)
    what = f"{out.seed}: {case.mutation.op}: {case.mutation.detail}"
    assert out.internal is None, f"internal error {out.internal} on {what}"
    assert out.false_pass is None, (
        f"{out.false_pass} passed (exit 0) on an invalid document ({out.invalid}): {what}")


def _property(surface: str, factor: int = 0):  # type: ignore[no-untyped-def]
    """The property over ``surface``: the profile's share of its examples, or ``factor``
    times all of them."""
    full = EXAMPLES.get(surface, DEFAULT_EXAMPLES)

    @settings(max_examples=full * factor if factor else examples(full), deadline=None,
              derandomize=True, database=None)
    @given(k=st.integers(min_value=0, max_value=2**32 - 1))
    def check(workspace: Workspace, k: int) -> None:
        _judge(workspace, surface, k)

    check.__doc__ = f"No traceback and no false pass on mutated {surface} documents."
    return check


test_spec = _property("spec")
test_native = _property("native")
test_transcript = _property("transcript")
test_otel = _property("otel")
test_atif = _property("atif")
test_openai_agents = _property("openai-agents")
test_contract = _property("contract")
test_result = _property("result")
test_trace = _property("trace")
test_workflow = _property("workflow")
test_checkpoint = _property("checkpoint")
test_store = _property("store")


@pytest.mark.stress
@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_many_more_cases(workspace: Workspace, surface: str) -> None:
    """Every surface again, with four times its full count of cases (``-m stress``)."""
    _property(surface, STRESS_FACTOR)(workspace)


def test_campaign_small_run_counts_zero_and_zero() -> None:
    """A 300-case campaign (one process) finds no internal error and no false pass."""
    campaign = load_script(ROOT / "benchmarks" / "fuzz_campaign.py")
    tallies = campaign.run(300, seed=0, workers=1)
    text = campaign.report(tallies)
    assert sum(t.cases for t in tallies.values()) == 300
    assert text.rstrip().endswith("internal errors: 0, false passes: 0"), text
