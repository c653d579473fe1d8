"""End to end: a pydantic-ai run, traced with the OpenTelemetry SDK, gated by replay.

A triage agent looks up an account and hands it to a reporter agent (the agent
runs inside the triage agent's tool, so its invoke_agent span sits under that
execute_tool span). The reporter calls ``send_report``, which needs approval:
pydantic-ai stops the run with ``DeferredToolRequests`` and the application
records the owner's decision as a span before resuming. Scripted models, no
network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, RunContext, ToolDenied
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from roadcheck import replay
from roadcheck.cli import cli
from roadcheck.events import Trajectory
from roadcheck.ingest import load

SPEC = Path(__file__).resolve().parent.parent / "data" / "frameworks" / "spec.yaml"


def _reporter_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if last.part_kind == "user-prompt":
        return ModelResponse(parts=[ToolCallPart("send_report",
                                                 {"account": "acme", "summary": "3 open"})])
    return ModelResponse(parts=[TextPart("report handled")])


def _triage_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if last.part_kind == "user-prompt":
        return ModelResponse(parts=[ToolCallPart("lookup_account", {"name": "acme"})])
    if last.part_kind == "tool-return" and last.tool_name == "lookup_account":
        return ModelResponse(parts=[ToolCallPart("transfer_to_reporter", {"account": "acme"})])
    return ModelResponse(parts=[TextPart("done")])


def run_agents(tmp_path: Path, approval: str | None, *, requires_approval: bool = True,
               approve_after: bool = False) -> Path:
    """Run triage -> reporter and write the spans as SDK ``to_json`` lines.

    ``approval``: the owner's decision (``approved`` / ``rejected``), or None
    when the application records none.
    """
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    capabilities = [Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))]

    def record_approval(decision: str) -> None:
        with tracer.start_as_current_span("approval", attributes={
                "roadcheck.checkpoint.id": "approve_send_report",
                "roadcheck.checkpoint.confirmed_by": "owner",
                "roadcheck.checkpoint.decision": decision}):
            pass

    reporter: Agent[None, Any] = Agent(FunctionModel(_reporter_model), name="reporter",
                                       capabilities=capabilities,
                                       output_type=[str, DeferredToolRequests])

    @reporter.tool_plain(requires_approval=requires_approval)
    def send_report(account: str, summary: str) -> str:
        return f"sent report on {account}"

    triage: Agent[None, str] = Agent(FunctionModel(_triage_model), name="triage",
                                     capabilities=capabilities)

    @triage.tool_plain
    def lookup_account(name: str) -> dict[str, Any]:
        return {"account": name, "open_tickets": 3}

    @triage.tool
    async def transfer_to_reporter(ctx: RunContext[None], account: str) -> str:
        result = await reporter.run(f"report on {account}", usage=ctx.usage)
        if isinstance(result.output, DeferredToolRequests) and approval is not None:
            record_approval(approval)
            ok = approval == "approved"
            decisions = {c.tool_call_id: True if ok else ToolDenied("the owner said no")
                         for c in result.output.approvals}
            result = await reporter.run(message_history=result.all_messages(), usage=ctx.usage,
                                        deferred_tool_results=DeferredToolResults(
                                            approvals=decisions))
        return str(result.output)

    with tracer.start_as_current_span("weekly-report"):
        triage.run_sync("weekly report for acme")
        if approve_after:
            record_approval("approved")
    out = tmp_path / "spans.jsonl"
    out.write_text("".join(s.to_json(indent=None) + "\n" for s in exporter.get_finished_spans()))
    return out


def trajectory(path: Path) -> Trajectory:
    fmt, entries = load(str(path))
    assert fmt == "otel"
    (traj,) = list(entries)
    assert isinstance(traj, Trajectory)
    return traj


def test_approved_run_passes(tmp_path: Path) -> None:
    """The owner approved before send_report ran: PASS, with the handoff and its payload."""
    path = run_agents(tmp_path, "approved")
    traj = trajectory(path)
    steps = [(e.kind, e.get("action_type") or e.get("checkpoint_id") or e.get("to_agent"))
             for e in traj.events]
    assert steps == [("action", "lookup_account"), ("action", "transfer_to_reporter"),
                     ("handoff", "reporter"), ("checkpoint", "approve_send_report"),
                     ("action", "send_report"), ("final", None)]
    handoff = traj.events[2]
    assert (handoff.get("from_agent"), handoff.get("payload")) == ("triage", {"account": "acme"})
    send = traj.events[4]
    assert send.agent == "reporter" and send.get("result") == "sent report on acme"
    assert traj.events[3].get("confirmed_by") == "owner"
    result = replay(SPEC, [str(path)]).results[0]
    assert result.verdict == "PASS", result.reasons


def test_run_without_approval_blocks(tmp_path: Path) -> None:
    """The same agents with send_report not behind approval: BLOCK checkpoint-skipped."""
    path = run_agents(tmp_path, None, requires_approval=False)
    result = replay(SPEC, [str(path)]).results[0]
    assert result.verdict == "BLOCK"
    assert result.headline == "checkpoint-skipped"


def test_approval_recorded_after_the_send_blocks(tmp_path: Path) -> None:
    """An approval span after the send is too late: BLOCK checkpoint-after-action."""
    path = run_agents(tmp_path, None, requires_approval=False, approve_after=True)
    result = replay(SPEC, [str(path)]).results[0]
    assert result.verdict == "BLOCK"
    assert result.headline == "checkpoint-after-action"


def test_rejected_approval_is_no_checkpoint(tmp_path: Path) -> None:
    """A rejection gives no checkpoint event, and the denied tool never ran."""
    path = run_agents(tmp_path, "rejected")
    traj = trajectory(path)
    assert [e for e in traj.events if e.kind == "checkpoint"] == []
    assert "send_report" not in [e.action_type for e in traj.events]
    assert replay(SPEC, [str(path)]).results[0].verdict == "PASS"


@pytest.mark.parametrize(("approval", "requires", "code"), [
    ("approved", True, 0), (None, False, 1)])
def test_cli_gate(tmp_path: Path, approval: str | None, requires: bool, code: int) -> None:
    """``roadcheck replay SPEC spans.jsonl`` detects the format and exits 0 / 1."""
    path = run_agents(tmp_path, approval, requires_approval=requires)
    out = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
    assert out.exit_code == code, out.output
    assert "otel" in out.output
