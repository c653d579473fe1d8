"""The pytest plugin: the ``assay`` fixture (loaded through the ``pytest11`` entry point).

::

    def test_latest_run(assay):
        assay.assert_conforms("runs/latest.jsonl")      # the [tool.assay] spec
        run = assay.replay("runs/other.jsonl", spec="specs/strict.yaml")
        assert run.exit == 1

The spec defaults to ``spec`` of ``[tool.assay]`` in the nearest
``pyproject.toml`` above pytest's root directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from assay.config import Config
    from assay.conformance import TrajectoryItem
    from assay.conformance.result import ReplayRun
    from assay.conformance.spec import Spec

__all__ = ["AssayFixture", "assay"]



class AssayFixture:
    """What the ``assay`` fixture gives a test: replay and assert against the project's spec."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @property
    def spec(self) -> Path | None:
        """The ``[tool.assay]`` spec, or None."""
        return self.config.spec

    def _spec(self, spec: Spec | Mapping[str, Any] | str | PathLike[str] | None
              ) -> Spec | Mapping[str, Any] | str | PathLike[str]:
        __tracebackhide__ = True
        if spec is not None:
            return spec
        if self.config.spec is None:
            raise AssertionError("the assay fixture: no spec given and none in [tool.assay]")
        return self.config.spec

    def replay(self, trajectory: TrajectoryItem,
               spec: Spec | Mapping[str, Any] | str | PathLike[str] | None = None) -> ReplayRun:
        """Replay ``trajectory``; the run, whatever its verdict."""
        from assay.conformance import replay

        return replay(self._spec(spec), trajectory)

    def assert_conforms(self, trajectory: TrajectoryItem,
                        spec: Spec | Mapping[str, Any] | str | PathLike[str] | None = None
                        ) -> ReplayRun:
        """:func:`assay.testing.assert_conforms` with the project's spec by default."""
        __tracebackhide__ = True
        from assay.testing import assert_conforms

        return assert_conforms(trajectory, self._spec(spec))


@pytest.fixture
def assay(pytestconfig: pytest.Config) -> AssayFixture:
    """Replay trajectories and assert they conform, against the ``[tool.assay]`` spec."""
    from assay.config import find_config

    return AssayFixture(find_config(pytestconfig.rootpath))
