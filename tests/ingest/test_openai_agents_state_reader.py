"""The OpenAI Agents SDK RunState reader: saved states from the SDK's corpus, built
states in its shape, and malformed ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import roadcheck
from roadcheck.events import Trajectory
from roadcheck.ingest import detect_format, load

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "openai-agents-state"
BUILT = DATA / "built" / "approved_and_rejected.json"


def _one(path: Path | str, data: bytes | None = None) -> Trajectory:
    fmt, entries = load(str(path), data=data)
    assert fmt == "openai-agents-state"
    (entry,) = list(entries)
    assert isinstance(entry, Trajectory), entry
    return entry


def _error(data: bytes, tmp_path: Path) -> tuple[int | None, str]:
    path = tmp_path / "state.json"
    path.write_bytes(data)
    _, entries = load(str(path), "openai-agents-state")
    (entry,) = list(entries)
    assert not isinstance(entry, Trajectory), entry
    assert entry.path == str(path)
    return entry.error.line, entry.error.message


def _doc() -> dict:
    return json.loads(BUILT.read_text(encoding="utf-8"))


def test_the_built_state_reads_into_the_expected_events() -> None:
    traj = _one(BUILT)
    got = [(ev.kind, ev.agent, ev.data.get("action_type") or ev.data.get("checkpoint_id")
            or ev.data.get("role") or ev.data.get("to_agent")) for ev in traj.events]
    assert got == [("message", "user", "user"),
                   ("handoff", "triage-agent", "billing-agent"),
                   ("action", "billing-agent", "lookup_account"),
                   ("checkpoint", "user", "agents-sdk-approval"),
                   ("action", "billing-agent", "send_refund"),
                   ("message", "billing-agent", "assistant"),
                   ("final", None, None)]
    cp, refund = traj.events[3].data, traj.events[4].data
    assert cp["confirmed_by"] == "user" and cp["call_id"] == "call-refund-1"
    assert cp["tool"] == "send_refund"
    assert refund["args"] == {"account_id": "acct-7", "amount": 40}
    assert refund["call_id"] == "call-refund-1" and refund["result"] == "refunded 40"
    # the rejected close_account and the pending second refund never ran
    assert not any(ev.data.get("call_id") in ("call-close-1", "call-refund-2")
                   for ev in traj.events)
    assert traj.meta["pending_approvals"] == ["call-refund-2"]
    assert traj.events[-1].data["interrupted"] is True


def test_the_sdk_corpus_pending_approval_is_not_run() -> None:
    traj = _one(DATA / "v1_13_pending_tool_approval.json")
    assert [ev.kind for ev in traj.events] == ["message", "final"]
    assert traj.events[0].data["text"] == "historical input"
    assert traj.meta == {"schema_version": "1.13", "current_agent": "compat-agent",
                         "pending_approvals": ["historical-approval-1"]}


def _verdict(path: Path) -> tuple[str, list[str]]:
    (result,) = roadcheck.replay(str(DATA / "spec.yaml"), [str(path)]).results
    return result.verdict, [f.code.value for f in result.reasons]


def test_an_approved_call_passes_and_an_unapproved_one_is_blocked() -> None:
    assert _verdict(BUILT) == ("PASS", ["trajectory-conforms"])
    assert _verdict(DATA / "built" / "unapproved.json") == ("BLOCK", ["checkpoint-skipped"])


def test_an_approval_of_another_call_does_not_license_this_one(tmp_path: Path) -> None:
    doc = _doc()
    doc["context"]["approvals"]["send_refund"]["approved"] = ["call-refund-other", "call-refund-2"]
    doc["context"]["approvals"]["send_refund"]["approved"][1] = "call-refund-1x"
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc, indent=2))
    verdict, reasons = _verdict(path)
    assert verdict == "BLOCK", reasons


def test_a_sticky_approval_approves_every_call_of_the_tool() -> None:
    doc = _doc()
    doc["context"]["approvals"]["send_refund"]["approved"] = True
    traj = _one("state.json", json.dumps(doc).encode())
    cps = [ev.data["call_id"] for ev in traj.events if ev.kind == "checkpoint"]
    assert cps == ["call-refund-1", "call-refund-2"]  # the second approved, not yet run
    assert "pending_approvals" not in traj.meta


def test_detection_is_by_content_and_takes_no_other_format() -> None:
    assert detect_format(BUILT.read_bytes()) == "openai-agents-state"
    assert detect_format(b'{"$schemaVersion": "1.17"}') == "openai-agents-state"
    assert detect_format(b'{"untrusted": "x"}') != "openai-agents-state"
    assert detect_format(b'[{"$schemaVersion": "1.17"}]') != "openai-agents-state"
    assert detect_format(b'{"a": {"$schemaVersion": "1.17"}}') != "openai-agents-state"


@pytest.mark.parametrize(("change", "line", "words"), [
    (lambda d: d.update({"$schemaVersion": "2.0"}), 1, "unsupported '$schemaVersion'"),
    (lambda d: d.pop("original_input"), 1, "'original_input'"),
    (lambda d: d.update({"generated_items": {}}), 1, "'generated_items' must be a list"),
    (lambda d: d["generated_items"][2].update({"type": "mystery_item"}), 78,
     "generated_items[2]: unknown item 'type' 'mystery_item'"),
    (lambda d: d["generated_items"][2]["raw_item"].pop("call_id"), 78,
     "generated_items[2]: 'raw_item' has no 'call_id'"),
    (lambda d: d["generated_items"][2]["raw_item"].update(
        {"arguments": '{"a": 1, "a": 2}'}), 78, "generated_items[2]"),
    (lambda d: d["generated_items"][3]["raw_item"].update({"call_id": "nobody"}), 91,
     "which no earlier item calls"),
    (lambda d: d["generated_items"][7].update({"output": "closed"}), 141,
     "call 'call-close-1' (close_account) was rejected, yet its output"),
    (lambda d: d["context"]["approvals"]["send_refund"].update({"approved": "yes"}), 5,
     "'approved' must be true, false or a list of call ids"),
    (lambda d: d["generated_items"][2].update({"agent": "billing-agent"}), 78,
     "'agent' must be an object"),
])
def test_malformed_structure_is_the_files_error(  # type: ignore[no-untyped-def]
        tmp_path: Path, change, line: int, words: str) -> None:
    doc = _doc()
    change(doc)
    got_line, message = _error(json.dumps(doc, indent=2).encode(), tmp_path)
    assert words in message
    assert got_line == line


def test_an_output_for_a_pending_call_is_an_error(tmp_path: Path) -> None:
    doc = _doc()
    doc["generated_items"].append({"agent": {"name": "billing-agent"}, "output": "refunded 500",
                                   "raw_item": {"call_id": "call-refund-2", "output": "x",
                                                "type": "function_call_output"},
                                   "type": "tool_call_output_item"})
    _, message = _error(json.dumps(doc, indent=2).encode(), tmp_path)
    assert "awaits approval, yet has an output" in message


def test_the_sdk_negative_states_are_errors() -> None:
    for name, words in (("future_version.json", "unsupported '$schemaVersion' '999'"),
                        ("malformed_current_agent.json", "'current_agent' must be an object")):
        fmt, entries = load(str(DATA / "negative" / name))
        assert fmt == "openai-agents-state"
        (entry,) = list(entries)
        assert not isinstance(entry, Trajectory)
        assert words in entry.error.message and entry.error.line == 1


def test_broken_json_and_a_repeated_key_name_the_line(tmp_path: Path) -> None:
    line, message = _error(b'{"$schemaVersion": "1.17",\n "original_input": ', tmp_path)
    assert line == 2 and "unparseable JSON" in message
    line, message = _error(b'{"$schemaVersion": "1.17",\n"current_agent": {"name": "a"},\n'
                           b'"original_input": "x",\n"original_input": "y"}', tmp_path)
    assert line == 4 and "original_input" in message


def test_values_of_the_wrong_type_are_errors_not_crashes(tmp_path: Path) -> None:
    doc = _doc()
    doc["generated_items"][2]["type"] = ["tool_call_item"]
    _, message = _error(json.dumps(doc).encode(), tmp_path)
    assert "unknown item 'type' ['tool_call_item']" in message
    doc = _doc()
    doc["generated_items"][7]["output"] = ["Closing accounts needs a manager."]
    _, message = _error(json.dumps(doc).encode(), tmp_path)
    assert "was rejected, yet its output is not the rejection message" in message


def test_a_history_given_as_input_reads_as_messages_and_calls() -> None:
    doc = {"$schemaVersion": "1.17", "current_agent": {"name": "bot"}, "generated_items": [],
           "original_input": [
               {"role": "system", "content": "Be brief."},
               {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "Weather?"}]},
               {"type": "function_call", "name": "weather", "call_id": "c1",
                "arguments": '{"city": "Oslo"}'},
               {"type": "function_call_output", "call_id": "c1", "output": "rain"},
               {"role": "assistant", "content": "Rain."}]}
    traj = _one("state.json", json.dumps(doc, indent=1).encode())
    got = [(ev.kind, ev.agent, ev.data.get("role") or ev.data.get("action_type"))
           for ev in traj.events]
    assert got == [("message", "system", "system"), ("message", "user", "user"),
                   ("action", "bot", "weather"), ("message", "bot", "assistant"),
                   ("final", None, None)]
    assert traj.events[1].data["text"] == "Weather?"
    assert traj.events[2].data["args"] == {"city": "Oslo"}
    assert traj.events[2].data["result"] == "rain"
