"""The scenario matrix (tests/frameworks/matrix.py) on LangChain agents with human review.

``create_agent`` with ``HumanInTheLoopMiddleware`` (nodes ``model``,
``HumanInTheLoopMiddleware.after_model``, ``tools``): the model calls
``lookup_account`` and ``send_report`` in one message; the middleware
interrupts for ``send_report`` and the thread resumes with
``{"decisions": [...]}``. Each thread is read by read_langgraph at test time
and written as native JSONL. Fake chat model, no network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from roadcheck.integrations.langgraph import read_langgraph

from . import matrix

FRAMEWORK = "langchain-hitl"


class _Model(FakeMessagesListChatModel):
    """A scripted chat model that create_agent can bind tools to."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@dataclass(frozen=True)
class Run:
    gated: bool = True
    decision: str = "approve"  # the middleware decision type
    send_raises: bool = False


def one_thread(run: Run) -> str:
    @tool
    def lookup_account(name: str) -> str:
        """Look up an account."""
        return json.dumps({"account": name, "open_tickets": 3})

    @tool
    def send_report(account: str, summary: str) -> str:
        """Send the report (cannot be taken back)."""
        if run.send_raises:
            raise ConnectionError("mail server unreachable")
        return f"sent report on {account}"

    model = _Model(responses=[
        AIMessage("", tool_calls=[
            {"name": "lookup_account", "args": {"name": "acme"}, "id": "c1"},
            {"name": "send_report", "args": {"account": "acme", "summary": "3 open"},
             "id": "c2"}]),
        AIMessage("done")])
    app = create_agent(model, tools=[lookup_account, send_report], name="reporter",
                       middleware=[HumanInTheLoopMiddleware(
                           interrupt_on={"send_report": run.gated})],
                       checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "weekly-acme"}}
    try:
        app.invoke({"messages": [HumanMessage("weekly report for acme")]}, config)
        if app.get_state(config).interrupts:
            app.invoke(Command(resume={"decisions": [
                {"type": run.decision, "message": "not today"}]}), config)
    except ConnectionError:
        assert run.send_raises  # the failed send ends the run; the thread keeps the error
    return read_langgraph(app, config).to_jsonl()


SCENARIO_RUNS: dict[str, tuple[Run, ...]] = {
    "approved": (Run(),),
    "missing": (Run(gated=False),),
    "rejected-not-sent": (Run(decision="reject"),),
    "errored-tool": (Run(gated=False, send_raises=True),),
}


def record(scenario: str, tmp_path: Path) -> Path:
    out = tmp_path / "thread.jsonl"
    (run,) = SCENARIO_RUNS[scenario]
    out.write_text(one_thread(run))
    return out


def test_every_expressible_scenario_has_a_recording() -> None:
    assert list(SCENARIO_RUNS) == matrix.expressible(FRAMEWORK)


@pytest.mark.parametrize("scenario", matrix.params(FRAMEWORK))
def test_matrix(scenario: str, tmp_path: Path) -> None:
    matrix.check(scenario, record(scenario, tmp_path), "native")
