"""Record a pydantic-ai run that stops for approval and is resumed, with no enclosing span.

The run, the application's approval span and the resumed run are three
traces. pydantic-ai puts the run's ``gen_ai.conversation.id`` on its agent
span and the resumed run inherits it from the message history; the
application puts the same id on its approval span. Scripted model
(``FunctionModel``), OpenTelemetry SDK, no network:

    python tests/data/frameworks/pydantic_ai/record_conversation.py

writes ``approved.jsonl`` (the owner approved) and ``rejected.jsonl`` (the
owner said no, the send never ran) beside this script, one SDK span per line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

HERE = Path(__file__).resolve().parent


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if last.part_kind == "user-prompt":
        return ModelResponse(parts=[ToolCallPart("send_report",
                                                 {"account": "acme", "summary": "3 open"})])
    return ModelResponse(parts=[TextPart("report handled")])


def record(decision: str) -> str:
    """Run, stop for approval, record the decision, resume; the spans as SDK JSON lines."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    agent: Agent[None, Any] = Agent(
        FunctionModel(_model), name="reporter", output_type=[str, DeferredToolRequests],
        capabilities=[Instrumentation(settings=InstrumentationSettings(
            tracer_provider=provider))])

    @agent.tool_plain(requires_approval=True)
    def send_report(account: str, summary: str) -> str:
        return f"sent report on {account}"

    first = agent.run_sync("report on acme")
    assert isinstance(first.output, DeferredToolRequests)
    conversation = first.all_messages()[-1].conversation_id
    with tracer.start_as_current_span("approval", attributes={
            "gen_ai.conversation.id": str(conversation),
            "roadcheck.checkpoint.id": "approve_send_report",
            "roadcheck.checkpoint.confirmed_by": "owner",
            "roadcheck.checkpoint.decision": decision}):
        pass
    ok = decision == "approved"
    agent.run_sync(message_history=first.all_messages(), deferred_tool_results=DeferredToolResults(
        approvals={c.tool_call_id: True if ok else ToolDenied("the owner said no")
                   for c in first.output.approvals}))
    return "".join(s.to_json(indent=None) + "\n" for s in exporter.get_finished_spans())


if __name__ == "__main__":
    for name in ("approved", "rejected"):
        (HERE / f"{name}.jsonl").write_text(record(name), encoding="utf-8")
