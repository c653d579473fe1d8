"""The pytest plugin: the ``roadcheck`` fixture (loaded through the ``pytest11`` entry point).

::

    def test_latest_run(roadcheck):
        roadcheck.assert_conforms("runs/latest.jsonl")      # the [tool.roadcheck] spec
        run = roadcheck.replay("runs/other.jsonl", spec="specs/strict.yaml")
        assert run.exit == 1

The spec defaults to ``spec`` of ``[tool.roadcheck]`` in the nearest
``pyproject.toml`` above pytest's root directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from roadcheck.config import Config
    from roadcheck.conformance import TrajectoryItem
    from roadcheck.conformance.result import ReplayRun
    from roadcheck.conformance.spec import Spec

__all__ = ["RoadcheckFixture", "roadcheck"]



class RoadcheckFixture:
    """What the ``roadcheck`` fixture gives a test: replay and assert against the project's spec."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @property
    def spec(self) -> Path | None:
        """The ``[tool.roadcheck]`` spec, or None."""
        return self.config.spec

    def _spec(self, spec: Spec | Mapping[str, Any] | str | PathLike[str] | None
              ) -> Spec | Mapping[str, Any] | str | PathLike[str]:
        __tracebackhide__ = True
        if spec is not None:
            return spec
        if self.config.spec is None:
            raise AssertionError("the roadcheck fixture: no spec given and none in "
                                 "[tool.roadcheck]")
        return self.config.spec

    def replay(self, trajectory: TrajectoryItem,
               spec: Spec | Mapping[str, Any] | str | PathLike[str] | None = None) -> ReplayRun:
        """Replay ``trajectory``; the run, whatever its verdict."""
        from roadcheck.conformance import replay

        return replay(self._spec(spec), trajectory)

    def assert_conforms(self, trajectory: TrajectoryItem,
                        spec: Spec | Mapping[str, Any] | str | PathLike[str] | None = None
                        ) -> ReplayRun:
        """:func:`roadcheck.testing.assert_conforms` with the project's spec by default."""
        __tracebackhide__ = True
        from roadcheck.testing import assert_conforms

        return assert_conforms(trajectory, self._spec(spec))


@pytest.fixture
def roadcheck(pytestconfig: pytest.Config) -> RoadcheckFixture:
    """Replay trajectories and assert they conform, against the ``[tool.roadcheck]`` spec."""
    from roadcheck.config import find_config

    return RoadcheckFixture(find_config(pytestconfig.rootpath))
