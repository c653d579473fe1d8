"""The guard inside the OpenAI Agents SDK: a real run, scripted models, no network.

A reporter agent calls ``send_report``; the guard's ``needs_approval`` stops the
run before the send, the approval is recorded bound to that call, and the run
resumes; an approval the guard was not told of, one for other arguments, or one
by someone the rule does not accept leaves the send unrun.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from agents import (
    Agent,
    Runner,
    ToolInputGuardrailTripwireTriggered,
    function_tool,
    set_trace_processors,
)
from agents.testing import ScriptedModel, assistant_message, function_call

from roadcheck.events import args_digest
from roadcheck.guard import Decision, Guard
from roadcheck.integrations.guard_openai_agents import AgentsGuard

SPEC = {"mandatory_checkpoints": [
    {"checkpoint_id": "send_ok", "must_precede": "send_report", "scope": "each",
     "consume": True, "confirmed_by": ["owner", "cfo"], "binds": {"tool": True, "args": True}}]}


@pytest.fixture(autouse=True)
def _no_default_exporter() -> Iterator[None]:
    """No spans leave the process (the SDK's default exporter would go online)."""
    set_trace_processors([])
    yield
    set_trace_processors([])


class Run:
    """One reporter agent whose tools are behind the guard (only ``send_report`` is guarded)."""

    def __init__(self, steps: list[list[Any]], *, on_deny: Any = "raise") -> None:
        self.sent: list[str] = []
        self.decisions: list[Decision] = []
        self.guard = Guard(SPEC, log=self.decisions.append)
        self.agents_guard = AgentsGuard(self.guard, on_deny=on_deny)

        @function_tool
        def send_report(to: str) -> str:
            self.sent.append(to)
            return f"sent to {to}"

        @function_tool
        def lookup(name: str) -> str:
            return f"{name}: 3 open tickets"

        self.agent = Agent(name="reporter", model=ScriptedModel(steps),
                           tools=[self.agents_guard.protect(t) for t in (lookup, send_report)])

    def start(self) -> Any:
        return asyncio.run(Runner.run(self.agent, "weekly report"))

    def resume(self, state: Any) -> Any:
        return asyncio.run(Runner.run(self.agent, state))


def _send(to: str, call_id: str) -> Any:
    return function_call("send_report", {"to": to}, call_id=call_id)


def test_send_stops_before_it_runs_and_runs_after_a_bound_approval() -> None:
    """ask -> interruption, send not run; approve(by=cfo) -> recorded, bound, sent once."""
    run = Run([[function_call("lookup", {"name": "acme"}, call_id="c1")],
               [_send("cfo", "c2")], [assistant_message("done")]])
    result = run.start()
    assert run.sent == []
    (item,) = result.interruptions
    assert item.tool_name == "send_report"
    assert [d.verdict for d in run.decisions if d.tool == "send_report"][-1] == "ask"
    state = result.to_state()
    decision = run.agents_guard.approve(state, item, by="cfo")
    assert decision.allowed and decision.approvers == ("cfo",)
    result = run.resume(state)
    assert run.sent == ["cfo"]
    assert result.final_output == "done"
    kinds = [(r["event"], r.get("action_type") or r.get("checkpoint_id")) for r in
             run.guard.records]
    assert kinds == [("action", "lookup"), ("checkpoint", "send_ok"), ("action", "send_report")]
    approval = run.guard.records[1]
    assert approval["confirmed_by"] == "cfo" and approval["tool"] == "send_report"
    assert approval["args_sha256"] == args_digest({"to": "cfo"})
    assert approval["call_id"] == "c2"


def test_approval_is_bound_to_the_call_and_spent() -> None:
    """After the approved send, a send to everyone interrupts again; nothing else is sent."""
    run = Run([[_send("cfo", "c1")], [_send("everyone", "c2")]])
    result = run.start()
    state = result.to_state()
    run.agents_guard.approve(state, result.interruptions[0], by="owner")
    result = run.resume(state)
    assert run.sent == ["cfo"]
    (item,) = result.interruptions
    assert item.call_id == "c2"
    assert run.guard.check({"event": "action", "action_type": "send_report",
                            "args": {"to": "cfo"}}).verdict == "ask"


def test_approval_the_guard_was_not_told_of_does_not_send() -> None:
    """RunState.approve alone: the input guardrail stops the run, nothing is sent."""
    run = Run([[_send("cfo", "c1")]])
    result = run.start()
    state = result.to_state()
    state.approve(result.interruptions[0])
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as stopped:
        run.resume(state)
    assert run.sent == []
    assert stopped.value.output.output_info["verdict"] == "ask"
    assert [r["event"] for r in run.guard.records] == []


def test_approver_the_rule_does_not_accept_cannot_send() -> None:
    """approve(by=user) on a rule for owner or cfo: still not allowed, and the send does not run."""
    run = Run([[_send("cfo", "c1")]])
    result = run.start()
    state = result.to_state()
    decision = run.agents_guard.approve(state, result.interruptions[0], by="user")
    assert decision.verdict == "ask"
    assert 'confirmed by "user"' in decision.reasons[0].message
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        run.resume(state)
    assert run.sent == []


def test_reject_tells_the_model_and_keeps_the_send_unrun() -> None:
    """on_deny=reject: the model gets the guard's reason as the tool's answer; no send."""
    run = Run([[_send("cfo", "c1")], [assistant_message("could not send")]], on_deny="reject")
    result = run.start()
    state = result.to_state()
    state.approve(result.interruptions[0])
    result = run.resume(state)
    assert run.sent == [] and result.final_output == "could not send"
    outputs = [i.output for i in result.new_items if i.type == "tool_call_output_item"]
    assert len(outputs) == 1 and outputs[0].startswith("roadcheck guard: ask: checkpoint-skipped")


def test_rejected_by_the_person_is_not_sent() -> None:
    """reject(): the SDK tells the model no; the guard records no approval."""
    run = Run([[_send("cfo", "c1")], [assistant_message("ok, not sent")]])
    result = run.start()
    state = result.to_state()
    run.agents_guard.reject(state, result.interruptions[0], "not today")
    result = run.resume(state)
    assert run.sent == [] and result.final_output == "ok, not sent"
    assert run.guard.records == []


def test_protect_takes_a_function_tool_and_on_deny_is_checked() -> None:
    """A plain function or an unknown on_deny is refused at once."""
    guard = Guard(SPEC)
    with pytest.raises(TypeError, match="FunctionTool"):
        AgentsGuard(guard).protect(print)
    with pytest.raises(ValueError, match="on_deny"):
        AgentsGuard(guard, on_deny="ignore")  # type: ignore[arg-type]


def test_two_identical_calls_need_two_approvals() -> None:
    """Two sends to cfo in one turn: each approval is recorded, and each send spends one."""
    run = Run([[_send("cfo", "c1"), _send("cfo", "c2")], [assistant_message("both sent")]])
    result = run.start()
    assert len(result.interruptions) == 2 and run.sent == []
    state = result.to_state()
    for item in result.interruptions:
        run.agents_guard.approve(state, item, by="cfo")
    result = run.resume(state)
    assert run.sent == ["cfo", "cfo"] and result.final_output == "both sent"
    assert [r["event"] for r in run.guard.records] == ["checkpoint", "checkpoint", "action",
                                                       "action"]


def test_of_two_identical_calls_only_the_approved_one_runs() -> None:
    """One send approved, its twin rejected: one send."""
    run = Run([[_send("cfo", "c1"), _send("cfo", "c2")], [assistant_message("one sent")]])
    result = run.start()
    state = result.to_state()
    first, second = result.interruptions
    run.agents_guard.approve(state, first, by="cfo")
    run.agents_guard.reject(state, second)
    result = run.resume(state)
    assert run.sent == ["cfo"]


def test_arguments_that_repeat_a_key_never_run() -> None:
    """'{"to":"cfo","to":"everyone"}': two JSON readers would send to different people.

    The guard cannot know which one the tool will act on, so the call is denied
    as bad input, even for a tool no rule guards, and nothing runs.
    """
    twice = '{"to":"cfo","to":"everyone"}'
    run = Run([[function_call("lookup", '{"name":"acme","name":"evil"}', call_id="c1")]])
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as stopped:
        run.start()
    info = stopped.value.output.output_info
    assert info["verdict"] == "deny"
    assert info["reasons"][0]["code"] == "bad-input"
    assert "'arguments' holds JSON with a" in info["reasons"][0]["message"]
    assert "'name'" in info["reasons"][0]["message"]
    assert run.guard.records == []

    run = Run([[function_call("send_report", twice, call_id="c2")],
               [assistant_message("not sent")]])
    result = run.start()
    state = result.to_state()
    decision = run.agents_guard.approve(state, result.interruptions[0], by="cfo")
    assert decision.verdict == "deny" and decision.reasons[0].code == "bad-input"
    assert run.guard.records == []  # no approval recorded for arguments nobody can read one way
    result = run.resume(state)
    assert run.sent == [] and result.final_output == "not sent"
