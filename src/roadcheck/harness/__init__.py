"""The gated workflow harness: phases advance only on a passing gate with durable evidence.

>>> from roadcheck.harness import Workflow
>>> result = Workflow.load("workflow.yaml").run(role="writer")  # doctest: +SKIP
>>> result.status, result.exit  # doctest: +SKIP
('completed', 0)
"""

from __future__ import annotations

from roadcheck.harness.gates import GateContext, GateOutcome, evaluate
from roadcheck.harness.model import (
    GATE_KINDS,
    Phase,
    WorkflowSpec,
    load_workflow_spec,
    parse_workflow_spec,
)
from roadcheck.harness.result import PhaseState, RunResult
from roadcheck.harness.resume import Revalidator, artifact_unchanged, keep_passed
from roadcheck.harness.roles import default_identity
from roadcheck.harness.workflow import Workflow

__all__ = [
    "GATE_KINDS",
    "GateContext",
    "GateOutcome",
    "Phase",
    "PhaseState",
    "Revalidator",
    "RunResult",
    "Workflow",
    "WorkflowSpec",
    "artifact_unchanged",
    "default_identity",
    "evaluate",
    "keep_passed",
    "load_workflow_spec",
    "parse_workflow_spec",
]
