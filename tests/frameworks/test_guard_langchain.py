"""The guard inside LangChain agents and LangGraph tool nodes: fake chat models, no network.

``create_agent`` with ``HumanInTheLoopMiddleware`` whose ``when=`` is the
guard's, and the guard's middleware after it: the send is interrupted before
it runs, the reviewer's approval is recorded bound to the call, and the run
resumes. The same wrapper guards a bare ``ToolNode``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command
from typing_extensions import TypedDict

from roadcheck.events import args_digest
from roadcheck.guard import Guard, GuardDenied
from roadcheck.integrations.guard_langchain import GuardMiddleware

SPEC = {"mandatory_checkpoints": [
    {"checkpoint_id": "send_ok", "must_precede": "send_report", "scope": "each",
     "consume": True, "confirmed_by": ["owner", "cfo"], "binds": {"tool": True, "args": True}}]}
CONFIG: Any = {"configurable": {"thread_id": "weekly"}}


class _Model(FakeMessagesListChatModel):
    """A scripted chat model that create_agent can bind tools to."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _calls(*calls: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])


class Run:
    """An agent whose send_report the guard reviews; the model says what ``steps`` say."""

    def __init__(self, steps: list[AIMessage], *, mode: Any = "batched",
                 on_deny: Any = "raise") -> None:
        self.sent: list[str] = []
        self.guard = Guard(SPEC)
        self.mw = GuardMiddleware(self.guard, on_deny=on_deny)

        @tool
        def send_report(to: str) -> str:
            """Send the report (cannot be taken back)."""
            self.sent.append(to)
            return f"sent to {to}"

        @tool
        def lookup(name: str) -> str:
            """Look up an account."""
            return f"{name}: 3 open tickets"

        hitl = HumanInTheLoopMiddleware(interrupt_on=self.mw.interrupt_on("send_report"),
                                        interrupt_mode=mode)
        self.app = create_agent(_Model(responses=[*steps, AIMessage("done")]),
                                tools=[lookup, send_report], middleware=[hitl, self.mw],
                                checkpointer=InMemorySaver())

    def start(self) -> Any:
        return self.app.invoke({"messages": [HumanMessage("weekly report")]}, CONFIG)

    def resume(self, value: Any) -> Any:
        return self.app.invoke(Command(resume=value), CONFIG)


def test_send_is_interrupted_before_it_runs_and_runs_after_a_bound_approval() -> None:
    """when= asks; nothing runs; review(approve, by=cfo) records it; the send runs once."""
    run = Run([_calls(("lookup", {"name": "acme"}, "c1"), ("send_report", {"to": "cfo"}, "c2"))])
    out = run.start()
    assert run.sent == []
    (pause,) = out["__interrupt__"]
    request = pause.value
    assert [a["name"] for a in request["action_requests"]] == ["send_report"]
    out = run.resume(run.mw.review(request, {"decisions": [{"type": "approve"}]}, by="cfo"))
    assert run.sent == ["cfo"] and out["messages"][-1].content == "done"
    events = [(r["event"], r.get("action_type") or r.get("checkpoint_id"))
              for r in run.guard.records]
    assert events[0] == ("checkpoint", "send_ok")
    assert sorted(events[1:]) == [("action", "lookup"), ("action", "send_report")]
    approval = run.guard.records[0]
    assert (approval["confirmed_by"], approval["tool"]) == ("cfo", "send_report")
    assert approval["args_sha256"] == args_digest({"to": "cfo"})


def test_an_approval_the_guard_was_not_told_of_does_not_send() -> None:
    """Resumed with approve but not through review(): GuardDenied, nothing sent."""
    run = Run([_calls(("send_report", {"to": "cfo"}, "c1"))])
    run.start()
    with pytest.raises(GuardDenied) as stopped:
        run.resume({"decisions": [{"type": "approve"}]})
    assert run.sent == [] and stopped.value.decision.verdict == "ask"


def test_reject_mode_tells_the_model() -> None:
    """on_deny=reject: the model gets an error ToolMessage with the reason; nothing sent."""
    run = Run([_calls(("send_report", {"to": "cfo"}, "c1"))], on_deny="reject")
    run.start()
    out = run.resume({"decisions": [{"type": "approve"}]})
    assert run.sent == []
    (answer,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error" and answer.content.startswith("roadcheck guard: ask: ")


def test_edited_call_is_the_approved_one() -> None:
    """An edit approves the edited call: to=board is sent, with the owner as approver."""
    run = Run([_calls(("send_report", {"to": "everyone"}, "c1"))])
    request = run.start()["__interrupt__"][0].value
    edit = {"type": "edit", "edited_action": {"name": "send_report", "args": {"to": "board"}}}
    run.resume(run.mw.review(request, {"decisions": [edit]}, by="owner"))
    assert run.sent == ["board"]
    assert run.guard.records[0]["args_sha256"] == args_digest({"to": "board"})


def test_reviewer_says_no() -> None:
    """A reject records nothing and sends nothing."""
    run = Run([_calls(("send_report", {"to": "cfo"}, "c1"))])
    request = run.start()["__interrupt__"][0].value
    run.resume(run.mw.review(request, {"decisions": [{"type": "reject"}]}, by="cfo"))
    assert run.sent == [] and run.guard.records == []


def test_approval_is_bound_and_spent() -> None:
    """After the approved send, a send to everyone interrupts again."""
    run = Run([_calls(("send_report", {"to": "cfo"}, "c1")),
               _calls(("send_report", {"to": "everyone"}, "c2"))])
    request = run.start()["__interrupt__"][0].value
    out = run.resume(run.mw.review(request, {"decisions": [{"type": "approve"}]}, by="cfo"))
    assert run.sent == ["cfo"]
    (pause,) = out["__interrupt__"]
    assert pause.value["action_requests"][0]["args"] == {"to": "everyone"}


def test_per_call_mode() -> None:
    """interrupt_mode=per_call: one ToolApprovalRequest per call, bound to its call id."""
    run = Run([_calls(("send_report", {"to": "cfo"}, "c1"))], mode="per_call")
    (pause,) = run.start()["__interrupt__"]
    assert pause.value["type"] == "tool_approval" and run.sent == []
    answer = run.mw.review(pause.value, {"type": "approve"}, by="cfo")
    run.resume({pause.id: answer})
    assert run.sent == ["cfo"]
    assert run.guard.records[0]["call_id"] == "c1"


def test_when_keeps_its_answer_for_a_call() -> None:
    """The predicate answers the same for a call id after its approval is recorded."""
    run = Run([_calls(("send_report", {"to": "cfo"}, "c1"))])
    request = run.start()["__interrupt__"][0].value
    run.mw.review(request, {"decisions": [{"type": "approve"}]}, by="cfo")

    def req(call_id: str) -> Any:
        return SimpleNamespace(tool_call={"name": "send_report", "args": {"to": "cfo"},
                                          "id": call_id})

    assert run.mw.when(req("c1")) is True and run.mw.when(req("c9")) is False


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def tool_node_graph(mw: GuardMiddleware, sent: list[str]) -> Any:
    @tool
    def send_report(to: str) -> str:
        """Send the report."""
        sent.append(to)
        return f"sent to {to}"

    graph = StateGraph(State)
    graph.add_node("tools", ToolNode([send_report], wrap_tool_call=mw.wrap_tool_call))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def test_tool_node_wrapper() -> None:
    """A bare ToolNode: stopped until a bound approval; then sent once."""
    sent: list[str] = []
    guard = Guard(SPEC)
    app = tool_node_graph(GuardMiddleware(guard), sent)
    send = {"messages": [_calls(("send_report", {"to": "cfo"}, "c1"))]}
    with pytest.raises(GuardDenied):
        app.invoke(send)
    assert sent == []
    guard.approve(guard.check({"event": "action", "action_type": "send_report",
                               "args": {"to": "cfo"}}), by="owner")
    out = app.invoke(send)
    assert sent == ["cfo"] and out["messages"][-1].content == "sent to cfo"
    with pytest.raises(GuardDenied):
        app.invoke(send)
    assert sent == ["cfo"]


def test_on_deny_is_checked() -> None:
    """An unknown on_deny is refused at once."""
    with pytest.raises(ValueError, match="on_deny"):
        GuardMiddleware(Guard(SPEC), on_deny="ignore")  # type: ignore[arg-type]
