"""Verdicts on LangGraph threads kept under tests/data/frameworks/langgraph.

Each file is a thread run by LangGraph itself and read with ``read_langgraph``
(``record.py`` in that folder writes them all; its docstring tells each
thread's story). A test checks that the kept files are what the graphs write
today, so a change to the reader shows up as a changed recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roadcheck import replay
from roadcheck.events import Trajectory
from roadcheck.ingest import load

from ..conftest import DATA, load_script

FOLDER = DATA / "frameworks" / "langgraph"
SPEC = DATA / "frameworks" / "spec.yaml"
ANY_APPROVER = DATA / "frameworks" / "spec_any_approver.yaml"


def trajectory(name: str) -> Trajectory:
    fmt, entries = load(str(FOLDER / f"{name}.jsonl"))
    (traj,) = list(entries)
    assert fmt == "native" and isinstance(traj, Trajectory)
    return traj


def verdict(spec: Path, name: str) -> tuple[str, str]:
    result = replay(spec, [str(FOLDER / f"{name}.jsonl")]).results[0]
    return result.verdict, result.headline


def steps(traj: Trajectory) -> list[tuple[str, str | None, Any]]:
    return [(e.kind, e.agent, e.get("action_type") or e.get("checkpoint_id") or e.get("to_agent"))
            for e in traj.events]


def rows(text: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k not in ("ts", "interrupt_id")}
            for line in text.splitlines()]


def test_kept_threads_are_what_the_graphs_write_today(tmp_path: Path) -> None:
    script = load_script(FOLDER / "record.py")
    script.main(tmp_path)
    kept = sorted(p.name for p in FOLDER.glob("*.jsonl"))
    assert kept == sorted(f"{name}.jsonl" for name in script.THREADS)
    for name in kept:
        assert rows((tmp_path / name).read_text()) == rows((FOLDER / name).read_text()), name


class TestToolAnswerOutranksRefusal:
    """A ToolMessage from the tool node means the tool ran, whatever the human said."""

    def test_refused_in_the_tool_yet_sent_is_an_action_and_blocks(self) -> None:
        traj = trajectory("rejected_but_sent")
        assert steps(traj) == [("action", "reporter", "send_report"),
                               ("final", "reporter", None)]
        send = traj.events[0]
        assert (send.get("result"), send.get("refused")) == ("sent report on acme", True)
        assert verdict(ANY_APPROVER, "rejected_but_sent") == ("BLOCK", "checkpoint-skipped")

    def test_refused_in_a_node_before_the_tools_sends_nothing_and_passes(self) -> None:
        traj = trajectory("rejected_not_sent")
        assert steps(traj) == [("final", "reporter", None)]
        assert traj.events[-1].get("task_success") is True
        assert verdict(ANY_APPROVER, "rejected_not_sent") == ("PASS", "trajectory-conforms")

    def test_a_refusal_drops_neither_call_of_one_tool_node_task(self) -> None:
        """lookup_account and the refused send_report ran in one task: both answered, both ran."""
        traj = trajectory("same_task_rejected")
        assert [(e.action_type, e.get("refused")) for e in traj.events if e.kind == "action"] == [
            ("lookup_account", None), ("send_report", True)]
        assert verdict(ANY_APPROVER, "same_task_rejected") == ("BLOCK", "checkpoint-skipped")


def test_agent_inbox_accept_is_a_checkpoint_before_the_send() -> None:
    traj = trajectory("agent_inbox_accepted")
    assert steps(traj) == [("checkpoint", "reporter", "approve_send_report"),
                           ("action", "reporter", "send_report"), ("final", "reporter", None)]
    assert (traj.events[0].get("decision"), traj.events[0].get("confirmed_by")) == (
        "accept", "owner")
    assert verdict(SPEC, "agent_inbox_accepted") == ("PASS", "trajectory-conforms")


def test_call_never_answered_in_a_finished_thread_did_not_run() -> None:
    traj = trajectory("unanswered_finished")
    assert steps(traj) == [("final", "reporter", None)]
    assert verdict(ANY_APPROVER, "unanswered_finished") == ("PASS", "trajectory-conforms")


class TestSubgraphs:
    """A subgraph node's own history is read; what it returns is not read twice."""

    @pytest.mark.parametrize("name", ["subgraph_approved", "subgraph_in_a_node_approved"])
    def test_interrupt_resumed_inside_a_subgraph_is_a_checkpoint(self, name: str) -> None:
        traj = trajectory(name)
        assert steps(traj) == [
            ("action", "triage", "lookup_account"), ("action", "triage", "transfer_to_reporter"),
            ("handoff", "triage", "reporter"), ("checkpoint", "reporter", "approve_send_report"),
            ("action", "reporter", "send_report"), ("final", "reporter", None)]
        checkpoint = traj.events[3]
        assert checkpoint.get("confirmed_by") == "owner"
        assert verdict(SPEC, name) == ("PASS", "trajectory-conforms")

    @pytest.mark.parametrize("name", ["subgraph_approved", "subgraph_in_a_node_approved"])
    def test_the_parent_calls_a_subgraph_returns_are_no_new_actions(self, name: str) -> None:
        traj = trajectory(name)
        ids = [e.get("call_id") for e in traj.events if e.kind == "action"]
        assert ids == ["c1", "c2", "send-1"]

    def test_a_thread_waiting_inside_a_subgraph_keeps_the_unanswered_send(self) -> None:
        traj = trajectory("subgraph_waiting")
        (send,) = [e for e in traj.events if e.action_type == "send_report"]
        assert (send.agent, send.get("answered")) == ("reporter", False)
        assert [e for e in traj.events if e.kind == "checkpoint"] == []
        assert traj.events[-1].get("task_success") is False
        assert verdict(SPEC, "subgraph_waiting") == ("BLOCK", "checkpoint-skipped")

    def test_refused_in_a_subgraph_approval_node_sends_nothing(self) -> None:
        traj = trajectory("subgraph_rejected_not_sent")
        assert steps(traj) == [
            ("action", "triage", "lookup_account"), ("action", "triage", "transfer_to_reporter"),
            ("handoff", "triage", "reporter"), ("final", "reporter", None)]
        assert verdict(SPEC, "subgraph_rejected_not_sent") == ("PASS", "trajectory-conforms")


@pytest.mark.parametrize("name", ["subgraph_approved", "rejected_but_sent"])
def test_live_thread_matches_the_kept_one(name: str) -> None:
    """The reader on the running graph gives what the kept file holds."""
    script = load_script(FOLDER / "record.py")
    assert rows(script.THREADS[name]().to_jsonl()) == rows(
        (FOLDER / f"{name}.jsonl").read_text())
