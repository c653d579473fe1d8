"""Verdicts on traces recorded from the real frameworks (kept in tests/data/frameworks).

Each file was written by the framework itself, run offline with scripted
models; the scenario is in the test's docstring.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roadcheck import replay
from roadcheck.events import Trajectory
from roadcheck.ingest import load

DATA = Path(__file__).resolve().parent.parent / "data" / "frameworks"
SPEC = DATA / "spec.yaml"


def trajectories(name: str) -> list[Trajectory]:
    _, entries = load(str(DATA / name))
    out = list(entries)
    assert all(isinstance(t, Trajectory) for t in out), out
    return out  # type: ignore[return-value]


def test_one_recorded_approval_matched_by_derive_is_one_checkpoint() -> None:
    """Agents SDK: one approval with always_approve, then two sends.

    The derive rule matches the recorded approval itself; it must not become a
    second checkpoint, so under ``consume`` the second send has no approval.
    """
    (traj,) = trajectories("openai_agents_always_approve.jsonl")
    kinds = [(e.kind, e.get("action_type") or e.get("checkpoint_id")) for e in traj.events]
    assert kinds == [("checkpoint", "approve_send_report"), ("action", "send_report"),
                     ("action", "send_report"), ("final", None)]
    result = replay(DATA / "spec_consume_derive.yaml",
                    [str(DATA / "openai_agents_always_approve.jsonl")]).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")


def test_a_span_with_output_ran_whatever_the_recorded_decision() -> None:
    """Agents SDK: rejected through the recorder, then approved directly on the run state.

    The send's function span carries output: the tool ran. The recorded
    rejection does not hide it, and the missing approval blocks.
    """
    (traj,) = trajectories("openai_agents_rejected_then_approved.jsonl")
    (send,) = [e for e in traj.events if e.kind == "action"]
    assert (send.action_type, send.get("result")) == ("send_report", "sent report on acme")
    result = replay(SPEC, [str(DATA / "openai_agents_rejected_then_approved.jsonl")]).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")


def test_atif_subagent_referenced_by_trajectory_id() -> None:
    """ATIF v1.7+: a reference by ``trajectory_id`` alone (no ``session_id``) resolves.

    Written by hand to the shape of the format's v1.7 models. The subagents
    share the run's ``session_id``, which the format allows; the
    reporter's approval and send follow the handoff, and the run PASSes.
    """
    (traj,) = trajectories("atif_v1_8_trajectory_id.json")
    handoff = next(e for e in traj.events if e.kind == "handoff")
    assert (handoff.get("to_agent"), handoff.get("trajectory_id")) == ("reporter",
                                                                        "reporter-traj")
    send = next(e for e in traj.events if e.action_type == "send_report")
    assert send.agent == "reporter" and send.seq > handoff.seq
    assert "notes" in {e.agent for e in traj.events}
    result = replay(SPEC, [str(DATA / "atif_v1_8_trajectory_id.json")]).results[0]
    assert result.verdict == "PASS", result.reasons


def test_harbor_written_atif_subagent_referenced_by_trajectory_id() -> None:
    """ATIF v1.8 built and validated by Harbor's own models (``record_atif_harbor.py``).

    The embedded reporter has no ``session_id``; the reference names its
    ``trajectory_id`` alone. The handoff, the owner's approval and the send
    are read in order, and the run PASSes.
    """
    (traj,) = trajectories("atif_harbor_trajectory_id.json")
    steps = [(e.kind, e.agent, e.get("action_type") or e.get("checkpoint_id") or
              e.get("to_agent")) for e in traj.events if e.kind != "message"]
    assert steps == [
        ("action", "triage", "lookup_account"), ("action", "triage", "transfer_to_reporter"),
        ("handoff", "triage", "reporter"), ("checkpoint", "user", "approve_send_report"),
        ("action", "reporter", "send_report"), ("final", "triage", None)]
    assert traj.events[4].get("payload") == {"account": "acme"}
    result = replay(SPEC, [str(DATA / "atif_harbor_trajectory_id.json")]).results[0]
    assert result.verdict == "PASS", result.reasons


def test_harbor_written_atif_approval_matched_by_derive_is_one_checkpoint() -> None:
    """ATIF by Harbor's models: one ``extra.checkpoint`` approval, then two sends.

    The derive rule matches the recorded approval; it stays one checkpoint, so
    under ``consume`` the second send has none.
    """
    (traj,) = trajectories("atif_harbor_one_approval_two_sends.json")
    assert [e.kind for e in traj.events if e.kind in ("checkpoint", "action")] == [
        "checkpoint", "action", "action"]
    result = replay(DATA / "spec_consume_derive.yaml",
                    [str(DATA / "atif_harbor_one_approval_two_sends.json")]).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")


@pytest.mark.parametrize(("name", "agent"), [
    ("openinference/langchain_instrumented.json", None),
    ("openllmetry/traceloop_decorated.json", "reporter")])
def test_spans_written_by_the_instrumentation_libraries_are_read(name: str,
                                                                 agent: str | None) -> None:
    """Spans written by OpenInference's LangChainInstrumentor and OpenLLMetry's decorators.

    ``record_instrumented_spans.py`` let each library trace a lookup and a
    send with no approval. Both TOOL spans are actions (with their arguments),
    so the unapproved send blocks instead of passing with no tool call read.
    """
    (traj,) = trajectories(name)
    actions = [(e.agent, e.action_type, e.get("args")) for e in traj.events if e.kind == "action"]
    assert [(a, t) for a, t, _ in actions] == [(agent, "lookup_account"), (agent, "send_report")]
    assert actions[1][2] == {"account": "acme", "summary": "3 open tickets"}
    result = replay(DATA / "spec_any_approver.yaml", [str(DATA / name)]).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")
