"""The gated workflow harness: phases advance only on a passing gate with durable evidence.

>>> from assay.harness import Workflow
>>> result = Workflow.load("workflow.yaml").run(role="writer")  # doctest: +SKIP
>>> result.status, result.exit  # doctest: +SKIP
('completed', 0)
"""

from __future__ import annotations

from assay.harness.gates import GateContext, GateOutcome, evaluate
from assay.harness.model import (
    GATE_KINDS,
    Phase,
    WorkflowSpec,
    load_workflow_spec,
    parse_workflow_spec,
)
from assay.harness.result import PhaseState, RunResult
from assay.harness.resume import Revalidator, artifact_unchanged, keep_passed
from assay.harness.roles import default_identity
from assay.harness.workflow import Workflow

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
