"""The SWE-agent reader on SWE-agent's own test trajectory (tests/data/swe-agent/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import roadcheck
from roadcheck.cli import cli
from roadcheck.events import Trajectory
from roadcheck.ingest import FORMATS, ReadFailure, detect_format, load

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "swe-agent"
TRAJ = DATA / "6e44b9__sweagenttestrepo-1c2844.traj"
SPEC = DATA / "spec.yaml"


def _read(path: Path, fmt: str | None = None) -> Trajectory | ReadFailure:
    got, entries = load(str(path), fmt)
    (entry,) = list(entries)
    assert got == (fmt or "swe-agent")
    return entry


def test_the_real_trajectory_reads_into_its_steps() -> None:
    traj = _read(TRAJ)
    assert isinstance(traj, Trajectory), traj
    raw = json.loads(TRAJ.read_bytes())
    actions = [e for e in traj.events if e.kind == "action"]
    # one action per step, the command as recorded, the observation as its result
    assert [e.data["command"] for e in actions] == [s["action"] for s in raw["trajectory"]]
    assert [e.data["result"] for e in actions] == [s["observation"] for s in raw["trajectory"]]
    # the tool is the function the model called for the command, else its first word
    assert [e.action_type for e in actions] == ["find_file", "open", "edit", "bash", "submit"]
    assert actions[0].data["args"] == {"file_name": "missing_colon.py"}
    assert actions[0].data["call_id"] == "call_fJuazlMUN5fQDQ73G6XSpYpx"
    assert actions[3].data["args"] == {
        "command": "python3 /SWE-agent__test-repo/tests/missing_colon.py"}
    assert actions[4].data["args"] == {"command": "submit"} and "call_id" not in actions[4].data
    # the system prompt and the issue, then a thought before each command
    kinds = [(e.kind, e.data.get("role")) for e in traj.events]
    assert kinds[:2] == [("message", "system"), ("message", "user")]
    assert kinds[2:12] == [("message", "assistant"), ("action", None)] * 5
    assert [e.line for e in actions] == [4, 15, 26, 37, 48]
    final = traj.events[-1]
    assert (final.kind, final.data["task_success"], final.data["exit_status"]) == (
        "final", True, "submitted")
    assert traj.meta == {"exit_status": "submitted"}


def test_detection_picks_it_and_the_cli_takes_the_name() -> None:
    assert detect_format(TRAJ.read_bytes()) == "swe-agent"
    assert "swe-agent" in FORMATS
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(TRAJ), "--input-format",
                                   "swe-agent"])
    assert res.exit_code == 1, res.output
    assert "checkpoint-skipped" in res.stdout


def test_a_chat_or_atif_document_is_not_taken_for_a_trajectory() -> None:
    assert detect_format(b'{"messages": [], "trajectory": []}') == "openai-chat"
    assert detect_format(b'{"trajectory": [{"action": "ls"}]}') != "swe-agent"


def test_replay_blocks_a_submission_nobody_reviewed() -> None:
    run = roadcheck.replay(str(SPEC), [str(TRAJ)])
    (result,) = run.results
    assert result.verdict == "BLOCK"
    assert [f.code.value for f in result.reasons] == ["checkpoint-skipped"]


def _write(tmp_path: Path, doc: object, name: str = "bad.traj") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_a_malformed_step_is_an_error_naming_line_and_field(tmp_path: Path) -> None:
    doc = json.loads(TRAJ.read_bytes())
    doc["trajectory"][2]["action"] = ["edit"]
    entry = _read(_write(tmp_path, doc))
    assert isinstance(entry, ReadFailure)
    assert entry.error.line == 26
    assert entry.error.message == "trajectory[2]: 'action' must be a string, got list"
    res = CliRunner().invoke(cli, ["replay", str(SPEC), str(tmp_path / "bad.traj")])
    assert res.exit_code == 2
    assert "detail : line 26: trajectory[2]: 'action' must be a string" in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(trajectory=[]), "the file holds no run: 'trajectory' is empty"),
    (lambda d: d["trajectory"][0].pop("action"), "trajectory[0]: missing required key"),
    (lambda d: d["history"][3].update(tool_call_ids="call_x"),
     "history[3]: 'tool_call_ids' must be a list of strings"),
    (lambda d: d["history"][2]["tool_calls"].append({"function": {"name": "x"}}),
     "history[2]: 'tool_calls' holds 2 calls for one command"),
    (lambda d: d["history"][2]["tool_calls"][0].update(function={"arguments": "{}"}),
     "history[2]: tool_calls[0] has no 'function.name'"),
    (lambda d: d["info"].update(exit_status=1), "'info.exit_status' must be a string"),
])
def test_malformed_structure_fails_closed(tmp_path: Path, change, message) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(TRAJ.read_bytes())
    change(doc)
    entry = _read(_write(tmp_path, doc), "swe-agent")
    assert isinstance(entry, ReadFailure)
    assert entry.error.message.startswith(message), entry.error.message
    assert entry.error.line is not None


def test_a_repeated_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.traj"
    path.write_bytes(TRAJ.read_bytes().replace(b'"action": "submit",',
                                               b'"action": "submit", "action": "ls",', 1))
    entry = _read(path)
    assert isinstance(entry, ReadFailure)
    assert "duplicate key 'action'" in entry.error.message and entry.error.line is not None


def test_a_step_with_an_empty_command_is_kept(tmp_path: Path) -> None:
    doc = json.loads(TRAJ.read_bytes())
    doc["trajectory"][4]["action"] = ""
    traj = _read(_write(tmp_path, doc))
    assert isinstance(traj, Trajectory)
    last = [e for e in traj.events if e.kind == "action"][-1]
    assert (last.action_type, last.data["command"], last.data["args"]) == (
        "(empty)", "", {"command": ""})
