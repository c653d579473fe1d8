"""The ATIF reader: Agent Trajectory Interchange Format v1.x documents into events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roadcheck import replay
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, detect_format, load

DATA = Path(__file__).resolve().parent.parent / "data" / "frameworks"
SPEC = DATA / "spec.yaml"


def read(path: Path, fmt: str | None = None) -> list[Trajectory | ReadFailure]:
    got, items = load(str(path), fmt)
    assert got == "atif"
    return list(items)


def one(path: Path) -> Trajectory:
    (traj,) = read(path)
    assert isinstance(traj, Trajectory), traj
    return traj


def verdict(path: Path) -> tuple[str, str]:
    result = replay(SPEC, [str(path)]).results[0]
    return result.verdict, result.headline


def doc(name: str = "atif_approved.json") -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA / name).read_text())
    return loaded


def write(tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(value))
    return path


def test_mapping() -> None:
    """Steps become messages and actions; the embedded subagent follows its handoff."""
    traj = one(DATA / "atif_approved.json")
    assert traj.id == str(DATA / "atif_approved.json")
    steps = [(e.kind, e.agent, e.get("action_type") or e.get("role") or e.get("to_agent")
              or e.get("checkpoint_id")) for e in traj.events]
    assert steps == [
        ("message", "system", "system"), ("message", "user", "user"),
        ("message", "triage", "assistant"), ("action", "triage", "lookup_account"),
        ("action", "triage", "transfer_to_reporter"), ("handoff", "triage", "reporter"),
        ("message", "user", "user"), ("message", "user", "user"),
        ("checkpoint", "user", "approve_send_report"), ("action", "reporter", "send_report"),
        ("message", "reporter", "assistant"), ("message", "triage", "assistant"),
        ("final", "triage", None)]
    lookup = traj.events[3].data
    assert lookup["args"] == {"name": "acme"} and lookup["call_id"] == "call_lookup"
    assert lookup["result"] == '{"account": "acme", "open_tickets": 3}'
    assert lookup["step_id"] == 3 and traj.events[3].ts == "2026-07-11T03:14:02Z"
    handoff = traj.events[5].data
    assert handoff["payload"] == {"account": "acme"} and handoff["session_id"] == "reporter-run-1"
    assert traj.events[8].data["confirmed_by"] == "owner"
    assert traj.events[2].data["yields_turn"] is False
    assert traj.events[-1].data["task_success"] is True
    assert traj.meta == {"session_id": "triage-run-1"}


@pytest.mark.parametrize(("name", "expected"), [
    ("atif_approved.json", ("PASS", "trajectory-conforms")),
    ("atif_no_approval.json", ("BLOCK", "checkpoint-skipped")),
    ("atif_approved_late.json", ("BLOCK", "checkpoint-after-action")),
    ("atif_rejected.json", ("PASS", "trajectory-conforms")),
])
def test_verdicts(name: str, expected: tuple[str, str]) -> None:
    assert detect_format((DATA / name).read_bytes()) == "atif"
    assert verdict(DATA / name) == expected


def test_rejection_is_no_checkpoint(tmp_path: Path) -> None:
    """A rejected approval gives no checkpoint, so sending anyway is checkpoint-skipped."""
    value = doc()
    sub = value["subagent_trajectories"][0]
    sub["steps"][1]["extra"]["checkpoint"]["decision"] = "rejected"
    path = write(tmp_path, value)
    assert [e for e in one(path).events if e.kind == "checkpoint"] == []
    assert verdict(path) == ("BLOCK", "checkpoint-skipped")


def _external(tmp_path: Path, sub: Any) -> Path:
    """The approved run with its reporter subagent moved to its own file."""
    value = doc()
    embedded = value.pop("subagent_trajectories")[0]
    value["steps"][3]["observation"]["results"][0]["subagent_trajectory_ref"][0][
        "trajectory_path"] = "reporter.json"
    if sub is not None:
        (tmp_path / "reporter.json").write_text(json.dumps(embedded if sub is True else sub))
    return write(tmp_path, value)


def test_external_subagent_file_is_read(tmp_path: Path) -> None:
    """A subagent kept in its own file is read from beside the root document."""
    path = _external(tmp_path, True)
    traj = one(path)
    kinds = [e.kind for e in traj.events]
    assert kinds.index("handoff") < kinds.index("checkpoint")
    assert "send_report" in [e.action_type for e in traj.events]
    assert verdict(path) == ("PASS", "trajectory-conforms")


@pytest.mark.parametrize(("sub", "needle"), [
    (None, "subagent 'reporter-run-1' at 'reporter.json': cannot read"),
    ({"schema_version": "ATIF-v1.7", "session_id": "someone-else", "steps": []},
     "its session_id differs"),
])
def test_unreadable_external_subagent_is_bad_input(tmp_path: Path, sub: Any,
                                                   needle: str) -> None:
    """A subagent file that is missing or is another run fails closed, naming the reference."""
    (entry,) = read(_external(tmp_path, sub))
    assert isinstance(entry, ReadFailure)
    assert needle in entry.error.message
    assert verdict(tmp_path / "trajectory.json")[0] == "ERROR"


def test_list_of_documents(tmp_path: Path) -> None:
    """A JSON list of ATIF documents: one trajectory per document, id by session."""
    good, bad = doc(), doc()
    bad["session_id"] = "broken"
    bad["steps"][0]["source"] = "robot"
    entries = read(write(tmp_path, [good, bad]))
    assert isinstance(entries[0], Trajectory)
    assert entries[0].id.endswith("#triage-run-1")
    assert isinstance(entries[1], ReadFailure) and entries[1].id.endswith("#broken")
    assert entries[1].error.message == "trajectory 1: step 0 (step_id 1): unknown source 'robot'"


def test_task_success_only_when_claimed(tmp_path: Path) -> None:
    value = doc()
    del value["extra"]
    assert one(write(tmp_path, value)).events[-1].data["task_success"] is False


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("steps"), "'steps' must be a non-empty list"),
    (lambda d: d.update(schema_version="ATIF-v2.0"),
     "unsupported schema_version 'ATIF-v2.0' (expected ATIF-v1.x)"),
    (lambda d: d.pop("agent"), "missing required key 'agent.name'"),
    (lambda d: d["steps"][2].update(tool_calls={"x": 1}),
     "step 2 (step_id 3): 'tool_calls' must be a list, got dict"),
    (lambda d: d["steps"][2]["tool_calls"][0].update(arguments="name=acme"),
     "step 2 (step_id 3): tool call 0: 'arguments' must be an object, got str"),
    (lambda d: d["steps"][2].update(observation={"results": 3}),
     "step 2 (step_id 3): 'observation.results' must be a list"),
    (lambda d: d["steps"][3]["observation"]["results"][0].update(subagent_trajectory_ref=[{}]),
     "step 3 (step_id 4): observation result 0: a subagent_trajectory_ref has no "
     "'trajectory_id', 'trajectory_path' or 'session_id'"),
    (lambda d: d["steps"][1].update(extra={"checkpoint": {"id": ""}}),
     "step 1 (step_id 2): 'extra.checkpoint.id' must be a non-empty string"),
])
def test_malformed(tmp_path: Path, change: Any, message: str) -> None:
    value = doc()
    change(value)
    (failure,) = read(write(tmp_path, value), "atif")
    assert isinstance(failure, ReadFailure)
    assert failure.error.message == message


def test_missing_function_name_in_subagent_names_both_steps() -> None:
    (failure,) = read(DATA / "atif_missing_function_name.json")
    assert isinstance(failure, ReadFailure)
    assert failure.error.message == (
        "step 3 (step_id 4): subagent trajectory 'reporter-run-1': step 2 (step_id 3): "
        "tool call 0 has no 'function_name'")
    assert verdict(DATA / "atif_missing_function_name.json") == ("ERROR", "bad-input")


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"schema_version": "ATIF-v1.4", "steps": [')
    (failure,) = read(path)
    assert isinstance(failure, ReadFailure) and "unparseable JSON" in failure.error.message


class TestOneStepOneApproval:
    """A user step that says "Approved." and records ``extra.checkpoint`` is one human
    yes: a derive rule on its text and its recorded checkpoint license once."""

    MATRIX = Path(__file__).resolve().parent.parent / "data" / "atif" / "matrix"

    def _spec(self) -> Any:
        from roadcheck.conformance import parse_spec

        return parse_spec({
            "mandatory_checkpoints": [{"checkpoint_id": "approve_send_report",
                                       "must_precede": "send_report", "scope": "each",
                                       "consume": True}],
            "derive": [{"checkpoint_id": "approve_send_report",
                        "when": {"event": "message", "role": "user",
                                 "text": {"regex": "(?i)approved"}}}]})

    def test_one_step_licenses_one_send(self) -> None:
        result = replay(self._spec(), [str(self.MATRIX / "two-sends-one-approval.json")])
        (only,) = result.results
        assert only.verdict == "BLOCK"
        (reason,) = only.reasons
        assert reason.code == "checkpoint-skipped" and reason.seq == 5
        assert "already used by seq 4" in reason.message

    def test_two_steps_are_two_approvals(self, tmp_path: Path) -> None:
        data = json.loads((self.MATRIX / "two-sends-one-approval.json").read_text())
        second = dict(data["steps"][1], step_id=99)
        second.pop("extra")
        data["steps"].insert(3, second)  # "Approved, send it." again, between the sends
        path = tmp_path / "two-approvals.json"
        path.write_text(json.dumps(data))
        assert replay(self._spec(), [str(path)]).results[0].verdict == "PASS"
