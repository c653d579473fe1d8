"""pydantic-ai's run, its approval and the resumed run are one trajectory.

Without an enclosing span they are three traces; the spans in
tests/data/frameworks/pydantic_ai/ were recorded from pydantic-ai itself
(``record_conversation.py``) and share ``gen_ai.conversation.id``.
"""

from __future__ import annotations

from roadcheck import replay
from roadcheck.conformance import load_spec
from roadcheck.events import Trajectory
from roadcheck.ingest import load

from ..conftest import DATA

FOLDER = DATA / "frameworks" / "pydantic_ai"
SPEC = DATA / "frameworks" / "spec.yaml"


def _trajectories(name: str) -> list[Trajectory]:
    fmt, entries = load(str(FOLDER / name))
    assert fmt == "otel"
    out = list(entries)
    assert all(isinstance(t, Trajectory) for t in out)
    return out  # type: ignore[return-value]


def test_three_traces_of_one_conversation_are_one_trajectory() -> None:
    (traj,) = _trajectories("approved.jsonl")
    kinds = [(e.kind, e.get("checkpoint_id") or e.get("action_type")) for e in traj.events]
    assert kinds == [("checkpoint", "approve_send_report"), ("action", "send_report"),
                     ("final", None)]
    assert len(traj.meta["traces"]) == 3
    assert traj.meta["conversation_id"] == "01a2308b-ba3f-7586-a541-369ae30f0761"


def test_the_approval_in_its_own_trace_licenses_the_resumed_send() -> None:
    run = replay(load_spec(SPEC), [str(FOLDER / "approved.jsonl")])
    assert [r.verdict for r in run.results] == ["PASS"]


def test_a_rejected_conversation_sends_nothing() -> None:
    (traj,) = _trajectories("rejected.jsonl")
    assert [e.kind for e in traj.events if e.kind in ("action", "checkpoint")] == []


def test_traces_without_a_conversation_id_stay_apart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    lines = (FOLDER / "approved.jsonl").read_text(encoding="utf-8").splitlines()
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(line.replace('"gen_ai.conversation.id"', '"x.other"') + "\n"
                            for line in lines), encoding="utf-8")
    _, entries = load(str(bare))
    assert len(list(entries)) == 3
