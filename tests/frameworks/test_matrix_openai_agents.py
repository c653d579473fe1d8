"""The scenario matrix (tests/frameworks/matrix.py) on OpenAI Agents SDK runs.

A triage agent looks up an account and hands off to a reporter agent whose
``send_report`` tool may have ``needs_approval``; the run stops with an
interruption, the owner's decision goes through ``RoadcheckTracingProcessor`` (or,
for a decision the recorder never saw, straight to the run state) and the run
resumes. Every trace is recorded at test time with scripted models.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunContextWrapper, Runner, function_tool, handoff, set_trace_processors
from agents import trace as sdk_trace
from agents.testing import ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

from roadcheck.integrations.openai_agents import RoadcheckTracingProcessor

from . import matrix

FRAMEWORK = "openai-agents"


class Transfer(BaseModel):
    account: str


@pytest.fixture(autouse=True)
def _no_default_exporter() -> Iterator[None]:
    """Only the recorder sees the spans (the SDK's default exporter would go online)."""
    yield
    set_trace_processors([])


@dataclass(frozen=True)
class Run:
    gated: bool = True
    recorded: str | None = "approved"  # the decision given through the recorder
    approve_on_state: bool = False  # then approved directly on the run state, unrecorded
    sends: int = 1
    handoff_field: str = "account"
    send_raises: bool = False


async def one_run(recorder: RoadcheckTracingProcessor, run: Run, name: str) -> None:
    @function_tool
    def lookup_account(name: str) -> str:
        return json.dumps({"account": name, "open_tickets": 3})

    @function_tool(needs_approval=run.gated)
    def send_report(account: str, summary: str) -> str:
        if run.send_raises:
            raise ConnectionError("mail server unreachable")
        return f"sent report on {account}"

    async def on_transfer(ctx: RunContextWrapper[Any], data: Transfer) -> None:
        return None

    # One send per model turn: with ``always_approve`` the first decision covers the rest.
    reporter = Agent(name="reporter", tools=[send_report], model=ScriptedModel([
        *([function_call("send_report", {"account": "acme", "summary": f"part {i}"},
                         call_id=f"send-{i}")] for i in range(run.sends)),
        [assistant_message("report handled")]]))
    transfer = (handoff(reporter, on_handoff=on_transfer, input_type=Transfer)
                if run.handoff_field == "account" else handoff(reporter))
    triage = Agent(name="triage", tools=[lookup_account], handoffs=[transfer],
                   model=ScriptedModel([
                       [function_call("lookup_account", {"name": "acme"}, call_id="c1")],
                       [function_call("transfer_to_reporter", {run.handoff_field: "acme"},
                                      call_id="c2")]]))

    with sdk_trace(name):
        result = await Runner.run(triage, "weekly report for acme")
        recorder.record_items(result)
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                if run.recorded == "approved":
                    recorder.approve(state, item, by="owner", always_approve=run.sends > 1)
                elif run.recorded == "rejected":
                    recorder.reject(state, item, by="owner", message="not today")
                if run.approve_on_state:
                    state.approve(item)
            result = await Runner.run(triage, state)
            recorder.record_items(result)


SCENARIO_RUNS: dict[str, tuple[Run, ...]] = {
    "approved": (Run(),),
    "missing": (Run(gated=False, recorded=None),),
    "rejected-but-sent": (Run(recorded="rejected", approve_on_state=True),),
    "rejected-not-sent": (Run(recorded="rejected"),),
    "two-sends-one-approval": (Run(sends=2),),
    "handoff": (Run(handoff_field="customer"),),
    "errored-tool": (Run(gated=False, recorded=None, send_raises=True),),
    "two-runs": (Run(), Run(gated=False, recorded=None)),
}


def record(scenario: str, tmp_path: Path) -> Path:
    """Run the scenario's runs one after the other, each in its own trace, into one file."""
    out = tmp_path / "run.jsonl"
    recorder = RoadcheckTracingProcessor(out)
    set_trace_processors([recorder])

    async def main() -> None:
        for i, run in enumerate(SCENARIO_RUNS[scenario]):
            await one_run(recorder, run, f"weekly report {i + 1}")

    asyncio.run(main())
    recorder.shutdown()
    return out


def test_every_expressible_scenario_has_a_recording() -> None:
    assert list(SCENARIO_RUNS) == matrix.expressible(FRAMEWORK)


@pytest.mark.parametrize("scenario", matrix.params(FRAMEWORK))
def test_matrix(scenario: str, tmp_path: Path) -> None:
    path = record(scenario, tmp_path)
    matrix.check(scenario, path, "openai-agents")
