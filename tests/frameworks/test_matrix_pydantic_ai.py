"""The scenario matrix (tests/frameworks/matrix.py) on pydantic-ai runs traced as OTel spans.

A triage agent looks up an account and hands over to a reporter agent through a
tool; the reporter calls ``send_report``. With ``requires_approval`` the run
stops with ``DeferredToolRequests``; the application records the owner's
decision as a span and resumes. Every trace is recorded at test time from the
real library with scripted models.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import Tracer, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, RunContext, ToolDenied
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from . import matrix

FRAMEWORK = "pydantic-ai"


@dataclass(frozen=True)
class Run:
    gated: bool = True
    recorded: str | None = "approved"  # the decision recorded as a span, None: none
    given: bool = True  # the decision actually given to pydantic-ai
    approve_after: bool = False
    sends: int = 1
    handoff_field: str = "account"
    send_raises: bool = False


def one_run(tracer: Tracer, provider: TracerProvider, run: Run) -> None:
    capabilities = [Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))]

    def record_decision(decision: str) -> None:
        with tracer.start_as_current_span("approval", attributes={
                "roadcheck.checkpoint.id": "approve_send_report",
                "roadcheck.checkpoint.confirmed_by": "owner",
                "roadcheck.checkpoint.decision": decision}):
            pass

    def reporter_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if messages[-1].parts[-1].part_kind == "user-prompt":
            return ModelResponse(parts=[
                ToolCallPart("send_report", {"account": "acme", "summary": f"part {i}"},
                             tool_call_id=f"send-{i}") for i in range(run.sends)])
        return ModelResponse(parts=[TextPart("report handled")])

    def triage_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if last.part_kind == "user-prompt":
            return ModelResponse(parts=[ToolCallPart("lookup_account", {"name": "acme"})])
        if last.part_kind == "tool-return" and last.tool_name == "lookup_account":
            return ModelResponse(parts=[ToolCallPart("transfer_to_reporter",
                                                     {run.handoff_field: "acme"})])
        return ModelResponse(parts=[TextPart("done")])

    reporter: Agent[None, Any] = Agent(FunctionModel(reporter_model), name="reporter",
                                       capabilities=capabilities,
                                       output_type=[str, DeferredToolRequests])

    @reporter.tool_plain(requires_approval=run.gated)
    def send_report(account: str, summary: str) -> str:
        if run.send_raises:
            raise ConnectionError("mail server unreachable")
        return f"sent report on {account}"

    triage: Agent[None, str] = Agent(FunctionModel(triage_model), name="triage",
                                     capabilities=capabilities)

    @triage.tool_plain
    def lookup_account(name: str) -> dict[str, Any]:
        return {"account": name, "open_tickets": 3}

    async def hand_over(ctx: RunContext[None], account: str) -> str:
        result = await reporter.run(f"report on {account}", usage=ctx.usage)
        if isinstance(result.output, DeferredToolRequests):
            if run.recorded is not None:
                record_decision(run.recorded)
            decisions = {c.tool_call_id: True if run.given else ToolDenied("the owner said no")
                         for c in result.output.approvals}
            result = await reporter.run(message_history=result.all_messages(), usage=ctx.usage,
                                        deferred_tool_results=DeferredToolResults(
                                            approvals=decisions))
        return str(result.output)

    if run.handoff_field == "account":
        @triage.tool
        async def transfer_to_reporter(ctx: RunContext[None], account: str) -> str:
            return await hand_over(ctx, account)
    else:
        @triage.tool(name="transfer_to_reporter")
        async def transfer_without_account(ctx: RunContext[None], customer: str) -> str:
            return await hand_over(ctx, customer)

    with tracer.start_as_current_span("weekly-report"):
        try:
            triage.run_sync("weekly report for acme")
        except ConnectionError:
            assert run.send_raises  # the failed send ends the run; its span records the error
        if run.approve_after:
            record_decision("approved")


SCENARIO_RUNS: dict[str, tuple[Run, ...]] = {
    "approved": (Run(),),
    "missing": (Run(gated=False, recorded=None),),
    "rejected-but-sent": (Run(recorded="rejected", given=True),),
    "rejected-not-sent": (Run(recorded="rejected", given=False),),
    "after-action": (Run(gated=False, recorded=None, approve_after=True),),
    "two-sends-one-approval": (Run(sends=2),),
    "handoff": (Run(handoff_field="customer"),),
    "errored-tool": (Run(gated=False, recorded=None, send_raises=True),),
    "two-runs": (Run(), Run(gated=False, recorded=None)),
}


def record(scenario: str, tmp_path: Path) -> Path:
    """Run the scenario's runs in one process and write their spans to one file."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    for run in SCENARIO_RUNS[scenario]:
        one_run(tracer, provider, run)
    out = tmp_path / "spans.jsonl"
    out.write_text("".join(s.to_json(indent=None) + "\n" for s in exporter.get_finished_spans()))
    return out


def test_every_expressible_scenario_has_a_recording() -> None:
    assert list(SCENARIO_RUNS) == matrix.expressible(FRAMEWORK)


@pytest.mark.parametrize("scenario", matrix.params(FRAMEWORK))
def test_matrix(scenario: str, tmp_path: Path) -> None:
    path = record(scenario, tmp_path)
    matrix.check(scenario, path, "otel")
