"""What a harness run returns: the run's status, exit code and per-phase states."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from roadcheck.findings import Finding, Location, Severity

__all__ = ["EXIT_BY_STATUS", "PhaseState", "RunResult", "RunStatus"]

RunStatus = Literal["completed", "hard-stop", "paused", "refused"]
#: The exit code of each run status (the CI contract).
EXIT_BY_STATUS: dict[str, int] = {"completed": 0, "hard-stop": 1, "refused": 1, "paused": 3}

#: ``passed``: a gate passed and its record is durable. ``failed``: the phase hard-stopped.
#: ``waiting``: paused for another role. ``refused``: the role guard refused it.
#: ``pending``: not reached. ``unchecked``: ran with gates skipped (measurement only).
PhaseStatus = Literal["passed", "failed", "waiting", "refused", "pending", "unchecked"]
#: The phase statuses a run stops at.
_STOPPED = frozenset({"failed", "waiting", "refused"})
#: The severity of a run's finding by its status; a hard-stop or a refusal is an error.
_SEVERITY: dict[str, Severity] = {"completed": "ok", "paused": "warn"}


@dataclass(slots=True)
class PhaseState:
    """One phase's standing at the end of an invocation."""

    name: str
    role: str
    status: PhaseStatus = "pending"
    #: Attempts recorded for this phase across every invocation of the run.
    attempts: int = 0
    #: The run-wide iteration of the phase's latest record (0 when it has none).
    iteration: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape: ``{"name", "status", "attempts", "iteration"}``."""
        return {"name": self.name, "status": self.status, "attempts": self.attempts,
                "iteration": self.iteration}


@dataclass(slots=True)
class RunResult:
    """The outcome of one ``roadcheck run`` invocation."""

    run_id: str
    workflow: str
    status: RunStatus
    phases: list[PhaseState]
    run_dir: str
    #: One line a person reads first: why the run stopped, or that it completed.
    message: str = ""
    #: A reason code when the run did not complete (``gate-failed``, ``role-guard-refused``...).
    reason: str | None = None
    #: The role the run waits for when paused.
    waiting_for: str | None = None
    #: The last gate output of a hard-stopped phase.
    last_output: str = ""
    store: str = "jsonl"
    notes: list[str] = field(default_factory=list)
    #: The whole command that continues a paused or refused run, as a shell line; an
    #: identity the guard requires to differ is the slot ``SOMEONE_OTHER_THAN_<identity>``.
    next_command: str | None = None

    @property
    def exit(self) -> int:
        """0 completed, 1 hard-stop or refused, 3 paused."""
        return EXIT_BY_STATUS[self.status]

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Why the run did not complete, as one finding at the phase it stopped (none if it did)."""
        if self.reason is None:
            return ()
        stopped = next((p.name for p in self.phases if p.status in _STOPPED), None)
        severity: Severity = _SEVERITY.get(self.status, "error")
        return (Finding(self.reason, self.message, Location(phase=stopped), severity),)

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape of ``roadcheck run --format json``."""
        return {"run_id": self.run_id, "workflow": self.workflow, "status": self.status,
                "exit": self.exit, "phases": [p.to_dict() for p in self.phases],
                "reason": self.reason, "message": self.message, "waiting_for": self.waiting_for,
                "next_command": self.next_command,
                "findings": [f.to_dict() for f in self.findings]}
