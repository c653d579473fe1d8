"""Record the LangGraph threads under this folder as native trajectories.

Each thread is run by LangGraph itself (``InMemorySaver`` checkpointer,
scripted chat models, no network) and read with ``read_langgraph``. A triage
agent looks up an account and hands over to a reporter with
``transfer_to_reporter``; the reporter's ``send_report`` asks the owner with
``interrupt()``. Needs ``roadcheck[langgraph]``:

    python tests/data/frameworks/langgraph/record.py

Threads (one file each, ``<name>.jsonl``):

- ``rejected_but_sent``: the owner refuses, the tool sends anyway; its answer
  is in the thread.
- ``rejected_not_sent``: an approval node before the ToolNode is refused and
  ends the graph; the call is never answered.
- ``same_task_rejected``: one message calls ``lookup_account`` and the gated
  ``send_report``; one ToolNode task runs both, and the owner refuses.
- ``agent_inbox_accepted``: ``send_report`` asks with an agent-inbox request
  (``[{"action_request": ...}]``) and the owner answers ``accept``.
- ``unanswered_finished``: the reporter asks for ``send_report`` and the graph
  ends; nothing runs the call.
- ``subgraph_approved``: the reporter is a subgraph (its own model node and
  ToolNode); the interrupt is raised and resumed inside it, and the subgraph
  returns the whole conversation, the triage calls included.
- ``subgraph_waiting``: the same, never resumed: the thread waits on the
  interrupt raised inside the subgraph.
- ``subgraph_in_a_node_approved``: the same reporter subgraph, invoked from
  inside a node function instead of added as a node.
- ``subgraph_rejected_not_sent``: the reporter subgraph has an approval node
  (``human_review``) that is refused and ends the subgraph.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from roadcheck.events import Trajectory
from roadcheck.integrations.langgraph import read_langgraph

HERE = Path(__file__).resolve().parent
CONFIG: Any = {"configurable": {"thread_id": "weekly-acme"}}
SEND = ("send_report", {"account": "acme", "summary": "3 open"}, "send-1")


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def call(*calls: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])


@tool
def lookup_account(name: str) -> str:
    """Look up an account."""
    return json.dumps({"account": name, "open_tickets": 3})


def gated_send(*, honours_refusal: bool) -> BaseTool:
    @tool
    def send_report(account: str, summary: str) -> str:
        """Send the report (cannot be taken back): asks the owner first."""
        decision = interrupt({"checkpoint_id": "approve_send_report", "tool": "send_report",
                              "account": account})
        if not decision.get("approved") and honours_refusal:
            return "not sent: the owner refused"
        return f"sent report on {account}"

    return send_report


@tool
def send_report(account: str, summary: str) -> str:
    """Send the report (cannot be taken back)."""
    return f"sent report on {account}"


def reporter_node(model: FakeMessagesListChatModel, after: str) -> Callable[[State], Any]:
    def reporter(state: State) -> Command[Any]:
        reply = model.invoke(state["messages"])
        return Command(goto=after if reply.tool_calls else END, update={"messages": [reply]})

    return reporter


def review_node(state: State) -> Command[Any]:
    answer = interrupt({"checkpoint_id": "approve_send_report", "tool": "send_report"})
    return Command(goto="tools" if answer.get("approved") else END)


def with_triage(reporter: Any) -> Any:
    """Triage (with its ToolNode) in front of ``reporter`` (a node function or a subgraph)."""
    model = FakeMessagesListChatModel(responses=[
        call(("lookup_account", {"name": "acme"}, "c1")),
        call(("transfer_to_reporter", {"account": "acme"}, "c2"))])

    def triage(state: State) -> Command[Any]:
        reply = model.invoke(state["messages"])
        if reply.tool_calls[0]["name"] == "transfer_to_reporter":
            done = ToolMessage("transferred to reporter", tool_call_id=reply.tool_calls[0]["id"])
            return Command(goto="reporter", update={"messages": [reply, done]})
        return Command(goto="triage_tools", update={"messages": [reply]})

    graph = StateGraph(State)
    graph.add_node("triage", triage, destinations=("triage_tools", "reporter"))
    graph.add_node("triage_tools", ToolNode([lookup_account]))
    graph.add_node("reporter", reporter)
    graph.add_edge(START, "triage")
    graph.add_edge("triage_tools", "triage")
    graph.add_edge("reporter", END)
    return graph.compile(checkpointer=InMemorySaver())


def reporter_graph(*, review: bool, tools: list[BaseTool],
                   first: AIMessage | None = None) -> Any:
    """The reporter: a model node, optionally an approval node, and a ToolNode."""
    model = FakeMessagesListChatModel(responses=[first or call(SEND), AIMessage("report handled")])
    graph = StateGraph(State)
    after = "human_review" if review else "tools"
    graph.add_node("reporter", reporter_node(model, after), destinations=(after, END))
    if review:
        graph.add_node("human_review", review_node, destinations=("tools", END))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "reporter")
    graph.add_edge("tools", "reporter")
    return graph


def thread(app: Any, *resumes: Any) -> Trajectory:
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, CONFIG)
    for answer in resumes:
        app.invoke(Command(resume=answer), CONFIG)
    return read_langgraph(app, CONFIG)


REFUSED = {"approved": False, "by": "owner"}
APPROVED = {"approved": True, "by": "owner"}


def rejected_but_sent() -> Trajectory:
    graph = reporter_graph(review=False, tools=[gated_send(honours_refusal=False)])
    return thread(graph.compile(checkpointer=InMemorySaver()), REFUSED)


def rejected_not_sent() -> Trajectory:
    graph = reporter_graph(review=True, tools=[send_report])
    return thread(graph.compile(checkpointer=InMemorySaver()), REFUSED)


def same_task_rejected() -> Trajectory:
    graph = reporter_graph(review=False, tools=[lookup_account, gated_send(honours_refusal=True)],
                           first=call(("lookup_account", {"name": "acme"}, "c1"), SEND))
    return thread(graph.compile(checkpointer=InMemorySaver()), REFUSED)


def agent_inbox_accepted() -> Trajectory:
    @tool
    def send_report(account: str, summary: str) -> str:
        """Send the report (cannot be taken back): asks through the agent inbox."""
        answer = interrupt([{"action_request": {"action": "send_report",
                                                "args": {"account": account}},
                             "config": {"allow_accept": True, "allow_ignore": True},
                             "description": "Send the weekly report?"}])
        if answer[0].get("type") != "accept":
            return "not sent: ignored"
        return f"sent report on {account}"

    graph = reporter_graph(review=False, tools=[send_report])
    return thread(graph.compile(checkpointer=InMemorySaver()),
                  [{"type": "accept", "args": None, "by": "owner"}])


def unanswered_finished() -> Trajectory:
    model = FakeMessagesListChatModel(responses=[call(SEND)])

    def reporter(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("reporter", reporter)
    graph.add_edge(START, "reporter")
    graph.add_edge("reporter", END)
    return thread(graph.compile(checkpointer=InMemorySaver()))


def subgraph_approved() -> Trajectory:
    sub = reporter_graph(review=False, tools=[gated_send(honours_refusal=True)])
    return thread(with_triage(sub.compile()), APPROVED)


def subgraph_waiting() -> Trajectory:
    sub = reporter_graph(review=False, tools=[gated_send(honours_refusal=True)])
    return thread(with_triage(sub.compile()))


def subgraph_in_a_node_approved() -> Trajectory:
    sub = reporter_graph(review=False, tools=[gated_send(honours_refusal=True)]).compile()

    def reporter(state: State) -> Any:
        return sub.invoke(state)

    return thread(with_triage(reporter), APPROVED)


def subgraph_rejected_not_sent() -> Trajectory:
    sub = reporter_graph(review=True, tools=[send_report])
    return thread(with_triage(sub.compile()), REFUSED)


THREADS: dict[str, Callable[[], Trajectory]] = {
    f.__name__: f for f in (rejected_but_sent, rejected_not_sent, same_task_rejected,
                            agent_inbox_accepted, unanswered_finished, subgraph_approved,
                            subgraph_waiting, subgraph_in_a_node_approved,
                            subgraph_rejected_not_sent)}


def main(out: Path = HERE) -> None:
    for name, record in THREADS.items():
        path = out / f"{name}.jsonl"
        path.write_text(record().to_jsonl())
        sys.stdout.write(f"wrote {path}\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
