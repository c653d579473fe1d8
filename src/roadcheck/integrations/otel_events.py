"""Verdicts as OpenTelemetry ``gen_ai.evaluation.result`` events.

A replay verdict, an accept verdict and a guard decision each become one event of
the GenAI semantic conventions' evaluation result, so the dashboards that already
show a run's spans show roadcheck's judgement beside them::

    from roadcheck.integrations.otel_events import emit, replay_evaluations

    run = roadcheck.replay(spec, paths)
    emit(replay_evaluations(run))          # through the global LoggerProvider

Each event carries ``gen_ai.evaluation.name`` (``roadcheck.replay``,
``roadcheck.accept`` or ``roadcheck.guard``), ``gen_ai.evaluation.score.label``
(``pass`` or ``fail``), ``gen_ai.evaluation.score.value`` (1 or 0) and
``gen_ai.evaluation.explanation`` (the headline reason and its message), with
roadcheck's own verdict and reason code beside them (``roadcheck.verdict``,
``roadcheck.reason``). A verdict that could not be judged (ERROR) is ``fail`` with
``error.type`` set to its reason code: never a pass.

The event is parented to the evaluated span when its context is known: a replayed
OTel trace's id (and a span id, when given) or, for a guard decision, the span
active where the decision is emitted (the tool call the framework is running). The
:class:`Evaluation` values are plain data, so they can be tested and logged without
OpenTelemetry; :func:`emit` needs ``opentelemetry-api`` (``pip install
'roadcheck[otel]'``), imported when it is called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EVENT", "Evaluation", "accept_evaluation", "emit", "guard_evaluation",
           "replay_evaluations"]

EVENT = "gen_ai.evaluation.result"


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One verdict as the attributes of a ``gen_ai.evaluation.result`` event."""

    name: str
    passed: bool
    verdict: str
    reason: str
    explanation: str
    #: the evaluated span's context, where known (lower-case hex)
    trace_id: str | None = None
    span_id: str | None = None
    error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def attributes(self) -> dict[str, Any]:
        """The event's attributes, GenAI conventions first, then roadcheck's."""
        out: dict[str, Any] = {
            "gen_ai.evaluation.name": self.name,
            "gen_ai.evaluation.score.label": "pass" if self.passed else "fail",
            "gen_ai.evaluation.score.value": 1.0 if self.passed else 0.0,
            "gen_ai.evaluation.explanation": self.explanation,
            "roadcheck.verdict": self.verdict,
            "roadcheck.reason": self.reason,
        }
        if self.error is not None:
            out["error.type"] = self.error
        out.update(self.extra)
        return out


def _explain(code: str, message: str) -> str:
    return f"{code}: {message}" if message else code


def _hex(value: Any, digits: int) -> str | None:
    if isinstance(value, str) and len(value) == digits:
        try:
            int(value, 16)
        except ValueError:
            return None
        return value.lower()
    return None


def replay_evaluations(run: Any) -> list[Evaluation]:
    """One evaluation per result of a replay (a ``ReplayRun``, or results)."""
    results = getattr(run, "results", run)
    out = []
    for r in results:
        first = r.reasons[0]
        meta = getattr(r, "meta", {}) or {}
        out.append(Evaluation(
            "roadcheck.replay", r.verdict == "PASS", r.verdict, str(first.code),
            _explain(str(first.code), first.message),
            trace_id=_hex(meta.get("trace_id"), 32), span_id=_hex(meta.get("span_id"), 16),
            error=str(first.code) if r.verdict == "ERROR" else None,
            extra={"roadcheck.trajectory.id": r.id}))
    return out


def accept_evaluation(result: Any, *, label: str | None = None) -> Evaluation:
    """The evaluation of an accept ``GateResult``: its first failed check, or that all held."""
    failed = next((x for x in result.reasons if not x.ok), None)
    shown = failed or (result.reasons[-1] if result.reasons else None)
    check = shown.check if shown is not None else "accept"
    message = shown.message if shown is not None else ""
    extra = {"roadcheck.result": label} if label else {}
    return Evaluation("roadcheck.accept", failed is None, result.verdict, str(check),
                      _explain(str(check), message), extra=extra)


def guard_evaluation(decision: Any) -> Evaluation:
    """The evaluation of a guard :class:`~roadcheck.guard.Decision` (``allow`` passes;
    ``ask`` and ``deny`` fail: the call may not run as it stands)."""
    code = str(decision.reasons[0].code) if decision.reasons else "allowed"
    extra: dict[str, Any] = {}
    if decision.tool is not None:
        extra["gen_ai.tool.name"] = decision.tool
    if decision.call_id is not None:
        extra["gen_ai.tool.call.id"] = decision.call_id
    return Evaluation("roadcheck.guard", decision.verdict == "allow", decision.verdict, code,
                      decision.message, extra=extra)


def _context(evaluation: Evaluation) -> Any:
    """The evaluated span as a parent context, or None for the current context."""
    if evaluation.trace_id is None or evaluation.span_id is None:
        return None
    from opentelemetry import trace

    parent = trace.SpanContext(int(evaluation.trace_id, 16), int(evaluation.span_id, 16),
                               is_remote=True, trace_flags=trace.TraceFlags(1))
    return trace.set_span_in_context(trace.NonRecordingSpan(parent))


def emit(evaluations: Iterable[Evaluation], *, logger: Any = None) -> int:
    """Emit each evaluation as a ``gen_ai.evaluation.result`` event through ``logger``
    (default: the global LoggerProvider's ``roadcheck`` logger); the count emitted."""
    from roadcheck.integrations import require

    _logs: Any = require("opentelemetry._logs", "otel")
    if logger is None:
        from roadcheck._version import __version__

        logger = _logs.get_logger("roadcheck", __version__)
    n = 0
    for ev in evaluations:
        attrs = ev.attributes()
        if ev.trace_id is not None and ev.span_id is None:
            attrs["roadcheck.trace_id"] = ev.trace_id  # no span to parent it to
        logger.emit(event_name=EVENT, attributes=attrs, context=_context(ev),
                    severity_number=_logs.SeverityNumber.INFO if ev.passed
                    else _logs.SeverityNumber.WARN)
        n += 1
    return n
