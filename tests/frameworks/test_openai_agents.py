"""End to end: an OpenAI Agents SDK run, recorded by the tracing processor, gated by replay.

A triage agent looks up an account and hands off (an SDK handoff with an input
type) to a reporter agent, whose ``send_report`` tool has ``needs_approval``:
the run stops with an interruption, the owner's decision is recorded and the
run resumes from its state. Scripted models, no network.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunContextWrapper, Runner, function_tool, handoff, set_trace_processors
from agents import trace as sdk_trace
from agents.testing import ScriptedModel, assistant_message, function_call
from click.testing import CliRunner
from pydantic import BaseModel

from roadcheck import replay
from roadcheck.cli import cli
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, load
from roadcheck.integrations.openai_agents import RoadcheckTracingProcessor

SPEC = Path(__file__).resolve().parent.parent / "data" / "frameworks" / "spec.yaml"
DATA = SPEC.parent


class Transfer(BaseModel):
    account: str


@pytest.fixture(autouse=True)
def _no_default_exporter() -> Iterator[None]:
    """Only the recorder sees the spans (the SDK's default exporter would go online)."""
    yield
    set_trace_processors([])


def run_agents(tmp_path: Path, decision: str | None, *, needs_approval: bool = True) -> Path:
    """Run triage -> reporter; ``decision`` is the owner's answer to the approval request."""
    out = tmp_path / "run.jsonl"
    recorder = RoadcheckTracingProcessor(out)
    set_trace_processors([recorder])

    @function_tool
    def lookup_account(name: str) -> str:
        return json.dumps({"account": name, "open_tickets": 3})

    @function_tool(needs_approval=needs_approval)
    def send_report(account: str, summary: str) -> str:
        return f"sent report on {account}"

    async def on_transfer(ctx: RunContextWrapper[Any], data: Transfer) -> None:
        return None

    reporter = Agent(name="reporter", tools=[send_report], model=ScriptedModel([
        [function_call("send_report", {"account": "acme", "summary": "3 open"}, call_id="c3")],
        [assistant_message("report sent")]]))
    triage = Agent(name="triage", tools=[lookup_account], model=ScriptedModel([
        [function_call("lookup_account", {"name": "acme"}, call_id="c1")],
        [function_call("transfer_to_reporter", {"account": "acme"}, call_id="c2")]]),
        handoffs=[handoff(reporter, on_handoff=on_transfer, input_type=Transfer)])

    async def main() -> None:
        with sdk_trace("weekly report"):
            result = await Runner.run(triage, "weekly report for acme")
            recorder.record_items(result)
            if result.interruptions:
                state = result.to_state()
                for item in result.interruptions:
                    if decision == "approved":
                        recorder.approve(state, item, by="owner")
                    else:
                        recorder.reject(state, item, by="owner", message="not today")
                result = await Runner.run(triage, state)
                recorder.record_items(result)

    asyncio.run(main())
    recorder.shutdown()
    return out


def trajectory(path: Path) -> Trajectory:
    fmt, entries = load(str(path))
    assert fmt == "openai-agents"
    (traj,) = list(entries)
    assert isinstance(traj, Trajectory), traj
    return traj


def test_approved_run_passes(tmp_path: Path) -> None:
    """Approval recorded before the send: PASS; the SDK handoff carries its input."""
    path = run_agents(tmp_path, "approved")
    traj = trajectory(path)
    steps = [(e.kind, e.agent, e.get("action_type") or e.get("checkpoint_id") or e.get("to_agent"))
             for e in traj.events]
    assert steps == [("action", "triage", "lookup_account"), ("handoff", "triage", "reporter"),
                     ("checkpoint", "reporter", "approve_send_report"),
                     ("action", "reporter", "send_report"), ("final", None, None)]
    assert traj.events[1].get("payload") == {"account": "acme"}
    assert traj.events[2].get("confirmed_by") == "owner"
    assert traj.events[3].get("result") == "sent report on acme"
    assert traj.events[3].get("args") == {"account": "acme", "summary": "3 open"}
    assert replay(SPEC, [str(path)]).results[0].verdict == "PASS"


def test_run_without_approval_blocks(tmp_path: Path) -> None:
    """The same agents with send_report not behind approval: BLOCK checkpoint-skipped."""
    path = run_agents(tmp_path, None, needs_approval=False)
    result = replay(SPEC, [str(path)]).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")


def test_rejected_call_is_no_action_and_no_checkpoint(tmp_path: Path) -> None:
    """A rejection: no checkpoint, and the call the SDK refused is not an action."""
    path = run_agents(tmp_path, "rejected")
    traj = trajectory(path)
    assert [e.kind for e in traj.events] == ["action", "handoff", "final"]
    assert replay(SPEC, [str(path)]).results[0].verdict == "PASS"


def test_approval_outside_the_recorder_is_not_a_checkpoint(tmp_path: Path) -> None:
    """Dropping the recorded decision (as if RunState.approve was called directly) blocks."""
    path = run_agents(tmp_path, "approved")
    lines = [ln for ln in path.read_text().splitlines() if '"object": "approval"' not in ln]
    path.write_text("\n".join(lines) + "\n")
    result = replay(SPEC, [str(path)]).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")


@pytest.mark.parametrize(("decision", "needs", "code"), [("approved", True, 0), (None, False, 1)])
def test_cli_gate(tmp_path: Path, decision: str | None, needs: bool, code: int) -> None:
    path = run_agents(tmp_path, decision, needs_approval=needs)
    out = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
    assert out.exit_code == code, out.output
    assert "openai-agents" in out.output


def test_sample_file_and_malformed_records() -> None:
    """The committed sample replays; a function span without a name names its line."""
    assert replay(SPEC, [str(DATA / "openai_agents_approved.jsonl")]).results[0].verdict == "PASS"
    fmt, entries = load(str(DATA / "openai_agents_bad_span.jsonl"))
    (failure,) = list(entries)
    assert fmt == "openai-agents" and isinstance(failure, ReadFailure)
    assert "function span" in failure.error.message and "has no tool name" in \
        failure.error.message


def run_two_concurrently(out: Path) -> None:
    """Two runs at once, each in its own trace; decisions given later, outside both.

    ``acme`` is approved, ``globex`` rejected; then both resume.
    """
    recorder = RoadcheckTracingProcessor(out)
    set_trace_processors([recorder])

    @function_tool(needs_approval=True)
    def send_report(account: str, summary: str) -> str:
        return f"sent report on {account}"

    def reporter(account: str) -> Agent[Any]:
        return Agent(name="reporter", tools=[send_report], model=ScriptedModel([
            [function_call("send_report", {"account": account, "summary": "3 open"},
                           call_id=f"c-{account}")],
            [assistant_message("done")]]))

    agents_by_account = {a: reporter(a) for a in ("acme", "globex")}

    async def first(account: str) -> Any:
        with sdk_trace(f"report {account}"):
            result = await Runner.run(agents_by_account[account], f"report for {account}")
            recorder.record_items(result)
            return result

    async def main() -> None:
        results = await asyncio.gather(first("acme"), first("globex"))
        # Later, outside both traces: the owner decides each run's pending call.
        for account, result in zip(("acme", "globex"), results, strict=True):
            state = result.to_state()
            for item in result.interruptions:
                if account == "acme":
                    recorder.approve(state, item, by="owner")
                else:
                    recorder.reject(state, item, by="owner")
            resumed = await Runner.run(agents_by_account[account], state)
            recorder.record_items(resumed, resumed_from=state)

    asyncio.run(main())
    recorder.shutdown()


def test_concurrent_runs_keep_their_own_approvals(tmp_path: Path) -> None:
    """Each decision is filed under its run's trace, not the trace started last."""
    out = tmp_path / "two.jsonl"
    run_two_concurrently(out)
    _, entries = load(str(out))
    by_workflow = {}
    for traj in entries:
        assert isinstance(traj, Trajectory), traj
        by_workflow[traj.events[-1].get("workflow")] = traj
    acme, globex = by_workflow["report acme"], by_workflow["report globex"]
    assert [(e.kind, e.get("action_type") or e.get("checkpoint_id")) for e in acme.events] == [
        ("checkpoint", "approve_send_report"), ("action", "send_report"), ("final", None)]
    assert acme.events[1].get("args") == {"account": "acme", "summary": "3 open"}
    assert [e.kind for e in globex.events] == ["final"]


def test_recorded_concurrent_runs_file() -> None:
    """The same scenario, as recorded once and kept: acme PASSes, globex sent nothing."""
    path = DATA / "openai_agents_two_concurrent_runs.jsonl"
    _, entries = load(str(path))
    checkpoints = sorted(sum(e.kind == "checkpoint" for e in t.events)
                         for t in entries if isinstance(t, Trajectory))
    assert checkpoints == [0, 1]
    assert [r.verdict for r in replay(SPEC, [str(path)]).results] == ["PASS", "PASS"]


def test_a_decision_without_its_run_is_refused(tmp_path: Path) -> None:
    """With no run state and no trace id there is no telling which run was decided."""

    class Item:
        tool_name = "send_report"
        raw_item = None

        class agent:
            name = "reporter"

    recorder = RoadcheckTracingProcessor(tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="which run"):
        recorder.approve(object(), Item(), by="owner")
    recorder.shutdown()
    assert (tmp_path / "x.jsonl").read_text() == ""
