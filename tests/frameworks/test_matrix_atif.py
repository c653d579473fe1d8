"""The scenario matrix (tests/frameworks/matrix.py) on ATIF documents written by Harbor's models.

Harbor is not installed by the tests (it needs Python 3.12+): the documents
were built with ``harbor.models.trajectories`` and written as Harbor's agents
write ``trajectory.json`` (tests/data/frameworks/record_atif_harbor.py), one
per scenario under tests/data/atif/matrix/, named after it. The
owner's decision is recorded under the deciding step's ``extra.checkpoint``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import matrix

FRAMEWORK = "atif"
DOCS = Path(__file__).resolve().parent.parent / "data" / "atif" / "matrix"


def test_every_expressible_scenario_has_a_recording() -> None:
    assert sorted(p.stem for p in DOCS.glob("*.json")) == sorted(matrix.expressible(FRAMEWORK))


@pytest.mark.parametrize("scenario", matrix.params(FRAMEWORK))
def test_matrix(scenario: str) -> None:
    matrix.check(scenario, DOCS / f"{scenario}.json", "atif")
