"""Verdicts as OpenTelemetry ``gen_ai.evaluation.result`` events, read back from the SDK."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

import roadcheck
from roadcheck.guard import Guard
from roadcheck.integrations.otel_events import (
    EVENT,
    accept_evaluation,
    emit,
    guard_evaluation,
    replay_evaluations,
)

from ..conftest import EXAMPLES

SPEC = {"mandatory_checkpoints": [{"checkpoint_id": "confirm", "must_precede": "refund"}]}
RUN = [{"seq": 1, "event": "action", "action_type": "refund", "irreversible": True},
       {"seq": 2, "event": "final", "task_success": True}]


@pytest.fixture
def logs() -> Iterator[tuple[Any, InMemoryLogRecordExporter]]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider.get_logger("test"), exporter
    provider.shutdown()


def _records(exporter: InMemoryLogRecordExporter) -> list[Any]:
    return [r.log_record for r in exporter.get_finished_logs()]


class TestReplay:
    def test_a_blocked_run_is_a_failed_evaluation(self, logs: Any) -> None:
        """BLOCK is label fail, score 0, explained by its headline reason."""
        logger, exporter = logs
        assert emit(replay_evaluations(roadcheck.replay(SPEC, RUN)), logger=logger) == 1
        (rec,) = _records(exporter)
        assert rec.event_name == EVENT
        attrs = dict(rec.attributes)
        assert attrs["gen_ai.evaluation.name"] == "roadcheck.replay"
        assert attrs["gen_ai.evaluation.score.label"] == "fail"
        assert attrs["gen_ai.evaluation.score.value"] == 0.0
        assert attrs["gen_ai.evaluation.explanation"].startswith("checkpoint-skipped: ")
        assert attrs["roadcheck.verdict"] == "BLOCK" and "error.type" not in attrs

    def test_pass_and_error(self, logs: Any) -> None:
        """PASS is label pass; ERROR is fail with error.type (never a pass)."""
        logger, exporter = logs
        ok = [{"seq": 1, "event": "checkpoint", "checkpoint_id": "confirm"}, *[
            {**e, "seq": e["seq"] + 1} for e in RUN]]
        run = roadcheck.replay(SPEC, [str(EXAMPLES / "fixture_bad_input.jsonl")])
        emit(replay_evaluations(roadcheck.replay(SPEC, ok)) + replay_evaluations(run),
             logger=logger)
        passed, error = (dict(r.attributes) for r in _records(exporter))
        assert passed["gen_ai.evaluation.score.label"] == "pass"
        assert error["gen_ai.evaluation.score.label"] == "fail"
        assert error["roadcheck.verdict"] == "ERROR" and error["error.type"] == "bad-input"

    def test_a_replayed_trace_is_the_events_trace(self, logs: Any) -> None:
        """A run read from an OTel export carries its trace id; given a span id too, the
        event is parented to that span."""
        logger, exporter = logs
        spec = roadcheck.load_spec(EXAMPLES / "frameworks" / "spec.yaml")
        run = roadcheck.replay(spec, [str(EXAMPLES / "frameworks" / "otel" / "spans.jsonl")])
        (ev,) = replay_evaluations(run)
        assert ev.trace_id == run.results[0].meta["trace_id"]
        import dataclasses

        emit([dataclasses.replace(ev, span_id="00f067aa0ba902b7"), ev], logger=logger)
        parented, unparented = _records(exporter)
        assert format(parented.trace_id, "032x") == ev.trace_id
        assert format(parented.span_id, "016x") == "00f067aa0ba902b7"
        assert dict(unparented.attributes)["roadcheck.trace_id"] == ev.trace_id


class TestAcceptAndGuard:
    def test_accept(self) -> None:
        """ACCEPTED passes; the explanation is the last check when all held."""
        from roadcheck.acceptance import accept_files

        acc = accept_files(str(EXAMPLES / "accept" / "contract.yaml"),
                           str(EXAMPLES / "accept" / "result.json"),
                           str(EXAMPLES / "accept" / "trace.jsonl"))
        ev = accept_evaluation(acc.result, label=acc.label)
        assert ev.passed and ev.attributes()["roadcheck.verdict"] == "ACCEPTED"
        failed = accept_files(str(EXAMPLES / "accept" / "contract.yaml"),
                              str(EXAMPLES / "accept" / "result.json"),
                              str(EXAMPLES / "accept" / "trace_failed_send.json"))
        ev = accept_evaluation(failed.result)
        assert not ev.passed and ev.attributes()["gen_ai.evaluation.score.label"] == "fail"

    def test_a_guard_decision_is_parented_to_the_active_span(self, logs: Any) -> None:
        """An ask is a failed evaluation named after the tool, in the span of the call."""
        logger, exporter = logs
        guard = Guard(SPEC)
        decision = guard.check({"event": "action", "action_type": "refund",
                                "call_id": "c1"})
        tracer = TracerProvider().get_tracer("t")
        with tracer.start_as_current_span("tool refund") as span:
            emit([guard_evaluation(decision)], logger=logger)
            want = span.get_span_context()
        (rec,) = _records(exporter)
        attrs = dict(rec.attributes)
        assert attrs["roadcheck.verdict"] == decision.verdict != "allow"
        assert attrs["gen_ai.evaluation.score.label"] == "fail"
        assert attrs["gen_ai.tool.name"] == "refund" and attrs["gen_ai.tool.call.id"] == "c1"
        assert (rec.trace_id, rec.span_id) == (want.trace_id, want.span_id)
        assert trace.get_current_span() is not span
