"""Resume-time revalidation: rebuild a current picture from evidence before acting.

The questions (:mod:`.questions`) read the world and answer, writing nothing; the
decision (:mod:`.decide`) folds their findings and classifies what is left; only
``write_next`` writes, and only the next checkpoint (:mod:`.next_checkpoint`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from os import PathLike
from pathlib import Path

from roadcheck.reasons import Reason
from roadcheck.revalidation.checkpoint import Checkpoint, load_checkpoint, parse_ts
from roadcheck.revalidation.decide import classify, decide, next_action
from roadcheck.revalidation.next_checkpoint import next_document, write
from roadcheck.revalidation.questions import ask
from roadcheck.revalidation.result import Revalidation, finding

__all__ = ["revalidate"]


def revalidate(checkpoint: str | PathLike[str] | Checkpoint, *,
               now: datetime | str | None = None,
               write_next: str | PathLike[str] | None = None) -> Revalidation:
    """Revalidate a checkpoint against the world as it is now.

    Reads the task, artifacts, effect owners, capabilities, budgets and cadence;
    writes nothing except, with ``write_next``, the next checkpoint. A bad
    document raises :class:`roadcheck.SpecError`.
    """
    cp = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
    at = datetime.now(UTC).replace(microsecond=0) if now is None else parse_ts(now)
    answers = ask(cp, at)
    findings = answers.findings
    remaining, classified = classify(cp, answers)
    findings.extend(classified)
    decision = decide(findings, remaining)
    action = next_action(cp, decision, findings, remaining, answers)
    rv = Revalidation(cp.source, at, decision, findings, remaining, action,
                      checkpoint_sha256=cp.sha256)
    if write_next is not None:
        target = Path(write_next)
        rv.next_checkpoint = str(write_next)
        rv.findings.append(finding("next", Reason.CHECKPOINT_WRITTEN,
                                   f"next checkpoint written to {target.name}: {action}"))
        rv.document = next_document(cp, at, target, answers, rv)
        write(rv.document, target)
    return rv
