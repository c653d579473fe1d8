"""The Inspect AI reader on eval logs recorded by Inspect itself (tests/data/inspect/record.py)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from roadcheck.ingest import ReadFailure, detect_format, load
from roadcheck.ingest.inspect_ai import MAX_MEMBER_BYTES

DATA = Path(__file__).resolve().parents[1] / "data" / "inspect"
SPEC = ("mandatory_checkpoints:\n  - {checkpoint_id: approve_send_report, "
        "confirmed_by: [owner], must_precede: send_report}\n")


def entries(path: Path | str, data: bytes | None = None) -> list:
    fmt, it = load(str(path), data=data)
    assert fmt == "inspect"
    return list(it)


def replay(tmp_path: Path, *logs: Path) -> tuple[int, str]:
    from click.testing import CliRunner

    from roadcheck.cli import cli

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    res = CliRunner().invoke(cli, ["replay", str(spec), *map(str, logs)])
    return res.exit_code, res.output


def actions(traj) -> list[dict]:
    return [e.data for e in traj.events if e.kind == "action"]


@pytest.mark.parametrize("name", ["approved.eval", "approved.json"])
def test_two_samples_are_two_trajectories_and_approved_sends_pass(tmp_path, name):
    got = entries(DATA / name)
    assert {t.id.split("#")[1] for t in got} == {"send/epoch1", "lookup-error/epoch1"}
    code, out = replay(tmp_path, DATA / name)
    assert code == 0, out
    assert "2 PASS, 0 BLOCK, 0 ERROR" in out


def test_the_approval_is_a_checkpoint_by_the_approver_before_the_send():
    send = next(t for t in entries(DATA / "approved.json") if "#send/" in t.id)
    kinds = [(e.kind, e.data.get("checkpoint_id") or e.data.get("action_type"))
             for e in send.events]
    assert (kinds.index(("checkpoint", "approve_send_report"))
            < kinds.index(("action", "send_report")))
    cp = next(e.data for e in send.events if e.kind == "checkpoint")
    assert cp["confirmed_by"] == "owner" and cp["decision"] == "approve"
    act = actions(send)[0]
    assert act["result"] == "sent to cfo@example.com" and act["call_id"] == cp["call_id"]


def test_no_approval_blocks(tmp_path):
    code, out = replay(tmp_path, DATA / "missing.json")
    assert code == 1 and "checkpoint-skipped" in out


def test_an_auto_approval_is_not_the_owner(tmp_path):
    code, out = replay(tmp_path, DATA / "auto.json")
    assert code == 1 and 'confirmed by "auto"' in out


def test_a_modified_call_is_approved_and_runs_with_the_new_arguments(tmp_path):
    (traj,) = entries(DATA / "modified.json")
    cp = next(e.data for e in traj.events if e.kind == "checkpoint")
    assert cp["decision"] == "modify" and cp["confirmed_by"] == "owner"
    assert actions(traj)[0]["args"]["to"] == "owner@example.com"
    assert replay(tmp_path, DATA / "modified.json")[0] == 0


def test_rejected_and_not_run_is_no_action_and_escalate_is_no_checkpoint():
    (traj,) = entries(DATA / "rejected.json")
    assert actions(traj) == []
    assert [e for e in traj.events if e.kind == "checkpoint"] == []


def test_an_errored_tool_is_an_action_with_an_error_not_a_result():
    traj = next(t for t in entries(DATA / "approved.json") if "#lookup-error/" in t.id)
    lookup = next(a for a in actions(traj) if a["action_type"] == "lookup_account")
    assert lookup["error"] == "no account named missing" and "result" not in lookup


def test_a_rejected_call_that_ran_anyway_is_an_action():
    doc = json.loads((DATA / "rejected.json").read_bytes())
    for ev in doc["samples"][0]["events"]:
        if ev["event"] == "tool":
            ev["error"], ev["result"] = None, "sent to cfo@example.com"
    (traj,) = entries("ran.json", json.dumps(doc).encode())
    assert [a["action_type"] for a in actions(traj)] == ["send_report"]


def test_detected_by_content():
    assert detect_format((DATA / "approved.json").read_bytes()) == "inspect"
    assert detect_format((DATA / "approved.eval").read_bytes()) == "inspect"


def test_a_malformed_sample_is_that_samples_error_with_its_line(tmp_path):
    text = (DATA / "approved.json").read_text()
    bad = text.replace('"approver": "owner"', '"approver": 7', 1)
    got = entries("bad.json", bad.encode())
    failures = [e for e in got if isinstance(e, ReadFailure)]
    assert len(failures) == 1 and len(got) == 2
    msg = failures[0].error.location_message()
    assert msg.startswith("bad.json:") and "approver" in msg
    assert failures[0].error.line is not None


@pytest.mark.parametrize("decision", ["[]", '{"a": 1}', "null", "3"])
def test_an_approval_decision_that_is_no_name_is_that_samples_error(decision):
    """A decision written as a list or an object (unhashable) is read as bad input."""
    text = (DATA / "approved.json").read_text()
    bad = text.replace('"decision": "approve"', f'"decision": {decision}', 1)
    assert bad != text
    got = entries("bad.json", bad.encode())
    failures = [e for e in got if isinstance(e, ReadFailure)]
    assert len(failures) == 1 and len(got) == 2
    assert "unknown approval decision" in failures[0].error.location_message()


@pytest.mark.parametrize("mutate", [
    lambda b: b[: len(b) // 2],                                   # cut short
    lambda b: b.replace(b'"version": 2,', b'"version": 2, "version": 2,', 1),  # repeated key
    lambda b: b.replace(b'"decision": "approve"', b'"decision": "maybe"', 1),
])
def test_a_malformed_json_log_is_error_not_a_pass(tmp_path, mutate):
    bad = tmp_path / "bad.json"
    bad.write_bytes(mutate((DATA / "approved.json").read_bytes()))
    code, out = replay(tmp_path, bad)
    assert code == 2, out
    assert "bad-input" in out


def _rezip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, raw in members.items():
            zf.writestr(name, raw)
    return buf.getvalue()


def _members() -> dict[str, bytes]:
    from roadcheck.ingest.inspect_ai import _member

    path = str(DATA / "approved.eval")
    with zipfile.ZipFile(DATA / "approved.eval") as zf:
        return {i.filename: _member(zf, i, path) for i in zf.infolist()}


def test_a_deflated_archive_reads_like_the_zstd_one():
    got = entries("x.eval", _rezip(_members()))
    assert len(got) == 2 and not any(isinstance(e, ReadFailure) for e in got)


def test_a_broken_archive_member_is_error():
    members = _members()
    members["samples/send_epoch_1.json"] = members["samples/send_epoch_1.json"][:100]
    got = entries("x.eval", _rezip(members))
    assert len(got) == 1 and isinstance(got[0], ReadFailure)
    assert "samples/send_epoch_1.json" in str(got[0].error)


def test_an_absurd_member_size_is_refused_unread():
    members = _members()
    members["samples/big_epoch_1.json"] = b" " * (MAX_MEMBER_BYTES // 64)  # compresses ~1000x
    got = entries("x.eval", _rezip(members))
    assert len(got) == 1 and isinstance(got[0], ReadFailure)
    assert "refused" in str(got[0].error)


def test_an_archive_that_is_no_zip_is_error():
    data = (DATA / "approved.eval").read_bytes()
    got = entries("x.eval", data[:200])
    assert len(got) == 1 and isinstance(got[0], ReadFailure)


def test_a_handoff_is_from_the_agent_that_handed_over():
    """Inspect writes each event's span; agent spans name the agent (react(name=...))."""
    (traj,) = entries(DATA / "matrix" / "handoff.json")
    got = [(e.kind, e.agent, e.action_type or e.get("to_agent")) for e in traj.events
           if e.kind in ("action", "handoff")]
    assert got == [("action", "triage", "transfer_to_reporter"),
                   ("handoff", "triage", "reporter"),
                   ("action", "reporter", "send_report"),
                   ("action", "reporter", "submit"),
                   ("action", "triage", "submit")]
    (handoff,) = [e for e in traj.events if e.kind == "handoff"]
    assert (handoff.get("from_agent"), handoff.get("payload")) == ("triage", {})


def test_a_log_without_agent_spans_names_inspect():
    (traj,) = entries(DATA / "missing.json")
    assert {e.agent for e in traj.events if e.kind == "action"} == {"inspect"}


@pytest.mark.parametrize(("change", "message"), [
    ({"id": None}, "a span_begin event has no 'id'"),
    ({"name": ""}, "an agent span has no 'name'"),
])
def test_a_malformed_agent_span_is_the_samples_error(tmp_path, change, message):
    log = json.loads((DATA / "matrix" / "handoff.json").read_text())
    span = next(e for e in log["samples"][0]["events"]
                if e["event"] == "span_begin" and e.get("type") == "agent")
    span.update(change)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log, indent=2))
    (failure,) = entries(path)
    assert isinstance(failure, ReadFailure) and message in str(failure.error)
    assert failure.error.line is not None
