"""End to end: a LangGraph graph with scripted chat models, gated from its state history.

A triage agent looks up an account (through its ToolNode) and hands off with
``Command(goto="reporter")``; the reporter's ``send_report`` tool asks for
approval with ``interrupt()`` and the thread is resumed with the owner's
decision (``Command(resume=...)``). Fake chat models, no network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from click.testing import CliRunner
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from roadcheck import replay
from roadcheck.cli import cli
from roadcheck.events import Trajectory
from roadcheck.integrations.langgraph import read_langgraph

SPEC = Path(__file__).resolve().parent.parent / "data" / "frameworks" / "spec.yaml"


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def build(needs_approval: bool, late_approval: bool = False) -> Any:
    @tool
    def lookup_account(name: str) -> str:
        """Look up an account."""
        return json.dumps({"account": name, "open_tickets": 3})

    @tool
    def send_report(account: str, summary: str) -> str:
        """Send the report (cannot be taken back)."""
        if needs_approval:
            decision = interrupt({"checkpoint_id": "approve_send_report",
                                  "tool": "send_report", "account": account})
            if not (isinstance(decision, dict) and decision.get("approved")):
                return "not sent: the owner refused"
        return f"sent report on {account}"

    triage_model = FakeMessagesListChatModel(responses=[
        call("lookup_account", {"name": "acme"}, "c1"),
        call("transfer_to_reporter", {"account": "acme"}, "c2")])
    reporter_model = FakeMessagesListChatModel(responses=[
        call("send_report", {"account": "acme", "summary": "3 open"}, "c3"),
        AIMessage("report handled")])

    def triage(state: State) -> Command[Any]:
        reply = triage_model.invoke(state["messages"])
        names = [tc["name"] for tc in reply.tool_calls]
        if "transfer_to_reporter" in names:
            done = ToolMessage("transferred to reporter", tool_call_id=reply.tool_calls[0]["id"])
            return Command(goto="reporter", update={"messages": [reply, done]})
        return Command(goto="triage_tools", update={"messages": [reply]})

    def reporter(state: State) -> Command[Any]:
        last = state["messages"][-1]
        if late_approval and isinstance(last, ToolMessage) and last.name == "send_report":
            # Approval asked only after the tool already ran: too late to gate it.
            interrupt({"checkpoint_id": "approve_send_report", "tool": "send_report"})
        reply = reporter_model.invoke(state["messages"])
        return Command(goto="reporter_tools" if reply.tool_calls else END,
                       update={"messages": [reply]})

    graph = StateGraph(State)
    graph.add_node("triage", triage, destinations=("triage_tools", "reporter"))
    graph.add_node("triage_tools", ToolNode([lookup_account]))
    graph.add_node("reporter", reporter, destinations=("reporter_tools", END))
    graph.add_node("reporter_tools", ToolNode([send_report]))
    graph.add_edge(START, "triage")
    graph.add_edge("triage_tools", "triage")
    graph.add_edge("reporter_tools", "reporter")
    return graph.compile(checkpointer=InMemorySaver())


def run(decision: dict[str, Any] | None, *, needs_approval: bool = True,
        late_approval: bool = False) -> Trajectory:
    app = build(needs_approval, late_approval)
    config: Any = {"configurable": {"thread_id": "weekly-acme"}}
    app.invoke({"messages": [HumanMessage("weekly report for acme")]}, config)
    if decision is not None:
        app.invoke(Command(resume=decision), config)
    return read_langgraph(app, config)


def steps(traj: Trajectory) -> list[tuple[str, str | None, Any]]:
    return [(e.kind, e.agent, e.get("action_type") or e.get("checkpoint_id") or e.get("to_agent"))
            for e in traj.events]


def test_approved_thread_passes() -> None:
    traj = run({"approved": True, "by": "owner"})
    assert steps(traj) == [
        ("action", "triage", "lookup_account"), ("action", "triage", "transfer_to_reporter"),
        ("handoff", "triage", "reporter"), ("checkpoint", "reporter", "approve_send_report"),
        ("action", "reporter", "send_report"), ("final", "reporter", None)]
    assert traj.events[2].get("payload") == {"account": "acme"}
    assert traj.events[3].get("confirmed_by") == "owner"
    assert traj.events[4].get("result") == "sent report on acme"
    assert traj.events[-1].get("task_success") is True
    result = replay(SPEC, traj).results[0]
    assert result.verdict == "PASS", result.reasons


def test_thread_without_approval_blocks() -> None:
    result = replay(SPEC, run(None, needs_approval=False)).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")


def test_approval_after_the_send_is_checkpoint_after_action() -> None:
    """An approval asked for in a node that runs after the tool is too late."""
    traj = run({"approved": True, "by": "owner"}, needs_approval=False, late_approval=True)
    kinds = [(e.kind, e.get("action_type") or e.get("checkpoint_id")) for e in traj.events]
    assert kinds.index(("action", "send_report")) < kinds.index(
        ("checkpoint", "approve_send_report"))
    result = replay(SPEC, traj).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-after-action")


def test_refusal_inside_the_tool_is_no_checkpoint_and_the_answered_call_ran() -> None:
    """The tool asked, was refused and answered: what it did is not recorded, so it ran."""
    traj = run({"approved": False, "by": "owner"})
    assert [e for e in traj.events if e.kind == "checkpoint"] == []
    (send,) = [e for e in traj.events if e.action_type == "send_report"]
    assert (send.get("result"), send.get("refused")) == ("not sent: the owner refused", True)
    assert replay(SPEC, traj).results[0].headline == "checkpoint-skipped"


def test_waiting_thread_keeps_the_unanswered_call() -> None:
    """Interrupted and never resumed: the call is kept (answered: false) and blocks."""
    traj = run(None)
    send = next(e for e in traj.events if e.action_type == "send_report")
    assert send.get("answered") is False
    assert traj.events[-1].get("task_success") is False
    assert replay(SPEC, traj).results[0].headline == "checkpoint-skipped"


def test_written_as_native_jsonl_the_cli_gates_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(run({"approved": True, "by": "owner"}).to_jsonl())
    out = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
    assert out.exit_code == 0, out.output
    path.write_text(run(None, needs_approval=False).to_jsonl())
    assert CliRunner().invoke(cli, ["replay", str(SPEC), str(path)]).exit_code == 1


def test_the_example_recording_is_what_its_script_writes(tmp_path: Path) -> None:
    """examples/frameworks/langgraph/run.jsonl is record.py's output (times and ids aside)."""
    from ..conftest import EXAMPLES, load_script

    folder = EXAMPLES / "frameworks" / "langgraph"
    out = tmp_path / "run.jsonl"
    script = load_script(folder / "record.py")
    script.sys.argv = ["record.py", str(out)]  # type: ignore[attr-defined]
    script.main()

    def events(path: Path) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return [{k: v for k, v in row.items() if k not in ("ts", "interrupt_id")}
                for row in rows]

    assert events(out) == events(folder / "run.jsonl")
