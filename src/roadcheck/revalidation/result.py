"""What revalidating one checkpoint found: the findings, the steps' classes, the decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from roadcheck.errors import EXIT_BLOCK, EXIT_PASS
from roadcheck.findings import Finding, Location, Severity

__all__ = ["QUESTIONS", "Decision", "Revalidation", "StepClass", "finding"]

Decision = Literal["continue", "reconcile_first", "escalate"]
#: The questions, in the order they are asked and reported.
QUESTIONS = ("task", "artifacts", "effects", "allowed", "recency", "classification", "next")


def finding(question: str, code: str, message: str, severity: Severity = "ok") -> Finding:
    """One observation under one question, with its reason code (``ok`` unless graded)."""
    return Finding(code, message, Location(question=question), severity)


@dataclass(frozen=True, slots=True)
class StepClass:
    """A remaining step and the retry class it has now."""

    step: str
    retry_class: str

    def to_dict(self) -> dict[str, str]:
        """The public JSON shape of a classified step."""
        return {"step": self.step, "retry_class": self.retry_class}


@dataclass(slots=True)
class Revalidation:
    """The outcome of revalidating one checkpoint."""

    source: str
    now: datetime
    decision: Decision
    findings: list[Finding]
    remaining: list[StepClass]
    next_action: str
    next_checkpoint: str | None = None
    document: dict[str, Any] = field(default_factory=dict, repr=False)
    checkpoint_sha256: str | None = None

    @property
    def exit(self) -> int:
        """0 to continue, 1 to reconcile first or escalate."""
        return EXIT_PASS if self.decision == "continue" else EXIT_BLOCK

    def to_dict(self) -> dict[str, Any]:
        """The public JSON document of ``roadcheck revalidate --format json``."""
        return {"decision": self.decision, "exit": self.exit,
                "findings": [f.to_dict() for f in self.findings],
                "remaining": [s.to_dict() for s in self.remaining],
                "next_action": self.next_action,
                "next_checkpoint": self.next_checkpoint,
                "checkpoint_sha256": self.checkpoint_sha256}
