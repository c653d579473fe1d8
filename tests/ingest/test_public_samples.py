"""The coding-agent and Inspect readers on real files from public repositories.

Each file is kept unchanged with its licence (tests/data/coding/README.md,
tests/data/inspect/public/README.md). Every test states what the file holds,
counted from its raw records where the format makes that simple, so a reader
that drops or invents a call fails here, not only one that raises.
"""

from __future__ import annotations

import collections
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

import roadcheck
from roadcheck.events import Trajectory
from roadcheck.ingest import ReadFailure, load

ROOT = Path(__file__).resolve().parents[2]
CODING = ROOT / "tests" / "data" / "coding"
INSPECT = ROOT / "tests" / "data" / "inspect" / "public"


def one(path: Path, fmt: str) -> Trajectory:
    got, entries = load(str(path))
    (traj,) = list(entries)
    assert got == fmt
    assert isinstance(traj, Trajectory), traj
    return traj


def counts(traj: Trajectory) -> dict[str, int]:
    return dict(collections.Counter(e.action_type or "" for e in traj.events
                                    if e.kind == "action"))


# -- Codex ------------------------------------------------------------------------------------

CODEX: dict[str, tuple[dict[str, int], int, int]] = {
    # file -> (actions by tool, checkpoints, calls whose output says they failed)
    "codex_golden.jsonl": ({"shell": 1}, 0, 0),
    "codex_session_with_compaction.jsonl": ({"shell": 2}, 0, 0),
    "codex_with_escalation.jsonl": ({"shell": 4}, 0, 0),
    "rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl": (
        {"shell": 57}, 0, 12),
    "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl": (
        {"shell": 34}, 0, 0),
    "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl": (
        {"shell": 3}, 0, 0),
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": (
        {"exec_command": 43, "write_stdin": 54, "apply_patch": 3, "update_plan": 2,
         "web_search": 3}, 0, 4),
    "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl": (
        {"exec_command": 35, "js": 3}, 0, 1),
}


def test_every_codex_sample_is_listed() -> None:
    assert sorted(CODEX) == sorted(p.name for p in (CODING / "codex").glob("*.jsonl"))
    assert len(CODEX) >= 5


def _codex_raw(path: Path) -> tuple[list[str], int]:
    """The call ids of the file's calls, in order, and its web searches."""
    ids, searches = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        payload = rec["payload"]
        if rec["type"] != "response_item":
            continue
        if payload["type"] in ("function_call", "custom_tool_call", "local_shell_call"):
            ids.append(payload.get("call_id", payload.get("id")))
        elif payload["type"] == "web_search_call":
            searches += 1
    return ids, searches


@pytest.mark.parametrize("name", sorted(CODEX))
def test_codex_sample_actions(name: str) -> None:
    """Every call in the file is one action, in file order, and nothing else is."""
    path = CODING / "codex" / name
    traj = one(path, "codex")
    expected, checkpoints, failed = CODEX[name]
    assert counts(traj) == expected
    assert len([e for e in traj.events if e.kind == "action" and "error" in e.data]) == failed
    assert len([e for e in traj.events if e.kind == "checkpoint"]) == checkpoints
    ids, searches = _codex_raw(path)
    got = [e.get("call_id") for e in traj.events
           if e.kind == "action" and e.action_type != "web_search"]
    assert got == ids
    assert sum(1 for e in traj.events if e.action_type == "web_search") == searches


def test_codex_argv_shell_calls_carry_their_scripts() -> None:
    """Codex CLI 0.7x: ``["bash", "-lc", SCRIPT]`` is read as SCRIPT, with its output."""
    traj = one(CODING / "codex" / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-"
               "ba12b5b73b52.jsonl", "codex")
    shells = [e for e in traj.events if e.kind == "action"]
    assert [e.get("command") for e in shells] == [
        "ls", "rg --files -g 'AGENTS.md'", "sed -n '1,160p' README.md"]
    assert all(e.get("result") for e in shells)


def test_codex_vscode_040_shell_calls_carry_their_scripts() -> None:
    """The VS Code extension, Codex 0.40: argv shell calls with a workdir, all answered."""
    traj = one(CODING / "codex" / "rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-"
               "05abaf4f3c3e.jsonl", "codex")
    shells = [e for e in traj.events if e.kind == "action"]
    assert [e.get("command") for e in shells[:3]] == ["ls", "ls packages", "ls packages/services"]
    assert shells[0].get("args") == {"command": ["bash", "-lc", "ls"], "workdir": ".",
                                     "timeout_ms": 120000}
    assert all("result" in e.data for e in shells)
    assert traj.meta == {"session_id": "019982b8-3422-79e0-8b3b-05abaf4f3c3e"}


def test_codex_commands_the_sandbox_stopped_failed() -> None:
    """Codex 0.40 in a read-only macOS sandbox: twelve commands were stopped by it.

    Codex answers those with a plain sentence, not the JSON output of a command
    that ran: each is a failed call, the other 45 ran and exited 0.
    """
    traj = one(CODING / "codex" / "rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-"
               "095dda01c36e.jsonl", "codex")
    shells = [e for e in traj.events if e.kind == "action"]
    stopped = [e for e in shells if "error" in e.data]
    assert len(stopped) == 12 and len(shells) - len(stopped) == 45
    assert all(e.get("error").startswith("failed in sandbox MacosSeatbelt with execution "
                                         "error: sandbox denied exec error") for e in stopped)
    assert "TMPDIR=/tmp rg \"ResponsiveContainer\" 'src/app' -g'*.tsx'" in [
        e.get("command") for e in stopped]


def test_codex_exec_command_exit_code_in_the_header_marks_a_failure() -> None:
    """Codex Desktop: ``ps`` failed in the sandbox (exit 1), then ran escalated (exit 0)."""
    traj = one(CODING / "codex" / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-"
               "0dd379793f80.jsonl", "codex")
    ps = [e for e in traj.events if e.kind == "action"
          and e.get("command", "").startswith("ps -ef | rg -i")]
    assert [("error" in e.data, e.get("args").get("sandbox_permissions")) for e in ps] == [
        (True, None), (False, "require_escalated")]
    assert ps[0].get("error").endswith("Output:\nzsh:1: operation not permitted: ps\n")


def test_codex_escalated_call_without_a_recorded_policy_is_no_approval() -> None:
    """Codex Desktop asked for escalation, but the file records no approval policy.

    Nothing says the user was asked, so the command ran with no checkpoint.
    """
    traj = one(CODING / "codex" / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-"
               "0dd379793f80.jsonl", "codex")
    (escalated,) = [e for e in traj.events if e.kind == "action"
                    and isinstance(e.get("args"), dict)
                    and e.get("args").get("sandbox_permissions") == "require_escalated"]
    assert escalated.get("command", "").startswith("ps -ef | rg -i")
    assert "result" in escalated.data
    assert [e for e in traj.events if e.kind == "checkpoint"] == []


def test_codex_real_session_git_command_without_approval_blocks() -> None:
    """``git status`` ran in the sandbox, unasked: a spec guarding git commands blocks."""
    spec = {"mandatory_checkpoints": [{"checkpoint_id": "codex-approval",
                                       "must_precede": {"command": {"words": ["git"]}}}]}
    path = CODING / "codex" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-" \
                              "3724b5ddb799.jsonl"
    result = roadcheck.replay(spec, [str(path)]).results[0]
    assert (result.verdict, result.headline) == ("BLOCK", "checkpoint-skipped")


# -- Claude Code ------------------------------------------------------------------------------

CLAUDE: dict[str, tuple[dict[str, int], list[str], list[str]]] = {
    # file -> (actions by tool, checkpoint ids, handoff targets)
    "agent-aac57f5.jsonl": ({"WebSearch": 6, "WebFetch": 6}, [], []),
    "agent-acompact-946d2b.jsonl": ({}, [], []),
    "claude_forked_session.jsonl": ({"Write": 2, "Edit": 1}, [], []),
    "claude_session_with_compaction.jsonl": ({"Read": 1, "Edit": 2}, [], []),
    "claude_with_rejection.jsonl": ({"Read": 1, "Edit": 1}, [], []),
    "short.jsonl": ({}, [], []),
    "subagent.jsonl": ({"WebFetch": 1, "WebSearch": 5, "Glob": 1, "Read": 1,
                        "AskUserQuestion": 1, "Task": 1, "Write": 1, "ExitPlanMode": 1,
                        "Bash": 4}, ["AskUserQuestion", "ExitPlanMode"], ["Plan"]),
    "tool_heavy.jsonl": ({"Bash": 2, "WebSearch": 1, "Glob": 1, "Read": 1, "WebFetch": 1},
                         [], []),
}

REFUSED = "The user doesn't want to proceed with this tool use"


def _claude_raw(path: Path) -> tuple[set[str], set[str]]:
    """The ids of every tool_use in the file, and of those refused at the prompt."""
    used, refused = set(), set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        message = json.loads(line).get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                used.add(block["id"])
            elif block.get("type") == "tool_result" and REFUSED in json.dumps(
                    block.get("content")):
                refused.add(block["tool_use_id"])
    return used, refused


def test_every_claude_code_sample_is_listed() -> None:
    assert sorted(CLAUDE) == sorted(p.name for p in (CODING / "claude-code").glob("*.jsonl"))


@pytest.mark.parametrize("name", sorted(CLAUDE))
def test_claude_code_sample_actions(name: str) -> None:
    """Every tool_use is an action, except those the user refused at the prompt."""
    path = CODING / "claude-code" / name
    traj = one(path, "claude-code")
    actions, checkpoints, handoffs = CLAUDE[name]
    assert counts(traj) == actions
    assert [e.get("checkpoint_id") for e in traj.events if e.kind == "checkpoint"] == checkpoints
    assert [e.get("to_agent") for e in traj.events if e.kind == "handoff"] == handoffs
    used, refused = _claude_raw(path)
    assert {e.get("call_id") for e in traj.events if e.kind == "action"} == used - refused


def test_claude_code_refusals_at_the_prompt_are_in_the_real_files() -> None:
    """Two sessions hold refusals: the refused calls are the only ones missing."""
    for name, n in (("short.jsonl", 2), ("claude_with_rejection.jsonl", 2)):
        _, refused = _claude_raw(CODING / "claude-code" / name)
        assert len(refused) == n, name


# -- Inspect ----------------------------------------------------------------------------------

INSPECT_FILES: dict[str, list[list[str]]] = {
    # file -> the actions of each sample, in the file's sample order
    "2025-05-12T20-27-36-04-00_browser.json": [
        ["web_browser_go", "web_browser_click", "web_browser_click", "web_browser_click"]],
    "log_message_deduplication.eval": [["bash"] * 5],
    "2025-05-12T20-28-13-04-00_popularity.json": [[], [], []],
    "log_streaming.eval": [[], [], [], []],
    "log_read_sample.eval": [[]],
    "2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval": [[]],
}


def _inspect_raw(path: Path) -> list[list[str]]:
    """The tool calls each sample's assistant messages make, from the log itself."""
    if path.suffix == ".json":
        samples = json.loads(path.read_text(encoding="utf-8"))["samples"]
    else:
        with zipfile.ZipFile(path) as z:
            samples = [json.loads(z.read(n)) for n in sorted(z.namelist())
                       if n.startswith("samples/")]
    out: list[list[str]] = []
    for sample in samples:
        calls: list[Any] = [tc["function"] for m in sample["messages"]
                            if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
        out.append(calls)
    return out


def test_at_least_five_public_inspect_logs() -> None:
    names = {p.name for p in INSPECT.iterdir() if p.suffix in (".eval", ".json")}
    assert set(INSPECT_FILES) <= names
    assert len(INSPECT_FILES) >= 5


@pytest.mark.parametrize("name", sorted(INSPECT_FILES))
def test_inspect_public_log_actions(name: str) -> None:
    fmt, entries = load(str(INSPECT / name))
    runs = list(entries)
    assert fmt == "inspect"
    assert all(isinstance(t, Trajectory) for t in runs), runs
    got = [[e.action_type for e in t.events if e.kind == "action"] for t in runs]
    assert got == INSPECT_FILES[name]
    assert got == _inspect_raw(INSPECT / name)


def test_inspect_tool_messages_with_no_calls_are_an_error_not_a_pass() -> None:
    """A hand-trimmed log whose tool messages answer no call: ERROR naming sample and call."""
    _, entries = load(str(INSPECT / "log_tool_call_error.json"))
    (failure,) = list(entries)
    assert isinstance(failure, ReadFailure)
    assert "'bash_1'" in str(failure.error) and "no earlier tool call" in str(failure.error)
