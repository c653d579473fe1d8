"""The OpenHands reader on event streams OpenHands recorded (tests/data/openhands/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import roadcheck
from roadcheck.cli import cli
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, detect_format, load

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "openhands"
RENAME = DATA / "wrong_initial_state.json"
SPEC = DATA / "spec.yaml"


def _one(path: Path, fmt: str | None = None) -> Trajectory | ReadFailure:
    got, entries = load(str(path), fmt)
    (entry,) = list(entries)
    assert got == (fmt or "openhands")
    return entry


def _actions(traj: Trajectory) -> list[tuple[str | None, str | None]]:
    return [(e.action_type, e.data.get("tool")) for e in traj.events if e.kind == "action"]


def test_the_real_streams_read_into_their_actions() -> None:
    traj = _one(RENAME)
    assert isinstance(traj, Trajectory), traj
    raw = json.loads(RENAME.read_bytes())
    assert _actions(traj) == [("read", "str_replace_editor"), ("run", "execute_bash"),
                              ("read", "str_replace_editor"), ("finish", "finish")]
    run = next(e for e in traj.events if e.action_type == "run")
    assert run.data["command"] == raw[3]["args"]["command"] == (
        "mv /workspace/game_2048.py /workspace/2048.py")
    assert run.data["call_id"] == raw[3]["tool_call_metadata"]["tool_call_id"]
    assert run.data["result"] == raw[4]["content"] and "error" not in run.data
    assert run.data["args"] == {k: v for k, v in raw[3]["args"].items() if k != "thought"}
    assert (run.line, run.ts, run.agent) == (138, raw[3]["timestamp"], "openhands")
    # the user's request, then each thought before its action, then the end
    assert traj.events[0].data == {"seq": 1, "ts": raw[0]["timestamp"], "agent": "user",
                                   "event": "message", "role": "user",
                                   "text": "Please rename game_2048.py to 2048.py"}
    assert [e.kind for e in traj.events].count("message") == 5
    final = traj.events[-1]
    assert final.kind == "final" and final.data["task_success"] is True

    chat = _one(DATA / "basic_interactions.json")
    assert isinstance(chat, Trajectory)
    assert _actions(chat) == [("finish", "finish")]
    turns = [(e.data["role"], e.data.get("yields_turn")) for e in chat.events
             if e.kind == "message"]
    assert turns == [("user", None), ("assistant", True)] * 2 + [("user", None)]
    game = _one(DATA / "basic.json")
    assert isinstance(game, Trajectory) and _actions(game) == [
        ("edit", "str_replace_editor"), ("finish", "finish")]


def test_detection_picks_it_and_the_cli_takes_the_name() -> None:
    for name in ("basic.json", "basic_interactions.json", "wrong_initial_state.json"):
        assert detect_format((DATA / name).read_bytes()) == "openhands"
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(RENAME), "--input-format",
                                   "openhands"])
    assert res.exit_code == 1, res.output
    assert "(openhands, 1 trajectory)" in res.stdout


def _doc() -> list[dict[str, Any]]:
    return json.loads(RENAME.read_bytes())


def _replay(doc: Any, tmp_path: Path) -> tuple[str, list[str]]:
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(doc, indent=2))
    (result,) = roadcheck.replay(str(SPEC), [str(path)]).results
    return result.verdict, [f.code.value for f in result.reasons]


def test_replay_needs_the_users_confirmation_of_the_command(tmp_path: Path) -> None:
    (result,) = roadcheck.replay(str(SPEC), [str(RENAME)]).results
    assert (result.verdict, [f.code.value for f in result.reasons]) == (
        "BLOCK", ["checkpoint-skipped"])
    # confirmation mode: the user confirms the pending command, then it runs
    confirmed = _doc()
    confirmed[3]["args"]["confirmation_state"] = "awaiting_confirmation"
    confirmed.insert(4, {"id": 100, "timestamp": "2025-01-27T23:16:57.000000",
                         "source": "user", "action": "change_agent_state",
                         "args": {"agent_state": "user_confirmed", "thought": ""}})
    confirmed.insert(5, {"id": 101, "timestamp": "2025-01-27T23:16:57.000001",
                         "source": "environment", "observation": "agent_state_changed",
                         "content": "", "extras": {"agent_state": "user_confirmed"}})
    assert _replay(confirmed, tmp_path) == ("PASS", ["trajectory-conforms"])
    # the user rejects it: it never ran
    rejected = _doc()
    rejected[4] = {"id": 6, "timestamp": "2025-01-27T23:16:57.600730", "source": "user",
                   "cause": 5, "observation": "user_rejected", "content": "", "extras": {}}
    assert _replay(rejected, tmp_path) == ("PASS", ["trajectory-conforms"])
    rejected = _doc()
    rejected[3]["args"]["confirmation_state"] = "rejected"
    assert _replay(rejected, tmp_path) == ("PASS", ["trajectory-conforms"])
    # held for confirmation and never answered: it never ran
    held = _doc()
    held[3]["args"]["confirmation_state"] = "awaiting_confirmation"
    del held[4:]
    assert _replay(held, tmp_path) == ("PASS", ["trajectory-conforms"])


def test_a_failed_command_is_marked(tmp_path: Path) -> None:
    doc = _doc()
    doc[4]["extras"]["metadata"]["exit_code"] = 1
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(doc))
    traj = _one(path)
    assert isinstance(traj, Trajectory)
    run = next(e for e in traj.events if e.action_type == "run")
    assert run.data["error"] == "exit code 1"


def test_a_malformed_event_is_an_error_naming_line_and_field(tmp_path: Path) -> None:
    doc = _doc()
    doc[3]["args"]["command"] = ["mv", "a", "b"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc, indent=2))
    entry = _one(path)
    assert isinstance(entry, ReadFailure)
    assert entry.error.line == 138
    assert entry.error.message == "event 3 (id 5): 'args.command' must be a string, got list"
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "detail : line 138: event 3 (id 5): 'args.command'" in res.output


def _drop(key: str, i: int) -> Any:
    return lambda d: d[i].pop(key)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.clear(), "the file holds no run: the event stream is empty"),
    (lambda d: d[1].update(source="robot"), "event 1 (id 3): unknown 'source' 'robot'"),
    (lambda d: d[1].update(observation="read"), "event 1 (id 3): an event has either"),
    (_drop("action", 1), "event 1 (id 3): an event has either"),
    (lambda d: d[2].update(id=3), "event 2: id 3 is used by an earlier event"),
    (lambda d: d[2].update(id="4"), "event 2: 'id' must be an integer"),
    (lambda d: d[4].update(cause=99), "event 4 (id 6): 'cause' 99 names no earlier event"),
    (lambda d: d[3].update(args=[]), "event 3 (id 5): 'args' must be an object"),
    (lambda d: d[3]["args"].pop("command"), "event 3 (id 5): a run action has no"),
    (lambda d: d[3].update(tool_call_metadata={"function_name": 1}),
     "event 3 (id 5): 'tool_call_metadata.function_name' must be a string"),
    (lambda d: d[0].update(timestamp=5), "event 0 (id 0): 'timestamp' must be a string"),
])
def test_malformed_structure_fails_closed(tmp_path: Path, change, message) -> None:  # type: ignore[no-untyped-def]
    doc = _doc()
    change(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc, indent=2))
    entry = _one(path, "openhands")
    assert isinstance(entry, ReadFailure)
    assert entry.error.message.startswith(message), entry.error.message
    assert entry.error.line is not None


def test_a_delegation_is_a_handoff(tmp_path: Path) -> None:
    doc = _doc()
    doc.insert(1, {"id": 1, "timestamp": "2025-01-27T23:16:51.000000", "source": "agent",
                   "action": "delegate", "args": {"agent": "BrowsingAgent",
                                                  "inputs": {"task": "find the docs"},
                                                  "thought": ""}})
    path = tmp_path / "delegate.json"
    path.write_text(json.dumps(doc))
    traj = _one(path)
    assert isinstance(traj, Trajectory)
    (handoff,) = [e for e in traj.events if e.kind == "handoff"]
    assert handoff.data["to_agent"] == "BrowsingAgent"
    assert handoff.data["payload"] == {"task": "find the docs"}


def test_a_repeated_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_bytes(RENAME.read_bytes().replace(b'"source": "user",',
                                                 b'"source": "user", "source": "agent",', 1))
    entry = _one(path)
    assert isinstance(entry, ReadFailure) and "duplicate key 'source'" in entry.error.message
