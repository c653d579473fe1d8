"""Claude Code's OpenTelemetry log events (OTLP/JSON exports): the reader, detection, specs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import roadcheck
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, detect_format, load

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "claude-code-otel" / "built"
SPEC_FILE = ROOT / "examples" / "frameworks" / "claude-code-otel" / "spec.yaml"

#: A push needs a person's approval before it.
USER_PUSH = {"mandatory_checkpoints": [{
    "checkpoint_id": "claude-code-approval", "confirmed_by": ["user"],
    "must_precede": {"command": {"words": ["git", "push"]}}}]}
#: The same, any approver.
ANY_PUSH = {"mandatory_checkpoints": [{
    "checkpoint_id": "claude-code-approval",
    "must_precede": {"command": {"words": ["git", "push"]}}}]}


def _value(x: Any) -> dict[str, Any]:
    if isinstance(x, bool):
        return {"boolValue": x}
    if isinstance(x, int):
        return {"intValue": str(x)}
    return {"stringValue": x}


def _rec(name: str, seq: int, session: str = "s1", **attrs: Any) -> dict[str, Any]:
    base = {"session.id": session, "event.name": name, "event.sequence": seq,
            "event.timestamp": f"2026-10-08T08:15:{seq:02d}.000Z", **attrs}
    return {"timeUnixNano": str(1791447300_000_000_000 + seq * 1_000_000_000),
            "body": {"stringValue": f"claude_code.{name}"},
            "attributes": [{"key": k, "value": _value(v)} for k, v in base.items()]}


def _request(*records: dict[str, Any]) -> dict[str, Any]:
    return {"resourceLogs": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "claude-code"}}]},
        "scopeLogs": [{"scope": {"name": "com.anthropic.claude_code.events"},
                       "logRecords": list(records)}]}]}


def _bash(command: str) -> str:
    return json.dumps({"bash_command": command.split()[0], "full_command": command,
                       "description": "run it"})


def _push(source: str, decision: str = "accept", call: str = "toolu_1",
          result: bool = True) -> list[dict[str, Any]]:
    recs = [_rec("user_prompt", 1, prompt_length="7", prompt="push it"),
            _rec("tool_decision", 2, tool_name="Bash", tool_use_id=call, decision=decision,
                 source=source, tool_parameters=_bash("git push origin main"))]
    if result:
        recs.append(_rec("tool_result", 3, tool_name="Bash", tool_use_id=call, success="true",
                         duration_ms="40", tool_parameters=_bash("git push origin main")))
    return recs


def _write(tmp_path: Path, *lines: Any, name: str = "logs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _read(path: Path, fmt: str | None = None) -> list[Any]:
    got, entries = load(str(path), fmt)
    assert got == "claude-code-otel"
    return list(entries)


def _one(path: Path) -> Trajectory:
    (traj,) = _read(path)
    assert isinstance(traj, Trajectory), traj
    return traj


def _verdict(traj: Trajectory, spec: Any = USER_PUSH) -> str:
    return roadcheck.replay(spec, [e.to_dict() for e in traj.events]).results[0].verdict


def _error(path: Path) -> str:
    (entry,) = _read(path)
    assert isinstance(entry, ReadFailure), entry
    return entry.error.location_message()


# -- the sample files --------------------------------------------------------------------------

def test_the_sample_reads_into_the_expected_events() -> None:
    traj = _one(DATA / "approved.jsonl")
    assert traj.id == f"{DATA / 'approved.jsonl'}#3b1f6c2e-9a47-4d2b-8f3e-6c5a1d9e2b70"
    assert traj.source == "claude-code-otel"
    assert traj.meta == {"session_id": "3b1f6c2e-9a47-4d2b-8f3e-6c5a1d9e2b70"}
    shape = [(e.kind, e.get("role") or e.get("checkpoint_id") or e.action_type)
             for e in traj.events]
    assert shape == [("message", "user"), ("checkpoint", "claude-code-approval"),
                     ("action", "Bash"), ("checkpoint", "claude-code-approval"),
                     ("action", "Read"), ("final", None)]
    prompt, approval, push, read_ok, read, _ = traj.events
    assert prompt.get("text") == "Commit the fix and push it to origin main"
    assert prompt.agent == "user" and prompt.line == 1
    assert approval.data == {
        "seq": 2, "ts": "2026-10-08T08:15:17.000Z", "agent": "user", "event": "checkpoint",
        "checkpoint_id": "claude-code-approval", "confirmed_by": "user", "decision": "accept",
        "source": "user_temporary", "tool_name": "Bash", "call_id": "toolu_01PushOrigin"}
    assert approval.line == 2
    assert push.get("command") == "git push origin main"
    assert push.get("call_id") == "toolu_01PushOrigin"
    assert push.get("args") == {"bash_command": "git", "full_command": "git push origin main",
                                "timeout": 120000, "description": "Push the fix to origin",
                                "dangerouslyDisableSandbox": False}
    assert push.get("duration_ms") == 1390 and push.get("decision_source") == "user_temporary"
    assert "error" not in push.data
    # the force push was rejected: no checkpoint, no action
    assert not [e for e in traj.events if e.get("call_id") == "toolu_02ForcePush"]
    assert read_ok.get("confirmed_by") == "config" and read_ok.agent == "claude"
    assert read.get("error") == "Error:ENOENT" and read.get("args") == {}
    assert [e.seq for e in traj.events] == [1, 2, 3, 4, 5, 6]


def test_an_indented_document_with_two_sessions_out_of_order() -> None:
    path = DATA / "two_sessions.json"
    assert detect_format(path.read_bytes()) == "claude-code-otel"
    first, second = _read(path)
    assert first.id.endswith("#a7c3e915-2b64-4d08-9f1a-3e5b7c2d8f46")
    assert second.id.endswith("#c41b8d27-6e93-4a5f-8b0c-9d2e1f7a3b65")
    # event.sequence decides the order, not the order written
    assert [(e.kind, e.get("confirmed_by")) for e in first.events] == [
        ("message", None), ("checkpoint", "hook"), ("action", None), ("final", None)]
    assert first.events[0].get("text") == "<REDACTED>"
    assert second.events[1].get("confirmed_by") == "user"
    assert second.events[1].get("source") == "user_permanent"
    assert _verdict(first) == "BLOCK" and _verdict(second) == "PASS"


def test_an_approved_push_passes_and_a_config_approved_one_does_not() -> None:
    spec = roadcheck.load_spec(SPEC_FILE)
    approved, config = _one(DATA / "approved.jsonl"), _one(DATA / "config_push.jsonl")
    assert _verdict(approved) == "PASS"
    assert _verdict(config) == "BLOCK"
    assert _verdict(config, ANY_PUSH) == "PASS"  # any approver: config counts
    assert _verdict(approved, spec) == "PASS" and _verdict(config, spec) == "BLOCK"


@pytest.mark.parametrize(("source", "verdict"), [
    ("user_temporary", "PASS"), ("user_permanent", "PASS"), ("config", "BLOCK"),
    ("hook", "BLOCK")])
def test_only_a_persons_approval_passes_confirmed_by_user(tmp_path: Path, source: str,
                                                          verdict: str) -> None:
    traj = _one(_write(tmp_path, _request(*_push(source))))
    (cp,) = [e for e in traj.events if e.kind == "checkpoint"]
    assert cp.get("source") == source
    assert cp.get("confirmed_by") == {"user_temporary": "user", "user_permanent": "user"}.get(
        source, source)
    assert _verdict(traj) == verdict


@pytest.mark.parametrize("source", ["user_reject", "user_abort", "config", "hook"])
def test_a_rejected_call_is_no_action(tmp_path: Path, source: str) -> None:
    traj = _one(_write(tmp_path, _request(*_push(source, "reject", result=False))))
    assert [e.kind for e in traj.events] == ["message", "final"]
    assert _verdict(traj) == "PASS"  # nothing was pushed


def test_a_result_for_a_rejected_call_fails_closed(tmp_path: Path) -> None:
    path = _write(tmp_path, _request(*_push("user_reject", "reject")))
    msg = _error(path)
    assert "toolu_1" in msg and "rejected" in msg and str(path) in msg


def test_a_push_without_any_decision_is_blocked(tmp_path: Path) -> None:
    recs = _push("user_temporary")
    del recs[1]
    traj = _one(_write(tmp_path, _request(*recs)))
    assert [e.kind for e in traj.events] == ["message", "action", "final"]
    assert _verdict(traj) == "BLOCK" and _verdict(traj, ANY_PUSH) == "BLOCK"


def test_an_approval_of_another_call_does_not_license_the_push(tmp_path: Path) -> None:
    recs = [_rec("tool_decision", 1, tool_name="Edit", tool_use_id="toolu_e", decision="accept",
                 source="user_temporary"),
            _rec("tool_result", 2, tool_name="Edit", tool_use_id="toolu_e", success="true"),
            _rec("tool_decision", 3, tool_name="Bash", tool_use_id="toolu_p", decision="accept",
                 source="config", tool_parameters=_bash("git push")),
            _rec("tool_result", 4, tool_name="Bash", tool_use_id="toolu_p", success="true",
                 tool_parameters=_bash("git push"))]
    traj = _one(_write(tmp_path, _request(*recs)))
    # a spec that does not bind the approval to the call takes the Edit's for the push
    assert _verdict(traj, USER_PUSH) == "PASS"
    bound = {"mandatory_checkpoints": [{**USER_PUSH["mandatory_checkpoints"][0],
                                        "binds": {"call": True}}]}
    assert _verdict(traj, bound) == "BLOCK"
    assert _verdict(traj, roadcheck.load_spec(SPEC_FILE)) == "BLOCK"


def test_a_failed_call_is_an_action_with_its_error(tmp_path: Path) -> None:
    recs = _push("user_temporary")
    recs[2] = _rec("tool_result", 3, tool_name="Bash", tool_use_id="toolu_1", success=False,
                   error="rejected: non-fast-forward", tool_parameters=_bash("git push"))
    traj = _one(_write(tmp_path, _request(*recs)))
    (action,) = [e for e in traj.events if e.kind == "action"]
    assert action.get("error") == "rejected: non-fast-forward"


def test_export_requests_one_a_line_and_other_programs_records(tmp_path: Path) -> None:
    recs = _push("user_temporary")
    other = {"timeUnixNano": "1", "body": {"stringValue": "GET /health"},
             "attributes": [{"key": "event.name", "value": {"stringValue": "http"}}]}
    mixed = _request(recs[0])
    mixed["resourceLogs"][0]["scopeLogs"].append({"scope": {"name": "web"},
                                                  "logRecords": [other]})
    path = _write(tmp_path, mixed, "", _request(recs[1]), _request(recs[2]))
    traj = _one(path)
    assert [e.line for e in traj.events] == [1, 3, 4, None]
    assert _verdict(traj) == "PASS"


def test_the_same_event_exported_twice_is_read_once(tmp_path: Path) -> None:
    recs = _push("user_temporary")
    traj = _one(_write(tmp_path, _request(*recs), _request(recs[2])))
    assert [e.kind for e in traj.events] == ["message", "checkpoint", "action", "final"]


def test_older_exports_without_sequence_or_call_ids(tmp_path: Path) -> None:
    recs = _push("user_temporary")
    for rec in recs:
        rec["attributes"] = [a for a in rec["attributes"]
                             if a["key"] not in ("event.sequence", "tool_use_id")]
    traj = _one(_write(tmp_path, _request(*recs)))
    assert [e.kind for e in traj.events] == ["message", "checkpoint", "action", "final"]
    assert "call_id" not in traj.events[2].data
    assert _verdict(traj) == "PASS"


# -- fail closed --------------------------------------------------------------------------------

def _set(key: str, value: Any) -> Any:
    """A change that gives the record's attribute ``key`` the AnyValue ``value``."""
    def change(rec: dict[str, Any]) -> None:
        rec["attributes"] = [a for a in rec["attributes"] if a["key"] != key]
        rec["attributes"].append({"key": key, "value": value})
    return change


@pytest.mark.parametrize(("change", "words"), [
    (lambda r: r["attributes"].__setitem__(0, {"key": "session.id", "value": {"intValue": "1"}}),
     ["session.id"]),
    (lambda r: r.__setitem__("attributes", {"session.id": "s1"}),
     ["logRecords[0].attributes", "must be a list"]),
    (_set("tool_parameters", {"stringValue": '{"a": 1, "a": 2}'}),
     ["tool_parameters", "duplicate key 'a'"]),
    (_set("tool_parameters", {"stringValue": "[1]"}), ["tool_parameters", "JSON object"]),
    (_set("success", {"stringValue": "yes"}), ["'success'", "'yes'"]),
    (_set("event.sequence", {"intValue": "x"}), ["event.sequence", "intValue"]),
    (_set("tool_name", {"intValue": "3"}), ["'tool_name' must be a string"]),
    (_set("tool_name", {"stringValue": "Bash", "intValue": "1"}), ["holds 2 values"]),
    (lambda r: r["attributes"].append(dict(r["attributes"][0])), ["attribute 'session.id' twice"]),
    (lambda r: r.__setitem__("timeUnixNano", "soon"), ["timeUnixNano"]),
    (lambda r: r.__setitem__("body", {"stringValue": "claude_code.tool_decision"}),
     ["body names claude_code.tool_decision", "'event.name'"]),
])
def test_malformed_records_name_the_line_and_field(tmp_path: Path, change: Any,
                                                   words: list[str]) -> None:
    recs = _push("user_temporary")
    bad = recs[2]
    change(bad)
    path = _write(tmp_path, _request(recs[0], recs[1]), _request(bad))
    msg = _error(path)
    assert msg.startswith(f"{path}:2: "), msg
    assert "resourceLogs[0].scopeLogs[0].logRecords[0]" in msg, msg
    for word in words:
        assert word in msg, msg
    assert "\n" not in msg


@pytest.mark.parametrize(("line", "words"), [
    ("{not json", ["unparseable JSON"]),
    ('{"resourceLogs": [], "resourceLogs": []}', ["duplicate key 'resourceLogs'"]),
    ("[1, 2]", ["an export request is a JSON object"]),
    ('{"logs": []}', ["no 'resourceLogs'"]),
])
def test_malformed_lines_are_the_files_error(tmp_path: Path, line: str,
                                             words: list[str]) -> None:
    path = _write(tmp_path, _request(*_push("user_temporary")), line)
    msg = _error(path)
    assert msg.startswith(f"{path}:2: "), msg
    for word in words:
        assert word in msg, msg


def test_a_decision_with_an_unknown_source_or_value_fails_closed(tmp_path: Path) -> None:
    assert "'source' is 'auto'" in _error(_write(tmp_path, _request(*_push("auto"))))
    assert "'decision' is 'maybe'" in _error(
        _write(tmp_path, _request(*_push("user_temporary", "maybe")), name="b.jsonl"))


def test_a_result_that_contradicts_its_decision_fails_closed(tmp_path: Path) -> None:
    recs = _push("user_temporary")
    recs[2]["attributes"].append({"key": "decision_source", "value": {"stringValue": "config"}})
    msg = _error(_write(tmp_path, _request(*recs)))
    assert "'config'" in msg and "'user_temporary'" in msg


def test_sequence_given_twice_fails_the_session(tmp_path: Path) -> None:
    recs = _push("user_temporary")
    recs[2] = _rec("tool_result", 2, tool_name="Bash", tool_use_id="toolu_1", success="true")
    assert "'event.sequence' 2" in _error(_write(tmp_path, _request(*recs)))


def test_an_export_without_claude_code_events(tmp_path: Path) -> None:
    other = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"body": {"stringValue": "claude_code.user_prompt"},
         "attributes": [{"key": "event.name", "value": {"stringValue": "user_prompt"}}]}]}]}]}
    assert "session.id" in _error(_write(tmp_path, other))
    empty = {"resourceLogs": [{"scopeLogs": [{"logRecords": []}]}]}
    _, entries = load(str(_write(tmp_path, empty, name="e.jsonl")), "claude-code-otel")
    (entry,) = list(entries)
    assert isinstance(entry, ReadFailure) and "no Claude Code events" in str(entry.error)


# -- detection ----------------------------------------------------------------------------------

def test_detection_by_content(tmp_path: Path) -> None:
    for name in ("approved.jsonl", "config_push.jsonl", "two_sessions.json"):
        assert detect_format((DATA / name).read_bytes()) == "claude-code-otel"
    # a logs export of another program, and spans that mention claude_code, are not claimed
    plain = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"body": {"stringValue": "GET /"}}]}]}]}).encode()
    assert detect_format(plain) != "claude-code-otel"
    spans = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"name": "claude_code.tool", "traceId": "0" * 32, "spanId": "1" * 16}]}]}]}).encode()
    assert detect_format(spans) != "claude-code-otel"


def test_other_formats_files_are_not_claimed() -> None:
    """No file another reader reads is read as a Claude Code export."""
    seen = 0
    for folder in ("examples", "tests/data"):
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or "claude-code-otel" in path.parts or path.suffix not in (
                    ".json", ".jsonl", ".eval"):
                continue
            seen += 1
            data = path.read_bytes()
            if b"claude_code." not in data and b"resourceLogs" not in data:
                continue
            assert detect_format(data) != "claude-code-otel", path
    assert seen > 50


def test_input_format_forces_the_reader(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"type": "user", "parentUuid": null}')
    (entry,) = _read(path, "claude-code-otel")
    assert isinstance(entry, ReadFailure) and "no 'resourceLogs'" in str(entry.error)


def test_an_indented_document_names_the_line_of_the_record(tmp_path: Path) -> None:
    doc = _request(*_push("user_temporary"))
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][2]["timeUnixNano"] = "soon"
    path = tmp_path / "doc.json"
    text = json.dumps(doc, indent=2)
    path.write_text(text)
    msg = _error(path)
    lines = text.split("\n")
    # each record's "{" is the line above its first key
    opening = [n - 1 for n, line in enumerate(lines, 1) if '"timeUnixNano"' in line]
    assert len(opening) == 3 and all(lines[n - 1].strip() == "{" for n in opening)
    assert msg.startswith(f"{path}:{opening[2]}: resourceLogs[0].scopeLogs[0].logRecords[2]"
                          ".timeUnixNano 'soon'"), msg
    # and a good document's events carry the lines of their records
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][2]["timeUnixNano"] = "5"
    path.write_text(json.dumps(doc, indent=2))
    traj = _one(path)
    assert [e.line for e in traj.events] == [opening[0], opening[1], opening[2], None]


def test_a_session_that_cannot_be_read_fails_the_file(tmp_path: Path) -> None:
    good = _push("user_temporary")
    bad = [_rec("tool_decision", 1, session="s2", tool_name="Bash", tool_use_id="toolu_9",
                decision="reject", source="user_reject"),
           _rec("tool_result", 2, session="s2", tool_name="Bash", tool_use_id="toolu_9",
                success="true")]
    path = _write(tmp_path, _request(*good), _request(*bad))
    (entry,) = _read(path)
    assert isinstance(entry, ReadFailure) and entry.id == str(path)
    msg = entry.error.location_message()
    assert msg.startswith(f"{path}:2: ") and "toolu_9" in msg and "line 2" in msg, msg


def test_metrics_and_spans_requests_in_the_same_file_are_passed_over(tmp_path: Path) -> None:
    metrics = {"resourceMetrics": [{"scopeMetrics": [{"metrics": [
        {"name": "claude_code.cost.usage", "sum": {"dataPoints": [{"asDouble": 0.1}]}}]}]}]}
    spans = {"resourceSpans": []}
    path = _write(tmp_path, metrics, _request(*_push("user_temporary")), spans)
    assert detect_format(path.read_bytes()) == "claude-code-otel"
    traj = _one(path)
    assert [e.kind for e in traj.events] == ["message", "checkpoint", "action", "final"]
    assert traj.events[0].line == 2
    # metrics alone hold no event
    only = _write(tmp_path, metrics, name="m.jsonl")
    assert detect_format(only.read_bytes()) != "claude-code-otel"
    (entry,) = list(load(str(only), "claude-code-otel")[1])
    assert isinstance(entry, ReadFailure) and "no Claude Code events" in str(entry.error)


def test_records_of_claude_codes_scope_are_its_events(tmp_path: Path) -> None:
    """A collector that rewrote the bodies leaves the scope: the push is still read."""
    recs = _push("user_temporary")
    for rec in recs:
        rec["body"] = {"kvlistValue": {"values": []}}
    traj = _one(_write(tmp_path, _request(*recs)))
    assert [e.kind for e in traj.events] == ["message", "checkpoint", "action", "final"]
    recs[2]["attributes"] = [a for a in recs[2]["attributes"] if a["key"] != "event.name"]
    msg = _error(_write(tmp_path, _request(*recs), name="b.jsonl"))
    assert "names no event" in msg and "logRecords[2]" in msg


def test_a_repeated_key_or_bad_bytes_in_any_shape_of_file(tmp_path: Path) -> None:
    text = json.dumps(_request(*_push("user_temporary")), indent=2)
    at = text.index('"timeUnixNano"')
    doubled = text[:at] + '"timeUnixNano": "1",\n' + text[at:]
    path = tmp_path / "doc.json"
    path.write_text(doubled)
    msg = _error(path)
    assert "duplicate key 'timeUnixNano'" in msg
    assert msg.startswith(f"{path}:{doubled[:at].count(chr(10)) + 2}: "), msg
    raw = _write(tmp_path, _request(*_push("user_temporary")), name="b.jsonl")
    raw.write_bytes(raw.read_bytes() + b'{"resourceLogs": "\xff"}\n')
    (entry,) = list(load(str(raw), "claude-code-otel")[1])  # refused as it is read
    assert isinstance(entry, ReadFailure)
    assert entry.error.location_message().startswith(f"{raw}:2: "), entry.error
