"""LangGraph threads as LangChain's own agents write them: middleware and approval nodes.

``create_agent`` with ``HumanInTheLoopMiddleware`` (nodes ``model``,
``HumanInTheLoopMiddleware.after_model``, ``tools``), an agent-inbox style
interrupt, a ToolNode that runs a gated and an ungated call of one message, and
a thread that ended with a call nobody answered. Fake chat models, no network.
The approved middleware thread is kept as tests/data/frameworks/langgraph_hitl_approved.jsonl.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from roadcheck import replay
from roadcheck.events import Trajectory
from roadcheck.integrations.langgraph import read_langgraph

DATA = Path(__file__).resolve().parent.parent / "data" / "frameworks"
SPEC = DATA / "spec_any_approver.yaml"
CONFIG: Any = {"configurable": {"thread_id": "weekly-acme"}}


class _Model(FakeMessagesListChatModel):
    """A scripted chat model that create_agent can bind tools to."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def lookup_account(name: str) -> str:
    """Look up an account."""
    return json.dumps({"account": name, "open_tickets": 3})


@tool
def send_report(account: str, summary: str) -> str:
    """Send the report (cannot be taken back)."""
    return f"sent report on {account}"


def both_calls() -> AIMessage:
    return AIMessage("", tool_calls=[
        {"name": "lookup_account", "args": {"name": "acme"}, "id": "c1"},
        {"name": "send_report", "args": {"account": "acme", "summary": "3 open"}, "id": "c2"}])


def hitl_thread(decision: dict[str, Any]) -> Trajectory:
    model = _Model(responses=[both_calls(), AIMessage("done")])
    app = create_agent(model, tools=[lookup_account, send_report], name="reporter",
                       middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_report": True})],
                       checkpointer=InMemorySaver())
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, CONFIG)
    app.invoke(Command(resume={"decisions": [decision]}), CONFIG)
    return read_langgraph(app, CONFIG)


def steps(traj: Trajectory) -> list[tuple[str, str | None, Any]]:
    return [(e.kind, e.agent, e.get("action_type") or e.get("checkpoint_id") or e.get("to_agent"))
            for e in traj.events]


@pytest.mark.parametrize("kind", ["approve", "edit"])
def test_middleware_approval_is_a_checkpoint_and_no_handoff(kind: str) -> None:
    decision: dict[str, Any] = {"type": kind}
    if kind == "edit":
        decision["edited_action"] = {"name": "send_report",
                                     "args": {"account": "acme", "summary": "edited"}}
    traj = hitl_thread(decision)
    assert steps(traj) == [
        ("checkpoint", "reporter", "approve_send_report"),
        ("action", "reporter", "lookup_account"), ("action", "reporter", "send_report"),
        ("final", "reporter", None)]
    assert traj.events[0].get("decision") == kind
    result = replay(SPEC, traj).results[0]
    assert result.verdict == "PASS", result.reasons


@pytest.mark.parametrize("kind", ["reject", "respond"])
def test_middleware_refusal_sends_nothing_and_invents_no_handoff(kind: str) -> None:
    traj = hitl_thread({"type": kind, "message": "not today"})
    assert steps(traj) == [("action", "reporter", "lookup_account"), ("final", "reporter", None)]
    result = replay(DATA / "spec.yaml", traj).results[0]
    assert result.verdict == "PASS", result.reasons


def test_kept_middleware_recording_passes() -> None:
    """The approved thread as written once; and it is what the graph writes today."""
    path = DATA / "langgraph_hitl_approved.jsonl"
    assert replay(SPEC, [str(path)]).results[0].verdict == "PASS"

    def rows(text: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in json.loads(line).items() if k not in ("ts", "interrupt_id")}
                for line in text.splitlines()]

    assert rows(path.read_text()) == rows(hitl_thread({"type": "approve"}).to_jsonl())


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def toolnode_thread(resume: Any, *, inbox: bool = False) -> Trajectory:
    """One message calls lookup_account and the gated send_report; one ToolNode runs both."""

    @tool
    def send(account: str, summary: str) -> str:
        """Send the report (cannot be taken back)."""
        if inbox:
            answer = interrupt([{"action_request": {"action": "send_report",
                                                    "args": {"account": account}},
                                 "config": {"allow_accept": True}, "description": "send?"}])
            ok = answer[0].get("type") == "accept"
        else:
            answer = interrupt({"tool": "send_report", "account": account})
            ok = bool(answer.get("approved"))
        return f"sent report on {account}" if ok else "not sent: refused"

    send.name = "send_report"
    model = _Model(responses=[both_calls(), AIMessage("done")])

    def agent(state: State) -> Command[Any]:
        reply = model.invoke(state["messages"])
        return Command(goto="tools" if reply.tool_calls else END, update={"messages": [reply]})

    graph = StateGraph(State)
    graph.add_node("reporter", agent, destinations=("tools", END))
    graph.add_node("tools", ToolNode([lookup_account, send]))
    graph.add_edge(START, "reporter")
    graph.add_edge("tools", "reporter")
    app = graph.compile(checkpointer=InMemorySaver())
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, CONFIG)
    app.invoke(Command(resume=resume), CONFIG)
    return read_langgraph(app, CONFIG)


def test_rejected_gated_call_and_the_ungated_call_of_the_same_task_both_ran() -> None:
    """Both calls were answered by the ToolNode: a refusal does not hide either."""
    traj = toolnode_thread({"approved": False})
    assert [(e.action_type, e.get("refused")) for e in traj.events if e.kind == "action"] == [
        ("lookup_account", None), ("send_report", True)]
    assert [e for e in traj.events if e.kind == "checkpoint"] == []


def test_agent_inbox_accept_is_a_checkpoint() -> None:
    traj = toolnode_thread([{"type": "accept", "args": None}], inbox=True)
    assert steps(traj) == [
        ("checkpoint", "reporter", "approve_send_report"),
        ("action", "reporter", "lookup_account"), ("action", "reporter", "send_report"),
        ("final", "reporter", None)]
    assert replay(SPEC, traj).results[0].verdict == "PASS"


def test_agent_inbox_ignore_is_no_checkpoint() -> None:
    traj = toolnode_thread([{"type": "ignore", "args": None}], inbox=True)
    assert [e for e in traj.events if e.kind == "checkpoint"] == []
    assert replay(SPEC, traj).results[0].headline == "checkpoint-skipped"


def test_call_never_answered_in_a_finished_thread_did_not_run() -> None:
    """The agent asked for send_report, then the graph ended: nothing ran it."""
    model = _Model(responses=[AIMessage("", tool_calls=[
        {"name": "send_report", "args": {"account": "acme", "summary": "x"}, "id": "c9"}])])

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("reporter", agent)
    graph.add_edge(START, "reporter")
    graph.add_edge("reporter", END)
    app = graph.compile(checkpointer=InMemorySaver())
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, CONFIG)
    traj = read_langgraph(app, CONFIG)
    assert steps(traj) == [("final", "reporter", None)]
    assert traj.events[-1].get("task_success") is True


def test_nodes_can_be_declared_neither_agent_nor_tool() -> None:
    """A custom approval node is declared with ``other_nodes``: no handoff to or from it."""
    model = _Model(responses=[AIMessage("", tool_calls=[
        {"name": "send_report", "args": {"account": "acme", "summary": "x"}, "id": "c1"}]),
        AIMessage("done")])

    def agent(state: State) -> Command[Any]:
        reply = model.invoke(state["messages"])
        return Command(goto="owner_check" if reply.tool_calls else END,
                       update={"messages": [reply]})

    def owner_check(state: State) -> Command[Any]:
        answer = interrupt({"checkpoint_id": "approve_send_report"})
        return Command(goto="tools" if answer == "approved" else END)

    graph = StateGraph(State)
    graph.add_node("reporter", agent, destinations=("owner_check", END))
    graph.add_node("owner_check", owner_check, destinations=("tools", END))
    graph.add_node("tools", ToolNode([send_report]))
    graph.add_edge(START, "reporter")
    graph.add_edge("tools", "reporter")
    app = graph.compile(checkpointer=InMemorySaver())
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, CONFIG)
    app.invoke(Command(resume="approved"), CONFIG)
    assert "handoff" in [e.kind for e in read_langgraph(app, CONFIG).events]
    traj = read_langgraph(app, CONFIG, other_nodes={"owner_check"})
    assert steps(traj) == [("checkpoint", "reporter", "approve_send_report"),
                           ("action", "reporter", "send_report"), ("final", "reporter", None)]
