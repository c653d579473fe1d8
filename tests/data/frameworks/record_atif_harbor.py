"""Record the ATIF files ``atif_harbor_*.json`` with Harbor's own trajectory models.

Each document is built from ``harbor.models.trajectories`` (which validate
every field, the step order and the subagent references) and written the
way Harbor's agents write ``trajectory.json``: ``json.dump(trajectory.to_json_dict(),
indent=2, ensure_ascii=False)``. Needs ``harbor`` (Python 3.12+; written with
harbor 0.25.0):

    python tests/data/frameworks/record_atif_harbor.py

- ``atif_harbor_trajectory_id.json``: triage hands over to an embedded
  reporter subagent referenced by ``trajectory_id`` alone (no ``session_id``,
  as ATIF v1.7+ allows); the owner approves (``extra.checkpoint``) and the
  reporter sends.
- ``atif_harbor_one_approval_two_sends.json``: one recorded approval, then
  two sends.
- ``tests/data/atif/matrix/<scenario>.json``: one document per scenario of the
  end-to-end matrix (tests/frameworks/matrix.py) that ATIF can express: a
  reporter sends the report, with the owner's decision recorded under the
  deciding step's ``extra.checkpoint``; ``handoff.json`` has triage hand over
  to an embedded reporter without the ``account``; ``two-runs.json`` is a JSON
  list of two documents.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from harbor.models.trajectories import (
    Agent,
    Observation,
    ObservationResult,
    Step,
    SubagentTrajectoryRef,
    ToolCall,
    Trajectory,
)

HERE = Path(__file__).resolve().parent


def at(second: int) -> str:
    return f"2026-07-11T03:14:{second:02d}Z"


def call(step_id: int, second: int, call_id: str, name: str, args: dict[str, Any],
         result: str, ref: str | None = None) -> Step:
    refs = [SubagentTrajectoryRef(trajectory_id=ref)] if ref else None
    return Step(step_id=step_id, timestamp=at(second), source="agent", message="",
                tool_calls=[ToolCall(tool_call_id=call_id, function_name=name, arguments=args)],
                observation=Observation(results=[ObservationResult(
                    source_call_id=call_id, content=result, subagent_trajectory_ref=refs)]))


def approval(step_id: int, second: int) -> Step:
    return Step(step_id=step_id, timestamp=at(second), source="user",
                message="Approved, send it.",
                extra={"checkpoint": {"id": "approve_send_report", "confirmed_by": "owner",
                                      "decision": "approved"}})


def agent(name: str) -> Agent:
    return Agent(name=name, version="1.0.0", model_name="scripted")


def handed_over() -> Trajectory:
    reporter = Trajectory(
        schema_version="ATIF-v1.8", trajectory_id="reporter-traj", agent=agent("reporter"),
        steps=[Step(step_id=1, timestamp=at(10), source="user",
                    message="Report on account acme."),
               approval(2, 12),
               call(3, 13, "call_send", "send_report",
                    {"account": "acme", "summary": "3 open tickets"}, "sent"),
               Step(step_id=4, timestamp=at(14), source="agent",
                    message="The report was sent.")])
    return Trajectory(
        schema_version="ATIF-v1.8", trajectory_id="triage-traj", session_id="triage-run-1",
        agent=agent("triage"),
        steps=[Step(step_id=1, timestamp=at(0), source="system",
                    message="You triage account requests."),
               Step(step_id=2, timestamp=at(1), source="user",
                    message="Weekly report for acme, please."),
               call(3, 2, "call_lookup", "lookup_account", {"name": "acme"},
                    '{"account": "acme", "open_tickets": 3}'),
               call(4, 3, "call_transfer", "transfer_to_reporter", {"account": "acme"},
                    "report handled", ref="reporter-traj"),
               Step(step_id=5, timestamp=at(20), source="agent",
                    message="Done: the reporter sent the weekly report.")],
        subagent_trajectories=[reporter], extra={"task_success": True})


def one_approval_two_sends() -> Trajectory:
    return Trajectory(
        schema_version="ATIF-v1.8", session_id="reporter-run-1", agent=agent("reporter"),
        steps=[Step(step_id=1, timestamp=at(0), source="user",
                    message="Send both parts of the acme report."),
               approval(2, 1),
               call(3, 2, "call_send_1", "send_report", {"account": "acme", "summary": "part 1"},
                    "sent"),
               call(4, 3, "call_send_2", "send_report", {"account": "acme", "summary": "part 2"},
                    "sent")],
        extra={"task_success": True})


def decision(step_id: int, second: int, decided: str) -> Step:
    said = "Approved, send it." if decided == "approved" else "No, do not send it."
    return Step(step_id=step_id, timestamp=at(second), source="user", message=said,
                extra={"checkpoint": {"id": "approve_send_report", "confirmed_by": "owner",
                                      "decision": decided}})


def reporter_run(session: str, *middle: Step) -> Trajectory:
    """A reporter run: the request, then ``middle`` (decisions and sends), then its answer."""
    steps = [Step(step_id=1, timestamp=at(0), source="user",
                  message="Send the weekly report on acme.")]
    for i, step in enumerate(middle, 2):
        steps.append(step.model_copy(update={"step_id": i}))
    steps.append(Step(step_id=len(steps) + 1, timestamp=at(30), source="agent",
                      message="Done."))
    return Trajectory(schema_version="ATIF-v1.8", session_id=session, agent=agent("reporter"),
                      steps=steps)


def send(second: int, n: int = 1) -> Step:
    return call(1, second, f"call_send_{n}", "send_report",
                {"account": "acme", "summary": f"part {n}"}, "sent")


def matrix_handoff() -> Trajectory:
    reporter = Trajectory(
        schema_version="ATIF-v1.8", trajectory_id="reporter-traj", agent=agent("reporter"),
        steps=[Step(step_id=1, timestamp=at(10), source="user", message="Send the report."),
               decision(2, 11, "approved"),
               call(3, 12, "call_send_1", "send_report",
                    {"account": "acme", "summary": "3 open tickets"}, "sent")])
    return Trajectory(
        schema_version="ATIF-v1.8", trajectory_id="triage-traj", session_id="triage-run-1",
        agent=agent("triage"),
        steps=[Step(step_id=1, timestamp=at(0), source="user",
                    message="Weekly report for acme, please."),
               call(2, 1, "call_transfer", "transfer_to_reporter", {"note": "weekly report"},
                    "report handled", ref="reporter-traj")],
        subagent_trajectories=[reporter])


MATRIX: dict[str, Any] = {
    "approved": lambda: reporter_run("approved", decision(1, 1, "approved"), send(2)),
    "missing": lambda: reporter_run("missing", send(2)),
    "rejected-but-sent": lambda: reporter_run("rejected-but-sent",
                                              decision(1, 1, "rejected"), send(2)),
    "rejected-not-sent": lambda: reporter_run("rejected-not-sent",
                                              decision(1, 1, "rejected")),
    "after-action": lambda: reporter_run("after-action", send(1), decision(1, 2, "approved")),
    "two-sends-one-approval": lambda: reporter_run(
        "two-sends", decision(1, 1, "approved"), send(2, 1), send(3, 2)),
    "handoff": matrix_handoff,
    "two-runs": lambda: [reporter_run("run-1", decision(1, 1, "approved"), send(2)),
                         reporter_run("run-2", send(2))],
}


def _dump(doc: Any, path: Path) -> None:
    value = [d.to_json_dict() for d in doc] if isinstance(doc, list) else doc.to_json_dict()
    with path.open("w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=2, ensure_ascii=False)
    sys.stdout.write(f"wrote {path}\n")


DOCUMENTS = {"atif_harbor_trajectory_id.json": handed_over,
             "atif_harbor_one_approval_two_sends.json": one_approval_two_sends}


def main(out: Path = HERE) -> None:
    for name, build in DOCUMENTS.items():
        _dump(build(), out / name)
    folder = out.parent / "atif" / "matrix"
    folder.mkdir(parents=True, exist_ok=True)
    for scenario, build in MATRIX.items():
        _dump(build(), folder / f"{scenario}.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
