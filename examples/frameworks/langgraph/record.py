"""Record a LangGraph thread as a native trajectory: examples/frameworks/langgraph/run.jsonl.

Offline: the two agents are scripted chat models. The triage agent looks up an
account (through its ToolNode) and hands off with ``Command(goto="reporter")``;
the reporter's ``send_report`` tool asks for approval with ``interrupt()``, and
the thread is resumed with the owner's decision.

    python examples/frameworks/langgraph/record.py    # needs roadcheck[langgraph]
    roadcheck replay examples/frameworks/spec.yaml examples/frameworks/langgraph/run.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from roadcheck.integrations.langgraph import read_langgraph


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


@tool
def lookup_account(name: str) -> str:
    """Look up an account."""
    return json.dumps({"account": name, "open_tickets": 3})


@tool
def send_report(account: str, summary: str) -> str:
    """Send the report (cannot be taken back): only after the owner approved it."""
    decision = interrupt({"checkpoint_id": "approve_send_report", "tool": "send_report"})
    if not (isinstance(decision, dict) and decision.get("approved")):
        return "not sent: the owner refused"
    return f"sent report on {account}"


triage_model = FakeMessagesListChatModel(responses=[
    call("lookup_account", {"name": "acme"}, "c1"),
    call("transfer_to_reporter", {"account": "acme"}, "c2")])
reporter_model = FakeMessagesListChatModel(responses=[
    call("send_report", {"account": "acme", "summary": "3 open tickets"}, "c3"),
    AIMessage("report sent")])


def triage(state: State) -> Command[Any]:
    reply = triage_model.invoke(state["messages"])
    if reply.tool_calls[0]["name"] == "transfer_to_reporter":
        done = ToolMessage("transferred to reporter", tool_call_id=reply.tool_calls[0]["id"])
        return Command(goto="reporter", update={"messages": [reply, done]})
    return Command(goto="triage_tools", update={"messages": [reply]})


def reporter(state: State) -> Command[Any]:
    reply = reporter_model.invoke(state["messages"])
    return Command(goto="reporter_tools" if reply.tool_calls else END,
                   update={"messages": [reply]})


def main() -> None:
    graph = StateGraph(State)
    graph.add_node("triage", triage, destinations=("triage_tools", "reporter"))
    graph.add_node("triage_tools", ToolNode([lookup_account]))
    graph.add_node("reporter", reporter, destinations=("reporter_tools", END))
    graph.add_node("reporter_tools", ToolNode([send_report]))
    graph.add_edge(START, "triage")
    graph.add_edge("triage_tools", "triage")
    graph.add_edge("reporter_tools", "reporter")
    app = graph.compile(checkpointer=InMemorySaver())

    config: Any = {"configurable": {"thread_id": "weekly-acme"}}
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, config)
    app.invoke(Command(resume={"approved": True, "by": "owner"}), config)  # the owner approves

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("run.jsonl")
    out.write_text(read_langgraph(app, config).to_jsonl())
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
