"""The scenario matrix (tests/frameworks/matrix.py) on spans OpenLLMetry's decorators write.

traceloop-sdk is not installed by the tests: the span files were written by its
``@agent`` and ``@tool`` decorators (tests/data/frameworks/record_openllmetry_matrix.py),
one per scenario under tests/data/frameworks/openllmetry/matrix/, named after
it. OpenLLMetry records no approval: the application records the owner's
decision as an ``roadcheck.checkpoint`` span in the run's trace.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import matrix

FRAMEWORK = "openllmetry"
SPANS = Path(__file__).resolve().parent.parent / "data" / "frameworks" / "openllmetry" / "matrix"


def test_every_expressible_scenario_has_a_recording() -> None:
    assert sorted(p.stem for p in SPANS.glob("*.json")) == sorted(matrix.expressible(FRAMEWORK))


@pytest.mark.parametrize("scenario", matrix.params(FRAMEWORK))
def test_matrix(scenario: str) -> None:
    matrix.check(scenario, SPANS / f"{scenario}.json", "otel")
