"""From the answers to a decision: each remaining step's retry class now, the decision
(``escalate`` when a person must decide, ``reconcile_first`` when an external effect is
unknown, ``continue`` otherwise) and the next action, said in words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from roadcheck.documents.checkpoint import EffectDoc, StepDoc
from roadcheck.findings import Finding
from roadcheck.reasons import Reason
from roadcheck.revalidation.checkpoint import Checkpoint
from roadcheck.revalidation.questions import Answers, EffectSeen
from roadcheck.revalidation.result import Decision, StepClass, finding

__all__ = ["classify", "decide", "next_action"]


#: the class of a step whose effect its owner confirms: done, never run again
DONE = "done"


def _step_class(s: StepDoc, effects: Mapping[str, EffectDoc],
                seen: Mapping[str, EffectSeen]) -> tuple[str, str, str | None]:
    """A step's retry class now (or :data:`DONE`), why, and the idempotency key that
    counts for it."""
    cls, why, key = s.retry_class, "as recorded", s.idempotency_key
    # A step belongs to the effect it names; a step named like an effect is that
    # effect's step unless it names another one.
    link = s.effect if s.effect is not None else (s.step if s.step in effects else None)
    if link is None:
        return cls, why, key
    key = key or effects[link].idempotency_key  # the effect's own key counts for its step
    state = seen[link].state if link in seen else "unknown"
    if state == "unknown":
        # Unknown means reconcile first: it outranks the retry class, so an
        # unsafe step waits for its owner's answer instead of an operator.
        return "reconcile_first", f"effect {link} is unknown", key
    if state == "confirmed":
        return DONE, f"effect {link} is confirmed by its owner; it is not repeated", key
    return cls, why, key


def classify(cp: Checkpoint, answers: Answers) -> tuple[list[StepClass], list[Finding]]:
    """The steps still to run, each with its retry class now, and a finding for every
    step: a step whose effect its owner confirms is done, and left out."""
    effects = cp.doc.external_effects
    out: list[StepClass] = []
    findings: list[Finding] = []
    for s in cp.doc.remaining:
        cls, why, key = _step_class(s, effects, answers.effects.effects)
        if cls == DONE:
            findings.append(finding("classification", Reason.STEP_CLASSIFIED,
                                    f"{s.step}: done ({why})"))
            continue
        out.append(StepClass(s.step, cls))
        if cls == "unsafe_to_retry" and not key:
            findings.append(finding("classification", Reason.STEP_NEEDS_OPERATOR,
                                    f"{s.step}: unsafe_to_retry with no idempotency key; it is "
                                    "never retried automatically", "escalate"))
        else:
            findings.append(finding("classification", Reason.STEP_CLASSIFIED,
                                    f"{s.step}: {cls} ({why})"))
    return out, findings


def decide(findings: Sequence[Finding], remaining: Sequence[StepClass]) -> Decision:
    """Escalate, reconcile first, or continue: the worst the findings allow."""
    severities = {f.severity for f in findings}
    unsafe_left = any(s.retry_class == "unsafe_to_retry" for s in remaining)
    if "escalate" in severities or ("invalid" in severities and unsafe_left):
        return "escalate"
    if "reconcile" in severities:
        return "reconcile_first"
    return "continue"


def next_action(cp: Checkpoint, decision: Decision, findings: Sequence[Finding],
                remaining: Sequence[StepClass], answers: Answers) -> str:
    """What to do next, in words: the decision's first reason, or the next step."""
    if decision == "escalate":
        first = next((f for f in findings if f.severity in ("escalate", "invalid")), None)
        return "escalate to an operator: " + (first.message if first else "see findings")
    if decision == "reconcile_first":
        names = [n for n, s in answers.effects.effects.items() if s.state == "unknown"]
        return (f"reconcile {', '.join(names)} with the owning system before any step "
                "creates anything")
    # The checkpoint's own next action was written before this revalidation: once a
    # step of it is found done, it may name that step, which must not be run again.
    left = {s.step for s in remaining}
    recorded = (cp.doc.next_action
                if all(s.step in left for s in cp.doc.remaining) else None)
    invalid = [f.message.split(":", 1)[0] for f in findings
               if f.severity == "invalid" and f.question == "artifacts"]
    if invalid:
        then = recorded or (f"run {remaining[0].step}" if remaining else "go on")
        return f"rebuild {', '.join(invalid)} with a safe step before anything else, then {then}"
    if recorded:
        return recorded
    if remaining:
        return f"run {remaining[0].step} ({remaining[0].retry_class})"
    return "nothing remains; close the task"
