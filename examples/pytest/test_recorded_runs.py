"""Recorded agent runs checked in a project's own test suite, with roadcheck's pytest plugin.

Installing roadcheck registers the plugin: the ``roadcheck`` fixture is there without a
conftest.py. Run from the repository root:

    pytest examples/pytest
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roadcheck.testing import assert_conforms

HERE = Path(__file__).parent
SPEC = HERE.parent / "spec.json"


def test_a_run_that_asked_first_conforms() -> None:
    """The run confirmed with the user before sending the report."""
    assert_conforms(HERE.parent / "fixture_conforms.jsonl", SPEC)


def test_a_run_that_skipped_the_checkpoint_is_caught() -> None:
    """assert_conforms fails on a BLOCK, and says why."""
    with pytest.raises(AssertionError, match="checkpoint-skipped"):
        assert_conforms(HERE.parent / "fixture_skipped.jsonl", SPEC)


def test_with_the_fixture(roadcheck) -> None:  # type: ignore[no-untyped-def]
    """The fixture replays against a spec given here or in [tool.roadcheck]."""
    run = roadcheck.replay(HERE.parent / "fixture_late_checkpoint.jsonl", spec=SPEC)
    assert run.exit == 1
    roadcheck.assert_conforms(HERE.parent / "fixture_verified.jsonl", spec=SPEC)
