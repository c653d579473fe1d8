"""Trajectory conformance: did the recorded run take the mandatory road?

>>> from roadcheck.conformance import load_spec, replay
>>> run = replay(load_spec("examples/spec.json"), ["examples/fixture_conforms.jsonl"])
>>> run.results[0].verdict
'PASS'
"""

from __future__ import annotations

from roadcheck.conformance.api import replay
from roadcheck.conformance.batch import ReplaySink, TrajectoryItem, iter_replay, replay_files
from roadcheck.conformance.engine import CompiledSpec, Replayer
from roadcheck.conformance.judge import replay_events, replay_trajectory
from roadcheck.conformance.result import (
    Finding,
    ReplayInterrupted,
    ReplayResult,
    ReplayRun,
    TrajectoryStats,
)
from roadcheck.conformance.spec import (
    DeriveRule,
    HandoffContract,
    MandatoryCheckpoint,
    Spec,
    load_spec,
    parse_spec,
)

__all__ = [
    "CompiledSpec",
    "DeriveRule",
    "Finding",
    "HandoffContract",
    "MandatoryCheckpoint",
    "ReplayInterrupted",
    "ReplayResult",
    "ReplayRun",
    "ReplaySink",
    "Replayer",
    "Spec",
    "TrajectoryItem",
    "TrajectoryStats",
    "iter_replay",
    "load_spec",
    "parse_spec",
    "replay",
    "replay_events",
    "replay_files",
    "replay_trajectory",
]
