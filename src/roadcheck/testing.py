"""Test helpers: :func:`assert_conforms`, the check a test suite runs on a recorded trajectory.

Usable from any test runner; with pytest the ``roadcheck`` fixture (the
``roadcheck.pytest_plugin`` module, loaded through the ``pytest11`` entry point)
wraps it with the project's ``[tool.roadcheck]`` spec::

    from roadcheck.testing import assert_conforms

    def test_agent_asked_before_sending():
        assert_conforms("runs/latest.jsonl", "specs/replay.yaml")
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from roadcheck.conformance import TrajectoryItem
    from roadcheck.conformance.result import ReplayResult, ReplayRun
    from roadcheck.conformance.spec import Spec

__all__ = ["assert_conforms", "failure_message"]


def _describe(r: ReplayResult) -> list[str]:
    from roadcheck.conformance.result import scalar_text

    lines = [f"{r.id}: {r.verdict} ({r.headline})"]
    lines.extend(f"  reason: {f.code}: {f.message}" for f in r.reasons)
    lines.extend(f"  warn: {f.code}: {f.message}" for f in r.warnings)
    lines.append(f"  final metric says task_success={scalar_text(r.task_success)}; "
                 f"the trajectory says {r.headline}")
    return lines


def failure_message(run: ReplayRun, spec_name: str) -> str:
    """The message of a failed :func:`assert_conforms`: each non-passing trajectory, its reasons."""
    from roadcheck.report._text import escape_controls, plural

    bad = [r for r in run.results if r.verdict != "PASS"]
    head = (f"{plural(len(bad), 'trajectory', 'trajectories')} of {len(run.results)} "
            f"did not conform to {spec_name}:")
    if not run.results:
        head = f"no trajectory to judge against {spec_name}"
    lines = [head]
    for r in bad:
        lines.extend(_describe(r))
    return "\n".join(escape_controls(line) for line in lines)


def assert_conforms(trajectory: TrajectoryItem,
                    spec: Spec | Mapping[str, Any] | str | PathLike[str] | None = None
                    ) -> ReplayRun:
    """Replay ``trajectory`` against ``spec`` and raise :class:`AssertionError` unless all PASS.

    ``trajectory`` is what :func:`roadcheck.replay` takes: a path (a file of many
    trajectories must pass as a whole), a :class:`~roadcheck.Trajectory`, or a list
    of events. ``spec`` is a spec, a spec document or a path; without it, the
    ``spec`` of ``[tool.roadcheck]`` in the nearest ``pyproject.toml``. Returns the
    run, so a test can look further. A BLOCK and an ERROR both fail: a
    trajectory that cannot be judged never passes.
    """
    __tracebackhide__ = True
    from roadcheck.conformance import replay

    if spec is None:
        from roadcheck.config import find_config

        config = find_config()
        if config.spec is None:
            raise AssertionError("assert_conforms: no spec given and no spec in [tool.roadcheck] "
                                 "of a pyproject.toml from here upward")
        spec = config.spec
    run = replay(spec, trajectory)
    if run.exit != 0:
        name = str(spec) if isinstance(spec, (str, PathLike)) else "the spec"
        raise AssertionError(failure_message(run, name))
    return run
