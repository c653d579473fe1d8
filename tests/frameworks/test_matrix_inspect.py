"""The scenario matrix (tests/frameworks/matrix.py) on Inspect AI eval logs.

Inspect is not installed by the tests: the logs were written by ``inspect
eval`` itself with its ``mockllm`` model (tests/data/inspect/record.py) and are
kept under tests/data/inspect/matrix/, one per scenario, named after it. Only
``send_report`` is gated, by an approver named ``owner``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import matrix

FRAMEWORK = "inspect"
LOGS = Path(__file__).resolve().parent.parent / "data" / "inspect" / "matrix"


def test_every_expressible_scenario_has_a_recording() -> None:
    assert sorted(p.stem for p in LOGS.glob("*.json")) == sorted(matrix.expressible(FRAMEWORK))


@pytest.mark.parametrize("scenario", matrix.params(FRAMEWORK))
def test_matrix(scenario: str) -> None:
    matrix.check(scenario, LOGS / f"{scenario}.json", "inspect")
