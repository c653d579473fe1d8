"""The scenario matrix (tests/frameworks/matrix.py) on LangGraph threads read by read_langgraph.

A triage agent looks up an account through its ToolNode and hands over with
``Command(goto="reporter")``; the reporter's ``send_report`` asks for approval
with ``interrupt()`` inside the tool (or, for one approval covering several
sends and for a refusal that keeps the tool from running, in an approval node
before the ToolNode, declared with ``other_nodes``) and the thread resumes
with ``Command(resume=...)``. A tool that asks inside itself and is refused
still answers its call, and an answered call ran: only a refusal before the
ToolNode leaves the send unanswered. Each thread is read from
its checkpointer at test time and written as native JSONL, the file a user
gates. Fake chat models, no network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from roadcheck.events import Trajectory
from roadcheck.integrations.langgraph import read_langgraph

from . import matrix

FRAMEWORK = "langgraph"


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@dataclass(frozen=True)
class Run:
    gated: bool = True  # interrupt() inside send_report
    approved: bool | None = True  # the resume value's decision; None: never resumed
    sends_anyway: bool = False  # the tool sends whatever the decision
    approve_after: bool = False  # the reporter node asks for approval after the send
    sends: int = 1  # more than one: one approval node gates the whole ToolNode
    gate_in_node: bool = False  # the approval node gates the ToolNode even for one send
    handoff_field: str = "account"
    send_raises: bool = False


def call(calls: list[tuple[str, dict[str, Any], str]]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])


def one_thread(run: Run, thread: str) -> Trajectory:
    gate_node = run.sends > 1 or run.gate_in_node

    @tool
    def lookup_account(name: str) -> str:
        """Look up an account."""
        return json.dumps({"account": name, "open_tickets": 3})

    @tool
    def send_report(account: str, summary: str) -> str:
        """Send the report (cannot be taken back)."""
        if run.send_raises:
            raise ConnectionError("mail server unreachable")
        if run.gated and not gate_node:
            decision = interrupt({"checkpoint_id": "approve_send_report",
                                  "tool": "send_report", "account": account})
            ok = isinstance(decision, dict) and decision.get("approved")
            if not ok and not run.sends_anyway:
                return "not sent: the owner refused"
        return f"sent report on {account}"

    triage_model = FakeMessagesListChatModel(responses=[
        call([("lookup_account", {"name": "acme"}, "c1")]),
        call([("transfer_to_reporter", {run.handoff_field: "acme"}, "c2")])])
    reporter_model = FakeMessagesListChatModel(responses=[
        call([("send_report", {"account": "acme", "summary": f"part {i}"}, f"send-{i}")
              for i in range(run.sends)]),
        AIMessage("report handled")])

    def triage(state: State) -> Command[Any]:
        reply = triage_model.invoke(state["messages"])
        if reply.tool_calls[0]["name"] == "transfer_to_reporter":
            done = ToolMessage("transferred to reporter", tool_call_id=reply.tool_calls[0]["id"])
            return Command(goto="reporter", update={"messages": [reply, done]})
        return Command(goto="triage_tools", update={"messages": [reply]})

    def reporter(state: State) -> Command[Any]:
        last = state["messages"][-1]
        if run.approve_after and isinstance(last, ToolMessage) and last.name == "send_report":
            interrupt({"checkpoint_id": "approve_send_report", "tool": "send_report"})
        reply = reporter_model.invoke(state["messages"])
        after = "owner_check" if gate_node else "reporter_tools"
        return Command(goto=after if reply.tool_calls else END, update={"messages": [reply]})

    def owner_check(state: State) -> Command[Any]:
        answer = interrupt({"checkpoint_id": "approve_send_report"})
        return Command(goto="reporter_tools" if answer == "approved" else END)

    graph = StateGraph(State)
    graph.add_node("triage", triage, destinations=("triage_tools", "reporter"))
    graph.add_node("triage_tools", ToolNode([lookup_account]))
    graph.add_node("reporter", reporter, destinations=("reporter_tools", "owner_check", END))
    graph.add_node("owner_check", owner_check, destinations=("reporter_tools", END))
    graph.add_node("reporter_tools", ToolNode([send_report], handle_tool_errors=True))
    graph.add_edge(START, "triage")
    graph.add_edge("triage_tools", "triage")
    graph.add_edge("reporter_tools", "reporter")
    app = graph.compile(checkpointer=InMemorySaver())

    config: Any = {"configurable": {"thread_id": thread}}
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, config)
    while app.get_state(config).interrupts and run.approved is not None:
        answer: Any = ("approved" if run.approved else "rejected") if gate_node else {
            "approved": run.approved, "by": "owner"}
        app.invoke(Command(resume=answer), config)
    return read_langgraph(app, config, other_nodes={"owner_check"})


SCENARIO_RUNS: dict[str, tuple[Run, ...]] = {
    "approved": (Run(),),
    "missing": (Run(gated=False),),
    "rejected-but-sent": (Run(approved=False, sends_anyway=True),),
    "rejected-not-sent": (Run(approved=False, gate_in_node=True),),
    "after-action": (Run(gated=False, approve_after=True),),
    "two-sends-one-approval": (Run(sends=2),),
    "handoff": (Run(handoff_field="customer"),),
    "errored-tool": (Run(gated=False, send_raises=True),),
}


def record(scenario: str, tmp_path: Path) -> Path:
    """Run the scenario's thread and write it as native JSONL, the file a user gates."""
    out = tmp_path / "thread.jsonl"
    (run,) = SCENARIO_RUNS[scenario]
    out.write_text(one_thread(run, "weekly-acme").to_jsonl())
    return out


def test_every_expressible_scenario_has_a_recording() -> None:
    assert list(SCENARIO_RUNS) == matrix.expressible(FRAMEWORK)


@pytest.mark.parametrize("scenario", matrix.params(FRAMEWORK))
def test_matrix(scenario: str, tmp_path: Path) -> None:
    matrix.check(scenario, record(scenario, tmp_path), "native")
