"""Resume: which phases already passed, and the seam where they are re-checked.

Before the engine skips a phase that passed in an earlier invocation it calls a
:data:`Revalidator` with the phase, its passing record and the run directory.
The default keeps every pass. A resume-time revalidation plugs in here: for
example comparing the artifact's sha256 on disk with the one in the record.
Returning a message withdraws the pass and the phase runs again; the message is
kept in the run's notes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.harness.model import Phase

__all__ = ["Revalidator", "keep_passed", "passed_records"]

#: ``(phase, passing record, run directory) -> None`` to skip, or a reason to re-run.
Revalidator = Callable[[Phase, Mapping[str, Any], Path], "str | None"]


def keep_passed(phase: Phase, record: Mapping[str, Any], run_dir: Path) -> str | None:
    """The default revalidator: a recorded pass stands."""
    return None


def passed_records(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The latest passing record of each phase."""
    out: dict[str, Mapping[str, Any]] = {}
    for rec in records:
        if rec.get("verdict") == "pass":
            out[str(rec.get("phase"))] = rec
    return out
