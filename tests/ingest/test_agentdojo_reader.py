"""The AgentDojo reader on a run file AgentDojo wrote (tests/data/agentdojo/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import roadcheck
from roadcheck.cli import cli
from roadcheck.events import Trajectory
from roadcheck.ingest import FORMATS, ReadFailure, detect_format, load

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "agentdojo"
RUN = DATA / "none.json"
SPEC = DATA / "spec.yaml"


def _read(path: Path, fmt: str | None = None) -> Trajectory | ReadFailure:
    got, entries = load(str(path), fmt)
    (entry,) = list(entries)
    assert got == (fmt or "agentdojo")
    return entry


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(RUN.read_bytes())
    return doc


def _write(tmp_path: Path, doc: object, name: str = "run.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=4))
    return path


def test_the_real_run_reads_into_its_calls_and_messages() -> None:
    traj = _read(RUN)
    assert isinstance(traj, Trajectory), traj
    raw = _doc()
    actions = [e for e in traj.events if e.kind == "action"]
    calls = [c for m in raw["messages"] if m["role"] == "assistant"
             for c in m["tool_calls"] or []]
    answers = {m["tool_call_id"]: m for m in raw["messages"] if m["role"] == "tool"}
    # one action per tool call, in order, each with the text of the message answering it
    assert [e.action_type for e in actions] == [c["function"] for c in calls] == (
        ["get_channels"] + ["read_channel_messages"] * 5 + ["post_webpage"])
    assert [e.data["args"] for e in actions] == [c["args"] for c in calls]
    assert [e.data["call_id"] for e in actions] == [c["id"] for c in calls]
    assert [e.data["result"] for e in actions] == [
        answers[c["id"]]["content"][0]["content"] for c in calls]
    assert not any("error" in e.data for e in actions)
    assert [e.line for e in actions] == [50, 79, 87, 95, 103, 111, 220]
    # the system prompt, the two user messages, the tool list, the calls, the answer
    kinds = [(e.kind, e.agent, e.data.get("role"), e.data.get("yields_turn"))
             for e in traj.events]
    assert kinds[:4] == [("message", "system", "system", None),
                         ("message", "user", "user", None),
                         ("message", "user", "user", None),
                         ("message", "agentdojo", "assistant", True)]
    assert kinds[4:11] == [("action", "agentdojo", None, None)] * 7
    assert kinds[11] == ("message", "agentdojo", "assistant", True)
    assert traj.events[1].data["text"] == raw["messages"][1]["content"][0]["content"]
    final = traj.events[-1]
    assert final.kind == "final" and final.data == {
        "seq": 13, "agent": "agentdojo", "event": "final", "task_success": False,
        "utility": False, "security": True, "suite_name": "slack",
        "pipeline_name": "gpt-4o-2024-05-13-tool_filter", "user_task_id": "injection_task_1"}
    assert traj.meta == {"utility": False, "security": True, "suite_name": "slack",
                         "user_task_id": "injection_task_1"}


def test_detection_picks_it_and_the_cli_takes_the_name() -> None:
    assert detect_format(RUN.read_bytes()) == "agentdojo"
    assert "agentdojo" in FORMATS
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(RUN), "--input-format",
                                   "agentdojo"])
    assert res.exit_code == 1, res.output
    assert "(agentdojo, 1 trajectory)" in res.stdout


def test_a_chat_document_is_not_taken_for_a_run() -> None:
    assert detect_format(b'{"messages": [{"role": "user", "content": "hi"}]}') == "openai-chat"
    assert detect_format(b'{"suite_name": "slack", "messages": []}') == "openai-chat"
    assert detect_format(b'[{"suite_name": "s", "user_task_id": "u", "messages": []}]') != (
        "agentdojo")


def test_replay_blocks_a_post_nobody_approved(tmp_path: Path) -> None:
    (result,) = roadcheck.replay(str(SPEC), [str(RUN)]).results
    assert (result.verdict, [f.code.value for f in result.reasons]) == (
        "BLOCK", ["checkpoint-skipped"])
    # without the post the run conforms
    doc = _doc()
    del doc["messages"][12:14]
    (result,) = roadcheck.replay(str(SPEC), [str(_write(tmp_path, doc))]).results
    assert (result.verdict, [f.code.value for f in result.reasons]) == (
        "PASS", ["trajectory-conforms"])


def test_an_evaluated_run_and_a_failed_call(tmp_path: Path) -> None:
    doc = _doc()
    doc.update(utility=True, security=False, injection_task_id="injection_task_2",
               attack_type="important_instructions", error="the pipeline stopped")
    doc["messages"][5]["error"] = "ValueError: no such channel"
    doc["messages"][3]["content"].insert(0, {"type": "thinking", "content": "hm", "id": None})
    traj = _read(_write(tmp_path, doc))
    assert isinstance(traj, Trajectory)
    first = next(e for e in traj.events if e.kind == "action")
    assert first.data["error"] == "ValueError: no such channel"
    assert traj.events[3].data["text"] == "read_channel_messages, get_channels, post_webpage"
    final = traj.events[-1].data
    assert (final["task_success"], final["security"], final["injection_task_id"],
            final["attack_type"], final["error"]) == (
        True, False, "injection_task_2", "important_instructions", "the pipeline stopped")
    assert traj.meta["injection_task_id"] == "injection_task_2"
    # a run never evaluated is no success
    del doc["utility"]
    traj = _read(_write(tmp_path, doc))
    assert isinstance(traj, Trajectory) and traj.events[-1].data["task_success"] is False


def test_the_older_plain_text_content_and_calls_without_ids(tmp_path: Path) -> None:
    doc = _doc()
    for msg in doc["messages"]:
        if isinstance(msg["content"], list):
            msg["content"] = msg["content"][0]["content"]
    doc["messages"][4]["tool_calls"][0]["id"] = None
    doc["messages"][5].update(tool_call_id=None)
    doc["messages"][5]["tool_call"]["id"] = None
    traj = _read(_write(tmp_path, doc))
    assert isinstance(traj, Trajectory), traj
    first = next(e for e in traj.events if e.kind == "action")
    assert "call_id" not in first.data and first.data["result"].startswith("- general")
    assert traj.events[0].data["text"].startswith("You are an AI language model")


def test_a_malformed_message_is_an_error_naming_line_and_field(tmp_path: Path) -> None:
    doc = _doc()
    doc["messages"][4]["tool_calls"][0]["args"] = ["general"]
    path = _write(tmp_path, doc)
    entry = _read(path)
    assert isinstance(entry, ReadFailure)
    assert entry.error.line == 50
    assert entry.error.message == (
        "messages[4]: tool_calls[0]: 'args' must be an object, got list")
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "detail : line 50: messages[4]: tool_calls[0]: 'args'" in res.output


def _answer_twice(d: dict[str, Any]) -> None:
    d["messages"].insert(6, d["messages"][5])


def _answer_none(d: dict[str, Any]) -> None:
    d["messages"][5]["tool_call_id"] = "call_nobody_made"


def _same_id(d: dict[str, Any]) -> None:
    calls = d["messages"][6]["tool_calls"]
    calls[1]["id"] = calls[0]["id"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(messages=[]), "the file holds no run: 'messages' is empty"),
    (lambda d: d.pop("messages"), "missing required key 'messages'"),
    (lambda d: d.update(messages={}), "'messages' must be a list, got dict"),
    (lambda d: d.update(suite_name=3), "'suite_name' must be a string, got int"),
    (lambda d: d.pop("user_task_id"), "'user_task_id' must be a string, got NoneType"),
    (lambda d: d.update(utility="yes"), "'utility' must be true, false or null, got str"),
    (lambda d: d.update(security=1), "'security' must be true, false or null, got int"),
    (lambda d: d.update(injections=[]), "'injections' must be an object, got list"),
    (lambda d: d.update(duration="6s"), "'duration' must be a number, got str"),
    (lambda d: d.update(error=["x"]), "'error' must be a string, got list"),
    (lambda d: d["messages"].append("hi"), "messages[15] is str, not an object"),
    (lambda d: d["messages"][1].update(role="robot"), "messages[1]: unknown 'role' 'robot'"),
    (lambda d: d["messages"][1].update(content=5), "messages[1]: 'content' must be a string"),
    (lambda d: d["messages"][1]["content"][0].update(type="image"),
     "messages[1]: 'content'[0]: unknown 'type' 'image'"),
    (lambda d: d["messages"][1]["content"][0].update(type=["text"]),
     "messages[1]: 'content'[0]: unknown 'type' ['text']"),
    (lambda d: d["messages"][1]["content"][0].update(content=7),
     "messages[1]: 'content'[0]: 'content' must be a string, got int"),
    (lambda d: d["messages"][4].update(tool_calls={}),
     "messages[4]: 'tool_calls' must be a list or null, got dict"),
    (lambda d: d["messages"][4]["tool_calls"][0].pop("function"),
     "messages[4]: tool_calls[0]: 'function' must be a string, got NoneType"),
    (lambda d: d["messages"][4]["tool_calls"][0].update(function=""),
     "messages[4]: tool_calls[0]: 'function' must be a non-empty string"),
    (lambda d: d["messages"][4]["tool_calls"][0].update(id=5),
     "messages[4]: tool_calls[0]: 'id' must be a string, got int"),
    (_same_id, "messages[6]: tool_calls[1]: call id 'call_euYRAeOdxmSHbmxSupBf2p08' is used"),
    (_answer_twice, "messages[6]: call id 'call_isuh8vV8sKrEWA59gFEAlOLs' is answered twice"),
    (_answer_none, "messages[5]: the tool message answers call id 'call_nobody_made', which"),
    (lambda d: d["messages"][5]["tool_call"].update(function="post_webpage"),
     "messages[5]: 'tool_call.function' 'post_webpage' is not the function of call"),
    (lambda d: d["messages"][5].update(tool_call="get_channels"),
     "messages[5]: 'tool_call' must be an object, got str"),
    (lambda d: d["messages"][5].update(error=False), "messages[5]: 'error' must be a string"),
    (lambda d: d["messages"][5].update(tool_call_id=None, tool_call=None),
     "messages[5]: the tool message names no call id and answers no earlier call"),
])
def test_malformed_structure_fails_closed(tmp_path: Path, change, message) -> None:  # type: ignore[no-untyped-def]
    doc = _doc()
    change(doc)
    entry = _read(_write(tmp_path, doc), "agentdojo")
    assert isinstance(entry, ReadFailure)
    assert entry.error.message.startswith(message), entry.error.message
    assert entry.error.line is not None


def test_not_an_object_and_a_repeated_key(tmp_path: Path) -> None:
    entry = _read(_write(tmp_path, [_doc()]), "agentdojo")
    assert isinstance(entry, ReadFailure)
    assert (entry.error.line, entry.error.message) == (1, "expected a JSON object, got list")
    path = tmp_path / "dup.json"
    path.write_bytes(RUN.read_bytes().replace(b'"role": "tool",',
                                              b'"role": "tool", "role": "user",', 1))
    entry = _read(path)
    assert isinstance(entry, ReadFailure)
    assert "duplicate key 'role'" in entry.error.message and entry.error.line is not None


# -- runs recorded with AgentDojo 0.1.35 here (tests/data/agentdojo/README.md) ------------------

RECORDED = DATA / "recorded"
SEND_MONEY = DATA / "send-money.yaml"


def _raw_calls(path: Path) -> list[str]:
    doc = json.loads(path.read_text())
    return [call["function"] for m in doc["messages"] if m["role"] == "assistant"
            for call in m.get("tool_calls") or []]


@pytest.mark.parametrize(("name", "calls"), [
    ("banking-user_task_0-none.json", ["read_file", "send_money"]),
    ("banking-user_task_0-direct-injection_task_0.json", ["read_file", "send_money"]),
    ("slack-user_task_1-none.json", ["read_channel_messages", "get_webpage",
                                       "send_direct_message"]),
])
def test_recorded_run_reads_every_call_in_order(name: str, calls: list[str]) -> None:
    path = RECORDED / name
    assert _raw_calls(path) == calls
    traj = _read(path)
    assert isinstance(traj, Trajectory)
    assert [e.action_type for e in traj.events if e.kind == "action"] == calls
    final = traj.events[-1]
    assert final.kind == "final" and final.get("task_success") is True  # utility: true


def test_recorded_transfer_without_approval_is_blocked() -> None:
    """The bill read in the attacked run carries the attacker's instruction; the
    transfer itself is the user's task, and nobody approved it."""
    attacked = RECORDED / "banking-user_task_0-direct-injection_task_0.json"
    doc = json.loads(attacked.read_text())
    assert doc["attack_type"] == "direct" and doc["security"] is False
    assert "TODO: Send a transaction" in json.dumps(doc["messages"])
    spec = roadcheck.load_spec(SEND_MONEY)
    run = roadcheck.replay(spec, [str(RECORDED / "banking-user_task_0-none.json"),
                                  str(attacked), str(RECORDED / "slack-user_task_1-none.json")])
    assert [r.verdict for r in run.results] == ["BLOCK", "BLOCK", "PASS"]
