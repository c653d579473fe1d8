"""The guard inside pydantic-ai: a real agent run, a scripted model, no network.

``send_report`` sits in a :class:`GuardToolset`: a call the guard would ask
about ends the run as a deferred approval before the send runs; resumed with
the call approved by a person the rule accepts, the approval is recorded bound
to that call and the send runs once.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from roadcheck.events import args_digest
from roadcheck.guard import Guard, GuardDenied
from roadcheck.integrations.guard_pydantic_ai import GuardToolset, approve

SPEC = {"mandatory_checkpoints": [
    {"checkpoint_id": "send_ok", "must_precede": "send_report", "scope": "each",
     "consume": True, "confirmed_by": ["owner", "cfo"], "binds": {"tool": True, "args": True}}]}


def _send(to: str, call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("send_report", {"to": to}, tool_call_id=call_id)])


class Run:
    """One agent whose tools sit behind the guard; the model says what ``steps`` say."""

    def __init__(self, steps: list[ModelResponse], *, approver: str | None = None) -> None:
        self.sent: list[str] = []
        self.steps = list(steps)
        self.guard = Guard(SPEC, approver=approver)

        def send_report(to: str) -> str:
            self.sent.append(to)
            return f"sent to {to}"

        def lookup(name: str) -> str:
            return f"{name}: 3 open tickets"

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            return self.steps.pop(0) if self.steps else ModelResponse(parts=[TextPart("done")])

        tools = GuardToolset(FunctionToolset([lookup, send_report]), guard=self.guard)
        self.agent: Agent[None, Any] = Agent(FunctionModel(model), toolsets=[tools],
                                             output_type=[str, DeferredToolRequests])

    def start(self) -> Any:
        return self.agent.run_sync("weekly report")

    def resume(self, result: Any, results: Any) -> Any:
        return self.agent.run_sync(message_history=result.all_messages(),
                                   deferred_tool_results=results)


def test_send_is_deferred_before_it_runs_and_runs_after_a_bound_approval() -> None:
    """ask -> ApprovalRequired, nothing sent; approve(by=cfo) -> recorded, bound, sent once."""
    lookup = ModelResponse(parts=[ToolCallPart("lookup", {"name": "acme"}, tool_call_id="c1")])
    run = Run([lookup, _send("cfo", "c2")])
    result = run.start()
    assert run.sent == []
    requests = result.output
    assert isinstance(requests, DeferredToolRequests)
    assert [c.tool_call_id for c in requests.approvals] == ["c2"]
    assert requests.metadata["c2"]["roadcheck_guard"]["verdict"] == "ask"
    result = run.resume(result, approve(requests, by="cfo"))
    assert run.sent == ["cfo"] and result.output == "done"
    kinds = [(r["event"], r.get("action_type") or r.get("checkpoint_id"))
             for r in run.guard.records]
    assert kinds == [("action", "lookup"), ("checkpoint", "send_ok"), ("action", "send_report")]
    approval = run.guard.records[1]
    assert (approval["confirmed_by"], approval["tool"], approval["call_id"]) == \
        ("cfo", "send_report", "c2")
    assert approval["args_sha256"] == args_digest({"to": "cfo"})


def test_approval_is_bound_to_the_call_and_spent() -> None:
    """After the approved send, a send to everyone is deferred again; only one was sent."""
    run = Run([_send("cfo", "c1"), _send("everyone", "c2")])
    result = run.start()
    result = run.resume(result, approve(result.output, by="owner"))
    assert run.sent == ["cfo"]
    assert isinstance(result.output, DeferredToolRequests)
    assert [c.tool_call_id for c in result.output.approvals] == ["c2"]


def test_approval_the_rule_does_not_accept_stops_the_run() -> None:
    """Approved by user, where the rule wants owner or cfo: GuardDenied, nothing sent."""
    run = Run([_send("cfo", "c1")])
    result = run.start()
    with pytest.raises(GuardDenied) as stopped:
        run.resume(result, approve(result.output, by="user"))
    assert run.sent == []
    assert stopped.value.decision.verdict == "ask"
    assert 'confirmed by "user"' in stopped.value.decision.reasons[0].message


def test_approval_naming_nobody_stops_the_run() -> None:
    """approvals={id: True} with no approved_by and no guard approver: not recorded, not sent."""
    run = Run([_send("cfo", "c1")])
    result = run.start()
    with pytest.raises(GuardDenied):
        run.resume(result, DeferredToolResults(approvals={"c1": True}))
    assert run.sent == [] and [r["event"] for r in run.guard.records] == []


def test_guard_approver_names_who_approved() -> None:
    """Without approved_by in the metadata, the guard's approver is who said yes."""
    run = Run([_send("cfo", "c1")], approver="cfo")
    result = run.start()
    run.resume(result, DeferredToolResults(approvals={"c1": True}))
    assert run.sent == ["cfo"]
    assert run.guard.records[0]["confirmed_by"] == "cfo"


def test_deny_stops_the_call_without_asking() -> None:
    """An approver the rule does not accept: deny at once, no deferral, nothing sent."""
    run = Run([_send("cfo", "c1")], approver="user")
    with pytest.raises(GuardDenied) as stopped:
        run.start()
    assert stopped.value.decision.verdict == "deny" and run.sent == []


def test_person_says_no() -> None:
    """ToolDenied: the model is told, no approval is recorded, nothing is sent."""
    run = Run([_send("cfo", "c1")])
    result = run.start()
    result = run.resume(result, DeferredToolResults(approvals={"c1": ToolDenied("no")}))
    assert run.sent == [] and result.output == "done"
    assert run.guard.records == []


def test_two_identical_calls_need_two_approvals() -> None:
    """Two sends to cfo in one response: both deferred; both approved, both sent."""
    both = ModelResponse(parts=[ToolCallPart("send_report", {"to": "cfo"}, tool_call_id=i)
                                for i in ("c1", "c2")])
    run = Run([both])
    result = run.start()
    assert [c.tool_call_id for c in result.output.approvals] == ["c1", "c2"]
    run.resume(result, approve(result.output, by="cfo"))
    assert run.sent == ["cfo", "cfo"]
    assert [r["event"] for r in run.guard.records].count("checkpoint") == 2
