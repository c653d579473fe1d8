"""Record the OpenInference and OpenLLMetry span files under this folder.

The spans are made by the OpenTelemetry SDK (in-memory exporter, fixed clock
and ids so a rerun writes the same bytes) with each convention's own attribute
constants, and written as OTLP/JSON. Needs ``opentelemetry-sdk``,
``openinference-semantic-conventions`` and ``opentelemetry-semantic-conventions-ai``:

    python tests/data/frameworks/record_span_conventions.py
"""

# ruff: noqa: SIM117  (one `with` per span keeps the nesting of the trace visible)

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues as OIKind
from openinference.semconv.trace import SpanAttributes as OI
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.semconv_ai import SpanAttributes as TL
from opentelemetry.semconv_ai import TraceloopSpanKindValues as TLKind
from opentelemetry.trace import Status, StatusCode

HERE = Path(__file__).resolve().parent
T0 = 1_795_000_000_000_000_000  # nanoseconds: a fixed clock


class _Ids(IdGenerator):
    def __init__(self) -> None:
        self.n = 0

    def generate_span_id(self) -> int:
        self.n += 1
        return 0x1000 + self.n

    def generate_trace_id(self) -> int:
        return 0x5B8EFFF798038103D269B633813FC60C


class _Recorder:
    """A tracer whose spans start and end on a fixed clock, one millisecond apart."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(id_generator=_Ids())
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("roadcheck-recorder")
        self.clock = T0

    def tick(self) -> int:
        self.clock += 1_000_000
        return self.clock

    @contextmanager
    def span(self, name: str, attrs: dict[str, Any], error: str | None = None) -> Iterator[Any]:
        span = self.tracer.start_span(name, attributes=attrs, start_time=self.tick())
        from opentelemetry import trace

        with trace.use_span(span, end_on_exit=False):
            yield span
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=self.tick())


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def _attrs(attrs: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in (attrs or {}).items()]


def otlp_json(spans: tuple[ReadableSpan, ...]) -> dict[str, Any]:
    """The OTLP/JSON encoding of spans (hex ids, nanosecond strings)."""
    out = []
    for s in spans:
        ctx = s.get_span_context()
        assert ctx is not None
        item: dict[str, Any] = {
            "traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}",
            "name": s.name, "kind": 1, "startTimeUnixNano": str(s.start_time),
            "endTimeUnixNano": str(s.end_time), "attributes": _attrs(s.attributes),
            "events": [{"timeUnixNano": str(e.timestamp), "name": e.name,
                        "attributes": _attrs(e.attributes)} for e in s.events],
            "status": ({"code": 2, "message": s.status.description or ""}
                       if s.status.status_code == StatusCode.ERROR else {})}
        if s.parent is not None:
            item["parentSpanId"] = f"{s.parent.span_id:016x}"
        out.append(item)
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "reports"})},
                               "scopeSpans": [{"scope": {"name": "roadcheck-recorder"},
                                               "spans": out}]}]}


APPROVAL = {"roadcheck.checkpoint.id": "approve_send_report",
            "roadcheck.checkpoint.confirmed_by": "owner",
            "roadcheck.checkpoint.decision": "approved"}


def openinference(approved: bool, send_error: str | None) -> dict[str, Any]:
    r = _Recorder()
    kind, agent = OI.OPENINFERENCE_SPAN_KIND, OI.AGENT_NAME
    with r.span("triage", {kind: OIKind.AGENT.value, agent: "triage"}):
        with r.span("lookup_account", {kind: OIKind.TOOL.value, OI.TOOL_NAME: "lookup_account",
                                       OI.INPUT_VALUE: json.dumps({"name": "acme"}),
                                       OI.OUTPUT_VALUE: json.dumps({"account": "acme-1"})}):
            pass
        with r.span("llm", {kind: OIKind.LLM.value, OI.LLM_MODEL_NAME: "gpt-4o"}):
            pass
        with r.span("transfer_to_reporter", {kind: OIKind.TOOL.value,
                                             OI.TOOL_NAME: "transfer_to_reporter",
                                             OI.INPUT_VALUE: json.dumps({"account": "acme-1"})}):
            with r.span("reporter", {kind: OIKind.AGENT.value, agent: "reporter"}) as rep:
                if approved:
                    rep.add_event("approval", APPROVAL, timestamp=r.tick())
                with r.span("send_report", {kind: OIKind.TOOL.value, OI.TOOL_NAME: "send_report",
                                            OI.INPUT_VALUE: json.dumps({"to": "board"}),
                                            OI.OUTPUT_VALUE: "sent"}, error=send_error):
                    pass
    return otlp_json(r.exporter.get_finished_spans())


def openllmetry(approved: bool, send_error: str | None) -> dict[str, Any]:
    r = _Recorder()
    kind, name = TL.TRACELOOP_SPAN_KIND, TL.TRACELOOP_ENTITY_NAME
    inp, outp = TL.TRACELOOP_ENTITY_INPUT, TL.TRACELOOP_ENTITY_OUTPUT

    def call(**kwargs: Any) -> str:
        return json.dumps({"args": [], "kwargs": kwargs})

    with r.span("reports.workflow", {kind: TLKind.WORKFLOW.value, name: "reports"}):
        with r.span("triage.agent", {kind: TLKind.AGENT.value, name: "triage"}):
            with r.span("lookup_account.tool", {kind: TLKind.TOOL.value, name: "lookup_account",
                                                inp: call(name="acme"),
                                                outp: json.dumps({"account": "acme-1"})}):
                pass
            with r.span("transfer_to_reporter.tool", {kind: TLKind.TOOL.value,
                                                      name: "transfer_to_reporter",
                                                      inp: call(account="acme-1")}):
                with r.span("reporter.agent", {kind: TLKind.AGENT.value,
                                               name: "reporter"}) as rep:
                    if approved:
                        rep.add_event("approval", APPROVAL, timestamp=r.tick())
                    with r.span("send_report.tool", {kind: TLKind.TOOL.value,
                                                     name: "send_report", inp: call(to="board"),
                                                     outp: json.dumps("sent")}, error=send_error):
                        pass
    return otlp_json(r.exporter.get_finished_spans())


def main() -> None:
    for folder, make in (("openinference", openinference), ("openllmetry", openllmetry)):
        for stem, approved, error in (("approved", True, None), ("missing", False, None),
                                      ("errored", True, "smtp refused")):
            doc = make(approved, error)
            path = HERE / folder / f"{stem}.json"
            path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            print(path.relative_to(HERE))


if __name__ == "__main__":
    main()
