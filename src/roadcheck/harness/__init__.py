"""The gated workflow harness: phases advance only on a passing gate with durable evidence.

>>> from roadcheck.harness import Workflow
>>> wf = Workflow.load(examples / "doc_pipeline" / "workflow.yaml")
>>> doc = examples / "doc_pipeline" / "corpus" / "01_clean_release_notes.txt"
>>> result = wf.run(role="writer", identity="alice", runs_dir=tmp, params={"doc": str(doc)})
>>> result.status, result.exit, result.waiting_for
('paused', 3, 'reviewer')

(``examples`` is the repository's ``examples/`` directory, ``tmp`` an empty one.)
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
